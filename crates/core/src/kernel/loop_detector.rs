//! Loop detection (CONTRACT §6): two sliding windows, one of tool-call signatures and one of
//! normalised texts; a run of `max_repeats` equal tail entries is a loop.
//!
//! Beyond the original (issue 19): `loopDetection.match: 'canonical'` ([`Match::Canonical`])
//! compares tool-call arguments through formatting, so that a model which repeats itself with
//! a different spacing, case or spelling of the same value is still seen looping. The default,
//! [`Match::Exact`], is 1.7.0's comparison.

use std::collections::VecDeque;

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::value::RawValue;
use unicode_normalization::{is_nfc_quick, IsNormalized, UnicodeNormalization};

use crate::json::{is_js_space, js_trim, push_uint};

/// How two tool calls' arguments are compared (`loopDetection.match`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Match {
    /// 1.7.0's: key order and call order do not matter, every value must be as written.
    #[default]
    Exact,
    /// Also equal: string values that differ only in surrounding or repeated whitespace, in
    /// Unicode normalisation (compared in NFC) or in letter case; a numeric string and the
    /// number it spells (`"1"` and `1`, with at most 15 significant digits, so that two distinct
    /// decimals never meet in one double); path-like strings (a `/`, no whitespace) that differ
    /// only by a leading `./` or a trailing `/`. Object keys, booleans and `null` stay exact.
    Canonical,
}

impl Match {
    pub fn from_name(name: &str) -> Option<Match> {
        match name {
            "exact" => Some(Match::Exact),
            "canonical" => Some(Match::Canonical),
            _ => None,
        }
    }
}

/// The configuration error of a `loopDetection.match` that is neither `'exact'` nor
/// `'canonical'`; `got` describes the value as the other configuration errors do.
pub fn invalid_match_text(got: &str) -> String {
    format!("Invalid configuration: loopDetection.match must be \"exact\" or \"canonical\", got {got}")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopKind {
    ToolRepetition,
    TextRepetition,
}

impl LoopKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LoopKind::ToolRepetition => "tool_repetition",
            LoopKind::TextRepetition => "text_repetition",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoopInfo {
    pub kind: LoopKind,
    pub repetitions: usize,
    pub detail: String,
}

pub struct LoopDetector {
    max_repeats: usize,
    window: usize,
    matching: Match,
    tools: VecDeque<String>,
    texts: VecDeque<String>,
}

impl LoopDetector {
    /// `max_repetitions` / `window` as given by the user (`None` = default 3 / 4).
    pub fn new(max_repetitions: Option<f64>, window: Option<f64>) -> LoopDetector {
        let max_repeats = max_repetitions.map(clamp_count).unwrap_or(3);
        let window = window.map(clamp_count).unwrap_or(4).max(max_repeats);
        LoopDetector { max_repeats, window, matching: Match::Exact, tools: VecDeque::new(), texts: VecDeque::new() }
    }

    /// The same detector comparing tool-call arguments as `matching` says (texts are compared
    /// as the original normalises them either way).
    pub fn with_match(mut self, matching: Match) -> LoopDetector {
        self.matching = matching;
        self
    }

    /// What the detector remembers (the tool-call signatures and the normalised texts of the
    /// last turns, oldest first): a runner snapshot's part (`runner::snapshot`).
    pub fn memory(&self) -> (&VecDeque<String>, &VecDeque<String>) {
        (&self.tools, &self.texts)
    }

    /// The same detector remembering what [`LoopDetector::memory`] gave.
    pub fn with_memory(mut self, tools: VecDeque<String>, texts: VecDeque<String>) -> LoopDetector {
        self.tools = tools;
        self.texts = texts;
        self
    }

    /// `calls` = (name, input JSON text) per tool_use block, in block order.
    pub fn record_tool_calls<'a>(&mut self, calls: &[(&'a str, &'a str)]) -> Option<LoopInfo> {
        if calls.is_empty() {
            return None;
        }
        let sig = signature_into(calls, recycled(&mut self.tools, self.window), self.matching);
        let c = push_and_count(&mut self.tools, sig, self.window);
        if c >= self.max_repeats {
            let names: Vec<&str> = calls.iter().map(|c| c.0).collect();
            return Some(LoopInfo {
                kind: LoopKind::ToolRepetition,
                repetitions: c,
                detail: format!(
                    "Tool call \"{}\" with identical arguments has repeated {} times consecutively. The agent appears to be stuck in a loop.",
                    names.join(", "),
                    c
                ),
            });
        }
        None
    }

    pub fn record_text(&mut self, text: &str) -> Option<LoopInfo> {
        let normalised = normalise_text(text);
        if normalised.is_empty() {
            return None;
        }
        let c = push_and_count(&mut self.texts, normalised, self.window);
        if c >= self.max_repeats {
            return Some(LoopInfo {
                kind: LoopKind::TextRepetition,
                repetitions: c,
                detail: format!(
                    "The agent has produced the same text response {c} times consecutively. It appears to be stuck in a loop."
                ),
            });
        }
        None
    }
}

fn clamp_count(v: f64) -> usize {
    // JS compares with >= against counts; a fractional threshold behaves like its ceiling.
    if v.is_nan() || v <= 0.0 {
        0
    } else {
        v.ceil().min(usize::MAX as f64) as usize
    }
}

/// The entry about to leave a full window, emptied for reuse (a signature per tool turn
/// would otherwise be one more allocation and free).
fn recycled(buf: &mut VecDeque<String>, window: usize) -> String {
    if window > 0 && buf.len() >= window {
        let mut s = buf.pop_front().unwrap_or_default();
        s.clear();
        s
    } else {
        String::new()
    }
}

fn push_and_count(buf: &mut VecDeque<String>, entry: String, window: usize) -> usize {
    buf.push_back(entry);
    while buf.len() > window {
        buf.pop_front();
    }
    let last = buf.back().unwrap();
    buf.iter().rev().take_while(|e| *e == last).count()
}

/// `text.trim()` with every run of JS whitespace collapsed to one space.
pub fn normalise_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_space = false;
    for c in js_trim(text).chars() {
        if is_js_space(c) {
            if !in_space {
                out.push(' ');
                in_space = true;
            }
        } else {
            out.push(c);
            in_space = false;
        }
    }
    out
}

/// Appends `input` in canonical form (sorted keys; as written when it is not JSON).
fn push_canonical(input: &str, out: &mut String, matching: Match) {
    let trimmed = input.trim();
    // Under `Canonical` every string and number is rewritten, so no text is its own form.
    if matching == Match::Exact && already_canonical(trimmed.as_bytes()) {
        out.push_str(trimmed);
        return;
    }
    // The re-emitting below recurses once per level and re-reads each level's text: an input
    // nested deeper than this (a model can send thousands of levels) is compared as written,
    // which bounds both the stack and the time. Key order then matters for it; values still do.
    if nesting_deeper_than(trimmed.as_bytes(), CANONICAL_MAX_DEPTH) {
        out.push_str(trimmed);
        return;
    }
    let start = out.len();
    if canonical_into(input, out, matching).is_err() {
        out.truncate(start);
        out.push_str(input);
    }
}

const CANONICAL_MAX_DEPTH: usize = 64;

/// Whether JSON text opens more than `max` containers at once (strings skipped), in one pass.
fn nesting_deeper_than(b: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' | b'[' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b'}' | b']' => depth = depth.saturating_sub(1),
            b'"' => {
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    i += if b[i] == b'\\' { 2 } else { 1 };
                }
            }
            _ => {}
        }
        i += 1;
    }
    false
}

fn push_entry(out: &mut String, name: &str, canon_input: &str) {
    push_name(out, name);
    out.push_str(canon_input);
    out.push('\u{0}');
}

/// `<len>:<name>`.
fn push_name(out: &mut String, name: &str) {
    push_uint(out, name.len() as u64);
    out.push(':');
    out.push_str(name);
}

/// Canonical form of a tool-call set, `<len>:<name><canonical input>\0` per call, sorted: key
/// order and call order do not matter, values do. Written into `out` (a recycled buffer).
fn signature_into(calls: &[(&str, &str)], mut out: String, matching: Match) -> String {
    if let [(name, input)] = calls {
        // One call (the usual turn): no sorting, so no intermediate strings.
        out.reserve(name.len() + input.len() + 8);
        push_name(&mut out, name);
        push_canonical(input, &mut out, matching);
        out.push('\u{0}');
        return out;
    }
    // Each call's canonical input borrowed when its text already is one (the usual case: a
    // model's or JSON.stringify's compact, key-ordered arguments), so that a wide round costs
    // no string per call; the sorted entries are then written once into a buffer of their size.
    let mut items: Vec<(&str, Cow<'_, str>)> =
        calls.iter().map(|(name, input)| (*name, canonical_cow(input, matching))).collect();
    items.sort();
    out.reserve(items.iter().map(|(n, i)| n.len() + i.len() + 8).sum());
    for (n, i) in &items {
        push_entry(&mut out, n, i);
    }
    out
}

/// `input` in canonical form (see `push_canonical`), borrowed when it already is.
fn canonical_cow(input: &str, matching: Match) -> Cow<'_, str> {
    let trimmed = input.trim();
    if matching == Match::Exact && already_canonical(trimmed.as_bytes()) {
        return Cow::Borrowed(trimmed);
    }
    let mut canon = String::with_capacity(input.len());
    push_canonical(input, &mut canon, matching);
    Cow::Owned(canon)
}

/// True when compact JSON text already has every object's keys in ascending order (and no
/// escapes in keys): then it is its own canonical form and needs no re-emitting. This is the
/// usual case (a model's arguments, `JSON.stringify` output), so it is worth the scan.
fn already_canonical(b: &[u8]) -> bool {
    // Per open container: is it an object, and the last key seen in it. Fixed depth, no
    // allocation: deeper inputs take the general path, which gives the same result.
    let mut stack: Stack<'_> = Stack { items: [(false, None); 16], len: 0 };
    let mut expect_key = false;
    let mut i = 0;
    while i < b.len() {
        match b[i] {
            b'{' => {
                if !stack.push((true, None)) {
                    return false;
                }
                expect_key = true;
            }
            b'[' => {
                if !stack.push((false, None)) {
                    return false;
                }
                expect_key = false;
            }
            b'}' | b']' => {
                stack.pop();
                expect_key = false;
            }
            b',' => expect_key = matches!(stack.last(), Some((true, _))),
            b':' => expect_key = false,
            b' ' | b'\t' | b'\n' | b'\r' => return false,
            b'"' => {
                let start = i + 1;
                let mut j = start;
                let mut escaped = false;
                while j < b.len() && b[j] != b'"' {
                    if b[j] == b'\\' {
                        escaped = true;
                        j += 2;
                    } else {
                        j += 1;
                    }
                }
                if expect_key {
                    if escaped || j > b.len() {
                        return false;
                    }
                    let key = &b[start..j];
                    if let Some((true, last)) = stack.last_mut() {
                        if last.is_some_and(|l| l >= key) {
                            return false;
                        }
                        *last = Some(key);
                    }
                    expect_key = false;
                }
                i = j;
            }
            _ => {}
        }
        i += 1;
    }
    true
}

struct Stack<'a> {
    items: [(bool, Option<&'a [u8]>); 16],
    len: usize,
}

impl<'a> Stack<'a> {
    fn push(&mut self, v: (bool, Option<&'a [u8]>)) -> bool {
        if self.len == self.items.len() {
            return false;
        }
        self.items[self.len] = v;
        self.len += 1;
        true
    }
    fn pop(&mut self) {
        self.len = self.len.saturating_sub(1);
    }
    fn last(&self) -> Option<&(bool, Option<&'a [u8]>)> {
        self.len.checked_sub(1).map(|i| &self.items[i])
    }
    fn last_mut(&mut self) -> Option<&mut (bool, Option<&'a [u8]>)> {
        self.len.checked_sub(1).map(move |i| &mut self.items[i])
    }
}

/// Re-emits JSON text with object keys sorted. Under `Exact`, scalars are kept as written: the
/// inputs come from one serialiser (`JSON.stringify` or ours), so equal values have equal text;
/// under `Canonical`, strings and numbers are written in the loose form of [`Match::Canonical`].
fn canonical_into(json: &str, out: &mut String, matching: Match) -> Result<(), serde_json::Error> {
    let t = json.trim_start();
    if t.starts_with('{') {
        let map: BTreeMap<Cow<str>, &RawValue> = serde_json::from_str(json)?;
        out.push('{');
        for (i, (k, v)) in map.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            write_string(k, out);
            out.push(':');
            canonical_into(v.get(), out, matching)?;
        }
        out.push('}');
    } else if t.starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(json)?;
        out.push('[');
        for (i, v) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            canonical_into(v.get(), out, matching)?;
        }
        out.push(']');
    } else if matching == Match::Canonical && t.starts_with('"') {
        let s: Cow<str> = serde_json::from_str(json)?;
        push_loose_string(&s, out);
    } else if matching == Match::Canonical && t.starts_with(|c: char| c == '-' || c.is_ascii_digit()) {
        // A number literal by the same rule as a numeric string: by value when at most 15
        // significant digits decide it, else as written (two long literals that round to one
        // double are different inputs).
        let literal = json.trim();
        match numeric_string(literal) {
            Some(n) => push_number(n, out),
            None => out.push_str(literal),
        }
    } else {
        out.push_str(json.trim());
    }
    Ok(())
}

/// A number by its value (`1`, `1.0` and `1e0` alike; `-0` as `0`). Strings are always written
/// quoted, so a number can never meet a string that is not numeric.
fn push_number(n: f64, out: &mut String) {
    use std::fmt::Write;
    let n = if n == 0.0 { 0.0 } else { n };
    let _ = write!(out, "{n}");
}

/// A string value under [`Match::Canonical`]: whitespace trimmed and collapsed (as texts are),
/// lower case, NFC; then a number if it spells one, else a path without `./` and trailing `/`.
fn push_loose_string(s: &str, out: &mut String) {
    let lower = normalise_text(s).to_lowercase();
    // Lower-casing may leave a decomposed sequence behind, so NFC comes after it.
    let nfc: Cow<str> = if is_nfc_quick(lower.chars()) == IsNormalized::Yes {
        Cow::Borrowed(&lower)
    } else {
        Cow::Owned(lower.nfc().collect())
    };
    if let Some(n) = numeric_string(&nfc) {
        return push_number(n, out);
    }
    write_string(path_trimmed(&nfc), out);
}

/// The value of a string that is a JSON number literal with at most 15 significant digits (any
/// two such decimals that differ are different doubles); `None` otherwise.
fn numeric_string(s: &str) -> Option<f64> {
    let b = s.as_bytes();
    let mut i = usize::from(b.first() == Some(&b'-'));
    let digits = |i: &mut usize| {
        let start = *i;
        while *i < b.len() && b[*i].is_ascii_digit() {
            *i += 1;
        }
        *i - start
    };
    let int_start = i;
    let int_len = digits(&mut i);
    if int_len == 0 || (int_len > 1 && b[int_start] == b'0') {
        return None;
    }
    let mut mantissa = s[int_start..i].to_string();
    if b.get(i) == Some(&b'.') {
        i += 1;
        let frac_start = i;
        if digits(&mut i) == 0 {
            return None;
        }
        mantissa.push_str(&s[frac_start..i]);
    }
    if matches!(b.get(i), Some(b'e' | b'E')) {
        i += 1;
        if matches!(b.get(i), Some(b'+' | b'-')) {
            i += 1;
        }
        if digits(&mut i) == 0 {
            return None;
        }
    }
    if i != b.len() || mantissa.trim_start_matches('0').trim_end_matches('0').len() > 15 {
        return None;
    }
    s.parse::<f64>().ok().filter(|n| n.is_finite())
}

/// A path-like string (it holds a `/` and no space) without its leading `./` (unless what
/// follows is another `/`: `.//` is not `/`) and its trailing `/` (the root `/` stays).
fn path_trimmed(s: &str) -> &str {
    if !s.contains('/') || s.contains(' ') {
        return s;
    }
    let mut p = s;
    while p.len() > 2 && p.starts_with("./") && !p[2..].starts_with('/') {
        p = &p[2..];
    }
    while p.len() > 1 && p.ends_with('/') {
        p = &p[..p.len() - 1];
    }
    p
}

fn write_string(s: &str, out: &mut String) {
    // Any unambiguous encoding works: only equality of signatures matters.
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_tool_repetition_with_defaults_and_caps_at_window() {
        let mut d = LoopDetector::new(None, None);
        let call = [("search", r#"{"q":"x","n":1}"#)];
        assert!(d.record_tool_calls(&call).is_none());
        assert!(d.record_tool_calls(&call).is_none());
        let info = d.record_tool_calls(&call).unwrap();
        assert_eq!(info.kind, LoopKind::ToolRepetition);
        assert_eq!(info.repetitions, 3);
        assert_eq!(
            info.detail,
            "Tool call \"search\" with identical arguments has repeated 3 times consecutively. The agent appears to be stuck in a loop."
        );
        assert_eq!(d.record_tool_calls(&call).unwrap().repetitions, 4);
        assert_eq!(d.record_tool_calls(&call).unwrap().repetitions, 4);
    }

    #[test]
    fn key_order_and_call_order_do_not_matter_but_values_do() {
        let mut d = LoopDetector::new(Some(2.0), None);
        assert!(d.record_tool_calls(&[("a", r#"{"x":1,"y":{"p":1,"q":2}}"#), ("b", "{}")]).is_none());
        let info = d.record_tool_calls(&[("b", "{}"), ("a", r#"{"y":{"q":2,"p":1},"x":1}"#)]).unwrap();
        assert_eq!(info.detail.split('"').nth(1), Some("b, a"));
        assert!(d.record_tool_calls(&[("b", "{}"), ("a", r#"{"x":2,"y":{"q":2,"p":1}}"#)]).is_none());
    }

    #[test]
    fn canonical_fast_path_agrees_with_the_slow_one() {
        for (json, fast) in [
            (r#"{"a":1,"b":{"c":[1,{"d":2,"e":"x,}"}]}}"#, true),
            (r#"{"b":1,"a":2}"#, false),
            (r#"{"a":{"z":1,"y":2}}"#, false),
            (r#"{"a\"b":1}"#, false),
            (r#"{"a": 1}"#, false),
            ("[]", true),
            (r#"{"k":"{\"b\":1,\"a\":2}"}"#, true),
        ] {
            assert_eq!(already_canonical(json.as_bytes()), fast, "{json}");
            let mut slow = String::new();
            canonical_into(json, &mut slow, Match::Exact).unwrap();
            if fast {
                assert_eq!(slow, json, "{json}");
            }
        }
    }

    #[test]
    fn deep_inputs_and_recycled_window_entries_compare_by_value() {
        // Deeper than the fast scan's fixed stack: the general path decides, key order still
        // does not matter.
        let deep = |inner: &str| format!("{}{}{}", r#"{"k":"#.repeat(20), inner, "}".repeat(20));
        let (sorted, unsorted) = (deep(r#"{"a":1,"b":2}"#), deep(r#"{"b":2,"a":1}"#));
        assert!(!already_canonical(sorted.as_bytes()));
        let mut d = LoopDetector::new(Some(2.0), Some(2.0));
        assert!(d.record_tool_calls(&[("t", &sorted)]).is_none());
        assert_eq!(d.record_tool_calls(&[("t", &unsorted)]).unwrap().repetitions, 2);
        // Entries leaving the window are reused as buffers: a longer, then a shorter, then an
        // equal signature must still compare exactly.
        let mut d = LoopDetector::new(Some(2.0), Some(2.0));
        for (input, reps) in [
            (r#"{"a":"long value here"}"#, None),
            (r#"{"a":1}"#, None),
            (r#"{"a":"long"}"#, None),
            (r#"{"a":"long"}"#, Some(2)),
            (r#"{"a":1}"#, None),
        ] {
            assert_eq!(d.record_tool_calls(&[("t", input)]).map(|i| i.repetitions), reps, "{input}");
        }
        // Not JSON: compared as written (one call and several).
        let mut d = LoopDetector::new(Some(2.0), None);
        assert!(d.record_tool_calls(&[("t", "not json")]).is_none());
        assert!(d.record_tool_calls(&[("t", "not json")]).is_some());
        assert!(d.record_tool_calls(&[("t", "x{"), ("u", "{}")]).is_none());
        assert!(d.record_tool_calls(&[("u", "{}"), ("t", "x{")]).is_some());
    }

    #[test]
    fn inputs_nested_thousands_deep_are_compared_as_written_without_recursing() {
        // Deep enough to overflow any thread's stack if each level took a frame.
        let deep = |leaf: &str, n: usize| format!("{}{}{}", r#"{"k":"#.repeat(n), leaf, "}".repeat(n));
        let mut d = LoopDetector::new(Some(2.0), None);
        assert!(d.record_tool_calls(&[("t", &deep("1", 200_000))]).is_none());
        assert_eq!(d.record_tool_calls(&[("t", &deep("1", 200_000))]).unwrap().repetitions, 2);
        assert!(d.record_tool_calls(&[("t", &deep("2", 200_000))]).is_none());
        // Several calls take the sorting path.
        let mut d = LoopDetector::new(Some(2.0), None);
        let (a, b) = (deep("[1]", 100_000), deep("[2]", 100_000));
        assert!(d.record_tool_calls(&[("t", &a), ("u", &b)]).is_none());
        assert!(d.record_tool_calls(&[("u", &b), ("t", &a)]).is_some());
        // At the bound key order still does not matter; strings holding brackets do not count.
        let at = |inner: &str| deep(inner, CANONICAL_MAX_DEPTH - 1);
        let mut d = LoopDetector::new(Some(2.0), None);
        assert!(d.record_tool_calls(&[("t", &at(r#"{"a":"[[[[{{{{","b":2}"#))]).is_none());
        assert!(d.record_tool_calls(&[("t", &at(r#"{"b":2,"a":"[[[[{{{{"}"#))]).is_some());
        assert!(!nesting_deeper_than(at("{}").as_bytes(), CANONICAL_MAX_DEPTH));
        assert!(nesting_deeper_than(deep("{}", CANONICAL_MAX_DEPTH).as_bytes(), CANONICAL_MAX_DEPTH));
    }

    #[test]
    fn signatures_prefix_each_name_with_its_length() {
        // The length keeps a name apart from the input it is written next to.
        for (name, prefix) in [("", "0:"), ("t", "1:t"), (&"n".repeat(10) as &str, "10:nnnnnnnnnn")] {
            assert_eq!(signature_into(&[(name, "{}")], String::new(), Match::Exact), format!("{prefix}{{}}\u{0}"));
        }
        let long = "x".repeat(12_345);
        assert!(signature_into(&[(&long, "{}"), ("b", "1")], String::new(), Match::Exact)
            .contains(&format!("12345:{long}{{}}\u{0}")));
        assert_ne!(
            signature_into(&[("ab", "1")], String::new(), Match::Exact),
            signature_into(&[("a", "b1")], String::new(), Match::Exact)
        );
    }

    fn sig(input: &str, matching: Match) -> String {
        signature_into(&[("t", input)], String::new(), matching)
    }

    #[test]
    fn canonical_match_sees_through_formatting_and_exact_does_not() {
        for (a, b) in [
            (r#"{"command":"ls  -la "}"#, r#"{"command":"ls -la"}"#),
            (r#"{"command":"\tls\n-la"}"#, r#"{"command":"ls -la"}"#),
            (r#"{"path":"./src/"}"#, r#"{"path":"src"}"#),
            (r#"{"path":"././src//"}"#, r#"{"path":"src"}"#),
            (r#"{"path":"./a/b/"}"#, r#"{"path":"a/b"}"#),
            (r#"{"n":"1"}"#, r#"{"n":1}"#),
            (r#"{"n":" 1.50 "}"#, r#"{"n":1.5}"#),
            (r#"{"n":"1e3"}"#, r#"{"n":1000}"#),
            (r#"{"n":1.0}"#, r#"{"n":1}"#),
            (r#"{"n":"-0"}"#, r#"{"n":0}"#),
            ("{\"name\":\"Cafe\u{0301}\"}", r#"{"name":"Café"}"#),
            ("{\"name\":\"CAFE\u{0301}\"}", r#"{"name":"café"}"#),
            (r#"{"q":"Hello World"}"#, r#"{"q":"hello world"}"#),
            (r#"{"q":"\u00e9"}"#, r#"{"q":"é"}"#),
            (r#"{"list":[" a ","./b/"],"k":{"y":"2","x":"X"}}"#, r#"{"k":{"x":"x","y":2},"list":["a","b"]}"#),
            (r#""  top level ""#, r#""Top Level""#),
        ] {
            assert_eq!(sig(a, Match::Canonical), sig(b, Match::Canonical), "{a} / {b}");
            assert_ne!(sig(a, Match::Exact), sig(b, Match::Exact), "{a} / {b}");
        }
    }

    #[test]
    fn canonical_match_keeps_near_misses_apart() {
        for (a, b) in [
            (r#"{"command":"ls -la"}"#, r#"{"command":"ls -l a"}"#),
            (r#"{"command":"a b"}"#, r#"{"command":"ab"}"#),
            (r#"{"path":"src"}"#, r#"{"path":"src2"}"#),
            (r#"{"path":"./src/a"}"#, r#"{"path":"src/b"}"#),
            (r#"{"path":".//"}"#, r#"{"path":"/"}"#),
            (r#"{"path":"/"}"#, r#"{"path":""}"#),
            (r#"{"path":"../src"}"#, r#"{"path":"src"}"#),
            (r#"{"pattern":"a /"}"#, r#"{"pattern":"a "}"#),
            (r#"{"n":"1"}"#, r#"{"n":"1.5"}"#),
            (r#"{"n":"1"}"#, r#"{"n":2}"#),
            (r#"{"n":"01"}"#, r#"{"n":1}"#),
            (r#"{"n":"1."}"#, r#"{"n":1}"#),
            (r#"{"n":"+1"}"#, r#"{"n":1}"#),
            (r#"{"n":"12345678901234567890"}"#, r#"{"n":"12345678901234567891"}"#),
            (r#"{"n":"12345678901234567890"}"#, r#"{"n":12345678901234567890}"#),
            (r#"{"n":12345678901234567890}"#, r#"{"n":12345678901234567891}"#),
            (r#"{"b":"true"}"#, r#"{"b":true}"#),
            (r#"{"b":"null"}"#, r#"{"b":null}"#),
            (r#"{"name":"Café"}"#, r#"{"name":"Cafe"}"#),
            (r#"{"A":1}"#, r#"{"a":1}"#),
            (r#"{"list":["a","b"]}"#, r#"{"list":["b","a"]}"#),
            (r#"{"list":["a b"]}"#, r#"{"list":["a","b"]}"#),
            (r#"{"s":"1"}"#, r#"{"s":"\"1\""}"#),
        ] {
            assert_ne!(sig(a, Match::Canonical), sig(b, Match::Canonical), "{a} / {b}");
        }
    }

    #[test]
    fn a_canonical_detector_counts_formatting_variants_as_repeats() {
        let calls = [r#"{"command":"ls  -la "}"#, r#"{"command":"LS -la"}"#, r#"{"command":"ls\t-la"}"#];
        let mut d = LoopDetector::new(None, None).with_match(Match::Canonical);
        assert!(d.record_tool_calls(&[("bash", calls[0])]).is_none());
        assert!(d.record_tool_calls(&[("bash", calls[1])]).is_none());
        let info = d.record_tool_calls(&[("bash", calls[2])]).unwrap();
        assert_eq!(info.repetitions, 3);
        assert!(info.detail.starts_with("Tool call \"bash\" with identical arguments has repeated 3 times"));
        // Several calls per turn: call order still does not matter.
        let mut d = LoopDetector::new(Some(2.0), None).with_match(Match::Canonical);
        assert!(d.record_tool_calls(&[("a", r#"{"p":"./x/"}"#), ("b", r#"{"n":"2"}"#)]).is_none());
        assert!(d.record_tool_calls(&[("b", r#"{"n":2}"#), ("a", r#"{"p":"x"}"#)]).is_some());
        // The same inputs under the default never repeat.
        let mut d = LoopDetector::new(None, None);
        assert!(calls.iter().all(|c| d.record_tool_calls(&[("bash", c)]).is_none()));
        // Input that is not JSON, or too deep to re-emit, is compared as written.
        let mut d = LoopDetector::new(Some(2.0), None).with_match(Match::Canonical);
        assert!(d.record_tool_calls(&[("t", "not json")]).is_none());
        assert!(d.record_tool_calls(&[("t", "not json")]).is_some());
        let deep = format!("{}\"A\"{}", "[".repeat(200), "]".repeat(200));
        assert!(d.record_tool_calls(&[("t", &deep)]).is_none());
        assert!(d.record_tool_calls(&[("t", &deep.to_lowercase())]).is_none());
    }

    #[test]
    fn match_names() {
        assert_eq!(Match::from_name("exact"), Some(Match::Exact));
        assert_eq!(Match::from_name("canonical"), Some(Match::Canonical));
        assert_eq!(Match::from_name("Canonical"), None);
        assert_eq!(Match::default(), Match::Exact);
        assert_eq!(
            invalid_match_text("\"fuzzy\""),
            "Invalid configuration: loopDetection.match must be \"exact\" or \"canonical\", got \"fuzzy\""
        );
    }

    #[test]
    fn text_normalisation_and_reset_by_different_entry() {
        let mut d = LoopDetector::new(None, None);
        assert!(d.record_text("  hello \n\t world ").is_none());
        assert!(d.record_text("hello world").is_none());
        assert!(d.record_text("other").is_none());
        assert!(d.record_text("hello world").is_none());
        assert!(d.record_text("   ").is_none());
        assert!(d.record_text("hello   world").is_none());
        let info = d.record_text("hello world").unwrap();
        assert_eq!(info.repetitions, 3);
        assert_eq!(
            info.detail,
            "The agent has produced the same text response 3 times consecutively. It appears to be stuck in a loop."
        );
    }

    #[test]
    fn window_never_smaller_than_threshold() {
        let mut d = LoopDetector::new(Some(2.0), Some(10.0));
        let reps: Vec<usize> = (0..12).filter_map(|_| d.record_text("same")).map(|i| i.repetitions).collect();
        assert_eq!(reps, vec![2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10]);
        let mut d = LoopDetector::new(Some(5.0), Some(2.0));
        let reps: Vec<usize> = (0..6).filter_map(|_| d.record_text("same")).map(|i| i.repetitions).collect();
        assert_eq!(reps, vec![5, 5]);
    }
}
