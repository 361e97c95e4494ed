//! Amazon Bedrock through the Converse API (`/model/{id}/converse`, `/converse-stream`), signed
//! with SigV4 from the usual credential sources (env, shared credentials file) or a Bedrock API
//! key (`AWS_BEARER_TOKEN_BEDROCK`). Same adapter contract as the others; reasoning from
//! Anthropic models comes back as signed `reasoningContent` (echoed: `own-issued`).

use std::collections::HashMap;
use std::time::{SystemTime, UNIX_EPOCH};

use ring::{digest, hmac};
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::limits::{event_too_large, MAX_EVENT_BYTES};
use super::wire::{content_messages, push_spliced, push_text_parts, ContentBlocks, NativeReasoning};
use super::{object_input, ChatOptions, Env, EventSink, LlmError, LlmResponse, StreamEvent};
use oma_core::json::{to_js_json, truthy, JsObject};
use oma_core::kernel::message::{Block, Message, Usage};

/// The AWS SDK's message when the default chain finds nothing.
pub const NO_CREDENTIALS: &str = "Could not load credentials from any providers";

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Credentials {
    Keys { access_key: String, secret: String, session_token: Option<String> },
    Bearer(String),
}

/// The default chain's first sources: Bedrock API key, environment keys, shared credentials
/// file (`AWS_SHARED_CREDENTIALS_FILE` or `~/.aws/credentials`, profile `AWS_PROFILE`).
pub fn resolve_credentials(env: &Env) -> Result<Credentials, LlmError> {
    let get = |k: &str| env.get(k).filter(|v| !v.is_empty()).cloned();
    if let Some(t) = get("AWS_BEARER_TOKEN_BEDROCK") {
        return Ok(Credentials::Bearer(t));
    }
    if let (Some(a), Some(s)) = (get("AWS_ACCESS_KEY_ID"), get("AWS_SECRET_ACCESS_KEY")) {
        return Ok(Credentials::Keys { access_key: a, secret: s, session_token: get("AWS_SESSION_TOKEN") });
    }
    let file = get("AWS_SHARED_CREDENTIALS_FILE")
        .or_else(|| get("HOME").or_else(|| get("USERPROFILE")).map(|h| format!("{h}/.aws/credentials")));
    let profile = get("AWS_PROFILE").unwrap_or_else(|| "default".into());
    if let Some(text) = file.and_then(|f| std::fs::read_to_string(f).ok()) {
        let p = ini_section(&text, &profile);
        if let (Some(a), Some(s)) = (p.get("aws_access_key_id"), p.get("aws_secret_access_key")) {
            return Ok(Credentials::Keys {
                access_key: a.clone(),
                secret: s.clone(),
                session_token: p.get("aws_session_token").cloned(),
            });
        }
    }
    Err(LlmError::other(NO_CREDENTIALS))
}

fn ini_section(text: &str, name: &str) -> HashMap<String, String> {
    let mut out = HashMap::new();
    let mut inside = false;
    for line in text.lines() {
        let l = line.trim();
        if l.starts_with('[') && l.ends_with(']') {
            inside = l[1..l.len() - 1].trim() == name;
        } else if inside {
            if let Some((k, v)) = l.split_once('=') {
                out.insert(k.trim().to_string(), v.trim().to_string());
            }
        }
    }
    out
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn hmac_sha256(key: &[u8], data: &str) -> Vec<u8> {
    hmac::sign(&hmac::Key::new(hmac::HMAC_SHA256, key), data.as_bytes()).as_ref().to_vec()
}

/// RFC 3986 encoding as SigV4 wants it (unreserved characters kept).
pub fn uri_encode(s: &str) -> String {
    super::providers::percent_encode(s, b"-_.~")
}

/// `YYYYMMDDTHHMMSSZ` for a Unix time in seconds.
pub fn amz_date(secs: u64) -> String {
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // Civil from days (proleptic Gregorian).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    format!("{y:04}{m:02}{d:02}T{:02}{:02}{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// SigV4 headers (`x-amz-date`, optional `x-amz-security-token`, `authorization`) for a POST.
/// `path` is the request path as sent (already percent-encoded); `host` includes a non-default
/// port.
#[allow(clippy::too_many_arguments)]
pub fn sign(
    access_key: &str,
    secret: &str,
    session_token: Option<&str>,
    region: &str,
    service: &str,
    host: &str,
    path: &str,
    content_type: &str,
    body: &[u8],
    now_secs: u64,
) -> Vec<(&'static str, String)> {
    let date_time = amz_date(now_secs);
    let date = &date_time[..8];
    // Non-S3 services sign the path encoded once more (each segment).
    let canonical_uri: String = path.split('/').map(uri_encode).collect::<Vec<_>>().join("/");
    let mut headers: Vec<(&str, String)> =
        vec![("content-type", content_type.to_string()), ("host", host.to_string()), ("x-amz-date", date_time.clone())];
    if let Some(t) = session_token {
        headers.push(("x-amz-security-token", t.to_string()));
    }
    headers.sort_by(|a, b| a.0.cmp(b.0));
    let canonical_headers: String = headers.iter().map(|(k, v)| format!("{k}:{}\n", v.trim())).collect();
    let signed_headers = headers.iter().map(|(k, _)| *k).collect::<Vec<_>>().join(";");
    let payload_hash = hex(digest::digest(&digest::SHA256, body).as_ref());
    let canonical_request = format!("POST\n{canonical_uri}\n\n{canonical_headers}\n{signed_headers}\n{payload_hash}");
    let scope = format!("{date}/{region}/{service}/aws4_request");
    let string_to_sign = format!(
        "AWS4-HMAC-SHA256\n{date_time}\n{scope}\n{}",
        hex(digest::digest(&digest::SHA256, canonical_request.as_bytes()).as_ref())
    );
    let k_date = hmac_sha256(format!("AWS4{secret}").as_bytes(), date);
    let k_region = hmac_sha256(&k_date, region);
    let k_service = hmac_sha256(&k_region, service);
    let k_signing = hmac_sha256(&k_service, "aws4_request");
    let signature = hex(&hmac_sha256(&k_signing, &string_to_sign));
    let mut out = vec![("x-amz-date", date_time)];
    if let Some(t) = session_token {
        out.push(("x-amz-security-token", t.to_string()));
    }
    out.push((
        "authorization",
        format!(
            "AWS4-HMAC-SHA256 Credential={access_key}/{scope}, SignedHeaders={signed_headers}, Signature={signature}"
        ),
    ));
    out
}

pub fn now_secs() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0)
}

// ---------------------------------------------------------------------------------------
// Request

pub fn request_body(messages: &[Message], opts: &ChatOptions, name: &str) -> Result<String, LlmError> {
    let mut inference = JsObject::new();
    inference.set("maxTokens", opts.max_tokens.as_ref());
    inference.set("temperature", opts.temperature.as_ref());
    inference.set("topP", opts.top_p.as_ref());
    let inference = inference.into_json();
    let mut additional = JsObject::new();
    additional.set("top_k", opts.top_k.as_ref());
    if let Some(t) = opts.thinking.as_ref().filter(|t| t.enabled.as_ref().is_some_and(truthy)) {
        let budget = t.budget_tokens.clone().unwrap_or_else(|| Value::from(1024));
        additional
            .set_raw("thinking", Some(format!("{{\"type\":\"enabled\",\"budget_tokens\":{}}}", to_js_json(&budget))));
    }
    let additional = additional.into_json();
    let mut b = JsObject::new();
    if inference != "{}" {
        b.set_raw("inferenceConfig", Some(inference));
    }
    if additional != "{}" {
        b.set_raw("additionalModelRequestFields", Some(additional));
    }
    if let Some(extra) = opts.extra_body_map() {
        b.spread(extra);
    }
    b.set_raw("messages", Some(messages_json(messages, opts, name)?));
    if let Some(s) = opts.system_text() {
        let mut sys = String::new();
        push_text_parts(&mut sys, s);
        b.set_raw("system", Some(sys));
    }
    // Bedrock rejects an empty tool list.
    if let Some(tools) = opts.tools.as_ref().filter(|t| !t.is_empty()) {
        let specs = super::json_array(tools.iter().map(|t| {
            let schema = t.schema_text().unwrap_or_else(|| "{}".into());
            format!("{{\"toolSpec\":{}}}", t.declaration("inputSchema", Some(format!("{{\"json\":{schema}}}"))))
        }));
        b.set_raw("toolConfig", Some(format!("{{\"tools\":{specs}}}")));
    }
    Ok(b.into_json())
}

fn messages_json(messages: &[Message], opts: &ChatOptions, name: &str) -> Result<String, LlmError> {
    content_messages::<Blocks>(messages, opts, name, 64)
}

/// Bedrock Converse's blocks: one-key content blocks (`text`, `image`, `toolUse`, `toolResult`,
/// `reasoningContent`).
struct Blocks;

impl ContentBlocks for Blocks {
    const REASONING: NativeReasoning = NativeReasoning {
        signed: ["{\"reasoningContent\":{\"reasoningText\":{\"text\":", ",\"signature\":", "}}}"],
        redacted: Some(["{\"reasoningContent\":{\"redactedContent\":", "}}"]),
    };

    fn text(p: &mut String, text: Option<&str>) {
        push_spliced(p, "{\"text\":", &[(text.unwrap_or(""), "}")]);
    }

    fn image(p: &mut String, media_type: &str, data: &str) {
        let format = media_type.strip_prefix("image/").unwrap_or(media_type);
        push_spliced(p, "{\"image\":{\"format\":", &[(format, ",\"source\":{\"bytes\":"), (data, "}}}")]);
    }

    fn tool_use(p: &mut String, id: &str, name: &str, input: &RawValue) {
        push_spliced(p, "{\"toolUse\":{\"toolUseId\":", &[(id, ",\"name\":"), (name, ",\"input\":")]);
        p.push_str(input.get());
        p.push_str("}}");
    }

    fn tool_result(p: &mut String, tool_use_id: &str, content: &str, is_error: Option<bool>) {
        let rest = [(tool_use_id, ",\"content\":[{\"text\":"), (content, "}]")];
        push_spliced(p, "{\"toolResult\":{\"toolUseId\":", &rest);
        if is_error == Some(true) {
            p.push_str(",\"status\":\"error\"");
        }
        p.push_str("}}");
    }
}

// ---------------------------------------------------------------------------------------
// Responses

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireBlock {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_use: Option<WireToolUse>,
    #[serde(default)]
    reasoning_content: Option<WireReasoning>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireToolUse {
    #[serde(default)]
    tool_use_id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct WireReasoning {
    #[serde(default)]
    reasoning_text: Option<WireReasoningText>,
    #[serde(default)]
    redacted_content: Option<String>,
    // Stream deltas carry these flat.
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    signature: Option<String>,
}

#[derive(Deserialize, Default)]
struct WireReasoningText {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    signature: Option<String>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<f64>,
    #[serde(default)]
    output_tokens: Option<f64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireResponse {
    #[serde(default)]
    output: Option<WireOutput>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct WireOutput {
    #[serde(default)]
    message: Option<WireMessage>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: Vec<WireBlock>,
}

fn usage_of(u: Option<WireUsage>) -> Usage {
    let u = u.unwrap_or_default();
    Usage { input_tokens: u.input_tokens.unwrap_or(0.0), output_tokens: u.output_tokens.unwrap_or(0.0) }
}

fn map_block(b: WireBlock, name: &str) -> Option<Block> {
    if let Some(t) = b.tool_use {
        return Some(Block::ToolUse {
            id: t.tool_use_id.unwrap_or_default(),
            name: t.name.unwrap_or_default(),
            input: object_input(t.input.as_ref()),
            signature: None,
        });
    }
    if let Some(r) = b.reasoning_content {
        if let Some(d) = r.redacted_content {
            return Some(Block::Reasoning {
                text: String::new(),
                signature: None,
                redacted_data: Some(d),
                provenance: Some(name.into()),
            });
        }
        let rt = r.reasoning_text.unwrap_or_default();
        return Some(Block::Reasoning {
            text: rt.text.unwrap_or_default(),
            signature: rt.signature,
            redacted_data: None,
            provenance: Some(name.into()),
        });
    }
    b.text.map(Block::text)
}

pub fn parse_response(body: &str, name: &str, model: &str, request_id: &str) -> Result<LlmResponse, LlmError> {
    let r: WireResponse = serde_json::from_str(body)
        .map_err(|e| LlmError::other(format!("Could not parse response body as JSON: {e}")))?;
    let content = r.output.and_then(|o| o.message).map(|m| m.content).unwrap_or_default();
    Ok(LlmResponse {
        id: request_id.to_string(),
        model: model.to_string(),
        stop_reason: r.stop_reason.unwrap_or_else(|| "end_turn".into()),
        usage: usage_of(r.usage),
        content: content.into_iter().filter_map(|b| map_block(b, name)).collect(),
    })
}

/// The AWS SDK error message: the body's `message` (or `Message`), else the raw text.
pub fn error_message(status: u16, body: &str) -> String {
    let from_json = serde_json::from_str::<Map<String, Value>>(body)
        .ok()
        .and_then(|m| m.get("message").or_else(|| m.get("Message")).and_then(Value::as_str).map(str::to_string));
    match from_json {
        Some(m) => m,
        None if !body.trim().is_empty() => body.to_string(),
        None => format!("{status} status code (no body)"),
    }
}

// ---------------------------------------------------------------------------------------
// converse-stream: AWS event-stream framing

/// One decoded event-stream message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Frame {
    pub headers: Vec<(String, String)>,
    pub payload: Vec<u8>,
}

impl Frame {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

/// Incremental decoder: `total_len u32, headers_len u32, prelude_crc u32, headers, payload,
/// message_crc u32` (CRCs not re-checked: TLS already guards the bytes).
#[derive(Default)]
pub struct FrameDecoder {
    buf: Vec<u8>,
}

impl FrameDecoder {
    /// Appends the frames completed by `bytes` to `out`. A frame announcing more than
    /// `MAX_EVENT_BYTES` is refused before it is buffered; the decoded frames leave the buffer
    /// in one move (one per frame was quadratic in the frames of a large chunk).
    pub fn push(&mut self, bytes: &[u8], out: &mut Vec<Frame>) -> Result<(), LlmError> {
        self.buf.extend_from_slice(bytes);
        let mut at = 0;
        let result = loop {
            let rest = &self.buf[at..];
            if rest.len() < 12 {
                break Ok(());
            }
            let total = u32::from_be_bytes(rest[0..4].try_into().unwrap()) as usize;
            let hlen = u32::from_be_bytes(rest[4..8].try_into().unwrap()) as usize;
            if total < 16 + hlen {
                break Err(LlmError::other("Invalid event stream frame"));
            }
            if total > MAX_EVENT_BYTES {
                break Err(event_too_large("Event stream frame"));
            }
            if rest.len() < total {
                break Ok(());
            }
            let headers = match parse_headers(&rest[12..12 + hlen]) {
                Ok(h) => h,
                Err(e) => break Err(e),
            };
            out.push(Frame { headers, payload: rest[12 + hlen..total - 4].to_vec() });
            at += total;
        };
        self.buf.drain(..at);
        result
    }
}

fn parse_headers(mut b: &[u8]) -> Result<Vec<(String, String)>, LlmError> {
    let bad = || LlmError::other("Invalid event stream header");
    let mut out = Vec::new();
    while !b.is_empty() {
        let nlen = b[0] as usize;
        let name = String::from_utf8_lossy(b.get(1..1 + nlen).ok_or_else(bad)?).into_owned();
        b = &b[1 + nlen..];
        let kind = *b.first().ok_or_else(bad)?;
        b = &b[1..];
        let fixed = |n: usize, b: &mut &[u8]| -> Result<String, LlmError> {
            let v = b.get(..n).ok_or_else(bad)?;
            let s = hex(v);
            *b = &b[n..];
            Ok(s)
        };
        let value = match kind {
            0 => "true".to_string(),
            1 => "false".to_string(),
            2 => fixed(1, &mut b)?,
            3 => fixed(2, &mut b)?,
            4 => fixed(4, &mut b)?,
            5 | 8 => fixed(8, &mut b)?,
            9 => fixed(16, &mut b)?,
            6 | 7 => {
                let len = u16::from_be_bytes(b.get(..2).ok_or_else(bad)?.try_into().unwrap()) as usize;
                let v = b.get(2..2 + len).ok_or_else(bad)?;
                let s = String::from_utf8_lossy(v).into_owned();
                b = &b[2 + len..];
                s
            }
            _ => return Err(bad()),
        };
        out.push((name, value));
    }
    Ok(out)
}

/// Encodes a frame (tests and mock servers; CRCs are zero).
pub fn encode_frame(headers: &[(&str, &str)], payload: &[u8]) -> Vec<u8> {
    let mut h = Vec::new();
    for (k, v) in headers {
        h.push(k.len() as u8);
        h.extend_from_slice(k.as_bytes());
        h.push(7);
        h.extend_from_slice(&(v.len() as u16).to_be_bytes());
        h.extend_from_slice(v.as_bytes());
    }
    let total = 16 + h.len() + payload.len();
    let mut out = Vec::with_capacity(total);
    out.extend_from_slice(&(total as u32).to_be_bytes());
    out.extend_from_slice(&(h.len() as u32).to_be_bytes());
    out.extend_from_slice(&[0, 0, 0, 0]);
    out.extend_from_slice(&h);
    out.extend_from_slice(payload);
    out.extend_from_slice(&[0, 0, 0, 0]);
    out
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct StreamPayload {
    #[serde(default)]
    content_block_index: Option<u64>,
    #[serde(default)]
    start: Option<WireBlock>,
    #[serde(default)]
    delta: Option<StreamDelta>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default)]
    message: Option<String>,
    #[serde(default, rename = "Message")]
    message_upper: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct StreamDelta {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    tool_use: Option<StreamToolDelta>,
    #[serde(default)]
    reasoning_content: Option<WireReasoning>,
}

#[derive(Deserialize, Default)]
struct StreamToolDelta {
    #[serde(default)]
    input: Option<String>,
}

enum Partial {
    Text(String),
    Reasoning { text: String, signature: Option<String>, redacted: Option<String> },
    Tool { id: String, name: String, json: String },
}

pub struct StreamState {
    name: String,
    model: String,
    request_id: String,
    blocks: Vec<(u64, Partial)>,
    /// Where each index's block is in `blocks` (looked up per delta: a map keeps a stream of
    /// many blocks linear).
    positions: rustc_hash::FxHashMap<u64, usize>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
}

impl StreamState {
    pub fn new(name: &str, model: &str, request_id: &str) -> Self {
        StreamState {
            name: name.into(),
            model: model.into(),
            request_id: request_id.into(),
            blocks: Vec::new(),
            positions: Default::default(),
            stop_reason: None,
            usage: None,
        }
    }

    fn slot(&mut self, idx: u64, make: impl FnOnce() -> Partial) -> &mut Partial {
        let pos = match self.positions.get(&idx) {
            Some(&p) => p,
            None => {
                self.blocks.push((idx, make()));
                self.positions.insert(idx, self.blocks.len() - 1);
                self.blocks.len() - 1
            }
        };
        &mut self.blocks[pos].1
    }

    pub fn on_frame(&mut self, f: &Frame, sink: &mut dyn EventSink) -> Result<(), LlmError> {
        let p: StreamPayload = serde_json::from_slice(&f.payload).unwrap_or_default();
        if f.header(":message-type") == Some("exception") || f.header(":message-type") == Some("error") {
            let msg = p.message.or(p.message_upper).or_else(|| f.header(":error-message").map(str::to_string));
            let kind = f.header(":exception-type").or_else(|| f.header(":error-code")).unwrap_or("UnknownError");
            return Err(LlmError::other(msg.unwrap_or_else(|| kind.to_string())));
        }
        let idx = p.content_block_index.unwrap_or(0);
        match f.header(":event-type").unwrap_or("") {
            "contentBlockStart" => {
                if let Some(t) = p.start.and_then(|s| s.tool_use) {
                    let (id, name) = (t.tool_use_id.unwrap_or_default(), t.name.unwrap_or_default());
                    self.slot(idx, || Partial::Tool { id, name, json: String::new() });
                }
            }
            "contentBlockDelta" => {
                let Some(d) = p.delta else { return Ok(()) };
                if let Some(t) = d.text {
                    if let Partial::Text(s) = self.slot(idx, || Partial::Text(String::new())) {
                        s.push_str(&t);
                    }
                    sink.emit(StreamEvent::Text(t));
                } else if let Some(tu) = d.tool_use {
                    let piece = tu.input.unwrap_or_default();
                    if let Partial::Tool { json, .. } =
                        self.slot(idx, || Partial::Tool { id: String::new(), name: String::new(), json: String::new() })
                    {
                        json.push_str(&piece);
                    }
                } else if let Some(r) = d.reasoning_content {
                    let slot =
                        self.slot(idx, || Partial::Reasoning { text: String::new(), signature: None, redacted: None });
                    if let Partial::Reasoning { text, signature, redacted } = slot {
                        if let Some(t) = &r.text {
                            text.push_str(t);
                        }
                        if r.signature.is_some() {
                            *signature = r.signature;
                        }
                        if r.redacted_content.is_some() {
                            *redacted = r.redacted_content;
                        }
                    }
                    if let Some(t) = r.text.filter(|t| !t.is_empty()) {
                        sink.emit(StreamEvent::Reasoning(t));
                    }
                }
            }
            "contentBlockStop" => {
                if let Some((_, Partial::Tool { id, name, json })) = self.positions.get(&idx).map(|&p| &self.blocks[p])
                {
                    let input: Option<Value> = serde_json::from_str(json).ok();
                    sink.emit(StreamEvent::ToolUse(Block::ToolUse {
                        id: id.clone(),
                        name: name.clone(),
                        input: object_input(input.as_ref()),
                        signature: None,
                    }));
                }
            }
            "messageStop" => self.stop_reason = p.stop_reason,
            "metadata" => self.usage = p.usage,
            _ => {}
        }
        Ok(())
    }

    pub fn finish(self) -> LlmResponse {
        let name = self.name;
        let content = self
            .blocks
            .into_iter()
            .map(|(_, p)| match p {
                Partial::Text(t) => Block::text(t),
                Partial::Reasoning { text, signature, redacted } => Block::Reasoning {
                    text: if redacted.is_some() { String::new() } else { text },
                    signature,
                    redacted_data: redacted,
                    provenance: Some(name.clone()),
                },
                Partial::Tool { id, name: tname, json } => {
                    let input: Option<Value> = serde_json::from_str(&json).ok();
                    Block::ToolUse { id, name: tname, input: object_input(input.as_ref()), signature: None }
                }
            })
            .collect();
        LlmResponse {
            id: self.request_id,
            model: self.model,
            stop_reason: self.stop_reason.unwrap_or_else(|| "end_turn".into()),
            usage: usage_of(self.usage),
            content,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oma_core::kernel::message::{parse_messages, Strictness};

    #[test]
    fn sigv4_matches_the_reference_algorithm() {
        // AWS's documented example key and the date of its examples.
        assert_eq!(amz_date(1_440_938_160), "20150830T123600Z");
        let h = sign(
            "AKIDEXAMPLE",
            "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY",
            None,
            "us-east-1",
            "bedrock",
            "bedrock-runtime.us-east-1.amazonaws.com",
            "/model/anthropic.claude-3%3A0/converse",
            "application/json",
            b"{}",
            1_440_938_160,
        );
        assert_eq!(h[0], ("x-amz-date", "20150830T123600Z".to_string()));
        let auth = &h[1].1;
        assert!(auth.starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/bedrock/aws4_request, SignedHeaders=content-type;host;x-amz-date, Signature="), "{auth}");
        assert_eq!(auth.rsplit('=').next().unwrap().len(), 64);
        // The signing-key derivation of AWS's documentation example.
        let k = hmac_sha256(
            &hmac_sha256(
                &hmac_sha256(&hmac_sha256(b"AWS4wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "20150830"), "us-east-1"),
                "iam",
            ),
            "aws4_request",
        );
        assert_eq!(hex(&k), "c4afb1cc5771d871763a393e44b703571b55cc28424d1a5e86da6ed3c154a4b9");
        assert_eq!(uri_encode("a:b/c d"), "a%3Ab%2Fc%20d");
    }

    #[test]
    fn credentials_chain() {
        let env = |p: &[(&str, &str)]| -> Env { p.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect() };
        assert_eq!(
            resolve_credentials(&env(&[("AWS_BEARER_TOKEN_BEDROCK", "t")])).unwrap(),
            Credentials::Bearer("t".into())
        );
        let dir = std::env::temp_dir().join(format!("oma-aws-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("credentials");
        std::fs::write(&file, "[default]\naws_access_key_id = A\naws_secret_access_key = S\n[work]\naws_access_key_id=W\naws_secret_access_key=WS\naws_session_token=TOK\n").unwrap();
        let f = file.to_str().unwrap();
        assert_eq!(
            resolve_credentials(&env(&[("AWS_SHARED_CREDENTIALS_FILE", f), ("AWS_PROFILE", "work")])).unwrap(),
            Credentials::Keys { access_key: "W".into(), secret: "WS".into(), session_token: Some("TOK".into()) }
        );
        assert_eq!(
            resolve_credentials(&env(&[
                ("AWS_SHARED_CREDENTIALS_FILE", f),
                ("AWS_ACCESS_KEY_ID", "E"),
                ("AWS_SECRET_ACCESS_KEY", "ES")
            ]))
            .unwrap(),
            Credentials::Keys { access_key: "E".into(), secret: "ES".into(), session_token: None }
        );
        assert_eq!(resolve_credentials(&env(&[("HOME", "/nonexistent")])).unwrap_err().message, NO_CREDENTIALS);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn converse_body_and_response() {
        let m = parse_messages(
            r#"[{"role":"user","content":[{"type":"text","text":"q"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}]},{"role":"assistant","content":[{"type":"reasoning","text":"r","signature":"s","provenance":"bedrock"},{"type":"tool_use","id":"t1","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x","is_error":true}]}]"#,
            Strictness::Lenient,
        )
        .unwrap();
        let o = ChatOptions::from_json(r#"{"model":"m","maxTokens":100,"topK":3,"systemPrompt":"S","tools":[{"name":"f","description":"d","inputSchema":{"type":"object"}}]}"#).unwrap();
        assert_eq!(
            request_body(&m, &o, "bedrock").unwrap(),
            r#"{"inferenceConfig":{"maxTokens":100},"additionalModelRequestFields":{"top_k":3},"messages":[{"role":"user","content":[{"text":"q"},{"image":{"format":"png","source":{"bytes":"AA"}}}]},{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"r","signature":"s"}}},{"toolUse":{"toolUseId":"t1","name":"f","input":{"a":1}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t1","content":[{"text":"x"}],"status":"error"}}]}],"system":[{"text":"S"}],"toolConfig":{"tools":[{"toolSpec":{"name":"f","description":"d","inputSchema":{"json":{"type":"object"}}}}]}}"#
        );
        let r = parse_response(
            r#"{"output":{"message":{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"hm","signature":"sig"}}},{"text":"hi"},{"toolUse":{"toolUseId":"tu","name":"f","input":{"q":1}}}]}},"stopReason":"tool_use","usage":{"inputTokens":5,"outputTokens":6,"totalTokens":11}}"#,
            "bedrock",
            "m",
            "req-1",
        )
        .unwrap();
        assert_eq!(
            r.to_json(),
            r#"{"id":"req-1","content":[{"type":"reasoning","text":"hm","signature":"sig","provenance":"bedrock"},{"type":"text","text":"hi"},{"type":"tool_use","id":"tu","name":"f","input":{"q":1}}],"model":"m","stop_reason":"tool_use","usage":{"input_tokens":5,"output_tokens":6}}"#
        );
        assert_eq!(
            error_message(403, r#"{"message":"The security token included in the request is invalid."}"#),
            "The security token included in the request is invalid."
        );
    }

    #[test]
    fn event_stream_frames_split_anywhere() {
        let ev = |t: &str, p: &str| {
            encode_frame(
                &[(":event-type", t), (":content-type", "application/json"), (":message-type", "event")],
                p.as_bytes(),
            )
        };
        let mut bytes = Vec::new();
        bytes.extend(ev("messageStart", r#"{"role":"assistant"}"#));
        bytes.extend(ev("contentBlockDelta", r#"{"contentBlockIndex":0,"delta":{"text":"Hi"}}"#));
        bytes.extend(ev("contentBlockStop", r#"{"contentBlockIndex":0}"#));
        bytes.extend(ev(
            "contentBlockStart",
            r#"{"contentBlockIndex":1,"start":{"toolUse":{"toolUseId":"t","name":"f"}}}"#,
        ));
        bytes.extend(ev("contentBlockDelta", r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"{\"a\":"}}}"#));
        bytes.extend(ev("contentBlockDelta", r#"{"contentBlockIndex":1,"delta":{"toolUse":{"input":"2}"}}}"#));
        bytes.extend(ev("contentBlockStop", r#"{"contentBlockIndex":1}"#));
        bytes.extend(ev("messageStop", r#"{"stopReason":"tool_use"}"#));
        bytes.extend(ev("metadata", r#"{"usage":{"inputTokens":3,"outputTokens":4}}"#));
        for split in [1, 7, 64, bytes.len()] {
            let mut d = FrameDecoder::default();
            let mut frames = Vec::new();
            for c in bytes.chunks(split) {
                d.push(c, &mut frames).unwrap();
            }
            assert_eq!(frames.len(), 9);
            let mut evs = Vec::new();
            let mut st = StreamState::new("bedrock", "m", "rid");
            for f in &frames {
                st.on_frame(f, &mut |e: StreamEvent| evs.push(serde_json::to_string(&e).unwrap())).unwrap();
            }
            assert_eq!(
                evs,
                vec![
                    r#"{"type":"text","data":"Hi"}"#,
                    r#"{"type":"tool_use","data":{"type":"tool_use","id":"t","name":"f","input":{"a":2}}}"#
                ]
            );
            assert_eq!(
                st.finish().to_json(),
                r#"{"id":"rid","content":[{"type":"text","text":"Hi"},{"type":"tool_use","id":"t","name":"f","input":{"a":2}}],"model":"m","stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":4}}"#
            );
        }
        let exc = encode_frame(
            &[(":message-type", "exception"), (":exception-type", "throttlingException")],
            br#"{"message":"Too many requests"}"#,
        );
        let mut frames = Vec::new();
        FrameDecoder::default().push(&exc, &mut frames).unwrap();
        let err = StreamState::new("bedrock", "m", "").on_frame(&frames[0], &mut |_e: StreamEvent| {}).unwrap_err();
        assert_eq!(err.message, "Too many requests");
    }

    #[test]
    fn frames_are_bounded() {
        // A prelude announcing a frame over the limit: refused before its bytes are buffered.
        let mut prelude = ((MAX_EVENT_BYTES + 1) as u32).to_be_bytes().to_vec();
        prelude.extend_from_slice(&0u32.to_be_bytes());
        prelude.extend_from_slice(&[0; 4]);
        let err = FrameDecoder::default().push(&prelude, &mut Vec::new()).unwrap_err();
        assert_eq!(err.message, "Event stream frame exceeds the 16 MiB limit (16777216 bytes).");
        // Many frames in one chunk, and a frame's tail in the next: all decoded, in order.
        let frame = |i: usize| encode_frame(&[(":event-type", "x")], format!("{i}").as_bytes());
        let mut bytes: Vec<u8> = (0..50_000).flat_map(frame).collect();
        let last = frame(50_000);
        bytes.extend_from_slice(&last[..5]);
        let mut d = FrameDecoder::default();
        let mut frames = Vec::new();
        d.push(&bytes, &mut frames).unwrap();
        d.push(&last[5..], &mut frames).unwrap();
        assert_eq!(frames.len(), 50_001);
        assert_eq!(frames[50_000].payload, b"50000");
    }
}
