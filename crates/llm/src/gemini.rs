//! Gemini through its REST API (`generateContent` / `streamGenerateContent?alt=sse`) under the
//! same adapter contract: function declarations, function calls with their thought
//! signatures, thoughts as reasoning blocks (provenance `gemini`, echoed with signature).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::wire::{push_spliced, push_text_parts, walk, Dialect, Echo, NativeReasoning, PartList, Reasoning};
use super::{object_input, ChatOptions, EventSink, LlmError, LlmResponse, StreamEvent};
use oma_core::json::{push_json_string, to_js_json, truthy, JsObject};
use oma_core::kernel::message::{Block, Message, Role, Usage};

static CALLS: AtomicU64 = AtomicU64::new(0);
/// Gemini's developer API often returns function calls without an id; we make one up.
const GENERATED_ID_PREFIX: &str = "gemini_call_";

/// A function call's or response's `"id":…,"name":…`; ids this adapter invented are not
/// Gemini's to see.
fn push_id_and_name(p: &mut String, id: &str, name: &str) {
    if !id.starts_with(GENERATED_ID_PREFIX) {
        p.push_str("\"id\":");
        push_json_string(p, id);
        p.push(',');
    }
    p.push_str("\"name\":");
    push_json_string(p, name);
}

pub fn request_body(messages: &[Message], opts: &ChatOptions, name: &str) -> String {
    let mut gen = JsObject::new();
    gen.set("maxOutputTokens", opts.max_tokens.as_ref());
    gen.set("temperature", opts.temperature.as_ref());
    gen.set("topP", opts.top_p.as_ref());
    gen.set("topK", opts.top_k.as_ref());
    gen.set("presencePenalty", opts.presence_penalty.as_ref());
    gen.set("frequencyPenalty", opts.frequency_penalty.as_ref());
    if let Some(t) = opts.thinking.as_ref().filter(|t| t.enabled.as_ref().is_some_and(truthy)) {
        let mut tc = JsObject::new();
        tc.set_raw("includeThoughts", Some("true".into()));
        tc.set("thinkingBudget", t.budget_tokens.as_ref());
        gen.set_raw("thinkingConfig", Some(tc.into_json()));
    }
    let gen = gen.into_json();
    let mut b = JsObject::new();
    if gen != "{}" {
        b.set_raw("generationConfig", Some(gen));
    }
    if let Some(extra) = opts.extra_body_map() {
        b.spread(extra);
    }
    b.set_raw("contents", Some(contents_json(messages, opts, name)));
    if let Some(s) = opts.system_text() {
        let mut si = String::from("{\"parts\":");
        push_text_parts(&mut si, s);
        si.push('}');
        b.set_raw("systemInstruction", Some(si));
    }
    if let Some(tools) = opts.tools.as_ref().filter(|t| !t.is_empty()) {
        // Full JSON Schema (Zod output has `$schema`, `additionalProperties`, …).
        let decls = super::json_array(tools.iter().map(|t| t.declaration("parametersJsonSchema", t.schema_text())));
        b.set_raw("tools", Some(format!("[{{\"functionDeclarations\":{decls}}}]")));
    }
    b.into_json()
}

fn contents_json(messages: &[Message], opts: &ChatOptions, name: &str) -> String {
    // functionResponse needs the function's name; tool_result only carries the call id.
    let mut names: HashMap<&str, &str> = HashMap::new();
    for m in messages {
        for b in &m.content {
            if let Block::ToolUse { id, name, .. } = b {
                names.insert(id, name);
            }
        }
    }
    // Gemini rejects a content with no parts.
    let mut d = Wire { f: PartList::new(64, true), echo: Echo::new(opts, name, false), names };
    walk(messages, &mut d).expect("Gemini leaves unknown blocks out");
    d.f.finish()
}

/// Its own thought, echoed as a text part with its signature; no redacted form.
const REASONING: NativeReasoning =
    NativeReasoning { signed: ["{\"text\":", ",\"thought\":true,\"thoughtSignature\":", "}"], redacted: None };

/// Gemini's dialect: `contents` of `parts`, the model's role `model`, tool results answered by
/// function name; no redacted reasoning form (only a thought signature is echoed).
struct Wire<'m, 'n> {
    f: PartList,
    echo: Echo<'n>,
    names: HashMap<&'m str, &'m str>,
}

impl Wire<'_, '_> {
    fn text_part(&mut self, text: &str) {
        push_spliced(self.f.part(), "{\"text\":", &[(text, "}")]);
    }
}

impl<'m> Dialect<'m> for Wire<'m, '_> {
    fn begin(&mut self, role: Role) {
        self.f.open(match role {
            Role::User => "{\"role\":\"user\",\"parts\":[",
            Role::Assistant => "{\"role\":\"model\",\"parts\":[",
        });
    }

    fn text(&mut self, text: Option<&str>) {
        self.text_part(text.unwrap_or(""));
    }

    fn image(&mut self, media_type: &str, data: &str) {
        push_spliced(self.f.part(), "{\"inlineData\":{\"mimeType\":", &[(media_type, ",\"data\":"), (data, "}}")]);
    }

    fn tool_use(&mut self, id: &str, name: &str, input: &RawValue, signature: Option<&str>) {
        let p = self.f.part();
        p.push_str("{\"functionCall\":{");
        push_id_and_name(p, id, name);
        p.push_str(",\"args\":");
        p.push_str(input.get());
        p.push('}');
        if let Some(s) = signature {
            p.push_str(",\"thoughtSignature\":");
            push_json_string(p, s);
        }
        p.push('}');
    }

    fn tool_result(&mut self, tool_use_id: &str, content: &str, is_error: Option<bool>) {
        let name = self.names.get(tool_use_id).copied().unwrap_or(tool_use_id);
        let p = self.f.part();
        p.push_str("{\"functionResponse\":{");
        push_id_and_name(p, tool_use_id, name);
        p.push_str(if is_error == Some(true) { ",\"response\":{\"error\":" } else { ",\"response\":{\"output\":" });
        push_json_string(p, content);
        p.push_str("}}}");
    }

    fn reasoning(&mut self, r: Reasoning<'m>) {
        if let Some(inline) = self.echo.write(r, &mut self.f, &REASONING) {
            self.text_part(&inline);
        }
    }

    /// Left out.
    fn other(&mut self, _raw: &RawValue) -> Result<(), LlmError> {
        Ok(())
    }

    fn end(&mut self) {
        self.f.close();
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireResponse {
    #[serde(default)]
    candidates: Option<Vec<Candidate>>,
    #[serde(default)]
    usage_metadata: Option<WireUsage>,
    #[serde(default)]
    model_version: Option<String>,
    #[serde(default)]
    response_id: Option<String>,
    #[serde(default)]
    prompt_feedback: Option<Value>,
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<WireContent>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireContent {
    #[serde(default)]
    parts: Vec<WirePart>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WirePart {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: Option<bool>,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default)]
    function_call: Option<WireCall>,
}

#[derive(Deserialize)]
struct WireCall {
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    args: Option<Value>,
}

#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default)]
    prompt_token_count: Option<f64>,
    #[serde(default)]
    candidates_token_count: Option<f64>,
    #[serde(default)]
    thoughts_token_count: Option<f64>,
}

fn usage_of(u: Option<WireUsage>) -> Usage {
    let u = u.unwrap_or_default();
    Usage {
        input_tokens: u.prompt_token_count.unwrap_or(0.0),
        // Thinking tokens are billed as output.
        output_tokens: u.candidates_token_count.unwrap_or(0.0) + u.thoughts_token_count.unwrap_or(0.0),
    }
}

fn stop_reason(raw: Option<&str>, has_tool_use: bool) -> String {
    if has_tool_use {
        return "tool_use".into();
    }
    match raw {
        None | Some("STOP") | Some("FINISH_REASON_UNSPECIFIED") => "end_turn".into(),
        Some("MAX_TOKENS") => "max_tokens".into(),
        Some(other) => other.to_ascii_lowercase(),
    }
}

/// Appends the blocks of one response's parts; consecutive text merges (streams split it).
fn add_parts(parts: Vec<WirePart>, content: &mut Vec<Block>, name: &str, sink: &mut Option<&mut dyn EventSink>) {
    for p in parts {
        if let Some(fc) = p.function_call {
            let n = CALLS.fetch_add(1, Ordering::Relaxed) + 1;
            let b = Block::ToolUse {
                id: fc.id.filter(|s| !s.is_empty()).unwrap_or_else(|| format!("{GENERATED_ID_PREFIX}{n}")),
                name: fc.name.unwrap_or_default(),
                input: object_input(fc.args.as_ref()),
                signature: p.thought_signature,
            };
            if let Some(s) = sink.as_deref_mut() {
                s.emit(StreamEvent::ToolUse(b.clone()));
            }
            content.push(b);
        } else if p.thought == Some(true) {
            let t = p.text.unwrap_or_default();
            if let Some(s) = sink.as_deref_mut() {
                if !t.is_empty() {
                    s.emit(StreamEvent::Reasoning(t.clone()));
                }
            }
            match content.last_mut() {
                Some(Block::Reasoning { text, signature, .. }) if signature.is_none() => {
                    text.push_str(&t);
                    *signature = p.thought_signature;
                }
                _ => content.push(Block::Reasoning {
                    text: t,
                    signature: p.thought_signature,
                    redacted_data: None,
                    provenance: Some(name.to_string()),
                }),
            }
        } else if let Some(t) = p.text {
            if let Some(s) = sink.as_deref_mut() {
                if !t.is_empty() {
                    s.emit(StreamEvent::Text(t.clone()));
                }
            }
            match content.last_mut() {
                Some(Block::Text { text: Some(prev) }) => prev.push_str(&t),
                _ => content.push(Block::text(t)),
            }
        }
    }
}

fn api_error(e: &Value) -> LlmError {
    match e.get("message") {
        Some(Value::String(s)) => LlmError::other(s.clone()),
        _ => LlmError::other(to_js_json(e)),
    }
}

pub fn parse_response(body: &str, name: &str, model: &str) -> Result<LlmResponse, LlmError> {
    let r: WireResponse = serde_json::from_str(body)
        .map_err(|e| LlmError::other(format!("Could not parse response body as JSON: {e}")))?;
    if let Some(e) = r.error.as_ref().filter(|e| !e.is_null()) {
        return Err(api_error(e));
    }
    let mut cands = r.candidates.unwrap_or_default();
    if cands.is_empty() {
        let reason =
            r.prompt_feedback.as_ref().and_then(|f| f.get("blockReason")).and_then(Value::as_str).unwrap_or("unknown");
        return Err(LlmError::other(format!("Gemini returned no candidates (blockReason: {reason})")));
    }
    let c = cands.swap_remove(0);
    let mut content = Vec::new();
    add_parts(c.content.map(|c| c.parts).unwrap_or_default(), &mut content, name, &mut None);
    let has_tool = content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
    Ok(LlmResponse {
        id: r.response_id.unwrap_or_default(),
        model: r.model_version.unwrap_or_else(|| model.to_string()),
        stop_reason: stop_reason(c.finish_reason.as_deref(), has_tool),
        usage: usage_of(r.usage_metadata),
        content,
    })
}

pub struct StreamState {
    name: String,
    id: String,
    model: String,
    content: Vec<Block>,
    finish: Option<String>,
    usage: Option<WireUsage>,
}

impl StreamState {
    pub fn new(name: &str, model: &str) -> Self {
        StreamState {
            name: name.into(),
            id: String::new(),
            model: model.into(),
            content: Vec::new(),
            finish: None,
            usage: None,
        }
    }

    pub fn on_chunk(&mut self, data: &str, sink: &mut dyn EventSink) -> Result<(), LlmError> {
        let r: WireResponse = serde_json::from_str(data)
            .map_err(|_| LlmError::other(format!("Could not parse message into JSON: {data}")))?;
        if let Some(e) = r.error.as_ref().filter(|e| !e.is_null()) {
            return Err(api_error(e));
        }
        if let Some(id) = r.response_id {
            self.id = id;
        }
        if let Some(m) = r.model_version {
            self.model = m;
        }
        if r.usage_metadata.is_some() {
            self.usage = r.usage_metadata;
        }
        if let Some(c) = r.candidates.and_then(|mut v| if v.is_empty() { None } else { Some(v.swap_remove(0)) }) {
            if let Some(f) = c.finish_reason {
                self.finish = Some(f);
            }
            let mut s: Option<&mut dyn EventSink> = Some(sink);
            add_parts(c.content.map(|c| c.parts).unwrap_or_default(), &mut self.content, &self.name, &mut s);
        }
        Ok(())
    }

    pub fn finish(self) -> LlmResponse {
        let has_tool = self.content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
        LlmResponse {
            id: self.id,
            model: self.model,
            stop_reason: stop_reason(self.finish.as_deref(), has_tool),
            usage: usage_of(self.usage),
            content: self.content,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oma_core::kernel::message::{parse_messages, Strictness};

    #[test]
    fn builds_contents_and_config() {
        let m = parse_messages(
            r#"[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"reasoning","text":"t","signature":"S1","provenance":"gemini"},{"type":"tool_use","id":"c1","name":"f","input":{"a":1},"signature":"S2"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"out"}]},{"role":"assistant","content":[{"type":"reasoning","text":"x","provenance":"openai"}]}]"#,
            Strictness::Lenient,
        )
        .unwrap();
        let o = ChatOptions::from_json(r#"{"model":"gemini-2.5","systemPrompt":"sys","maxTokens":100,"thinking":{"enabled":true,"budgetTokens":2048},"tools":[{"name":"f","description":"d","inputSchema":{"type":"object"}}]}"#).unwrap();
        assert_eq!(
            request_body(&m, &o, "gemini"),
            r#"{"generationConfig":{"maxOutputTokens":100,"thinkingConfig":{"includeThoughts":true,"thinkingBudget":2048}},"contents":[{"role":"user","parts":[{"text":"q"}]},{"role":"model","parts":[{"text":"t","thought":true,"thoughtSignature":"S1"},{"functionCall":{"id":"c1","name":"f","args":{"a":1}},"thoughtSignature":"S2"}]},{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"f","response":{"output":"out"}}}]}],"systemInstruction":{"parts":[{"text":"sys"}]},"tools":[{"functionDeclarations":[{"name":"f","description":"d","parametersJsonSchema":{"type":"object"}}]}]}"#
        );
    }

    #[test]
    fn maps_response_and_stream() {
        let body = r#"{"candidates":[{"content":{"role":"model","parts":[{"text":"plan","thought":true,"thoughtSignature":"T"},{"text":"Hi"},{"functionCall":{"name":"f","args":{"q":"x"}},"thoughtSignature":"FS"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":4,"candidatesTokenCount":2,"thoughtsTokenCount":3},"modelVersion":"gemini-2.5-flash","responseId":"r1"}"#;
        let r = parse_response(body, "gemini", "m").unwrap();
        let j = r.to_json();
        assert!(j.starts_with(r#"{"id":"r1","content":[{"type":"reasoning","text":"plan","signature":"T","provenance":"gemini"},{"type":"text","text":"Hi"},{"type":"tool_use","id":"gemini_call_"#), "{j}");
        assert!(j.ends_with(r#","name":"f","input":{"q":"x"},"signature":"FS"}],"model":"gemini-2.5-flash","stop_reason":"tool_use","usage":{"input_tokens":4,"output_tokens":5}}"#), "{j}");
        let mut evs = Vec::new();
        let mut sink = |e: StreamEvent| evs.push(serde_json::to_string(&e).unwrap());
        let mut st = StreamState::new("gemini", "m");
        st.on_chunk(r#"{"candidates":[{"content":{"parts":[{"text":"He"}]}}]}"#, &mut sink).unwrap();
        st.on_chunk(r#"{"candidates":[{"content":{"parts":[{"text":"llo"}]},"finishReason":"MAX_TOKENS"}],"usageMetadata":{"promptTokenCount":1,"candidatesTokenCount":2}}"#, &mut sink).unwrap();
        let r = st.finish();
        assert_eq!(evs, vec![r#"{"type":"text","data":"He"}"#, r#"{"type":"text","data":"llo"}"#]);
        assert_eq!(
            r.to_json(),
            r#"{"id":"","content":[{"type":"text","text":"Hello"}],"model":"m","stop_reason":"max_tokens","usage":{"input_tokens":1,"output_tokens":2}}"#
        );
        assert!(parse_response(r#"{"promptFeedback":{"blockReason":"SAFETY"}}"#, "gemini", "m")
            .unwrap_err()
            .message
            .contains("SAFETY"));
        let m = parse_messages(
            r#"[{"role":"assistant","content":[{"type":"tool_use","id":"gemini_call_7","name":"f","input":{}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"gemini_call_7","content":"ok"}]}]"#,
            Strictness::Lenient,
        )
        .unwrap();
        let body = request_body(&m, &ChatOptions::default(), "gemini");
        assert_eq!(
            body,
            r#"{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"ok"}}}]}]}"#
        );
    }
}
