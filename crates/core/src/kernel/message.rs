//! Conversation model: `ContentBlock` / `LLMMessage` / `TokenUsage` as plain Rust.
//!
//! Messages arrive from JS as JSON text (`JSON.stringify` output) and are kept here as typed
//! blocks. Tool inputs stay as the exact JSON text JS produced (`Box<RawValue>`), so key order
//! and number formatting survive untouched and re-serialising reproduces `JSON.stringify`.

use std::borrow::Cow;

use serde::ser::Serializer;
use serde::Serialize;
use serde_json::value::RawValue;

use crate::json::{empty_object, push_json_string, replace_lone_surrogates, utf16_len, Scan, Seen};

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

    /// `JSON.stringify(message)`.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    /// Appends `JSON.stringify(message)`.
    pub fn write_json(&self, out: &mut String) {
        out.push_str(match self.role {
            Role::User => "{\"role\":\"user\",\"content\":[",
            Role::Assistant => "{\"role\":\"assistant\",\"content\":[",
        });
        for (i, b) in self.content.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            b.write_json(out);
        }
        out.push_str("]}");
    }
}

impl Block {
    /// `JSON.stringify(block)`.
    pub fn to_json(&self) -> String {
        let mut out = String::new();
        self.write_json(&mut out);
        out
    }

    /// Appends `JSON.stringify(block)`: the keys in the order the JS shapes are built with, a key
    /// holding `undefined` left out.
    pub fn write_json(&self, out: &mut String) {
        // `,"key":` and the string value.
        fn member(out: &mut String, key: &str, v: &str) {
            out.push_str(key);
            push_json_string(out, v);
        }
        fn opt_member(out: &mut String, key: &str, v: Option<&str>) {
            if let Some(v) = v {
                member(out, key, v);
            }
        }
        match self {
            Block::Other(raw) => out.push_str(raw.get()),
            Block::Text { text } => {
                out.push_str("{\"type\":\"text\"");
                opt_member(out, ",\"text\":", text.as_deref());
                out.push('}');
            }
            Block::Reasoning { text, signature, redacted_data, provenance } => {
                out.push_str("{\"type\":\"reasoning\"");
                member(out, ",\"text\":", text);
                opt_member(out, ",\"signature\":", signature.as_deref());
                opt_member(out, ",\"redactedData\":", redacted_data.as_deref());
                opt_member(out, ",\"provenance\":", provenance.as_deref());
                out.push('}');
            }
            Block::ToolUse { id, name, input, signature } => {
                out.push_str("{\"type\":\"tool_use\"");
                member(out, ",\"id\":", id);
                member(out, ",\"name\":", name);
                out.push_str(",\"input\":");
                out.push_str(input.get());
                opt_member(out, ",\"signature\":", signature.as_deref());
                out.push('}');
            }
            Block::ToolResult { tool_use_id, content, is_error } => {
                out.push_str("{\"type\":\"tool_result\"");
                member(out, ",\"tool_use_id\":", tool_use_id);
                member(out, ",\"content\":", content);
                match is_error {
                    Some(true) => out.push_str(",\"is_error\":true"),
                    Some(false) => out.push_str(",\"is_error\":false"),
                    None => {}
                }
                out.push('}');
            }
            Block::Image { media_type, data } => {
                out.push_str("{\"type\":\"image\",\"source\":{\"type\":\"base64\"");
                member(out, ",\"media_type\":", media_type);
                member(out, ",\"data\":", data);
                out.push_str("}}");
            }
        }
    }
}

/// Through `write_json` (one definition of the JSON shape), for callers that serialise blocks
/// with serde (a response in an adapter's reply, a list of blocks in a test).
impl Serialize for Block {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RawValue::from_string(self.to_json()).map_err(serde::ser::Error::custom)?.serialize(s)
    }
}

impl Serialize for Message {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        RawValue::from_string(self.to_json()).map_err(serde::ser::Error::custom)?.serialize(s)
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
    // The usual content (a model's answer, on every call) in one scan, as `parse_messages`
    // reads the history; what the scan declines goes to serde below.
    if let Some(blocks) = scanned_content(json, strict) {
        return Ok(blocks);
    }
    parse_content_by_serde(json, strict)
}

/// A model's answer as a JS driver hands it over with its own copy (`lib/wire.js`, `plainCopy`):
/// the content's JSON where a call may be written flat, as the three elements `id, name, input`
/// in the content's own array (a string where a block would start begins one), or as the array
/// `[id, name, input, signature]`, instead of its tool_use object (JSON writes the flat fields
/// in ≈ 45 % of the time it takes for the object with its keys, an array of four in ≈ 60 %).
/// Read strictly, with the same outcome and the same errors as the object each call stands for.
pub fn parse_copied_content_str(json: &str) -> Result<Vec<Block>, String> {
    if let Some(blocks) = scanned_copied_content(json) {
        return Ok(blocks);
    }
    // What the scan declines (an escape it does not take, a malformed block): each call
    // rewritten as its object, then the reader of every other answer.
    let items: Vec<&RawValue> = serde_json::from_str(json)
        .map_err(|_| format!("\"content\" must be an array of blocks, got {}", preview(json)))?;
    let mut objects = String::with_capacity(json.len() + 48 * items.len());
    objects.push('[');
    let mut k = 0;
    while k < items.len() {
        if k > 0 {
            objects.push(',');
        }
        let item = items[k].get();
        if item.starts_with('"') {
            let fields = items.get(k..k + 3).ok_or_else(|| incomplete_call(item))?;
            push_call_object(&mut objects, fields);
            k += 3;
            continue;
        }
        if item.starts_with('[') {
            let fields: Vec<&RawValue> =
                serde_json::from_str(item).map_err(|e| format!("unreadable copied call: {e}"))?;
            if fields.len() != 4 {
                return Err(incomplete_call(item));
            }
            push_call_object(&mut objects, &fields);
        } else {
            objects.push_str(item);
        }
        k += 1;
    }
    objects.push(']');
    parse_content_str(&objects, Strictness::Strict)
}

fn incomplete_call(from: &str) -> String {
    format!("a copied call needs id, name, input, or [id, name, input, signature], got {}", preview(from))
}

/// The one-scan read of `parse_copied_content_str`'s usual input.
fn scanned_copied_content(json: &str) -> Option<Vec<Block>> {
    let mut s = Scan::new(json);
    let mut blocks = Vec::with_capacity(1);
    // A flat call's id and name, read while its three elements go by.
    let mut flat: (Option<String>, Option<String>) = (None, None);
    s.array(|s| {
        match &mut flat {
            (None, _) => match s.peek()? {
                b'"' => flat.0 = Some(s.string()?.into_owned()),
                b'[' => blocks.push(scanned_call(s)?),
                _ => blocks.push(scanned_block(s, false)?),
            },
            (Some(_), None) => flat.1 = Some(s.string()?.into_owned()),
            (Some(_), Some(_)) => {
                if s.peek()? != b'{' {
                    return None;
                }
                let input = s.raw_value()?;
                let (id, name) = (flat.0.take()?, flat.1.take()?);
                blocks.push(Block::ToolUse { id, name, input, signature: None });
            }
        }
        Some(())
    })?;
    // A call cut short is the general reader's, which says so.
    if flat.0.is_some() {
        return None;
    }
    blocks.shrink_to_fit();
    s.at_end().then_some(blocks)
}

/// A call array `[id, name, input, signature]` whose id, name and signature are strings the scan
/// reads and whose input is an object.
fn scanned_call(s: &mut Scan) -> Option<Block> {
    let (mut id, mut name, mut input, mut signature) = (None, None, None, None);
    let mut k = 0;
    s.array(|s| {
        match k {
            0 => id = Some(s.string()?.into_owned()),
            1 => name = Some(s.string()?.into_owned()),
            2 if s.peek()? == b'{' => input = Some(s.raw_value()?),
            3 => signature = Some(s.string()?.into_owned()),
            _ => return None,
        }
        k += 1;
        Some(())
    })?;
    Some(Block::ToolUse { id: id?, name: name?, input: input?, signature: Some(signature?) })
}

/// The tool_use object a copied call stands for (`fields`: id, name, input and, when given, the
/// signature), written after `out`.
fn push_call_object(out: &mut String, fields: &[&RawValue]) {
    out.push_str("{\"type\":\"tool_use\",\"id\":");
    out.push_str(fields[0].get());
    out.push_str(",\"name\":");
    out.push_str(fields[1].get());
    out.push_str(",\"input\":");
    out.push_str(fields[2].get());
    if let Some(signature) = fields.get(3) {
        out.push_str(",\"signature\":");
        out.push_str(signature.get());
    }
    out.push('}');
}

/// `parse_content_str` without the scan.
fn parse_content_by_serde(json: &str, strict: Strictness) -> Result<Vec<Block>, String> {
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

/// The blocks when every one is usual (`scanned_block`), else `None`.
fn scanned_content(json: &str, strict: Strictness) -> Option<Vec<Block>> {
    let mut s = Scan::new(json);
    // Exact capacity, as below (the history keeps every message's vector): room for one block
    // first, the usual answer (a text, one call), which then needs no shrinking.
    let mut blocks = Vec::with_capacity(1);
    s.array(|s| {
        blocks.push(scanned_block(s, strict == Strictness::Lenient)?);
        Some(())
    })?;
    blocks.shrink_to_fit();
    s.at_end().then_some(blocks)
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

/// Parses a JSON array of messages (as `JSON.stringify(messages)` produced it): the history a
/// run starts from, and on every call of a native adapter the messages a JS caller hands in.
pub fn parse_messages(json: &str, strict: Strictness) -> Result<Vec<Message>, String> {
    // A JS string with half a surrogate pair: kept with U+FFFD there, as napi converts it
    // (serde would drop or refuse the string).
    if let Some(fixed) = replace_lone_surrogates(json) {
        return parse_messages(&fixed, strict);
    }
    // The usual messages in one scan without serde's visitors (a 45 KB history took 44 µs
    // through serde's five passes); anything the scan declines is read by serde, which knows
    // the lenient rules and the error texts.
    if let Some(messages) = scanned(json, strict) {
        return Ok(messages);
    }
    parse_messages_by_serde(json, strict)
}

/// `parse_messages` without the scan: what the scan must agree with wherever it answers (its
/// tests and the fuzz target compare the two).
#[doc(hidden)]
pub fn parse_messages_by_serde(json: &str, strict: Strictness) -> Result<Vec<Message>, String> {
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

/// The messages when every one is usual (text, reasoning, tool_use, tool_result and image
/// blocks whose fields have the JSON types the rules expect, each field once): `None` for
/// anything else, which serde then reads.
fn scanned(json: &str, strict: Strictness) -> Option<Vec<Message>> {
    let mut s = Scan::new(json);
    let mut out = Vec::new();
    s.array(|s| {
        out.push(scanned_message(s, strict)?);
        Some(())
    })?;
    s.at_end().then_some(out)
}

fn scanned_message(s: &mut Scan, strict: Strictness) -> Option<Message> {
    let lenient = strict == Strictness::Lenient;
    let mut role = None;
    let mut content = None;
    let mut seen = Seen(0);
    s.object(|s, key| {
        match key {
            "role" => {
                seen.once(1)?;
                // serde reads the role as a borrowed `&str`: an escaped one is its to refuse.
                role = match s.opt_string()? {
                    Some(Cow::Borrowed("assistant")) => Some(Role::Assistant),
                    Some(Cow::Borrowed("user")) => Some(Role::User),
                    Some(Cow::Borrowed(_)) | None if lenient => Some(Role::User),
                    _ => return None,
                };
            }
            "content" => {
                seen.once(2)?;
                // A null content is an error: left to serde.
                let mut blocks = Vec::new();
                s.array(|s| {
                    blocks.push(scanned_block(s, lenient)?);
                    Some(())
                })?;
                content = Some(blocks);
            }
            _ => s.skip()?,
        }
        Some(())
    })?;
    if !lenient && (role.is_none() || content.is_none()) {
        return None;
    }
    Some(Message { role: role.unwrap_or(Role::User), content: content.unwrap_or_default() })
}

/// One block as the rules read it (`parse_block`), or `None` for serde to read.
fn scanned_block(s: &mut Scan, lenient: bool) -> Option<Block> {
    if let Some(block) = stringified_tool_use(s) {
        return Some(block);
    }
    let (mut kind, mut text, mut signature, mut redacted_data, mut provenance) = (None, None, None, None, None);
    let (mut id, mut name, mut tool_use_id, mut content) = (None, None, None, None);
    let mut input: Option<Box<RawValue>> = None;
    let mut is_error = None;
    let mut source = None;
    let mut seen = Seen(0);
    s.object(|s, key| {
        // The fields the rules read: each may appear once (serde refuses a repeated one).
        let bit = match key {
            "type" => 1,
            "text" => 2,
            "signature" => 4,
            "redactedData" => 8,
            "provenance" => 16,
            "id" => 32,
            "name" => 64,
            "input" => 128,
            "tool_use_id" => 256,
            "content" => 512,
            "is_error" => 1024,
            "source" => 2048,
            _ => return s.skip(),
        };
        seen.once(bit)?;
        match bit {
            1 => kind = s.opt_string()?,
            2 => text = s.opt_string()?,
            4 => signature = s.opt_string()?,
            8 => redacted_data = s.opt_string()?,
            16 => provenance = s.opt_string()?,
            32 => id = s.opt_string()?,
            64 => name = s.opt_string()?,
            128 => input = Some(s.raw_value()?),
            256 => tool_use_id = s.opt_string()?,
            512 => content = s.opt_string()?,
            1024 => is_error = s.opt_bool()?,
            _ => source = Some(scanned_image_source(s)?),
        }
        Some(())
    })?;
    let own = |c: Option<Cow<str>>| c.map(Cow::into_owned);
    Some(match kind.as_deref()? {
        "text" if lenient || text.is_some() => Block::Text { text: own(text) },
        "reasoning" if lenient || text.is_some() => Block::Reasoning {
            text: own(text).unwrap_or_default(),
            signature: own(signature),
            redacted_data: own(redacted_data),
            provenance: own(provenance),
        },
        "tool_use" => {
            let input = match input {
                Some(raw) if raw.get().starts_with('{') => raw,
                _ if lenient => empty_object(),
                _ => return None,
            };
            Block::ToolUse { id: id?.into_owned(), name: name?.into_owned(), input, signature: own(signature) }
        }
        "tool_result" if lenient || content.is_some() => Block::ToolResult {
            tool_use_id: tool_use_id?.into_owned(),
            content: own(content).unwrap_or_default(),
            is_error,
        },
        "image" => {
            let (media_type, data) = source?;
            Block::Image { media_type: media_type.into_owned(), data: data.into_owned() }
        }
        _ => return None,
    })
}

/// A tool_use block as `JSON.stringify` writes the usual one (a model's answer holds one per
/// call): `{"type":"tool_use","id":…,"name":…,"input":{…}}`, with a string `"signature"` last
/// or not at all. What the general reader below makes of it, read without taking the keys one
/// by one (≈ 0.8k instructions a block less in W1); anything else is left to that reader.
fn stringified_tool_use(s: &mut Scan) -> Option<Block> {
    s.exact_object(|s| {
        s.exact(br#""type":"tool_use","id":"#)?;
        let id = s.string()?.into_owned();
        s.exact(br#","name":"#)?;
        let name = s.string()?.into_owned();
        s.exact(br#","input":"#)?;
        if s.peek()? != b'{' {
            return None;
        }
        let input = s.raw_value()?;
        let signature = match s.exact(br#","signature":"#) {
            Some(()) => Some(s.string()?.into_owned()),
            None => None,
        };
        Some(Block::ToolUse { id, name, input, signature })
    })
}

/// An image block's `source` when its `media_type` and `data` are strings given once (serde
/// decides the rest: such a block is kept as it is).
fn scanned_image_source<'a>(s: &mut Scan<'a>) -> Option<(Cow<'a, str>, Cow<'a, str>)> {
    let (mut media_type, mut data) = (None, None);
    let mut seen = Seen(0);
    s.object(|s, key| {
        match key {
            "media_type" => {
                seen.once(1)?;
                media_type = Some(s.string()?);
            }
            "data" => {
                seen.once(2)?;
                data = Some(s.string()?);
            }
            _ => s.skip()?,
        }
        Some(())
    })?;
    Some((media_type?, data?))
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

/// The texts of `assertValidMessages` (§15.1), which the JS glue runs on the caller's objects
/// (`lib/llm.js`); `{type}` is the value's type name (`null`, `array` or its `typeof`).
pub mod validation_texts {
    /// `InvalidMessageError.code`.
    pub const INVALID_MESSAGE_CODE: &str = "INVALID_MESSAGE";
    pub const NOT_AN_ARRAY: &str = "messages must be an array, got {type}";
    pub const MESSAGE_NOT_AN_OBJECT: &str = "messages[{i}] must be an object, got {type}";
    pub const CONTENT_NOT_AN_ARRAY: &str = "messages[{i}].content must be a ContentBlock[], got {type}";
    pub const BLOCK_WITHOUT_TYPE: &str = "messages[{i}].content[{j}] must be a content block with a string \"type\"";
}

/// The shapes of the messages and blocks the kernel adds to a conversation (an assistant turn, a
/// round's tool_result message, the loop warning, the loop stop's results, the Agent's prompt and
/// its structured-output feedback), declared once: [`Block::write_json`] and
/// [`Message::write_json`] write them on the Rust side, and `oma_core::boundary` renders each as
/// a JS builder in `lib/generated/boundary.js` (`history`), which the JS driver calls for the
/// objects its callers see (onMessage, stream() events, `RunResult.messages`). A builder is one
/// object literal, its keys in the declared order: one V8 shape per builder, and the key order
/// `JSON.stringify`, Jest's `toEqual` snapshots and the Rust writer agree on (the tests below
/// prove the Rust writer writes what each declaration builds).
pub mod shapes {
    /// A value in a shape.
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub enum Shape {
        /// A fixed text (`type`, `role`).
        Lit(&'static str),
        /// The builder's parameter of that name, as given.
        Arg(&'static str),
        /// An object, its members in this order.
        Object(&'static [(&'static str, Shape)]),
        /// An array of these elements.
        Array(&'static [Shape]),
    }

    /// A JS builder: a function of `params` (each with its TypeScript type) returning `body`.
    /// `generics` are type parameters the params' types may name (a message's content is typed
    /// as the caller's array: the declarations need no type of the package's own).
    #[derive(Clone, Copy, Debug, PartialEq)]
    pub struct Builder {
        pub generics: &'static [&'static str],
        pub params: &'static [(&'static str, &'static str)],
        pub body: Shape,
    }

    use Shape::{Arg, Array, Lit, Object};

    const TEXT: Shape = Object(&[("type", Lit("text")), ("text", Arg("text"))]);

    /// `{ type: 'text', text }`: [`super::Block::text`].
    pub const TEXT_BLOCK: Builder = Builder { generics: &[], params: &[("text", "string")], body: TEXT };

    /// `{ type: 'tool_result', tool_use_id, content, is_error }`: [`super::Block::ToolResult`]
    /// (an `is_error` left `undefined` is not written).
    pub const TOOL_RESULT_BLOCK: Builder = Builder {
        generics: &[],
        params: &[("toolUseId", "string"), ("content", "string"), ("isError", "boolean | undefined")],
        body: Object(&[
            ("type", Lit("tool_result")),
            ("tool_use_id", Arg("toolUseId")),
            ("content", Arg("content")),
            ("is_error", Arg("isError")),
        ]),
    };

    const CONTENT: (&str, &str) = ("content", "C");

    /// `{ role, content }`: a message a context plan rebuilds.
    pub const MESSAGE: Builder = Builder {
        generics: &["C"],
        params: &[("role", "'user' | 'assistant'"), CONTENT],
        body: Object(&[("role", Arg("role")), ("content", Arg("content"))]),
    };

    /// `{ role: 'user', content }`: a round's tool_result message, the loop stop's results, the
    /// Agent's rewritten prompt.
    pub const USER_MESSAGE: Builder = Builder {
        generics: &["C"],
        params: &[CONTENT],
        body: Object(&[("role", Lit("user")), ("content", Arg("content"))]),
    };

    /// `{ role: 'assistant', content }`: the model's turn.
    pub const ASSISTANT_MESSAGE: Builder = Builder {
        generics: &["C"],
        params: &[CONTENT],
        body: Object(&[("role", Lit("assistant")), ("content", Arg("content"))]),
    };

    /// `{ role: 'user', content: [{ type: 'text', text }] }`: [`super::Message::user_text`] (the
    /// loop warning, a prompt, the structured-output feedback).
    pub const USER_TEXT: Builder = Builder {
        generics: &[],
        params: &[("text", "string")],
        body: Object(&[("role", Lit("user")), ("content", Array(&[TEXT]))]),
    };

    /// The builders by their JS names, with what each builds.
    pub const ALL: [(&str, &str, Builder); 6] = [
        ("textBlock", "A text block (the loop warning after a round's results).", TEXT_BLOCK),
        ("toolResultBlock", "A tool_result block (a round's result, the loop stop's).", TOOL_RESULT_BLOCK),
        ("message", "A message a context plan rebuilds.", MESSAGE),
        (
            "userMessage",
            "A user message (a round's results, the loop stop's, the Agent's rewritten prompt).",
            USER_MESSAGE,
        ),
        ("assistantMessage", "The model's turn.", ASSISTANT_MESSAGE),
        (
            "userText",
            "A user message of one text (the loop warning, a prompt, the structured-output feedback).",
            USER_TEXT,
        ),
    ];

    impl Builder {
        /// `JSON.stringify` of what the JS builder returns for `args` (each the JSON text of an
        /// argument, `None` for `undefined`), for the tests that hold the Rust writer to it.
        pub fn json(&self, args: &[Option<&str>]) -> String {
            assert_eq!(args.len(), self.params.len(), "one argument per parameter");
            let mut out = String::new();
            self.write(&self.body, args, &mut out);
            out
        }

        fn arg<'a>(&self, name: &str, args: &[Option<&'a str>]) -> Option<&'a str> {
            let i = self.params.iter().position(|(p, _)| *p == name).expect("an argument names a parameter");
            args[i]
        }

        fn write(&self, shape: &Shape, args: &[Option<&str>], out: &mut String) {
            match shape {
                Lit(s) => crate::json::push_json_string(out, s),
                // (In an array, `undefined` is written `null`, as JSON.stringify writes it.)
                Arg(name) => out.push_str(self.arg(name, args).unwrap_or("null")),
                Object(members) => {
                    out.push('{');
                    let mut first = true;
                    for (key, value) in members.iter() {
                        // A member holding `undefined` is left out.
                        if let Arg(name) = value {
                            if self.arg(name, args).is_none() {
                                continue;
                            }
                        }
                        if !first {
                            out.push(',');
                        }
                        first = false;
                        crate::json::push_json_string(out, key);
                        out.push(':');
                        self.write(value, args, out);
                    }
                    out.push('}');
                }
                Array(items) => {
                    out.push('[');
                    for (i, item) in items.iter().enumerate() {
                        if i > 0 {
                            out.push(',');
                        }
                        self.write(item, args, out);
                    }
                    out.push(']');
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Rust writer writes what the JS builders build (`shapes`), for the same inputs: the
    /// one history, whichever side adds the message.
    #[test]
    fn the_rust_writer_writes_what_the_js_builders_build() {
        use shapes::*;
        let q = |s: &str| serde_json::to_string(s).unwrap();
        for text in ["", "a \"quoted\" line\n", "😀\u{1}"] {
            assert_eq!(TEXT_BLOCK.json(&[Some(&q(text))]), Block::text(text).to_json());
            assert_eq!(USER_TEXT.json(&[Some(&q(text))]), Message::user_text(text).to_json());
        }
        for is_error in [Some(true), Some(false), None] {
            let b = Block::ToolResult { tool_use_id: "call_1".into(), content: "out \"x\"".into(), is_error };
            let flag = is_error.map(|e| e.to_string());
            assert_eq!(
                TOOL_RESULT_BLOCK.json(&[Some("\"call_1\""), Some(&q("out \"x\"")), flag.as_deref()]),
                b.to_json()
            );
        }
        let content = vec![
            Block::ToolResult { tool_use_id: "a".into(), content: "ok".into(), is_error: None },
            Block::text("warning"),
        ];
        let content_json = format!("[{},{}]", content[0].to_json(), content[1].to_json());
        for (role, builder) in [(Role::User, USER_MESSAGE), (Role::Assistant, ASSISTANT_MESSAGE)] {
            let m = Message { role, content: content.clone() };
            assert_eq!(builder.json(&[Some(&content_json)]), m.to_json());
            assert_eq!(MESSAGE.json(&[Some(&q(role.as_str())), Some(&content_json)]), m.to_json());
        }
    }

    /// Blocks compared through their JSON (`Block` has no `PartialEq`).
    fn json_of(blocks: &[Block]) -> String {
        serde_json::to_string(blocks).unwrap()
    }

    #[test]
    fn a_copied_call_reads_as_the_object_it_stands_for() {
        let objects = r#"[{"type":"text","text":"t"},{"type":"tool_use","id":"1","name":"a","input":{"k":[1,{"q":"\""}]}},{"type":"tool_use","id":"2\"","name":"bé","input":{},"signature":"s"},{"type":"tool_use","id":"3","name":"c","input":{}}]"#;
        let copied = r#"[{"type":"text","text":"t"},"1","a",{"k":[1,{"q":"\""}]},["2\"","bé",{},"s"],"3","c",{}]"#;
        let expected = json_of(&parse_content_str(objects, Strictness::Strict).unwrap());
        assert!(scanned_copied_content(copied).is_some());
        assert_eq!(json_of(&parse_copied_content_str(copied).unwrap()), expected);
        // A block type the scan declines (kept as it is): the same calls, by the rewrite.
        let odd_objects = objects.replace(r#"{"type":"text","text":"t"}"#, r#"{"type":"custom","x":[1]}"#);
        let odd_copied = copied.replace(r#"{"type":"text","text":"t"}"#, r#"{"type":"custom","x":[1]}"#);
        assert!(scanned_copied_content(&odd_copied).is_none());
        assert_eq!(
            json_of(&parse_copied_content_str(&odd_copied).unwrap()),
            json_of(&parse_content_str(&odd_objects, Strictness::Strict).unwrap())
        );
        // Objects alone read as any answer does.
        assert_eq!(json_of(&parse_copied_content_str(objects).unwrap()), expected);
    }

    #[test]
    fn a_copied_call_is_refused_as_its_object_would_be() {
        let pairs = [
            (r#"["\ud800","a",{}]"#, r#"[{"type":"tool_use","id":"\ud800","name":"a","input":{}}]"#),
            (r#"["1",2,{}]"#, r#"[{"type":"tool_use","id":"1","name":2,"input":{}}]"#),
            (r#"["1","a",[]]"#, r#"[{"type":"tool_use","id":"1","name":"a","input":[]}]"#),
            (r#"["1","a","{}"]"#, r#"[{"type":"tool_use","id":"1","name":"a","input":"{}"}]"#),
            (
                r#"[["1","a",{},"x\ud800"]]"#,
                r#"[{"type":"tool_use","id":"1","name":"a","input":{},"signature":"x\ud800"}]"#,
            ),
            (r#"[["1","a",[],"s"]]"#, r#"[{"type":"tool_use","id":"1","name":"a","input":[],"signature":"s"}]"#),
        ];
        for (copied, object) in pairs {
            let a = parse_copied_content_str(copied).map(|b| json_of(&b));
            let o = parse_content_str(object, Strictness::Strict).map(|b| json_of(&b));
            assert_eq!(a, o, "{copied}");
        }
        // A call cut short, or an array that is not one of four fields.
        for short in [r#"["1","a"]"#, r#"["1"]"#, r#"[{"type":"text","text":"t"},"1","a"]"#, r#"[["1","a",{}]]"#] {
            let e = parse_copied_content_str(short).unwrap_err();
            assert!(
                e.starts_with("a copied call needs id, name, input, or [id, name, input, signature], got "),
                "{short}: {e}"
            );
        }
        assert!(parse_copied_content_str("{}").is_err());
    }

    #[test]
    fn half_a_surrogate_pair_becomes_a_replacement_character() {
        let m =
            parse_messages(r#"[{"role":"user","content":[{"type":"text","text":"a\ud800b"}]}]"#, Strictness::Lenient)
                .unwrap();
        assert!(matches!(&m[0].content[..], [Block::Text { text: Some(t) }] if t == "a\u{fffd}b"));
    }

    #[test]
    fn serde_writes_blocks_through_write_json() {
        let json = r#"[{"type":"text","text":"a\"b\n"},{"type":"tool_use","id":"1","name":"f","input":{"x":[1]},"signature":"s"},{"type":"reasoning","text":"r","redactedData":"d"},{"type":"tool_result","tool_use_id":"1","content":"c","is_error":true},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}},{"type":"text"},{"type":"odd","k":1}]"#;
        let blocks = parse_content_str(json, Strictness::Lenient).unwrap();
        assert_eq!(serde_json::to_string(&blocks).unwrap(), json);
        assert_eq!(serde_json::to_string(&Vec::<Block>::new()).unwrap(), "[]");
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

    /// What `parse_messages` answers, without the scan.
    fn by_serde(json: &str, strict: Strictness) -> Result<Vec<Message>, String> {
        parse_messages_by_serde(&fixed(json), strict)
    }

    fn fixed(json: &str) -> String {
        replace_lone_surrogates(json).unwrap_or_else(|| json.to_string())
    }

    fn show(r: Result<Vec<Message>, String>) -> Result<Vec<String>, String> {
        r.map(|v| v.iter().map(|m| format!("{:?} {}", m.role, m.to_json())).collect())
    }

    /// Histories as JS hands them in, usual and odd.
    const HISTORIES: &[&str] = &[
        r#"[]"#,
        r#"[{"role":"user","content":[{"type":"text","text":"Look up \"k\" é 😀 \u00e9 \\ \n"}]}]"#,
        r#"[{"role":"assistant","content":[{"type":"text","text":""},{"type":"tool_use","id":"c1","name":"f","input":{"k":[1,-2.5e3,{"n":null}],"b":true}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"","is_error":true},{"type":"tool_result","tool_use_id":"c2","content":null,"is_error":null},{"type":"tool_result","tool_use_id":"c3"}]}]"#,
        r#" [ { "content" : [ { "type" : "tool_use" , "id" : "a" , "name" : "g" , "input" : [ 1 ] , "signature" : "s" } ] , "role" : null } ] "#,
        r#"[{"role":"system","content":[{"type":"text","text":null,"extra":{"deep":[1,{"x":"y"}]},"provenance":5,"source":{}}]},{"content":[]},{"role":"assistant"}]"#,
        r#"[{"role":"assistant","content":[{"type":"tool_use","id":"x","name":"f","input":null},{"type":"tool_use","id":"y","name":"f"}]}]"#,
        r#"[{"role":"assistant","content":[{"type":"reasoning","text":"t","signature":"s","redactedData":"","provenance":"anthropic"},{"type":"reasoning"},{"type":"reasoning","text":1,"signature":2},{"type":"reasoning","text":null,"provenance":null}]}]"#,
        r#"[{"role":"user","content":[{"type":"text"},{"type":"text","text":null},{"type":"text","text":5},{"type":"text","text":{"a":1}}]}]"#,
        r#"[{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"f","input":{"b":[1,2.5,{"c":null}],"a":"x"},"signature":"g"},{"type":"tool_use","id":"2","name":"g","input":[1]},{"type":"tool_use","id":"3","name":"h"}]}]"#,
        r#"[{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}]"#,
        r#"[{"role":"assistant","content":[{"type":"tool_use","id":7,"name":"f","input":{}}]}]"#,
        r#"[{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"ok","is_error":true},{"type":"tool_result","tool_use_id":"2","content":null,"is_error":"yes"},{"type":"tool_result","tool_use_id":"3","content":{"x":[1,2]}},{"type":"tool_result","tool_use_id":"4","content":12.5},{"type":"tool_result","tool_use_id":"5"}]}]"#,
        r#"[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]"#,
        r#"[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA=="}},{"type":"image","source":{"media_type":"image/png"}},{"type":"image"}]}]"#,
        r#"[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA==","extra":[1]}}]}]"#,
        r#"[{"role":"user","content":[{"type":"image","source":{"media_type":"image/png","data":"AA==","data":"BB=="}}]}]"#,
        r#"[{"role":"user","content":[{"type":"image","source":null}]}]"#,
        r#"[{"role":"user","content":[{"type":"document","url":"x"},{"type":5},{"foo":1},{"type":null}]}]"#,
        r#"[{"role":"system","content":[{"type":"text","text":"s"}]},{"content":[]},{"role":"assistant"}]"#,
        r#"[{"role":"user","content":null}]"#,
        r#"[{"role":"user","content":[1]}]"#,
        r#"[{"role":5,"content":[]}]"#,
        r#"[{"role":"us\u0065r","content":[]}]"#,
        r#"[{"role":"user","role":"user","content":[]}]"#,
        r#"[{"ro\u006ce":"user","content":[]}]"#,
        r#"[{"role":"user","content":[{"type":"text","text":"a","extra":{"deep":[1,{"x":"y"}]}}]}]"#,
        r#"{"not":"an array"}"#,
        r#"[{"content":[]}] x"#,
        r#" [ { "content" : [ { "type" : "tool_result" , "tool_use_id" : "1" , "content" : "a\nb" , "is_error" : false } ] , "role" : "user" } ] "#,
        r#"[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]"#,
        r#"[{"role":"user","content":[{"type":"text","text":"a","source":1,"source":2}]}]"#,
        r#"[{"role":"user","content":[{"type":"text","text":"\ud800"}]}]"#,
        r#"[{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"f","input":null,"extra":[{"a":1}]}]}]"#,
        r#"[{"role":"assistant","content":[{"type":"tool_use","id":"1","name":"f","input":{"s":"\udc00"}}]}]"#,
    ];

    #[test]
    fn the_scan_reads_what_serde_reads() {
        let mut taken = 0;
        for strict in [Strictness::Strict, Strictness::Lenient] {
            for json in HISTORIES {
                let want = show(by_serde(json, strict));
                if let Some(m) = scanned(&fixed(json), strict) {
                    taken += 1;
                    assert_eq!(show(Ok(m)), want, "{json}");
                }
                assert_eq!(show(parse_messages(json, strict)), want, "{json}");
                // Every history cut short or with a byte dropped: where the scan still answers, it
                // answers as serde does.
                for cut in 0..json.len() {
                    for variant in [
                        json.get(..cut).map(str::to_string),
                        json.get(..cut).zip(json.get(cut + 1..)).map(|(a, b)| format!("{a}{b}")),
                    ] {
                        let Some(v) = variant else { continue };
                        if let Some(m) = scanned(&fixed(&v), strict) {
                            assert_eq!(show(Ok(m)), show(by_serde(&v, strict)), "{v}");
                        }
                    }
                }
            }
        }
        // The comparison is not vacuous: the scan answers for most of them.
        assert!(taken >= 15, "{taken}");
    }

    #[test]
    fn the_scan_takes_the_usual_messages_and_leaves_the_odd_ones_to_serde() {
        let usual = [0, 1, 2, 3, 5, 8, 14, 18, 25, 28, 32, 33];
        for (i, json) in HISTORIES.iter().enumerate() {
            assert_eq!(scanned(json, Strictness::Lenient).is_some(), usual.contains(&i), "{i}: {json}");
        }
        // Strict: only what the model's answers look like.
        for i in [0, 1, 2, 14, 25] {
            let json = HISTORIES[i].replace(
                r#","content":null,"is_error":null},{"type":"tool_result","tool_use_id":"c3"}"#,
                r#","content":"x"}"#,
            );
            assert!(scanned(&json, Strictness::Strict).is_some(), "{json}");
        }
        for i in [3, 5, 6, 18] {
            assert!(scanned(HISTORIES[i], Strictness::Strict).is_none(), "{}", HISTORIES[i]);
        }
        // A long history, as the JS adapter path sends it.
        let p = "x".repeat(2048);
        let mut msgs = vec![r#"{"role":"user","content":[{"type":"text","text":"go"}]}"#.to_string()];
        for i in 0..20 {
            msgs.push(format!(r#"{{"role":"assistant","content":[{{"type":"reasoning","text":"r","signature":"s"}},{{"type":"tool_use","id":"c{i}","name":"f","input":{{"k":"v{i}"}}}}]}}"#));
            msgs.push(format!(r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"c{i}","content":"{p}\n\"{i}\""}}]}}"#));
        }
        let long = format!("[{}]", msgs.join(","));
        let m = scanned(&long, Strictness::Strict).expect("scanned");
        assert_eq!(show(Ok(m)), show(parse_messages_by_serde(&long, Strictness::Strict)));
    }

    #[test]
    fn the_content_scan_reads_what_serde_reads() {
        let show = |r: Result<Vec<Block>, String>| r.map(|b| serde_json::to_string(&b).unwrap());
        let mut contents: Vec<String> = vec![
            // A model's usual answers, as JSON.stringify writes them.
            r#"[{"type":"tool_use","id":"call_0_0","name":"tool0","input":{"a":0,"b":0}},{"type":"tool_use","id":"c\"1","name":"t","input":{},"signature":"s"}]"#.into(),
            r#"[{"type":"text","text":"a \u0001 é"},{"type":"reasoning","text":"r"}]"#.into(),
            r#"[{"type":"tool_use","id":"1","name":"f","input":{"x":1},"cache_control":{"type":"ephemeral"}}]"#.into(),
            r#"[{"type":"tool_use","id":"1","name":"f","input":{"x":1},"signature":null}]"#.into(),
            r#"[{"type":"tool_use","id":"1","id":"2","name":"f","input":{}}]"#.into(),
            r#"[{"type":"thinking","thinking":"x"}]"#.into(),
            "null".into(),
            " [ ] ".into(),
        ];
        for json in HISTORIES {
            if let Ok(serde_json::Value::Array(ms)) = serde_json::from_str::<serde_json::Value>(json) {
                contents.extend(ms.iter().filter_map(|m| m.get("content")).map(|c| c.to_string()));
            }
        }
        let mut taken = 0;
        for strict in [Strictness::Strict, Strictness::Lenient] {
            for json in &contents {
                let want = show(parse_content_by_serde(json, strict));
                assert_eq!(show(parse_content_str(json, strict)), want, "{json}");
                for cut in 0..json.len() {
                    for variant in [
                        json.get(..cut).map(str::to_string),
                        json.get(..cut).zip(json.get(cut + 1..)).map(|(a, b)| format!("{a}{b}")),
                        Some(json.clone()),
                    ] {
                        let Some(v) = variant else { continue };
                        if let Some(b) = scanned_content(&v, strict) {
                            taken += 1;
                            assert_eq!(show(Ok(b)), show(parse_content_by_serde(&v, strict)), "{v}");
                        }
                    }
                }
            }
        }
        assert!(taken >= 100, "{taken}");
        assert!(scanned_content(&contents[0], Strictness::Strict).is_some());
    }

    #[test]
    fn serde_errors_are_the_kernels_texts() {
        let e = |json: &str| parse_messages(json, Strictness::Lenient).unwrap_err();
        let null_content = r#"[{"role":"user","content":null}]"#;
        assert!(parse_messages(null_content, Strictness::Lenient).unwrap()[0].content.is_empty());
        assert_eq!(
            parse_messages(null_content, Strictness::Strict).unwrap_err(),
            r#"a message needs a "content" array"#
        );
        assert_eq!(
            e(r#"[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]"#),
            r#"a "tool_result" block needs a string "tool_use_id""#
        );
        assert_eq!(e(r#"[{"role":"user","content":[1]}]"#), "content blocks must be objects, got 1");
        assert!(e(r#"{"not":"an array"}"#).starts_with("messages must be an array: "));
    }
}
