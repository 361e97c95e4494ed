//! The bridge's rules and texts (CONTRACT §17, upstream `tool/mcp.ts`): tool names, the
//! duplicate error, the description default, the schema handed to the model, a call result
//! turned into the tool's text, and the failure text. Defined here once; the binding and the JS
//! glue only carry them.

use oma_core::json::{js_number, js_trim, push_json_string, to_js_json, utf16_len};
use serde_json::{Map, Value};

/// `requestTimeoutMs`'s default: `initialize`, the whole `tools/list` listing (every page under
/// one deadline) and each call.
pub const DEFAULT_REQUEST_TIMEOUT_MS: u64 = 60_000;

/// The most `tools/list` pages one connect reads: a server whose `nextCursor` never ends would
/// otherwise keep the connect pending and its memory growing.
pub const MAX_LIST_PAGES: usize = 1000;
/// The most tools one server may list.
pub const MAX_TOOLS: usize = 10_000;
/// The most bytes of `tools/list` answers one connect reads (all pages together; a page is one
/// message of at most `stdio::MAX_LINE_BYTES`).
pub const MAX_LIST_BYTES: usize = 32 * 1024 * 1024;
/// How deep a server's message may nest (serde_json's recursion limit, counted from the message
/// itself: a tool's `inputSchema` sits 5 levels down a `tools/list` answer).
pub const MAX_JSON_DEPTH: usize = 128;

/// The connect error when a listing passes one of the limits above; `what` names it
/// (`"1000 pages"`, `"10000 tools"`, …).
pub fn list_too_long(server: &str, what: &str) -> String {
    format!("MCP server \"{server}\" listed more than {what} in tools/list (the limit for one server)")
}

/// The connect error for a tool whose entry (its `inputSchema`, usually) nests too deeply.
pub fn tool_too_deep(server: &str, tool: &str) -> String {
    format!(
        "MCP server \"{server}\" listed tool \"{tool}\" with an inputSchema nested too deeply to read \
         (a message may nest at most {MAX_JSON_DEPTH} levels)"
    )
}

/// What a later timeout adds when a message too deep to tell its request was dropped.
pub fn unreadable_message() -> String {
    format!("the server sent a message nested more than {MAX_JSON_DEPTH} levels deep, which could not be read")
}

/// What a later timeout adds when the server sent an error with a `null` id (it could not read
/// a request, so no request can be told).
pub fn error_for_no_request(error: &str) -> String {
    format!("the server sent an error for no request: {error}")
}

/// A message (or a part of one the client needs) nested deeper than [`MAX_JSON_DEPTH`]: the
/// error of the request it answers.
pub fn message_too_deep(what: &str) -> String {
    format!("the server's {what} is nested too deeply to read (a message may nest at most {MAX_JSON_DEPTH} levels)")
}
/// `clientName`'s default (the `clientInfo.name` sent in `initialize`).
pub const DEFAULT_CLIENT_NAME: &str = "open-multi-agent";
/// `clientVersion`'s default.
pub const DEFAULT_CLIENT_VERSION: &str = "0.0.0";

/// The framework (and model) name of an MCP tool: `<prefix>_<raw>` when the trimmed prefix is
/// non-empty, else `raw`; then every `/` becomes `_` (providers refuse `/` in tool names).
/// Nothing else changes.
pub fn normalize_tool_name(raw: &str, prefix: Option<&str>) -> String {
    let prefix = prefix.map(js_trim).unwrap_or("");
    let base = if prefix.is_empty() { raw.to_string() } else { format!("{prefix}_{raw}") };
    base.replace('/', "_")
}

/// The error when two tools of one server normalise to the same name (connect fails).
pub fn duplicate_name_error(normalized: &str, previous_raw: &str, raw: &str) -> String {
    format!("Duplicate MCP tool name after normalization: \"{normalized}\" from \"{previous_raw}\" and \"{raw}\".")
}

/// A tool's description: the server's, else `MCP tool: <raw name>`.
pub fn description(raw: &str, description: Option<&str>) -> String {
    match description {
        Some(d) => d.to_string(),
        None => format!("MCP tool: {raw}"),
    }
}

/// The schema the model sees: the server's `inputSchema` when it is an object (not an array),
/// else `{ "type": "object" }`.
pub fn llm_input_schema(schema: Option<&Value>) -> Value {
    match schema {
        Some(v @ Value::Object(_)) => v.clone(),
        _ => {
            let mut m = Map::new();
            m.insert("type".into(), Value::String("object".into()));
            Value::Object(m)
        }
    }
}

/// The tool result's text when the call itself failed (timeout, abort, closed connection, a
/// JSON-RPC error, a malformed result).
pub fn call_failed(raw: &str, message: &str) -> String {
    format!("MCP tool \"{raw}\" failed: {message}")
}

/// A `tools/call` result as the tool's text (`toToolResultData`). The fallbacks of the original
/// for values `JSON.stringify` cannot write (BigInt, cycles) cannot occur for parsed JSON.
pub fn tool_result_text(result: &Value) -> String {
    let obj = match result {
        Value::Object(o) => o,
        // A result that is not an object: nothing to read, the compact JSON of it.
        other => return to_js_json(other),
    };
    // The legacy (protocol 2024-10-07) shape. `undefined` cannot come from JSON; `null` is kept.
    if let Some(legacy) = obj.get("toolResult") {
        return js_pretty(legacy);
    }
    let mut lines: Vec<String> = Vec::new();
    if let Some(Value::Array(blocks)) = obj.get("content") {
        for block in blocks {
            // `typeof block === 'object'`: arrays count as objects (with no `type`).
            let rec = match block {
                Value::Object(o) => Some(o),
                Value::Array(_) => None,
                _ => continue,
            };
            match rec.and_then(block_text) {
                Some(line) => lines.push(line),
                None => {
                    let ty = rec.and_then(|r| r.get("type")).filter(|t| !t.is_null());
                    let ty = ty.map(js_string).unwrap_or_else(|| "unknown".into());
                    lines.push(format!("[{ty}]\n{}", js_pretty(block)));
                }
            }
        }
    }
    if !lines.is_empty() {
        return lines.join("\n");
    }
    if let Some(sc) = obj.get("structuredContent") {
        return js_pretty(sc);
    }
    to_js_json(result)
}

/// The known content kinds; `None` for anything else (and for a known kind without the field
/// it needs), which the caller writes as `[type]` plus the block's JSON.
fn block_text(b: &Map<String, Value>) -> Option<String> {
    match s(b.get("type"))? {
        "text" => s(b.get("text")).map(str::to_string),
        kind @ ("image" | "audio") => {
            let data = s(b.get("data"))?;
            let default_mime = if kind == "image" { "image/*" } else { "audio/*" };
            let mime = s(b.get("mimeType")).unwrap_or(default_mime);
            Some(format!("[{kind} {mime}; base64 length={}]", utf16_len(data)))
        }
        "resource" => {
            let r = b.get("resource")?.as_object()?;
            let uri = s(r.get("uri")).unwrap_or("");
            if let Some(text) = s(r.get("text")) {
                return Some(format!("[resource {uri}]\n{text}"));
            }
            if let Some(blob) = s(r.get("blob")) {
                let mime = s(r.get("mimeType")).unwrap_or("");
                return Some(format!("[resource {uri}; mimeType={mime}; blob base64 length={}]", utf16_len(blob)));
            }
            Some(format!("[resource {uri}]"))
        }
        "resource_link" => {
            let mut head = String::from("[resource_link name=");
            push_json_string(&mut head, s(b.get("name")).unwrap_or(""));
            head.push_str(" uri=");
            push_json_string(&mut head, s(b.get("uri")).unwrap_or(""));
            head.push(']');
            match s(b.get("description")).unwrap_or("") {
                "" => Some(head),
                d => Some(format!("{head}\n{d}")),
            }
        }
        _ => None,
    }
}

fn s(v: Option<&Value>) -> Option<&str> {
    v.and_then(Value::as_str)
}

/// `String(value)` for a parsed JSON value.
fn js_string(v: &Value) -> String {
    match v {
        Value::Null => "null".into(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => js_number(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => s.clone(),
        Value::Object(_) => "[object Object]".into(),
        // Array.prototype.join: null (and undefined) elements are empty.
        Value::Array(a) => {
            a.iter().map(|e| if e.is_null() { String::new() } else { js_string(e) }).collect::<Vec<_>>().join(",")
        }
    }
}

/// `JSON.stringify(value, null, 2)`: the compact JS form (key order and number layout as JS
/// writes them) re-laid with two-space indentation, as JS lays it out.
pub fn js_pretty(v: &Value) -> String {
    indent(&to_js_json(v))
}

/// Lays out compact JSON text with JS's pretty layout: a line per member or element, `": "`
/// after keys, empty `{}` / `[]` kept on one line.
fn indent(compact: &str) -> String {
    let b = compact.as_bytes();
    let mut out = String::with_capacity(compact.len() * 2);
    let mut depth = 0usize;
    let mut i = 0;
    let newline = |out: &mut String, depth: usize| {
        out.push('\n');
        for _ in 0..depth {
            out.push_str("  ");
        }
    };
    while i < b.len() {
        match b[i] {
            b'"' => {
                // Copy the string token whole (escapes included).
                let start = i;
                i += 1;
                while i < b.len() && b[i] != b'"' {
                    if b[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
                i += 1;
                out.push_str(&compact[start..i.min(b.len())]);
                continue;
            }
            c @ (b'{' | b'[') => {
                let close = if c == b'{' { b'}' } else { b']' };
                if b.get(i + 1) == Some(&close) {
                    out.push(c as char);
                    out.push(close as char);
                    i += 2;
                    continue;
                }
                out.push(c as char);
                depth += 1;
                newline(&mut out, depth);
            }
            c @ (b'}' | b']') => {
                depth = depth.saturating_sub(1);
                newline(&mut out, depth);
                out.push(c as char);
            }
            b',' => {
                out.push(',');
                newline(&mut out, depth);
            }
            b':' => out.push_str(": "),
            _ => {
                // Numbers, literals: ASCII runs up to the next structural byte.
                let start = i;
                while i < b.len() && !matches!(b[i], b',' | b'}' | b']' | b':' | b'"' | b'{' | b'[') {
                    i += 1;
                }
                out.push_str(&compact[start..i]);
                continue;
            }
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn v(s: &str) -> Value {
        serde_json::from_str(s).unwrap()
    }

    #[test]
    fn names() {
        assert_eq!(normalize_tool_name("a/b/c", None), "a_b_c");
        assert_eq!(normalize_tool_name("x", Some("  gh  ")), "gh_x");
        assert_eq!(normalize_tool_name("x", Some("   ")), "x");
        assert_eq!(normalize_tool_name("Get-Thing.v2", Some("p/q")), "p_q_Get-Thing.v2");
        assert_eq!(
            duplicate_name_error("a_b", "a/b", "a_b"),
            "Duplicate MCP tool name after normalization: \"a_b\" from \"a/b\" and \"a_b\"."
        );
        assert_eq!(description("t", None), "MCP tool: t");
        assert_eq!(description("t", Some("")), "");
        assert_eq!(llm_input_schema(Some(&json!([1]))), json!({"type": "object"}));
        assert_eq!(llm_input_schema(None), json!({"type": "object"}));
        assert_eq!(
            llm_input_schema(Some(&json!({"type": "object", "properties": {}}))),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            call_failed("a/b", "MCP error -32001: Request timed out"),
            "MCP tool \"a/b\" failed: MCP error -32001: Request timed out"
        );
    }

    #[test]
    fn pretty_matches_js() {
        // Expected texts are what node's JSON.stringify(JSON.parse(src), null, 2) prints.
        assert_eq!(js_pretty(&v(r#"{"b":1.0,"a":[],"c":{},"2":"x\"y,{","1":[1e21,null,true]}"#)), "{\n  \"1\": [\n    1e+21,\n    null,\n    true\n  ],\n  \"2\": \"x\\\"y,{\",\n  \"b\": 1,\n  \"a\": [],\n  \"c\": {}\n}");
        assert_eq!(js_pretty(&v("\"s\"")), "\"s\"");
        assert_eq!(js_pretty(&v("null")), "null");
        assert_eq!(js_pretty(&v(r#"[{"k":"a\\"}]"#)), "[\n  {\n    \"k\": \"a\\\\\"\n  }\n]");
    }

    #[test]
    fn every_content_kind() {
        let r = v(r#"{"content":[
            {"type":"text","text":"hello"},
            {"type":"image","data":"AAAA","mimeType":"image/png"},
            {"type":"image","data":"AA"},
            {"type":"audio","data":"AAA=","mimeType":"audio/wav"},
            {"type":"audio","data":""},
            {"type":"resource","resource":{"uri":"file:///a","text":"body"}},
            {"type":"resource","resource":{"uri":"file:///b","blob":"QUJD","mimeType":"application/octet-stream"}},
            {"type":"resource","resource":{"blob":"QQ=="}},
            {"type":"resource","resource":{"uri":"u"}},
            {"type":"resource_link","name":"n \"q\"","uri":"file:///c","description":"d"},
            {"type":"resource_link","uri":"x"},
            {"type":"text","text":5},
            {"type":"future","x":1},
            {"no":"type"},
            {"type":7},
            [1],
            "skipped", 3, null
        ]}"#);
        let expected = [
            "hello",
            "[image image/png; base64 length=4]",
            "[image image/*; base64 length=2]",
            "[audio audio/wav; base64 length=4]",
            "[audio audio/*; base64 length=0]",
            "[resource file:///a]\nbody",
            "[resource file:///b; mimeType=application/octet-stream; blob base64 length=4]",
            "[resource ; mimeType=; blob base64 length=4]",
            "[resource u]",
            "[resource_link name=\"n \\\"q\\\"\" uri=\"file:///c\"]\nd",
            "[resource_link name=\"\" uri=\"x\"]",
            "[text]\n{\n  \"type\": \"text\",\n  \"text\": 5\n}",
            "[future]\n{\n  \"type\": \"future\",\n  \"x\": 1\n}",
            "[unknown]\n{\n  \"no\": \"type\"\n}",
            "[7]\n{\n  \"type\": 7\n}",
            "[unknown]\n[\n  1\n]",
        ]
        .join("\n");
        assert_eq!(tool_result_text(&r), expected);
    }

    #[test]
    fn fallbacks() {
        assert_eq!(
            tool_result_text(&v(r#"{"toolResult":{"a":1},"content":[{"type":"text","text":"x"}]}"#)),
            "{\n  \"a\": 1\n}"
        );
        assert_eq!(tool_result_text(&v(r#"{"toolResult":null}"#)), "null");
        assert_eq!(tool_result_text(&v(r#"{"content":[],"structuredContent":{"n":2.50}}"#)), "{\n  \"n\": 2.5\n}");
        assert_eq!(tool_result_text(&v(r#"{"content":["x"],"isError":true}"#)), r#"{"content":["x"],"isError":true}"#);
        assert_eq!(tool_result_text(&v(r#"{}"#)), "{}");
        // UTF-16 length, as JS's `.length`.
        assert_eq!(
            tool_result_text(&v(r#"{"content":[{"type":"image","data":"😀"}]}"#)),
            "[image image/*; base64 length=2]"
        );
    }
}
