//! CONTRACT §16: tool calls that local models print as text (Hermes tags, fenced or bare
//! JSON), and `repairToolArgs` for almost-JSON argument strings.
//!
//! Deliberate divergence (§21, quirk #38): candidate objects are found with a real JSON
//! tokenizer started at each `{`, so a stray `"` in the surrounding prose no longer hides
//! every later tool call.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::{Map, Value};

use super::jsjson::{empty_object, raw_object};
use crate::kernel::json::{is_js_space, js_trim};
use crate::kernel::message::Block;

/// Process-wide, like the original module-level counter.
static EXTRACTED: AtomicU64 = AtomicU64::new(0);

fn now_ms() -> u128 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis()).unwrap_or(0)
}

/// `extractToolCallsFromText(text, knownToolNames)`.
pub fn extract_tool_calls_from_text(text: &str, known: &[&str]) -> Vec<Block> {
    if text.is_empty() {
        return Vec::new();
    }
    let hermes: Vec<Block> = hermes_captures(text)
        .into_iter()
        .filter_map(|c| serde_json::from_str::<Value>(c).ok())
        .filter_map(|v| convert(&v, known))
        .collect();
    if !hermes.is_empty() {
        return hermes;
    }
    let unfenced = strip_fences(text);
    json_objects(&unfenced).iter().filter_map(|v| convert(v, known)).collect()
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

/// Replaces each match of `` /```(?:json)?\s*\n?([\s\S]*?)\n?\s*```/g `` by its capture.
fn strip_fences(text: &str) -> String {
    const FENCE: &str = "```";
    let mut out = String::with_capacity(text.len());
    let mut pos = 0;
    while let Some(f) = text[pos..].find(FENCE) {
        let open = pos + f;
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
    }
    out.push_str(&text[pos..]);
    out
}

/// Top-level JSON objects in prose, in order. Each `{` outside an already-taken object starts a
/// real JSON parse; a candidate that does not parse is skipped as a whole (its brace-balanced
/// extent), so objects nested in it are not extracted on their own.
fn json_objects(text: &str) -> Vec<Value> {
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

/// End (exclusive) of the brace-balanced region opened at `b[start] == b'{'`, with string
/// state tracked only inside it.
fn balanced_end(b: &[u8], start: usize) -> Option<usize> {
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
    let args = ["arguments", "parameters", "input"]
        .iter()
        .filter_map(|k| obj.get(*k))
        .find(|a| !a.is_null());
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
        let t = "x <tool_call>\n{\"name\":\"a\",\"arguments\":{\"q\":1.0}}\n</tool_call> {\"name\":\"b\",\"arguments\":{}}";
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
