//! Conversation model: `ContentBlock` / `LLMMessage` / `TokenUsage` as plain Rust.
//!
//! Messages arrive from JS as JSON text (`JSON.stringify` output) and are kept here as typed
//! blocks. Tool inputs stay as the exact JSON text JS produced (`Box<RawValue>`), so key order
//! and number formatting survive untouched and re-serialising reproduces `JSON.stringify`.

use std::borrow::Cow;

use serde::ser::{SerializeMap, Serializer};
use serde::Serialize;
use serde_json::value::RawValue;

use crate::json::utf16_len;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    User,
    Assistant,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::User => "user",
            Role::Assistant => "assistant",
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Usage {
    pub input_tokens: f64,
    pub output_tokens: f64,
}

impl Usage {
    /// Counts as the kernel keeps them: a non-finite count (an adapter's `NaN`, `Infinity`) is 0,
    /// so one broken response cannot turn the run's totals and the budget check into NaN.
    pub fn finite(input_tokens: f64, output_tokens: f64) -> Usage {
        let f = |v: f64| if v.is_finite() { v } else { 0.0 };
        Usage { input_tokens: f(input_tokens), output_tokens: f(output_tokens) }
    }
    pub fn add(&mut self, other: Usage) {
        self.input_tokens += other.input_tokens;
        self.output_tokens += other.output_tokens;
    }
    pub fn total(&self) -> f64 {
        self.input_tokens + self.output_tokens
    }
}

#[derive(Debug, Clone)]
pub enum Block {
    /// `text` is `None` only for a JS block whose `text` was `undefined` (kept as JS would).
    Text {
        text: Option<String>,
    },
    Reasoning {
        text: String,
        signature: Option<String>,
        redacted_data: Option<String>,
        provenance: Option<String>,
    },
    ToolUse {
        id: String,
        name: String,
        input: Box<RawValue>,
        signature: Option<String>,
    },
    ToolResult {
        tool_use_id: String,
        content: String,
        is_error: Option<bool>,
    },
    Image {
        media_type: String,
        data: String,
    },
    /// A block type this kernel does not know: carried through untouched.
    Other(Box<RawValue>),
}

impl Block {
    pub fn text(s: impl Into<String>) -> Block {
        Block::Text { text: Some(s.into()) }
    }

    pub fn type_name(&self) -> &'static str {
        match self {
            Block::Text { .. } => "text",
            Block::Reasoning { .. } => "reasoning",
            Block::ToolUse { .. } => "tool_use",
            Block::ToolResult { .. } => "tool_result",
            Block::Image { .. } => "image",
            Block::Other(_) => "other",
        }
    }

    /// Characters this block contributes to `estimateTokens` (UTF-16 code units).
    pub fn estimate_chars(&self) -> usize {
        match self {
            Block::Text { text } => text.as_deref().map(utf16_len).unwrap_or(0),
            Block::Reasoning { text, .. } => utf16_len(text),
            Block::ToolResult { content, .. } => utf16_len(content),
            Block::ToolUse { input, .. } => utf16_len(input.get()),
            Block::Image { .. } => 64,
            Block::Other(_) => 0,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Message {
    pub role: Role,
    pub content: Vec<Block>,
}

impl Message {
    pub fn user_text(text: impl Into<String>) -> Message {
        Message { role: Role::User, content: vec![Block::text(text)] }
    }

    /// Concatenation of the `text` blocks (reasoning excluded).
    pub fn text(&self) -> String {
        let mut out = String::new();
        for b in &self.content {
            if let Block::Text { text: Some(t) } = b {
                out.push_str(t);
            }
        }
        out
    }

    pub fn has_tool_use(&self) -> bool {
        self.content.iter().any(|b| matches!(b, Block::ToolUse { .. }))
    }

    pub fn has_tool_result(&self) -> bool {
        self.content.iter().any(|b| matches!(b, Block::ToolResult { .. }))
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("message serialises")
    }
}

/// Serialises with the key order the JS shapes are built with, so the output equals
/// `JSON.stringify` of the same message.
impl Serialize for Block {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Block::Other(raw) => raw.serialize(s),
            Block::Text { text } => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("type", "text")?;
                if let Some(t) = text {
                    m.serialize_entry("text", t)?;
                }
                m.end()
            }
            Block::Reasoning { text, signature, redacted_data, provenance } => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("type", "reasoning")?;
                m.serialize_entry("text", text)?;
                if let Some(v) = signature {
                    m.serialize_entry("signature", v)?;
                }
                if let Some(v) = redacted_data {
                    m.serialize_entry("redactedData", v)?;
                }
                if let Some(v) = provenance {
                    m.serialize_entry("provenance", v)?;
                }
                m.end()
            }
            Block::ToolUse { id, name, input, signature } => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("type", "tool_use")?;
                m.serialize_entry("id", id)?;
                m.serialize_entry("name", name)?;
                m.serialize_entry("input", input)?;
                if let Some(v) = signature {
                    m.serialize_entry("signature", v)?;
                }
                m.end()
            }
            Block::ToolResult { tool_use_id, content, is_error } => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("type", "tool_result")?;
                m.serialize_entry("tool_use_id", tool_use_id)?;
                m.serialize_entry("content", content)?;
                if let Some(v) = is_error {
                    m.serialize_entry("is_error", v)?;
                }
                m.end()
            }
            Block::Image { media_type, data } => {
                let mut m = s.serialize_map(None)?;
                m.serialize_entry("type", "image")?;
                m.serialize_entry("source", &ImageSource { kind: "base64", media_type, data })?;
                m.end()
            }
        }
    }
}

#[derive(Serialize)]
struct ImageSource<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    media_type: &'a str,
    data: &'a str,
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("role", self.role.as_str())?;
        m.serialize_entry("content", &self.content)?;
        m.end()
    }
}

// ---------------------------------------------------------------------------------------
// Parsing from JS JSON

/// How strictly to read blocks: adapter responses must be well formed (a malformed one fails
/// the run); history handed in by the user is read leniently, as the original never checks it.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Strictness {
    Strict,
    Lenient,
}

#[derive(serde::Deserialize)]
struct RawBlock<'a> {
    #[serde(rename = "type", borrow, default)]
    kind: Option<&'a RawValue>,
    #[serde(borrow, default)]
    text: Option<&'a RawValue>,
    #[serde(borrow, default)]
    signature: Option<&'a RawValue>,
    #[serde(rename = "redactedData", borrow, default)]
    redacted_data: Option<&'a RawValue>,
    #[serde(borrow, default)]
    provenance: Option<&'a RawValue>,
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    name: Option<&'a RawValue>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    tool_use_id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
    #[serde(borrow, default)]
    is_error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    source: Option<&'a RawValue>,
}

fn opt_string(v: Option<&RawValue>) -> Result<Option<String>, ()> {
    match v {
        None => Ok(None),
        Some(r) if r.get() == "null" => Ok(None),
        Some(r) => js_string(r.get()).map(Some).ok_or(()),
    }
}

/// A JSON string token as a Rust string. Half a surrogate pair (a JS string may hold one, a
/// Rust string may not) becomes U+FFFD, as napi converts such a string and as the history
/// path does (`parse_messages`): a model's text cut inside an emoji is still text.
fn js_string(raw: &str) -> Option<String> {
    match serde_json::from_str::<String>(raw) {
        Ok(s) => Some(s),
        Err(_) => serde_json::from_str::<String>(&crate::json::replace_lone_surrogates(raw)?).ok(),
    }
}

/// A tool_use block's `id` or `name`. These are identifiers, not prose: one holding half a
/// surrogate pair cannot be replaced by U+FFFD without naming another tool or breaking the
/// pairing with its result, so a model's answer carrying one is refused with that reason.
fn tool_use_ident(v: Option<&RawValue>, field: &str, strict: Strictness) -> Result<String, String> {
    let need = || format!("a \"tool_use\" block needs a string \"{field}\"");
    let Some(r) = v else { return Err(need()) };
    if let Ok(s) = serde_json::from_str::<String>(r.get()) {
        return Ok(s);
    }
    match js_string(r.get()) {
        Some(s) if strict == Strictness::Lenient => Ok(s),
        Some(_) => Err(format!("the \"{field}\" of a \"tool_use\" block holds half a UTF-16 surrogate pair (a lone \\uD800-\\uDFFF), which is not valid Unicode")),
        None => Err(need()),
    }
}

fn req_string(v: Option<&RawValue>, field: &str, kind: &str) -> Result<String, String> {
    match opt_string(v) {
        Ok(Some(s)) => Ok(s),
        _ => Err(format!("a \"{kind}\" block needs a string \"{field}\"")),
    }
}

/// Well-formed blocks in one pass (strings borrowed while parsing); anything unusual falls
/// back to `parse_block_slow`, which knows the lenient rules and the error texts.
#[derive(serde::Deserialize)]
struct FastBlock<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
    #[serde(borrow, default)]
    text: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    input: Option<&'a RawValue>,
    #[serde(borrow, default)]
    signature: Option<Cow<'a, str>>,
    #[serde(rename = "redactedData", borrow, default)]
    redacted_data: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    provenance: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    tool_use_id: Option<Cow<'a, str>>,
    #[serde(borrow, default)]
    content: Option<Cow<'a, str>>,
    #[serde(default)]
    is_error: Option<bool>,
}

fn parse_block_fast(raw: &RawValue) -> Option<Block> {
    fast_to_block(serde_json::from_str(raw.get()).ok()?)
}

fn fast_to_block(b: FastBlock) -> Option<Block> {
    let own = |c: Option<Cow<str>>| c.map(Cow::into_owned);
    Some(match &*b.kind {
        "text" => Block::Text { text: Some(b.text?.into_owned()) },
        "tool_use" => {
            let input = b.input.filter(|r| r.get().starts_with('{'))?;
            Block::ToolUse {
                id: b.id?.into_owned(),
                name: b.name?.into_owned(),
                input: input.to_owned(),
                signature: own(b.signature),
            }
        }
        "tool_result" => Block::ToolResult {
            tool_use_id: b.tool_use_id?.into_owned(),
            content: b.content?.into_owned(),
            is_error: b.is_error,
        },
        "reasoning" => Block::Reasoning {
            text: b.text?.into_owned(),
            signature: own(b.signature),
            redacted_data: own(b.redacted_data),
            provenance: own(b.provenance),
        },
        _ => return None,
    })
}

pub fn parse_block(raw: &RawValue, strict: Strictness) -> Result<Block, String> {
    match parse_block_fast(raw) {
        Some(b) => Ok(b),
        None => parse_block_slow(raw, strict),
    }
}

fn parse_block_slow(raw: &RawValue, strict: Strictness) -> Result<Block, String> {
    let text = raw.get();
    if !text.starts_with('{') {
        return Err(format!("content blocks must be objects, got {}", preview(text)));
    }
    let rb: RawBlock = serde_json::from_str(text).map_err(|e| format!("unreadable content block: {e}"))?;
    let kind = opt_string(rb.kind).ok().flatten();
    let lenient = strict == Strictness::Lenient;
    match kind.as_deref() {
        Some("text") => {
            // History handed in by the user may carry anything (a beforeRun hook's non-string
            // prompt is sent as is); only the model's answers must be well formed.
            let t = match opt_string(rb.text) {
                Ok(t) => t,
                Err(_) if lenient => None,
                Err(_) => return Err("a \"text\" block needs a string \"text\"".into()),
            };
            if t.is_none() && !lenient {
                return Err("a \"text\" block needs a string \"text\"".into());
            }
            Ok(Block::Text { text: t })
        }
        Some("reasoning") => Ok(Block::Reasoning {
            text: if lenient {
                opt_string(rb.text).ok().flatten().unwrap_or_default()
            } else {
                req_string(rb.text, "text", "reasoning")?
            },
            signature: opt_string(rb.signature).ok().flatten(),
            redacted_data: opt_string(rb.redacted_data).ok().flatten(),
            provenance: opt_string(rb.provenance).ok().flatten(),
        }),
        Some("tool_use") => {
            let id = tool_use_ident(rb.id, "id", strict)?;
            let name = tool_use_ident(rb.name, "name", strict)?;
            let input = match rb.input {
                Some(r) if r.get().starts_with('{') => r.to_owned(),
                Some(_) | None if lenient => RawValue::from_string("{}".into()).unwrap(),
                _ => return Err("a \"tool_use\" block needs an object \"input\"".into()),
            };
            Ok(Block::ToolUse { id, name, input, signature: opt_string(rb.signature).ok().flatten() })
        }
        Some("tool_result") => {
            let tool_use_id = req_string(rb.tool_use_id, "tool_use_id", "tool_result")?;
            let content = match opt_string(rb.content) {
                Ok(Some(s)) => s,
                _ if lenient => rb.content.map(|r| r.get().to_string()).unwrap_or_default(),
                _ => return Err("a \"tool_result\" block needs a string \"content\"".into()),
            };
            let is_error = rb.is_error.and_then(|r| match r.get() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            });
            Ok(Block::ToolResult { tool_use_id, content, is_error })
        }
        Some("image") => {
            #[derive(serde::Deserialize)]
            struct Src {
                #[serde(default)]
                media_type: Option<String>,
                #[serde(default)]
                data: Option<String>,
            }
            let src: Option<Src> = rb.source.and_then(|r| serde_json::from_str(r.get()).ok());
            match src {
                Some(Src { media_type: Some(media_type), data: Some(data) }) => Ok(Block::Image { media_type, data }),
                // The kernel never reads images from a response; keep an odd one as is.
                _ => Ok(Block::Other(raw.to_owned())),
            }
        }
        // Block types the loop does not interpret (provider-specific ones included) are carried
        // through untouched, as the original pushes the content array as is.
        Some(_) => Ok(Block::Other(raw.to_owned())),
        None if lenient => Ok(Block::Other(raw.to_owned())),
        None => Err("a content block has no \"type\"".into()),
    }
}

/// `parse_content` straight from JSON text: one pass for the usual all-well-formed array.
pub fn parse_content_str(json: &str, strict: Strictness) -> Result<Vec<Block>, String> {
    if let Ok(fast) = serde_json::from_str::<Vec<FastBlockWithRaw>>(json) {
        // Exact capacity: a collect through Option would reserve room for four blocks, and a
        // long history keeps every message's vector.
        let mut blocks = Vec::with_capacity(fast.len());
        for b in fast {
            match fast_to_block(b.0) {
                Some(block) => blocks.push(block),
                None => return parse_content_slow(json, strict),
            }
        }
        return Ok(blocks);
    }
    parse_content_slow(json, strict)
}

fn parse_content_slow(json: &str, strict: Strictness) -> Result<Vec<Block>, String> {
    let raw: &RawValue = serde_json::from_str(json)
        .map_err(|_| format!("\"content\" must be an array of blocks, got {}", preview(json)))?;
    parse_content(raw, strict)
}

/// Deserialises a block as `FastBlock` (the wrapper only exists to name the type in `Vec`).
#[derive(serde::Deserialize)]
#[serde(transparent)]
struct FastBlockWithRaw<'a>(#[serde(borrow)] FastBlock<'a>);

pub fn parse_content(raw: &RawValue, strict: Strictness) -> Result<Vec<Block>, String> {
    let items: Vec<&RawValue> = serde_json::from_str(raw.get())
        .map_err(|_| format!("\"content\" must be an array of blocks, got {}", preview(raw.get())))?;
    let mut blocks = Vec::with_capacity(items.len());
    for b in items {
        blocks.push(parse_block(b, strict)?);
    }
    Ok(blocks)
}

#[derive(serde::Deserialize)]
struct RawMessage<'a> {
    #[serde(default)]
    role: Option<&'a str>,
    #[serde(borrow, default)]
    content: Option<&'a RawValue>,
}

pub fn parse_message(raw: &RawValue, strict: Strictness) -> Result<Message, String> {
    let rm: RawMessage = serde_json::from_str(raw.get()).map_err(|_| "a message must be an object".to_string())?;
    message_from(rm, strict)
}

fn message_from(rm: RawMessage, strict: Strictness) -> Result<Message, String> {
    let role = match rm.role {
        Some("assistant") => Role::Assistant,
        Some("user") => Role::User,
        _ if strict == Strictness::Lenient => Role::User,
        other => return Err(format!("unknown message role {other:?}")),
    };
    let content = match rm.content {
        Some(c) => parse_content(c, strict)?,
        None if strict == Strictness::Lenient => Vec::new(),
        None => return Err("a message needs a \"content\" array".into()),
    };
    Ok(Message { role, content })
}

/// Parses a JSON array of messages (as `JSON.stringify(messages)` produced it).
pub fn parse_messages(json: &str, strict: Strictness) -> Result<Vec<Message>, String> {
    // A JS string with half a surrogate pair: kept with U+FFFD there, as napi converts it
    // (serde would drop or refuse the string).
    if let Some(fixed) = crate::json::replace_lone_surrogates(json) {
        return parse_messages(&fixed, strict);
    }
    // One pass over the text when every item reads as a message (the usual case); otherwise
    // item by item, which names what is wrong.
    if let Ok(items) = serde_json::from_str::<Vec<RawMessage>>(json) {
        return items.into_iter().map(|rm| message_from(rm, strict)).collect();
    }
    let items: Vec<&RawValue> = serde_json::from_str(json).map_err(|e| format!("messages must be an array: {e}"))?;
    let mut messages = Vec::with_capacity(items.len());
    for m in items {
        messages.push(parse_message(m, strict)?);
    }
    Ok(messages)
}

/// Parses usage leniently: missing or non-numeric counts are 0.
pub fn parse_usage(raw: Option<&RawValue>) -> Usage {
    #[derive(serde::Deserialize)]
    struct Fast {
        #[serde(default)]
        input_tokens: Option<f64>,
        #[serde(default)]
        output_tokens: Option<f64>,
    }
    if let Some(Ok(f)) = raw.map(|r| serde_json::from_str::<Fast>(r.get())) {
        return Usage { input_tokens: f.input_tokens.unwrap_or(0.0), output_tokens: f.output_tokens.unwrap_or(0.0) };
    }
    #[derive(serde::Deserialize, Default)]
    struct U {
        #[serde(default)]
        input_tokens: Option<serde_json::Value>,
        #[serde(default)]
        output_tokens: Option<serde_json::Value>,
    }
    let u: U = raw.and_then(|r| serde_json::from_str(r.get()).ok()).unwrap_or_default();
    let num = |v: Option<serde_json::Value>| v.and_then(|v| v.as_f64()).unwrap_or(0.0);
    Usage { input_tokens: num(u.input_tokens), output_tokens: num(u.output_tokens) }
}

fn preview(s: &str) -> String {
    let mut p: String = s.chars().take(40).collect();
    if p.len() < s.len() {
        p.push('…');
    }
    p
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn half_a_surrogate_pair_becomes_a_replacement_character() {
        let m =
            parse_messages(r#"[{"role":"user","content":[{"type":"text","text":"a\ud800b"}]}]"#, Strictness::Lenient)
                .unwrap();
        assert!(matches!(&m[0].content[..], [Block::Text { text: Some(t) }] if t == "a\u{fffd}b"));
    }

    #[test]
    fn round_trips_js_shapes() {
        let json = r#"[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"tool_use","id":"t1","name":"x","input":{"b":1,"a":[1.5,"s"]}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"ok","is_error":false},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}}]}]"#;
        let msgs = parse_messages(json, Strictness::Strict).unwrap();
        let back: Vec<String> = msgs.iter().map(|m| m.to_json()).collect();
        assert_eq!(format!("[{}]", back.join(",")), json);
    }

    #[test]
    fn strict_rejects_malformed_blocks() {
        let bad = RawValue::from_string(r#"[{"type":"tool_use","id":"1","name":"x","input":"nope"}]"#.into()).unwrap();
        assert!(parse_content(&bad, Strictness::Strict).unwrap_err().contains("object \"input\""));
        let bad = RawValue::from_string(r#"[{"type":"text"}]"#.into()).unwrap();
        assert!(parse_content(&bad, Strictness::Strict).is_err());
        let num = RawValue::from_string(r#"[{"type":"text","text":42}]"#.into()).unwrap();
        assert!(parse_content(&num, Strictness::Strict).is_err());
        assert!(matches!(parse_content(&num, Strictness::Lenient).unwrap()[0], Block::Text { text: None }));
        assert!(parse_content(&bad, Strictness::Lenient).is_ok());
        let bad = RawValue::from_string(r#"{"type":"text"}"#.into()).unwrap();
        assert!(parse_content(&bad, Strictness::Strict).unwrap_err().contains("must be an array"));
        let odd = RawValue::from_string(r#"[{"type":"weird","x":1}]"#.into()).unwrap();
        assert!(matches!(parse_content(&odd, Strictness::Strict).unwrap()[0], Block::Other(_)));
        let untyped = RawValue::from_string(r#"[{"text":"x"}]"#.into()).unwrap();
        assert!(parse_content(&untyped, Strictness::Strict).unwrap_err().contains("no \"type\""));
    }

    #[test]
    fn a_models_half_surrogate_is_replaced_in_text_and_named_in_identifiers() {
        let text = parse_content_str(
            r#"[{"type":"text","text":"cut \ud83d"},{"type":"tool_use","id":"1","name":"t","input":{"s":"\udc00"}}]"#,
            Strictness::Strict,
        )
        .unwrap();
        assert!(matches!(&text[0], Block::Text { text: Some(t) } if t == "cut \u{fffd}"));
        // The input stays as the model wrote it (the tool receives the same JS string).
        assert!(matches!(&text[1], Block::ToolUse { input, .. } if input.get() == r#"{"s":"\udc00"}"#));
        for field in ["name", "id"] {
            let json = format!(r#"[{{"type":"tool_use","id":"1","name":"t","input":{{}},"{field}":"t\ud800"}}]"#);
            let json = json.replacen(&format!(r#""{field}":"{}","#, if field == "id" { "1" } else { "t" }), "", 1);
            let e = parse_content_str(&json, Strictness::Strict).unwrap_err();
            assert_eq!(
                e,
                format!(
                    r#"the "{field}" of a "tool_use" block holds half a UTF-16 surrogate pair (a lone \uD800-\uDFFF), which is not valid Unicode"#
                ),
                "{json}"
            );
            let raw = RawValue::from_string(json).unwrap();
            assert!(matches!(&parse_content(&raw, Strictness::Lenient).unwrap()[0], Block::ToolUse { .. }));
        }
        let e =
            parse_content_str(r#"[{"type":"tool_use","id":"1","name":7,"input":{}}]"#, Strictness::Strict).unwrap_err();
        assert_eq!(e, r#"a "tool_use" block needs a string "name""#);
    }

    #[test]
    fn non_finite_usage_counts_are_zero() {
        assert_eq!(Usage::finite(f64::NAN, f64::INFINITY), Usage::default());
        assert_eq!(Usage::finite(f64::NEG_INFINITY, 3.0), Usage { input_tokens: 0.0, output_tokens: 3.0 });
    }

    #[test]
    fn estimate_chars_counts_utf16() {
        let b = Block::text("a😀");
        assert_eq!(b.estimate_chars(), 3);
    }
}
