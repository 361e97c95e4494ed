//! Loop detection (CONTRACT §6): two sliding windows, one of tool-call signatures and one of
//! normalised texts; a run of `max_repeats` equal tail entries is a loop.

use std::collections::VecDeque;

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::value::RawValue;

use crate::json::{is_js_space, js_trim};

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
    tools: VecDeque<String>,
    texts: VecDeque<String>,
}

impl LoopDetector {
    /// `max_repetitions` / `window` as given by the user (`None` = default 3 / 4).
    pub fn new(max_repetitions: Option<f64>, window: Option<f64>) -> LoopDetector {
        let max_repeats = max_repetitions.map(clamp_count).unwrap_or(3);
        let window = window.map(clamp_count).unwrap_or(4).max(max_repeats);
        LoopDetector { max_repeats, window, tools: VecDeque::new(), texts: VecDeque::new() }
    }

    /// `calls` = (name, input JSON text) per tool_use block, in block order.
    pub fn record_tool_calls<'a>(&mut self, calls: &[(&'a str, &'a str)]) -> Option<LoopInfo> {
        if calls.is_empty() {
            return None;
        }
        let sig = signature_into(calls, recycled(&mut self.tools, self.window));
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
fn push_canonical(input: &str, out: &mut String) {
    let trimmed = input.trim();
    if already_canonical(trimmed.as_bytes()) {
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
    if canonical_into(input, out).is_err() {
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
    use std::fmt::Write;
    let _ = write!(out, "{}:", name.len());
    out.push_str(name);
    out.push_str(canon_input);
    out.push('\u{0}');
}

/// Canonical form of a tool-call set, `<len>:<name><canonical input>\0` per call, sorted: key
/// order and call order do not matter, values do. Written into `out` (a recycled buffer).
fn signature_into(calls: &[(&str, &str)], mut out: String) -> String {
    if let [(name, input)] = calls {
        // One call (the usual turn): no sorting, so no intermediate strings.
        use std::fmt::Write;
        out.reserve(name.len() + input.len() + 8);
        let _ = write!(out, "{}:", name.len());
        out.push_str(name);
        push_canonical(input, &mut out);
        out.push('\u{0}');
        return out;
    }
    let mut items: Vec<(&str, String)> = calls
        .iter()
        .map(|(name, input)| {
            let mut canon = String::with_capacity(input.len());
            push_canonical(input, &mut canon);
            (*name, canon)
        })
        .collect();
    items.sort();
    for (n, i) in items {
        push_entry(&mut out, n, &i);
    }
    out
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

/// Re-emits JSON text with object keys sorted. Scalars are kept as written: the inputs come
/// from one serialiser (`JSON.stringify` or ours), so equal values have equal text.
fn canonical_into(json: &str, out: &mut String) -> Result<(), serde_json::Error> {
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
            canonical_into(v.get(), out)?;
        }
        out.push('}');
    } else if t.starts_with('[') {
        let items: Vec<&RawValue> = serde_json::from_str(json)?;
        out.push('[');
        for (i, v) in items.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            canonical_into(v.get(), out)?;
        }
        out.push(']');
    } else {
        out.push_str(json.trim());
    }
    Ok(())
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
            canonical_into(json, &mut slow).unwrap();
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
