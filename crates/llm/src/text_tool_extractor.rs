//! The text-tool-extractor (the seed's `tool/text-tool-extractor.ts`; CONTRACT §16): tool calls
//! that local models print as text (Hermes tags, fenced or bare JSON), and `repairToolArgs` for
//! almost-JSON argument strings.
//!
//! Deliberate divergence (§21, quirk #38): candidate objects are found with a real JSON
//! tokenizer started at each `{`, so a stray `"` in the surrounding prose no longer hides
//! every later tool call.

use std::borrow::Cow;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use oma_core::json::{empty_object, raw_object};
use oma_core::json::{is_js_space, js_trim};
use oma_core::kernel::message::Block;

/// Process-wide, like the original module-level counter.
static EXTRACTED: AtomicU64 = AtomicU64::new(0);

fn now_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

/// `extractToolCallsFromText(text, knownToolNames)`.
pub fn extract_tool_calls_from_text(text: &str, known: &[&str]) -> Vec<Block> {
    extract_tool_calls_until(text, known, &|| false).unwrap_or_default()
}

/// Text scanned between two looks at `aborted`.
const ABORT_CHECK_BYTES: usize = 64 << 10;

/// `extract_tool_calls_from_text`, asking `aborted` every `ABORT_CHECK_BYTES` of text scanned
/// (a run's call passes its abort signal): `None` once it answers true. The scan is linear in
/// the text, so this matters only for texts of many megabytes.
pub fn extract_tool_calls_until(text: &str, known: &[&str], aborted: &dyn Fn() -> bool) -> Option<Vec<Block>> {
    if text.is_empty() {
        return Some(Vec::new());
    }
    let hermes: Vec<Block> = hermes_captures(text)
        .into_iter()
        .filter_map(|c| serde_json::from_str::<Value>(c).ok())
        .filter_map(|v| convert(&v, known))
        .collect();
    if !hermes.is_empty() {
        return Some(hermes);
    }
    if aborted() {
        return None;
    }
    let unfenced = strip_fences(text);
    // The usual reply with tools but no call has no `{` at all: nothing to allocate.
    if memchr::memchr(b'{', unfenced.as_bytes()).is_none() {
        return Some(Vec::new());
    }
    Some(json_objects(&unfenced, aborted)?.iter().filter_map(|v| convert(v, known)).collect())
}

/// Captures of `/<tool_call>\s*([\s\S]*?)\s*<\/tool_call>/g`, trimmed.
fn hermes_captures(text: &str) -> Vec<&str> {
    const OPEN: &str = "<tool_call>";
    const CLOSE: &str = "</tool_call>";
    let mut out = Vec::new();
    let mut pos = 0;
    while let Some(o) = text[pos..].find(OPEN) {
        let start = pos + o + OPEN.len();
        match text[start..].find(CLOSE) {
            Some(c) => {
                out.push(js_trim(&text[start..start + c]));
                pos = start + c + CLOSE.len();
            }
            None => break,
        }
    }
    out
}

/// Replaces each match of `` /```(?:json)?\s*\n?([\s\S]*?)\n?\s*```/g `` by its capture
/// (`text` itself when it has no fence: no copy).
fn strip_fences(text: &str) -> Cow<'_, str> {
    const FENCE: &str = "```";
    let Some(first) = text.find(FENCE) else { return Cow::Borrowed(text) };
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    let mut next = Some(first);
    while let Some(open) = next {
        let mut body = open + FENCE.len();
        if text[body..].starts_with("json") {
            body += 4;
        }
        // `\s*` is greedy and swallows the optional `\n` too.
        let ws = text[body..].find(|c: char| !is_js_space(c)).unwrap_or(text.len() - body);
        let cap_start = body + ws;
        let Some(close) = text[cap_start..].find(FENCE) else { break };
        let cap_end = cap_start + close;
        let capture = text[cap_start..cap_end].trim_end_matches(is_js_space);
        out.push_str(&text[pos..open]);
        out.push_str(capture);
        pos = cap_end + FENCE.len();
        next = text[pos..].find(FENCE).map(|f| pos + f);
    }
    out.push_str(&text[pos..]);
    Cow::Owned(out)
}

/// Top-level JSON objects in prose, in order. Each `{` outside an already-taken object starts a
/// real JSON parse; a candidate that does not parse is skipped as a whole (its brace-balanced
/// extent), so objects nested in it are not extracted on their own.
///
/// A JSON object that parses is exactly its brace-balanced extent (`balanced_end`), so each
/// candidate is parsed over that extent only, and the extents of all `{` come from one pass
/// (`brace_ends`): linear in the text. (Parsing from each `{` to wherever the parse failed, and
/// scanning for the extent from each `{` again, was quadratic: 80 KB of `{"a":` took 11 s.)
fn json_objects(text: &str, aborted: &dyn Fn() -> bool) -> Option<Vec<Value>> {
    let b = text.as_bytes();
    let ends = brace_ends(b, aborted)?;
    let mut out = Vec::new();
    // Text before `from` belongs to a candidate already taken or skipped.
    let mut from = 0;
    let mut parsed = 0;
    for (k, i) in memchr::memchr_iter(b'{', b).enumerate() {
        if i < from || ends[k] == NO_END {
            continue;
        }
        let end = ends[k] as usize;
        #[cfg(test)]
        crate::work::count(end - i);
        if let Ok(v) = serde_json::from_str::<Value>(&text[i..end]) {
            out.push(v);
        }
        from = end;
        parsed += end - i;
        if parsed >= ABORT_CHECK_BYTES {
            parsed = 0;
            if aborted() {
                return None;
            }
        }
    }
    Some(out)
}

/// `brace_ends`' mark of a `{` whose region never closes.
const NO_END: u32 = u32::MAX;

/// Where a scan started at some `{` stands: outside strings, in a string, or just after a
/// backslash in a string.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Lex {
    Out,
    Str,
    Esc,
}

/// Scans that have reached the same `Lex` at the same byte: they read every later byte alike.
/// `levels[d]` are the still-open `{` that the `d`-th unmatched `}` of the group (counted from
/// the top of the stack) closes, as a circular list through `brace_ends`' slots, by its tail.
struct Group {
    lex: Lex,
    levels: Vec<u32>,
}

/// For the `k`-th `{` of `b`, the end (exclusive) of the brace-balanced region it opens (depth
/// counted outside strings, string state tracked from that `{` on; `tests::balanced_end` is
/// that scan from one start), or `NO_END`; all of them in one pass, `None` if `aborted`.
///
/// A scan started at a `{` tracks string state from there, so two starts can read the same
/// byte differently (one inside a string, one outside). But a scan is in one of three states
/// (`Lex`), and scans in the same state at the same byte agree from there on; they are kept as
/// one `Group`, so at most three groups are alive at any byte. A new group starts at a `{` that
/// no group reads as outside a string. In a group the open `{` form a stack; when two groups
/// meet, their stacks close in step from the top, so the smaller one's levels are appended to
/// the larger one's (a list concatenation each, and the smaller's levels are gone: linear in
/// all). Memory: 4 bytes per `{` and 4 per still-open level.
fn brace_ends(b: &[u8], aborted: &dyn Fn() -> bool) -> Option<Vec<u32>> {
    // Offsets fit in u32 below 4 GiB; nothing larger reaches here (responses are limited to
    // 64 MiB, a JS string is under 2 GiB as UTF-8), but stay correct: no region then.
    let count = memchr::memchr_iter(b'{', b).count();
    if b.len() >= NO_END as usize {
        return Some(vec![NO_END; count]);
    }
    // While a `{` is open: the next member of its level's circular list; then its end.
    let mut slot = vec![NO_END; count];
    let mut groups: Vec<Group> = Vec::new();
    let mut k = 0u32;
    // Some group is just after a backslash: the next byte, whatever it is, ends that.
    let mut escaped = false;
    for (chunk_no, chunk) in b.chunks(ABORT_CHECK_BYTES).enumerate() {
        if chunk_no > 0 && aborted() {
            return None;
        }
        let base = chunk_no * ABORT_CHECK_BYTES;
        for (j, &c) in chunk.iter().enumerate() {
            if !escaped && !matches!(c, b'{' | b'}' | b'"' | b'\\') {
                continue;
            }
            #[cfg(test)]
            crate::work::count(groups.len() + 1);
            let mut opened = c != b'{';
            for g in groups.iter_mut() {
                g.lex = match (g.lex, c) {
                    (Lex::Esc, _) => Lex::Str,
                    (Lex::Str, b'\\') => Lex::Esc,
                    (Lex::Str, b'"') => Lex::Out,
                    (Lex::Str, _) => Lex::Str,
                    (Lex::Out, b'"') => Lex::Str,
                    (Lex::Out, b'{') => {
                        slot[k as usize] = k;
                        g.levels.push(k);
                        opened = true;
                        Lex::Out
                    }
                    (Lex::Out, b'}') => {
                        if let Some(tail) = g.levels.pop() {
                            close_level(&mut slot, tail, (base + j + 1) as u32);
                        }
                        Lex::Out
                    }
                    (Lex::Out, _) => Lex::Out,
                };
            }
            if !opened {
                slot[k as usize] = k;
                groups.push(Group { lex: Lex::Out, levels: vec![k] });
            }
            if c == b'{' {
                k += 1;
            }
            if groups.len() > 1 || c == b'}' {
                // A group with nothing open has no scan left to answer for.
                groups.retain(|g| !g.levels.is_empty());
                merge_groups(&mut groups, &mut slot);
            }
            escaped = groups.iter().any(|g| g.lex == Lex::Esc);
        }
    }
    for g in groups {
        for tail in g.levels {
            close_level(&mut slot, tail, NO_END);
        }
    }
    Some(slot)
}

/// Sets `end` for every member of the circular list whose tail is `tail`.
fn close_level(slot: &mut [u32], tail: u32, end: u32) {
    let mut m = slot[tail as usize];
    loop {
        let next = slot[m as usize];
        slot[m as usize] = end;
        #[cfg(test)]
        crate::work::count(1);
        if m == tail {
            return;
        }
        m = next;
    }
}

/// Merges the groups that are in the same state (at most three groups, so a few compares).
fn merge_groups(groups: &mut Vec<Group>, slot: &mut [u32]) {
    let mut a = 0;
    while a < groups.len() {
        let mut c = a + 1;
        while c < groups.len() {
            if groups[a].lex != groups[c].lex {
                c += 1;
                continue;
            }
            let mut other = groups.swap_remove(c);
            if other.levels.len() > groups[a].levels.len() {
                std::mem::swap(&mut other.levels, &mut groups[a].levels);
            }
            let big = &mut groups[a].levels;
            let offset = big.len() - other.levels.len();
            for (t, small_tail) in other.levels.into_iter().enumerate() {
                // Concatenating two circular lists: swap the tails' successors.
                let big_tail = big[offset + t];
                slot.swap(big_tail as usize, small_tail as usize);
                #[cfg(test)]
                crate::work::count(1);
            }
        }
        a += 1;
    }
}

fn convert(v: &Value, known: &[&str]) -> Option<Block> {
    let mut obj = v.as_object()?;
    if let Some(f) = obj.get("function") {
        // `typeof f === 'object' && f !== null`: arrays qualify too (and then lack a name).
        match f {
            Value::Object(inner) => obj = inner,
            Value::Array(_) => return None,
            _ => {}
        }
    }
    let name = obj.get("name")?.as_str()?;
    if name.is_empty() || (!known.is_empty() && !known.contains(&name)) {
        return None;
    }
    let args = ["arguments", "parameters", "input"].iter().filter_map(|k| obj.get(*k)).find(|a| !a.is_null());
    let input = match args {
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(Value::Object(m)) => raw_object(&m),
            _ => empty_object(),
        },
        Some(Value::Object(m)) => raw_object(m),
        _ => empty_object(),
    };
    let n = EXTRACTED.fetch_add(1, Ordering::Relaxed) + 1;
    Some(Block::ToolUse {
        id: format!("extracted_call_{}_{}", now_ms(), n),
        name: name.to_string(),
        input,
        signature: None,
    })
}

/// `repairToolArgs(raw)`: one `"key": value` pair from almost-JSON; the value is a string.
pub fn repair_tool_args(raw: &str) -> Option<Map<String, Value>> {
    let args = js_trim(raw);
    if !args.ends_with('}') {
        return None;
    }
    let body_end = args.len() - 1;
    // The pattern is unanchored at the start: try each `{` left to right.
    for (open, _) in args.match_indices('{') {
        if open >= body_end {
            break;
        }
        let rest = &args[open + 1..body_end];
        let rest = rest.trim_start_matches(is_js_space);
        let Some(after_q) = rest.strip_prefix('"') else { continue };
        let Some(kq) = after_q.find('"') else { continue };
        if kq == 0 {
            continue;
        }
        let key = &after_q[..kq];
        let after_key = after_q[kq + 1..].trim_start_matches(is_js_space);
        let Some(after_colon) = after_key.strip_prefix(':') else { continue };
        let value = js_trim(after_colon);
        let value = unquote(value);
        let mut m = Map::new();
        m.insert(key.to_string(), Value::String(value));
        return Some(m);
    }
    None
}

fn unquote(v: &str) -> String {
    for q in ["\"\"\"", "'''"] {
        if v.starts_with(q) && v.ends_with(q) {
            return v.get(3..v.len().saturating_sub(3)).unwrap_or("").to_string();
        }
    }
    if v.starts_with('"') && v.ends_with('"') {
        let inner = v.get(1..v.len().saturating_sub(1)).unwrap_or("");
        return inner.replace("\\\"", "\"").replace("\\\\", "\\");
    }
    v.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::cell::Cell;

    /// The work `f` does: bytes parsed, group updates, list operations.
    fn work_of(f: impl FnOnce()) -> usize {
        crate::work::reset();
        f();
        crate::work::done()
    }

    /// The scan from one `{` (the previous implementation ran it from each candidate).
    pub(super) fn balanced_end(b: &[u8], start: usize) -> Option<usize> {
        let (mut depth, mut in_str, mut esc) = (0usize, false, false);
        for (k, &c) in b.iter().enumerate().skip(start) {
            if in_str {
                if esc {
                    esc = false;
                } else if c == b'\\' {
                    esc = true;
                } else if c == b'"' {
                    in_str = false;
                }
                continue;
            }
            match c {
                b'"' => in_str = true,
                b'{' => depth += 1,
                b'}' => {
                    depth -= 1;
                    if depth == 0 {
                        return Some(k + 1);
                    }
                }
                _ => {}
            }
        }
        None
    }

    /// The previous `json_objects`: a streaming parse from each candidate, then the scan.
    fn json_objects_reference(text: &str) -> Vec<Value> {
        let b = text.as_bytes();
        let mut out = Vec::new();
        let mut i = 0;
        while i < b.len() {
            if b[i] != b'{' {
                i += 1;
                continue;
            }
            let mut stream = serde_json::Deserializer::from_str(&text[i..]).into_iter::<Value>();
            match stream.next() {
                Some(Ok(v)) => {
                    i += stream.byte_offset();
                    out.push(v);
                }
                _ => i = balanced_end(b, i).unwrap_or(i + 1),
            }
        }
        out
    }

    /// A small deterministic generator (xorshift), so failures reproduce.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
            from[(self.next() % from.len() as u64) as usize]
        }
    }

    #[test]
    fn one_pass_ends_match_the_scan_from_each_brace() {
        let pieces = ["{", "}", "\"", "\\", ":", ",", "a", " ", "1", "[", "]", "{\"name\":\"f\"}", "\\\"", "é"];
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        for round in 0..30_000 {
            // Mostly short texts (every small shape), some long ones (many groups meeting).
            let len = 1 + (rng.next() % if round % 10 == 0 { 400 } else { 40 }) as usize;
            let text: String = (0..len).map(|_| rng.pick(&pieces)).collect();
            let b = text.as_bytes();
            let ends = brace_ends(b, &|| false).unwrap();
            let want: Vec<u32> =
                memchr::memchr_iter(b'{', b).map(|i| balanced_end(b, i).map_or(NO_END, |e| e as u32)).collect();
            assert_eq!(ends, want, "round {round}: {text:?}");
            let got = json_objects(&text, &|| false).unwrap();
            assert_eq!(got, json_objects_reference(&text), "round {round}: {text:?}");
        }
    }

    #[test]
    fn unbalanced_braces_cost_linear_work() {
        // Each took seconds to minutes before (a scan to the end of the text from every `{`).
        let n = 200_000;
        let inputs = [
            "{\"a\":".repeat(n / 5),
            "{".repeat(n),
            "{\"".repeat(n / 2),
            "{\"{\\\"".repeat(n / 5),
            format!("{}{}", "{\"a\":[".repeat(n / 6), "1,".repeat(n / 2)),
            format!("\"{}", "{\"x\":\"}".repeat(n / 7)),
            "{\"\\".repeat(n / 3),
        ];
        for text in &inputs {
            let w = work_of(|| {
                json_objects(text, &|| false).unwrap();
            });
            assert!(w <= 8 * text.len(), "{} bytes of {:?}…: {w} steps", text.len(), &text[..12]);
        }
        // The same through the public function, with a tool name to look for.
        let text = "{\"a\":".repeat(16_000);
        assert!(extract_tool_calls_from_text(&text, &["a"]).is_empty());
    }

    #[test]
    fn an_abort_stops_the_scan() {
        let text = "{\"a\":".repeat(100_000);
        let asked = Cell::new(0);
        let aborted = || {
            asked.set(asked.get() + 1);
            asked.get() > 2
        };
        assert!(extract_tool_calls_until(&text, &["a"], &aborted).is_none());
        assert_eq!(asked.get(), 3);
        assert_eq!(extract_tool_calls_until("{\"name\":\"a\"}", &["a"], &|| false).unwrap().len(), 1);
    }

    fn calls(text: &str, known: &[&str]) -> Vec<(String, String)> {
        extract_tool_calls_from_text(text, known)
            .into_iter()
            .map(|b| match b {
                Block::ToolUse { name, input, id, .. } => {
                    assert!(id.starts_with("extracted_call_"));
                    (name, input.get().to_string())
                }
                _ => panic!("not a tool_use"),
            })
            .collect()
    }

    #[test]
    fn hermes_tags_win() {
        let t =
            "x <tool_call>\n{\"name\":\"a\",\"arguments\":{\"q\":1.0}}\n</tool_call> {\"name\":\"b\",\"arguments\":{}}";
        assert_eq!(calls(t, &["a", "b"]), vec![("a".into(), "{\"q\":1}".into())]);
    }

    #[test]
    fn fenced_and_bare_json() {
        let t = "Sure:\n```json\n{\"function\":{\"name\":\"get\",\"arguments\":\"{\\\"city\\\":\\\"Paris\\\"}\"}}\n```\nand {\"name\":\"get\",\"parameters\":{\"x\":[1,{\"y\":2}]}} plus {\"name\":\"nope\"}";
        assert_eq!(
            calls(t, &["get"]),
            vec![("get".into(), "{\"city\":\"Paris\"}".into()), ("get".into(), "{\"x\":[1,{\"y\":2}]}".into())]
        );
        // no whitelist: any name
        assert_eq!(calls("{\"name\":\"z\",\"input\":\"[1]\"}", &[]), vec![("z".into(), "{}".into())]);
    }

    #[test]
    fn stray_quote_in_prose_does_not_disable_extraction() {
        let t = "He said \"hello and then: {\"name\":\"run\",\"arguments\":{\"a\":\"}\"}}";
        assert_eq!(calls(t, &["run"]), vec![("run".into(), "{\"a\":\"}\"}".into())]);
    }

    #[test]
    fn nested_objects_of_a_broken_candidate_are_not_extracted() {
        let t = "{ broken {\"name\":\"run\"} } then {\"name\":\"run\"}";
        assert_eq!(calls(t, &["run"]).len(), 1);
        assert!(calls("", &[]).is_empty());
        assert!(calls("{\"name\":\"\"}", &[]).is_empty());
    }

    #[test]
    fn repairs_single_pair() {
        let r = repair_tool_args("  {\"command\": \"ls \\\"a\\\" \\\\ b\"}  ").unwrap();
        assert_eq!(r.get("command").unwrap(), "ls \"a\" \\ b");
        let r = repair_tool_args("{\"code\": \"\"\"print(1)\"\"\"}").unwrap();
        assert_eq!(r.get("code").unwrap(), "print(1)");
        let r = repair_tool_args("junk {\"n\": 42 }").unwrap();
        assert_eq!(r.get("n").unwrap(), "42");
        assert!(repair_tool_args("{\"a\": 1").is_none());
        assert!(repair_tool_args("no braces").is_none());
    }
}
