//! Anthropic Messages API wire format (CONTRACT §15.4).

use std::collections::VecDeque;

use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::wire::{content_messages, push_spliced, push_text_block, ContentBlocks, NativeReasoning};
use super::{object_input, ChatOptions, EventSink, LlmError, LlmResponse, StreamEvent};
use oma_core::json::{js_number, to_js_json, truthy, JsObject};
use oma_core::kernel::message::{Block, Message, Usage};

pub const MISSING_AUTH: &str = "Could not resolve authentication method. Expected either apiKey or authToken to be set. Or for one of the \"X-Api-Key\" or \"Authorization\" headers to be explicitly omitted";

/// The request body, or the errors the original throws before any network call.
pub fn request_body(messages: &[Message], opts: &ChatOptions, name: &str, stream: bool) -> Result<String, LlmError> {
    let max_tokens: Value = opts.max_tokens.clone().unwrap_or_else(|| Value::from(4096));
    let thinking = match &opts.thinking {
        Some(t) if t.enabled.as_ref().is_some_and(truthy) => {
            let budget = t.budget_tokens.clone().unwrap_or_else(|| Value::from(1024));
            let b = budget.as_f64().unwrap_or(f64::NAN);
            let max = max_tokens.as_f64().unwrap_or(f64::NAN);
            let shown = |v: &Value, f: f64| if v.is_number() { js_number(f) } else { to_js_json(v) };
            if b < 1024.0 {
                return Err(LlmError::other(format!(
                    "[anthropic] thinking.budgetTokens must be >= 1024 (got {}); the Anthropic API enforces this minimum.",
                    shown(&budget, b)
                )));
            }
            if b >= max {
                return Err(LlmError::other(format!(
                    "[anthropic] thinking.budgetTokens ({}) must be < maxTokens ({}); the Anthropic API rejects requests where budget_tokens >= max_tokens. Either lower thinking.budgetTokens or raise maxTokens.",
                    shown(&budget, b),
                    shown(&max_tokens, max)
                )));
            }
            Some(format!("{{\"type\":\"enabled\",\"budget_tokens\":{}}}", to_js_json(&budget)))
        }
        _ => None,
    };
    let msgs = messages_json(messages, opts, name)?;
    let mut b = JsObject::new();
    b.set("max_tokens", Some(&max_tokens));
    b.set("temperature", opts.temperature.as_ref());
    b.set("top_p", opts.top_p.as_ref());
    b.set("top_k", opts.top_k.as_ref());
    if let Some(extra) = opts.extra_body_map() {
        b.spread(extra);
    }
    b.set_raw("model", opts.model.as_ref().map(to_js_json));
    b.set_raw("messages", Some(msgs));
    b.set("system", opts.system_prompt.as_ref());
    b.set_raw("tools", tools_json(opts));
    b.set_raw("thinking", thinking);
    if stream {
        b.set_raw("stream", Some("true".into()));
    }
    Ok(b.into_json())
}

fn tools_json(opts: &ChatOptions) -> Option<String> {
    let tools = opts.tools.as_ref()?;
    Some(super::json_array(tools.iter().map(|t| {
        // `{ type: 'object', ...inputSchema }`: the schema's own `type` wins.
        let parsed = t.input_schema.as_ref().and_then(|raw| serde_json::from_str::<Map<String, Value>>(raw.get()).ok());
        let mut schema = JsObject::new();
        schema.set_str("type", "object");
        if let Some(m) = &parsed {
            schema.spread(m);
        }
        t.declaration("input_schema", Some(schema.into_json()))
    })))
}

fn messages_json(messages: &[Message], opts: &ChatOptions, name: &str) -> Result<String, LlmError> {
    content_messages::<Blocks>(messages, opts, name, 256 + messages.len() * 128)
}

/// Anthropic's blocks: typed content blocks, its own thinking echoed as `thinking` /
/// `redacted_thinking`.
struct Blocks;

impl ContentBlocks for Blocks {
    const REASONING: NativeReasoning = NativeReasoning {
        signed: ["{\"type\":\"thinking\",\"thinking\":", ",\"signature\":", "}"],
        redacted: Some(["{\"type\":\"redacted_thinking\",\"data\":", "}"]),
    };

    fn text(p: &mut String, text: Option<&str>) {
        push_text_block(p, text);
    }

    fn image(p: &mut String, media_type: &str, data: &str) {
        let head = "{\"type\":\"image\",\"source\":{\"type\":\"base64\",\"media_type\":";
        push_spliced(p, head, &[(media_type, ",\"data\":"), (data, "}}")]);
    }

    fn tool_use(p: &mut String, id: &str, name: &str, input: &RawValue) {
        push_spliced(p, "{\"type\":\"tool_use\",\"id\":", &[(id, ",\"name\":"), (name, ",\"input\":")]);
        p.push_str(input.get());
        p.push('}');
    }

    fn tool_result(p: &mut String, tool_use_id: &str, content: &str, is_error: Option<bool>) {
        let head = "{\"type\":\"tool_result\",\"tool_use_id\":";
        push_spliced(p, head, &[(tool_use_id, ",\"content\":"), (content, "")]);
        if let Some(e) = is_error {
            p.push_str(if e { ",\"is_error\":true" } else { ",\"is_error\":false" });
        }
        p.push('}');
    }
}

// ---------------------------------------------------------------------------------------
// Responses

// The response types below read what they find: a field the API leaves out takes its default.
#[derive(Deserialize, Default)]
#[serde(default)]
struct WireMessage {
    id: Option<String>,
    model: Option<String>,
    content: Vec<WireBlock>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(default)]
struct WireUsage {
    input_tokens: Option<f64>,
    output_tokens: Option<f64>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct WireBlock {
    #[serde(rename = "type")]
    kind: String,
    text: Option<String>,
    thinking: Option<String>,
    signature: Option<String>,
    data: Option<String>,
    id: Option<String>,
    name: Option<String>,
    input: Option<Value>,
}

fn map_block(b: WireBlock, name: &str) -> Block {
    match b.kind.as_str() {
        "thinking" => Block::Reasoning {
            text: b.thinking.unwrap_or_default(),
            signature: b.signature,
            redacted_data: None,
            provenance: Some(name.to_string()),
        },
        "redacted_thinking" => Block::Reasoning {
            text: String::new(),
            signature: None,
            redacted_data: Some(b.data.unwrap_or_default()),
            provenance: Some(name.to_string()),
        },
        "text" => Block::Text { text: b.text },
        "tool_use" => Block::ToolUse {
            id: b.id.unwrap_or_default(),
            name: b.name.unwrap_or_default(),
            input: tool_input(b.input.as_ref()),
            signature: None,
        },
        other => Block::text(format!("[unsupported block type: {other}]")),
    }
}

fn tool_input(v: Option<&Value>) -> Box<RawValue> {
    object_input(v)
}

fn finish(msg: WireMessage, name: &str) -> LlmResponse {
    let u = msg.usage.unwrap_or_default();
    LlmResponse {
        id: msg.id.unwrap_or_default(),
        model: msg.model.unwrap_or_default(),
        stop_reason: msg.stop_reason.unwrap_or_else(|| "end_turn".into()),
        usage: Usage { input_tokens: u.input_tokens.unwrap_or(0.0), output_tokens: u.output_tokens.unwrap_or(0.0) },
        content: msg.content.into_iter().map(|b| map_block(b, name)).collect(),
    }
}

pub fn parse_message(body: &str, name: &str) -> Result<LlmResponse, LlmError> {
    let m: WireMessage = serde_json::from_str(body)
        .map_err(|e| LlmError::other(format!("Could not parse response body as JSON: {e}")))?;
    Ok(finish(m, name))
}

/// The SDK's message accumulator plus the adapter's event mapping.
pub struct StreamState {
    name: String,
    message: Option<WireMessage>,
    /// Partial JSON of tool_use blocks, by block index.
    /// The input JSON of each open tool_use block by its index (a later start with the same
    /// index queues behind it). Maps, not lists searched per delta: a stream of many blocks
    /// stays linear.
    tool_json: FxHashMap<u64, VecDeque<String>>,
    /// The position of the first block started with each index.
    index_to_pos: FxHashMap<u64, usize>,
    pub stopped: bool,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    message: Option<WireMessage>,
    index: Option<u64>,
    content_block: Option<WireBlock>,
    delta: Option<Delta>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Delta {
    #[serde(rename = "type")]
    kind: Option<String>,
    text: Option<String>,
    thinking: Option<String>,
    signature: Option<String>,
    partial_json: Option<String>,
    stop_reason: Option<String>,
}

impl StreamState {
    pub fn new(name: &str) -> Self {
        StreamState {
            name: name.to_string(),
            message: None,
            tool_json: FxHashMap::default(),
            index_to_pos: FxHashMap::default(),
            stopped: false,
        }
    }

    fn block_mut(&mut self, index: u64) -> Option<&mut WireBlock> {
        let pos = *self.index_to_pos.get(&index)?;
        self.message.as_mut()?.content.get_mut(pos)
    }

    pub fn on_event(&mut self, event: Option<&str>, data: &str, sink: &mut dyn EventSink) -> Result<(), LlmError> {
        if event == Some("error") {
            let msg = match serde_json::from_str::<Value>(data) {
                Ok(v) => match v.get("message") {
                    Some(Value::String(s)) if !s.is_empty() => s.clone(),
                    _ => to_js_json(&v),
                },
                Err(_) => data.to_string(),
            };
            return Err(LlmError::other(msg));
        }
        let ev: Event = serde_json::from_str(data)
            .map_err(|_| LlmError::other(format!("Could not parse message into JSON: {data}")))?;
        match ev.kind.as_str() {
            "message_start" => {
                let mut m = ev.message.ok_or_else(|| LlmError::other("message_start without a message"))?;
                m.content.clear();
                self.message = Some(m);
            }
            "content_block_start" => {
                let msg = self.message.as_mut().ok_or_else(|| {
                    LlmError::other("Unexpected event order, got content_block_start before \"message_start\"")
                })?;
                let idx = ev.index.unwrap_or(0);
                let mut block = ev.content_block.unwrap_or_default();
                if block.kind == "tool_use" {
                    block.input = None;
                    self.tool_json.entry(idx).or_default().push_back(String::new());
                }
                msg.content.push(block);
                self.index_to_pos.entry(idx).or_insert(msg.content.len() - 1);
            }
            "content_block_delta" => {
                let idx = ev.index.unwrap_or(0);
                let Some(d) = ev.delta else { return Ok(()) };
                match d.kind.as_deref() {
                    Some("text_delta") => {
                        let t = d.text.unwrap_or_default();
                        if let Some(b) = self.block_mut(idx) {
                            b.text.get_or_insert_with(String::new).push_str(&t);
                        }
                        sink.emit(StreamEvent::Text(t));
                    }
                    Some("thinking_delta") => {
                        let t = d.thinking.unwrap_or_default();
                        if let Some(b) = self.block_mut(idx) {
                            b.thinking.get_or_insert_with(String::new).push_str(&t);
                        }
                        sink.emit(StreamEvent::Reasoning(t));
                    }
                    Some("signature_delta") => {
                        if let Some(b) = self.block_mut(idx) {
                            b.signature = d.signature;
                        }
                    }
                    Some("input_json_delta") => {
                        if let Some(buf) = self.tool_json.get_mut(&idx).and_then(|q| q.front_mut()) {
                            buf.push_str(d.partial_json.as_deref().unwrap_or(""));
                        }
                    }
                    _ => {}
                }
            }
            "content_block_stop" => {
                let idx = ev.index.unwrap_or(0);
                if let Some(json) = self.tool_json.get_mut(&idx).and_then(VecDeque::pop_front) {
                    let input: Option<Value> = serde_json::from_str(&json).ok().filter(Value::is_object);
                    if let Some(b) = self.block_mut(idx) {
                        b.input = Some(input.unwrap_or_else(|| Value::Object(Map::new())));
                        let blk = Block::ToolUse {
                            id: b.id.clone().unwrap_or_default(),
                            name: b.name.clone().unwrap_or_default(),
                            input: tool_input(b.input.as_ref()),
                            signature: None,
                        };
                        sink.emit(StreamEvent::ToolUse(blk));
                    }
                }
            }
            "message_delta" => {
                if let Some(m) = self.message.as_mut() {
                    if let Some(d) = ev.delta {
                        if d.stop_reason.is_some() {
                            m.stop_reason = d.stop_reason;
                        }
                    }
                    if let Some(u) = ev.usage {
                        let mu = m.usage.get_or_insert_with(WireUsage::default);
                        if u.output_tokens.is_some() {
                            mu.output_tokens = u.output_tokens;
                        }
                        if u.input_tokens.is_some() {
                            mu.input_tokens = u.input_tokens;
                        }
                    }
                }
            }
            "message_stop" => self.stopped = true,
            _ => {}
        }
        Ok(())
    }

    pub fn finish(self) -> Result<LlmResponse, LlmError> {
        let name = self.name;
        let mut m = self
            .message
            .ok_or_else(|| LlmError::other("stream ended without producing a Message with role=assistant"))?;
        // A tool_use block whose stop never came still gets its (possibly partial) input.
        for (idx, queue) in self.tool_json {
            if let Some(&pos) = self.index_to_pos.get(&idx) {
                for json in queue {
                    let input = serde_json::from_str::<Value>(&json).ok().filter(Value::is_object);
                    m.content[pos].input = input;
                }
            }
        }
        Ok(finish(m, &name))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oma_core::kernel::message::{parse_messages, Strictness};

    #[test]
    fn body_and_precedence() {
        let m = parse_messages(
            r#"[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"reasoning","text":"t","signature":"s","provenance":"anthropic"},{"type":"reasoning","text":"","redactedData":"","provenance":"anthropic"},{"type":"reasoning","text":"other","provenance":"openai"},{"type":"tool_use","id":"1","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"ok"}]}]"#,
            Strictness::Lenient,
        )
        .unwrap();
        let o = ChatOptions::from_json(r#"{"model":"claude","systemPrompt":"","extraBody":{"max_tokens":9,"system":"no","thinking":{"x":1},"metadata":{"u":1}},"tools":[{"name":"f","description":"d","inputSchema":{"properties":{}}}]}"#).unwrap();
        let body = request_body(&m, &o, "anthropic", false).unwrap();
        assert_eq!(
            body,
            r#"{"max_tokens":9,"system":"","metadata":{"u":1},"model":"claude","messages":[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s"},{"type":"redacted_thinking","data":""},{"type":"tool_use","id":"1","name":"f","input":{"a":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"1","content":"ok"}]}],"tools":[{"name":"f","description":"d","input_schema":{"type":"object","properties":{}}}]}"#
        );
    }

    #[test]
    fn thinking_budget_checks() {
        let m = Vec::new();
        let o = ChatOptions::from_json(r#"{"model":"c","thinking":{"enabled":true,"budgetTokens":500}}"#).unwrap();
        assert_eq!(
            request_body(&m, &o, "anthropic", false).unwrap_err().message,
            "[anthropic] thinking.budgetTokens must be >= 1024 (got 500); the Anthropic API enforces this minimum."
        );
        let o = ChatOptions::from_json(r#"{"model":"c","maxTokens":2000,"thinking":{"enabled":true,"budgetTokens":2000},"extraBody":{"max_tokens":99999}}"#).unwrap();
        assert_eq!(request_body(&m, &o, "anthropic", false).unwrap_err().message, "[anthropic] thinking.budgetTokens (2000) must be < maxTokens (2000); the Anthropic API rejects requests where budget_tokens >= max_tokens. Either lower thinking.budgetTokens or raise maxTokens.");
        let o = ChatOptions::from_json(r#"{"model":"c","thinking":{"enabled":true}}"#).unwrap();
        assert!(request_body(&m, &o, "anthropic", true)
            .unwrap()
            .ends_with(r#""thinking":{"type":"enabled","budget_tokens":1024},"stream":true}"#));
        let bad =
            parse_messages(r#"[{"role":"user","content":[{"type":"weird","x":1}]}]"#, Strictness::Lenient).unwrap();
        assert_eq!(
            request_body(&bad, &o, "anthropic", false).unwrap_err().message,
            r#"Unhandled content block type: {"type":"weird","x":1}"#
        );
    }

    #[test]
    fn maps_response() {
        let r = parse_message(r#"{"id":"msg","type":"message","role":"assistant","model":"claude","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"redacted_thinking","data":"xx"},{"type":"text","text":"hi"},{"type":"tool_use","id":"tu","name":"f","input":{"q":1.0}},{"type":"server_tool_use"}],"stop_reason":null,"usage":{"input_tokens":5,"output_tokens":6,"cache_read_input_tokens":1}}"#, "anthropic").unwrap();
        assert_eq!(
            r.to_json(),
            r#"{"id":"msg","content":[{"type":"reasoning","text":"hm","signature":"sig","provenance":"anthropic"},{"type":"reasoning","text":"","redactedData":"xx","provenance":"anthropic"},{"type":"text","text":"hi"},{"type":"tool_use","id":"tu","name":"f","input":{"q":1}},{"type":"text","text":"[unsupported block type: server_tool_use]"}],"model":"claude","stop_reason":"end_turn","usage":{"input_tokens":5,"output_tokens":6}}"#
        );
    }

    #[test]
    fn stream_events() {
        let mut evs = Vec::new();
        let mut sink = |e: StreamEvent| evs.push(serde_json::to_string(&e).unwrap());
        let mut st = StreamState::new("anthropic");
        for d in [
            r#"{"type":"message_start","message":{"id":"m1","model":"c","content":[],"stop_reason":null,"usage":{"input_tokens":3,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"why"}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"S"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi"}}"#,
            r#"{"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"t","name":"f","input":{}}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}"#,
            r#"{"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"[1]}"}}"#,
            r#"{"type":"content_block_stop","index":2}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use"},"usage":{"output_tokens":9}}"#,
            r#"{"type":"message_stop"}"#,
        ] {
            st.on_event(None, d, &mut sink).unwrap();
        }
        let r = st.finish().unwrap();
        assert_eq!(
            evs,
            vec![
                r#"{"type":"reasoning","data":"why"}"#,
                r#"{"type":"text","data":"Hi"}"#,
                r#"{"type":"tool_use","data":{"type":"tool_use","id":"t","name":"f","input":{"a":[1]}}}"#,
            ]
        );
        assert_eq!(
            r.to_json(),
            r#"{"id":"m1","content":[{"type":"reasoning","text":"why","signature":"S","provenance":"anthropic"},{"type":"text","text":"Hi"},{"type":"tool_use","id":"t","name":"f","input":{"a":[1]}}],"model":"c","stop_reason":"tool_use","usage":{"input_tokens":3,"output_tokens":9}}"#
        );
        let mut st = StreamState::new("anthropic");
        let e = st
            .on_event(
                Some("error"),
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#,
                &mut |_e: StreamEvent| {},
            )
            .unwrap_err();
        assert_eq!(e.message, r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
    }
}
