//! OpenAI Chat Completions wire format (CONTRACT §15.5), shared by provider `openai`, the
//! OpenAI-compatible presets, local servers and Azure OpenAI.

use std::borrow::Cow;

use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;

use super::reasoning_fallback::{reasoning_to_inline_text, resolve_max_chars, MaxChars};
use super::text_tool_extractor::{extract_tool_calls_until, repair_tool_args};
use super::wire::{push_text_block, walk_message, Dialect, Reasoning};
use super::{object_input, ChatOptions, EventSink, LlmError, LlmResponse, StreamEvent};
use oma_core::json::{json_string, push_json_string, to_js_json, JsObject};
use oma_core::json::{Scan, Seen};
use oma_core::kernel::message::{Block, Message, Role, Usage};

/// `buildMessageOptions`: how reasoning blocks travel outbound.
#[derive(Debug, Clone)]
pub struct Outbound<'a> {
    pub preserve_as_text: bool,
    pub max_chars: MaxChars,
    /// Provider whose own reasoning is echoed as `reasoning_content` (`tool-use-only`).
    pub native_echo: Option<&'a str>,
}

pub fn outbound<'a>(opts: &ChatOptions, name: &'a str, tool_use_only: bool) -> Option<Outbound<'a>> {
    let preserve = opts.preserve_reasoning();
    if !tool_use_only && !preserve {
        return None;
    }
    Some(Outbound {
        preserve_as_text: preserve,
        max_chars: if preserve { resolve_max_chars(opts.compress_reasoning_text.as_ref()) } else { MaxChars(None) },
        native_echo: if tool_use_only { Some(name) } else { None },
    })
}

/// `buildOpenAIMessageList(messages, systemPrompt, outbound)` as JSON text.
pub fn message_list_json(messages: &[Message], system: Option<&Value>, ob: Option<&Outbound>) -> String {
    let mut w = ListWriter::new(system);
    let has_tool_use = messages.iter().any(Message::has_tool_use);
    for m in messages {
        w.message(m, has_tool_use, ob);
    }
    w.out
}

/// The list's JSON text so far, always closed (`[…]`): a request borrows it as it stands and
/// the next message goes in before the `]`.
#[derive(Debug, Clone, Default)]
struct ListWriter {
    out: String,
    first: bool,
    /// One message's pieces while it is walked (kept for the next message's).
    scratch: Scratch,
}

#[derive(Debug, Clone, Default)]
struct Scratch {
    /// The assistant's `tool_calls` entries, comma-separated.
    tool_calls: String,
    /// The assistant's `content`: its texts and the `<thinking>` fallbacks, in order.
    content: String,
    /// Whether the assistant's `content` is sent (a text block, even empty, or a fallback).
    has_content: bool,
    /// The provider's own reasoning echoed as `reasoning_content`.
    echo: String,
    /// The user's text and image parts, comma-separated.
    parts: String,
    /// The user's blocks other than tool results, and whether one was a tool result.
    rest: usize,
    had_result: bool,
}

impl ListWriter {
    fn new(system: Option<&Value>) -> ListWriter {
        // Room for a few tool results before the first reallocation.
        ListWriter::reusing(String::with_capacity(4096), system)
    }

    /// A new list in `buf`'s memory: a run's list grows call by call, and the next run's will
    /// grow as large (no reallocation and copy on the way up).
    fn reusing(mut buf: String, system: Option<&Value>) -> ListWriter {
        buf.clear();
        let mut w = ListWriter { out: buf, first: true, scratch: Scratch::default() };
        w.out.push_str("[]");
        if let Some(Value::String(s)) = system {
            if !s.is_empty() {
                w.open();
                w.sep();
                w.out.push_str("{\"role\":\"system\",\"content\":");
                push_json_string(&mut w.out, s);
                w.out.push_str("}]");
            }
        }
        w
    }

    /// Takes the closing `]` off before entries are appended (`message` puts it back).
    fn open(&mut self) {
        self.out.pop();
    }

    fn sep(&mut self) {
        if !self.first {
            self.out.push(',');
        }
        self.first = false;
    }

    /// `has_tool_use`: whether any message of the whole list has a tool_use block.
    fn message(&mut self, m: &Message, has_tool_use: bool, ob: Option<&Outbound>) {
        self.open();
        walk_message(m, &mut Entries { w: self, role: m.role, has_tool_use, ob, single_text: None })
            .expect("OpenAI leaves unknown blocks out");
        self.out.push(']');
    }
}

/// OpenAI's dialect for one message: a user message's tool results become `tool` messages and
/// the rest one `user` message; an assistant message's texts join into one `content` and its
/// tool calls into `tool_calls`.
struct Entries<'w, 'o, 'm> {
    w: &'w mut ListWriter,
    role: Role,
    /// Whether any message of the whole list has a tool_use block.
    has_tool_use: bool,
    ob: Option<&'o Outbound<'o>>,
    /// The user's first non-tool-result block when it is a text (sent as a plain string when it
    /// is the only one).
    single_text: Option<Option<&'m str>>,
}

impl Entries<'_, '_, '_> {
    fn user_part(&mut self) -> &mut String {
        let sc = &mut self.w.scratch;
        if !sc.parts.is_empty() {
            sc.parts.push(',');
        }
        &mut sc.parts
    }

    /// A user block that is not a tool result.
    fn rest(&mut self) {
        self.w.scratch.rest += 1;
    }
}

impl<'m> Dialect<'m> for Entries<'_, '_, 'm> {
    fn begin(&mut self, _role: Role) {
        let sc = &mut self.w.scratch;
        sc.tool_calls.clear();
        sc.content.clear();
        sc.has_content = false;
        sc.echo.clear();
        sc.parts.clear();
        sc.rest = 0;
        sc.had_result = false;
    }

    fn text(&mut self, text: Option<&'m str>) {
        match self.role {
            Role::Assistant => {
                let sc = &mut self.w.scratch;
                sc.content.push_str(text.unwrap_or(""));
                sc.has_content = true;
            }
            Role::User => {
                if self.w.scratch.rest == 0 {
                    self.single_text = Some(text);
                }
                self.rest();
                push_text_block(self.user_part(), text);
            }
        }
    }

    fn image(&mut self, media_type: &str, data: &str) {
        if self.role == Role::User {
            self.rest();
            let p = self.user_part();
            p.push_str("{\"type\":\"image_url\",\"image_url\":{\"url\":");
            push_json_string(p, &format!("data:{media_type};base64,{data}"));
            p.push_str("}}");
        }
    }

    fn tool_use(&mut self, id: &str, name: &str, input: &RawValue, _signature: Option<&str>) {
        match self.role {
            Role::Assistant => {
                let calls = &mut self.w.scratch.tool_calls;
                if !calls.is_empty() {
                    calls.push(',');
                }
                calls.push_str("{\"id\":");
                push_json_string(calls, id);
                calls.push_str(",\"type\":\"function\",\"function\":{\"name\":");
                push_json_string(calls, name);
                calls.push_str(",\"arguments\":");
                push_json_string(calls, input.get());
                calls.push_str("}}");
            }
            Role::User => self.rest(),
        }
    }

    fn tool_result(&mut self, tool_use_id: &str, content: &str, _is_error: Option<bool>) {
        if self.role == Role::User {
            self.w.scratch.had_result = true;
            self.w.sep();
            let out = &mut self.w.out;
            out.push_str("{\"role\":\"tool\",\"tool_call_id\":");
            push_json_string(out, tool_use_id);
            out.push_str(",\"content\":");
            push_json_string(out, content);
            out.push('}');
        }
    }

    fn reasoning(&mut self, r: Reasoning<'m>) {
        if self.role == Role::User {
            return self.rest();
        }
        let Some(ob) = self.ob else { return };
        let sc = &mut self.w.scratch;
        if ob.native_echo.is_some() && r.provenance == ob.native_echo {
            let redacted = matches!(r.redacted_data, Some(d) if !d.is_empty());
            if !redacted {
                sc.echo.push_str(r.text);
            }
        } else if ob.preserve_as_text {
            sc.content.push_str(&reasoning_to_inline_text(r.text, r.redacted_data, ob.max_chars));
        }
    }

    /// Left out.
    fn other(&mut self, _raw: &RawValue) -> Result<(), LlmError> {
        if self.role == Role::User {
            self.rest();
        }
        Ok(())
    }

    fn end(&mut self) {
        match self.role {
            Role::Assistant => self.end_assistant(),
            Role::User => self.end_user(),
        }
    }
}

impl Entries<'_, '_, '_> {
    fn end_user(&mut self) {
        let (rest, had_result) = (self.w.scratch.rest, self.w.scratch.had_result);
        if had_result && rest == 0 {
            return;
        }
        self.w.sep();
        let out = &mut self.w.out;
        out.push_str("{\"role\":\"user\"");
        match self.single_text {
            // `content: undefined` disappears from the JSON.
            Some(None) if rest == 1 => {}
            Some(Some(t)) if rest == 1 => {
                out.push_str(",\"content\":");
                push_json_string(out, t);
            }
            _ => {
                out.push_str(",\"content\":[");
                out.push_str(&self.w.scratch.parts);
                out.push(']');
            }
        }
        out.push('}');
    }

    fn end_assistant(&mut self) {
        let sc = &self.w.scratch;
        // Set by a text block, or by a fallback text that is not empty.
        let has_content = sc.has_content || !sc.content.is_empty();
        if sc.tool_calls.is_empty() && !has_content {
            return;
        }
        self.w.sep();
        let (out, sc) = (&mut self.w.out, &self.w.scratch);
        out.push_str("{\"role\":\"assistant\",\"content\":");
        if has_content {
            push_json_string(out, &sc.content);
        } else {
            out.push_str("null");
        }
        if !sc.tool_calls.is_empty() {
            out.push_str(",\"tool_calls\":[");
            out.push_str(&sc.tool_calls);
            out.push(']');
        }
        if self.has_tool_use && !sc.echo.is_empty() {
            out.push_str(",\"reasoning_content\":");
            push_json_string(out, &sc.echo);
        }
        out.push('}');
    }
}

/// The largest list buffer a cache keeps for the next list it starts.
const MAX_KEPT_LIST: usize = 1 << 20;

/// `message_list_json` across the calls of one run (one cache per run and options): the text
/// of the messages sent before is reused while the history has only grown since (same
/// `History` epoch, see `kernel::history`) and its `has_tool_use` is unchanged.
#[derive(Debug, Default)]
pub struct ListCache {
    epoch: u64,
    count: usize,
    has_tool_use: bool,
    list: Option<ListWriter>,
}

impl ListCache {
    /// The list for `messages` (borrowed from the cache: the request body copies it once).
    pub fn message_list_json(
        &mut self,
        messages: &[Message],
        epoch: u64,
        system: Option<&Value>,
        ob: Option<&Outbound>,
    ) -> &str {
        let has_tool_use = messages.iter().any(Message::has_tool_use);
        let reusable = self.epoch == epoch && self.count <= messages.len() && self.has_tool_use == has_tool_use;
        let mut w = match self.list.take() {
            Some(w) if reusable => w,
            old => {
                self.count = 0;
                match old {
                    // Not kept when a long history made it large.
                    Some(w) if w.out.capacity() <= MAX_KEPT_LIST => ListWriter::reusing(w.out, system),
                    _ => ListWriter::new(system),
                }
            }
        };
        for m in &messages[self.count..] {
            w.message(m, has_tool_use, ob);
        }
        self.epoch = epoch;
        self.count = messages.len();
        self.has_tool_use = has_tool_use;
        &self.list.insert(w).out
    }
}

/// `toOpenAITool(def)` for every tool, or `None` when `options.tools` is absent.
pub fn tools_json(opts: &ChatOptions) -> Option<String> {
    let tools = opts.tools.as_ref()?;
    Some(super::json_array(
        tools.iter().map(|t| {
            format!("{{\"type\":\"function\",\"function\":{}}}", t.declaration("parameters", t.schema_text()))
        }),
    ))
}

/// The request body (§15.5 precedence: sampling < extraBody < model/messages/tools/stream).
/// `model` is `None` when the caller left `options.model` undefined (then it is not sent).
/// `tools_json` is `tools_json(opts)` (passed in: a run computes it once).
pub fn request_body(
    messages_json: &str,
    tools_json: Option<&str>,
    model: Option<&str>,
    opts: &ChatOptions,
    stream: bool,
) -> String {
    let mut b = JsObject::new();
    b.set("max_tokens", opts.max_tokens.as_ref());
    b.set("temperature", opts.temperature.as_ref());
    b.set("frequency_penalty", opts.frequency_penalty.as_ref());
    b.set("presence_penalty", opts.presence_penalty.as_ref());
    b.set("top_p", opts.top_p.as_ref());
    b.set("top_k", opts.top_k.as_ref());
    b.set("min_p", opts.min_p.as_ref());
    b.set("parallel_tool_calls", opts.parallel_tool_calls.as_ref());
    b.set("reasoning_effort", opts.thinking.as_ref().and_then(|t| t.effort.as_ref()));
    if let Some(extra) = opts.extra_body_map() {
        b.spread(extra);
    }
    b.set_raw("model", model.map(json_string));
    b.set_borrowed("messages", Some(messages_json));
    b.set_borrowed("tools", tools_json);
    if stream {
        b.set_raw("stream", Some("true".into()));
        b.set_raw("stream_options", Some("{\"include_usage\":true}".into()));
    } else {
        b.set_raw("stream", Some("false".into()));
    }
    b.into_json()
}

/// A request body's text before and after its message list, for one model and stream flag.
#[derive(Debug, Clone)]
pub struct Frame {
    stream: bool,
    model: Option<String>,
    head: String,
    tail: String,
}

/// `request_body` with everything but the message list made once per options (the calls of
/// a run differ only in their messages). Options used with another model or stream flag than
/// the first build their body whole.
pub fn framed_body(
    messages_json: &str,
    tools_json: Option<&str>,
    model: Option<&str>,
    opts: &ChatOptions,
    stream: bool,
) -> String {
    let frame = opts.openai_frame.get_or_init(|| {
        // Every other part of a body is serialised JSON, so a raw NUL marks the list's place.
        const MARK: &str = "\u{0}messages\u{0}";
        let body = request_body(MARK, tools_json, model, opts, stream);
        let at = body.find(MARK)?;
        Some(Frame {
            stream,
            model: model.map(str::to_string),
            head: body[..at].to_string(),
            tail: body[at + MARK.len()..].to_string(),
        })
    });
    match frame {
        Some(f) if f.stream == stream && f.model.as_deref() == model => {
            let mut body = String::with_capacity(f.head.len() + messages_json.len() + f.tail.len());
            body.push_str(&f.head);
            body.push_str(messages_json);
            body.push_str(&f.tail);
            body
        }
        _ => request_body(messages_json, tools_json, model, opts, stream),
    }
}

// ---------------------------------------------------------------------------------------
// Responses

// One completion or stream chunk, borrowed from the body: strings without escapes are not
// copied, and `content` / `reasoning_content` stay raw text until their type is known (almost
// always null or a plain string).
#[derive(Deserialize)]
struct Completion<'a> {
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: Option<Vec<Choice<'a>>>,
    #[serde(default)]
    usage: Option<WireUsage>,
    #[serde(default, borrow)]
    error: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct Choice<'a> {
    /// A completion's message.
    #[serde(default, borrow)]
    message: Option<WireMessage<'a>>,
    /// A stream chunk's part of the message.
    #[serde(default, borrow)]
    delta: Option<WireMessage<'a>>,
    #[serde(default, borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default)]
struct WireMessage<'a> {
    #[serde(default, borrow)]
    content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    reasoning_content: Option<&'a RawValue>,
    #[serde(default, borrow)]
    tool_calls: Option<Vec<WireToolCall<'a>>>,
}

#[derive(Deserialize)]
struct WireToolCall<'a> {
    /// Which call a stream chunk continues.
    #[serde(default)]
    index: Option<u64>,
    #[serde(default, borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    function: Option<WireFunction<'a>>,
}

#[derive(Deserialize)]
struct WireFunction<'a> {
    #[serde(default, borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Option<Cow<'a, str>>,
}

#[derive(Deserialize, Default, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: Option<f64>,
    #[serde(default)]
    completion_tokens: Option<f64>,
}

/// `getOpenAIReasoningText(source)`.
pub fn reasoning_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(items)) => {
            let mut out = String::new();
            for it in items {
                match it {
                    Value::String(s) => out.push_str(s),
                    Value::Object(o) => {
                        if let Some(s) = ["text", "content", "reasoning_content"]
                            .iter()
                            .find_map(|k| o.get(*k).and_then(Value::as_str))
                        {
                            out.push_str(s);
                        }
                    }
                    _ => {}
                }
            }
            out
        }
        _ => String::new(),
    }
}

/// `normalizeFinishReason`.
pub fn normalize_finish_reason(r: &str) -> String {
    match r {
        "stop" => "end_turn",
        "tool_calls" => "tool_use",
        "length" => "max_tokens",
        other => other,
    }
    .to_string()
}

fn stop_reason(raw: Option<&str>, has_tool_use: bool) -> String {
    let raw = raw.unwrap_or("stop");
    if has_tool_use && raw == "stop" {
        "tool_use".into()
    } else {
        normalize_finish_reason(raw)
    }
}

/// Tool arguments: an object as is, other JSON → `{}`, unparseable → `repairToolArgs ?? {}`.
fn parse_arguments(args: Option<&str>) -> Box<RawValue> {
    let Some(a) = args else { return oma_core::json::empty_object() };
    // Usually the provider wrote the arguments as JS would: kept as they are, not rewritten.
    if oma_core::json::is_js_canonical_object(a) {
        if let Ok(raw) = RawValue::from_string(a.to_string()) {
            return raw;
        }
    }
    match serde_json::from_str::<Value>(a) {
        Ok(v) => object_input(Some(&v)),
        Err(_) => match repair_tool_args(a) {
            Some(m) => oma_core::json::raw_object(&m),
            None => oma_core::json::empty_object(),
        },
    }
}

fn usage_of(u: Option<WireUsage>) -> Usage {
    let u = u.unwrap_or_default();
    Usage { input_tokens: u.prompt_tokens.unwrap_or(0.0), output_tokens: u.completion_tokens.unwrap_or(0.0) }
}

/// A non-null raw JSON value as `Value` (only for the rare non-string shapes).
fn raw_value(raw: &RawValue) -> Value {
    serde_json::from_str(raw.get()).unwrap_or(Value::Null)
}

/// A message's non-null `content` as text: a string as is, anything else as its JSON.
fn content_text(raw: &RawValue) -> String {
    match serde_json::from_str::<String>(raw.get()) {
        Ok(s) => s,
        Err(_) => to_js_json(&raw_value(raw)),
    }
}

/// `reasoning_text` of a raw `reasoning_content` (absent or null: empty).
fn reasoning_of(raw: Option<&RawValue>) -> String {
    raw.map(|r| reasoning_text(Some(&raw_value(r)))).unwrap_or_default()
}

/// `fromOpenAICompletion(completion, knownToolNames, provenance)` on the raw body.
pub fn parse_completion(body: &str, known: Option<&[&str]>, provenance: &str) -> Result<LlmResponse, LlmError> {
    parse_completion_until(body, known, provenance, &|| false)
}

/// `parse_completion`, with the text tool-call scan asking `aborted` as it goes: the aborted
/// error once it answers true.
pub fn parse_completion_until(
    body: &str,
    known: Option<&[&str]>,
    provenance: &str,
    aborted: &dyn Fn() -> bool,
) -> Result<LlmResponse, LlmError> {
    let p = match completion_fast(body) {
        Some(p) => p,
        None => completion_serde(body)?,
    };
    let mut content = Vec::new();
    let choice = p.choice.ok_or_else(|| LlmError::other("OpenAI returned a completion with no choices"))?;
    if !choice.reasoning.is_empty() {
        content.push(Block::Reasoning {
            text: choice.reasoning,
            signature: None,
            redacted_data: None,
            provenance: Some(provenance.to_string()),
        });
    }
    let text = choice.text.map(Cow::into_owned);
    if let Some(t) = &text {
        content.push(Block::text(t.clone()));
    }
    let any_native = !choice.calls.is_empty();
    for (id, name, arguments) in choice.calls {
        content.push(Block::ToolUse {
            id: id.map(Cow::into_owned).unwrap_or_default(),
            name: name.map(Cow::into_owned).unwrap_or_default(),
            input: parse_arguments(arguments.as_deref()),
            signature: None,
        });
    }
    if !any_native {
        if let (Some(known), Some(t)) = (known, text.as_deref()) {
            if !known.is_empty() && !t.is_empty() {
                content.extend(extract_tool_calls_until(t, known, aborted).ok_or_else(LlmError::aborted)?);
            }
        }
    }
    let has_tool = content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
    Ok(LlmResponse {
        id: p.id.map(Cow::into_owned).unwrap_or_default(),
        model: p.model.map(Cow::into_owned).unwrap_or_default(),
        stop_reason: stop_reason(choice.finish_reason.as_deref(), has_tool),
        usage: usage_of(p.usage),
        content,
    })
}

/// What `parse_completion` reads from a completion body, by either parser.
struct Parsed<'a> {
    id: Option<Cow<'a, str>>,
    model: Option<Cow<'a, str>>,
    /// The first choice; `None` when `choices` is absent, null or empty.
    choice: Option<ParsedChoice<'a>>,
    usage: Option<WireUsage>,
}

#[derive(Default)]
struct ParsedChoice<'a> {
    /// The message's `content` as text (absent or null: `None`).
    text: Option<Cow<'a, str>>,
    reasoning: String,
    /// Tool calls as (id, function name, function arguments).
    calls: Vec<RawCall<'a>>,
    finish_reason: Option<Cow<'a, str>>,
}

/// One tool call of a completion as read: (id, function name, function arguments).
type RawCall<'a> = (Option<Cow<'a, str>>, Option<Cow<'a, str>>, Option<Cow<'a, str>>);

fn completion_serde(body: &str) -> Result<Parsed<'_>, LlmError> {
    let c: Completion = serde_json::from_str(body)
        .map_err(|e| LlmError::other(format!("Could not parse response body as JSON: {e}")))?;
    let choice = c.choices.and_then(|mut v| if v.is_empty() { None } else { Some(v.swap_remove(0)) }).map(|ch| {
        let msg = ch.message.unwrap_or_default();
        ParsedChoice {
            reasoning: reasoning_of(msg.reasoning_content),
            // `null` never reaches here (it is `None`).
            text: msg.content.map(|raw| Cow::Owned(content_text(raw))),
            calls: msg
                .tool_calls
                .unwrap_or_default()
                .into_iter()
                .map(|tc| match tc.function {
                    Some(f) => (tc.id, f.name, f.arguments),
                    None => (tc.id, None, None),
                })
                .collect(),
            finish_reason: ch.finish_reason,
        }
    });
    Ok(Parsed { id: c.id, model: c.model, choice, usage: c.usage })
}

/// The completion as `completion_serde` reads it, for the usual shape (one choice, string or
/// null fields, integer token counts); `None` for anything else, which serde then reads.
fn completion_fast(body: &str) -> Option<Parsed<'_>> {
    let mut s = Scan::new(body);
    let mut p = Parsed { id: None, model: None, choice: None, usage: None };
    let mut seen = Seen(0);
    s.object(|s, key| match key {
        "id" => {
            seen.once(1)?;
            p.id = s.opt_string()?;
            Some(())
        }
        "model" => {
            seen.once(2)?;
            p.model = s.opt_string()?;
            Some(())
        }
        "choices" => {
            seen.once(4)?;
            if s.null() {
                return Some(());
            }
            s.array(|s| {
                // Further choices are serde's to check.
                if p.choice.is_some() {
                    return None;
                }
                p.choice = Some(choice_fast(s)?);
                Some(())
            })
        }
        "usage" => {
            seen.once(8)?;
            if !s.null() {
                let mut u = WireUsage::default();
                let mut seen = Seen(0);
                s.object(|s, key| match key {
                    "prompt_tokens" => {
                        seen.once(1)?;
                        u.prompt_tokens = opt_count(s)?;
                        Some(())
                    }
                    "completion_tokens" => {
                        seen.once(2)?;
                        u.completion_tokens = opt_count(s)?;
                        Some(())
                    }
                    _ => s.skip(),
                })?;
                p.usage = Some(u);
            }
            Some(())
        }
        "error" => {
            seen.once(16)?;
            s.skip()
        }
        _ => s.skip(),
    })?;
    s.at_end().then_some(p)
}

fn choice_fast<'a>(s: &mut Scan<'a>) -> Option<ParsedChoice<'a>> {
    let mut c = ParsedChoice::default();
    let mut seen = Seen(0);
    s.object(|s, key| match key {
        "message" => {
            seen.once(1)?;
            if s.null() {
                return Some(());
            }
            let mut seen = Seen(0);
            s.object(|s, key| match key {
                "content" => {
                    seen.once(1)?;
                    c.text = s.opt_string()?;
                    Some(())
                }
                "reasoning_content" => {
                    seen.once(2)?;
                    c.reasoning = s.opt_string()?.map(Cow::into_owned).unwrap_or_default();
                    Some(())
                }
                "tool_calls" => {
                    seen.once(4)?;
                    if s.null() {
                        return Some(());
                    }
                    s.array(|s| {
                        c.calls.push(call_fast(s)?);
                        Some(())
                    })
                }
                _ => s.skip(),
            })
        }
        // A stream chunk's field: in a completion, serde checks it.
        "delta" => {
            seen.once(4)?;
            s.null().then_some(())
        }
        "finish_reason" => {
            seen.once(2)?;
            c.finish_reason = s.opt_string()?;
            Some(())
        }
        _ => s.skip(),
    })?;
    Some(c)
}

type Call<'a> = (Option<Cow<'a, str>>, Option<Cow<'a, str>>, Option<Cow<'a, str>>);

fn call_fast<'a>(s: &mut Scan<'a>) -> Option<Call<'a>> {
    let mut call: Call = (None, None, None);
    let mut seen = Seen(0);
    s.object(|s, key| match key {
        "index" => {
            seen.once(1)?;
            if !s.null() {
                s.small_uint()?;
            }
            Some(())
        }
        "id" => {
            seen.once(2)?;
            call.0 = s.opt_string()?;
            Some(())
        }
        "function" => {
            seen.once(4)?;
            if s.null() {
                return Some(());
            }
            let mut seen = Seen(0);
            s.object(|s, key| match key {
                "name" => {
                    seen.once(1)?;
                    call.1 = s.opt_string()?;
                    Some(())
                }
                "arguments" => {
                    seen.once(2)?;
                    call.2 = s.opt_string()?;
                    Some(())
                }
                _ => s.skip(),
            })
        }
        _ => s.skip(),
    })?;
    Some(call)
}

fn opt_count(s: &mut Scan) -> Option<Option<f64>> {
    if s.null() {
        Some(None)
    } else {
        s.small_uint().map(|n| Some(n as f64))
    }
}

/// Assembles a streamed completion chunk by chunk.
pub struct StreamState {
    id: String,
    model: String,
    usage: Usage,
    text: String,
    reasoning: String,
    calls: Vec<(u64, Option<String>, Option<String>, String)>,
    /// Where each tool call index is in `calls` (looked up per delta: a map keeps a stream of
    /// many calls linear).
    call_pos: rustc_hash::FxHashMap<u64, usize>,
    finish: Option<String>,
    provenance: String,
}

impl StreamState {
    pub fn new(provenance: &str) -> Self {
        StreamState {
            id: String::new(),
            model: String::new(),
            usage: Usage::default(),
            text: String::new(),
            reasoning: String::new(),
            calls: Vec::new(),
            call_pos: Default::default(),
            finish: None,
            provenance: provenance.to_string(),
        }
    }

    /// One `data:` payload; `Err` ends the stream with an `error` event.
    pub fn on_chunk(&mut self, data: &str, sink: &mut dyn EventSink) -> Result<(), LlmError> {
        let c: Completion = serde_json::from_str(data)
            .map_err(|_| LlmError::other(format!("Could not parse message into JSON: {data}")))?;
        if let Some(e) = c.error.map(raw_value) {
            let msg = match e.get("message") {
                Some(Value::String(s)) if !s.is_empty() => s.clone(),
                _ => to_js_json(&e),
            };
            return Err(LlmError::other(msg));
        }
        if let Some(id) = c.id {
            self.id = id.into_owned();
        }
        if let Some(m) = c.model {
            self.model = m.into_owned();
        }
        if let Some(u) = c.usage {
            self.usage = usage_of(Some(u));
        }
        let Some(choice) = c.choices.and_then(|mut v| if v.is_empty() { None } else { Some(v.swap_remove(0)) }) else {
            return Ok(());
        };
        if let Some(delta) = choice.delta {
            if let Some(raw) = delta.content {
                let t = content_text(raw);
                self.text.push_str(&t);
                sink.emit(StreamEvent::Text(t));
            }
            let r = reasoning_of(delta.reasoning_content);
            if !r.is_empty() {
                self.reasoning.push_str(&r);
                sink.emit(StreamEvent::Reasoning(r));
            }
            for tc in delta.tool_calls.unwrap_or_default() {
                let idx = tc.index.unwrap_or(0);
                let pos = match self.call_pos.get(&idx) {
                    Some(&p) => p,
                    None => {
                        self.calls.push((idx, None, None, String::new()));
                        self.call_pos.insert(idx, self.calls.len() - 1);
                        self.calls.len() - 1
                    }
                };
                let slot = &mut self.calls[pos];
                if let Some(id) = tc.id {
                    slot.1 = Some(id.into_owned());
                }
                if let Some(f) = tc.function {
                    if let Some(name) = f.name {
                        slot.2 = Some(name.into_owned());
                    }
                    if let Some(a) = f.arguments {
                        slot.3.push_str(&a);
                    }
                }
            }
        }
        if let Some(f) = choice.finish_reason {
            self.finish = Some(f.into_owned());
        }
        Ok(())
    }

    /// After the last chunk: tool_use events, then the assembled response; the text tool-call
    /// scan asks `aborted` as it goes (the aborted error once it answers true).
    pub fn finish_until(
        self,
        opts: &ChatOptions,
        sink: &mut dyn EventSink,
        aborted: &dyn Fn() -> bool,
    ) -> Result<LlmResponse, LlmError> {
        let mut tools = Vec::new();
        for (_, id, name, args) in &self.calls {
            let b = Block::ToolUse {
                id: id.clone().unwrap_or_default(),
                name: name.clone().unwrap_or_default(),
                input: parse_arguments(Some(args)),
                signature: None,
            };
            sink.emit(StreamEvent::ToolUse(b.clone()));
            tools.push(b);
        }
        let mut content = Vec::new();
        if !self.reasoning.is_empty() {
            content.push(Block::Reasoning {
                text: self.reasoning,
                signature: None,
                redacted_data: None,
                provenance: Some(self.provenance),
            });
        }
        if !self.text.is_empty() {
            content.push(Block::text(self.text.clone()));
        }
        let native = !tools.is_empty();
        content.extend(tools);
        if !native && !self.text.is_empty() && opts.tools.is_some() {
            for b in extract_tool_calls_until(&self.text, &opts.tool_names(), aborted).ok_or_else(LlmError::aborted)? {
                sink.emit(StreamEvent::ToolUse(b.clone()));
                content.push(b);
            }
        }
        let has_tool = content.iter().any(|b| matches!(b, Block::ToolUse { .. }));
        Ok(LlmResponse {
            id: self.id,
            model: self.model,
            stop_reason: stop_reason(self.finish.as_deref(), has_tool),
            usage: self.usage,
            content,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use oma_core::kernel::message::{parse_messages, Strictness};

    fn msgs(json: &str) -> Vec<Message> {
        parse_messages(json, Strictness::Lenient).unwrap()
    }

    #[test]
    fn converts_history() {
        let m = msgs(
            r#"[
            {"role":"user","content":[{"type":"text","text":"hi"}]},
            {"role":"assistant","content":[{"type":"reasoning","text":"think","provenance":"deepseek"},{"type":"text","text":"a"},{"type":"text","text":"b"},{"type":"tool_use","id":"t1","name":"f","input":{"x":1}}]},
            {"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"r","is_error":true},{"type":"text","text":"warn"}]},
            {"role":"assistant","content":[{"type":"reasoning","text":"only"}]},
            {"role":"user","content":[{"type":"text","text":"x"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}]},
            {"role":"user","content":[{"type":"tool_use","id":"q","name":"n","input":{}}]}
        ]"#,
        );
        let sys = Value::String("sys".into());
        assert_eq!(
            message_list_json(&m, Some(&sys), None),
            r#"[{"role":"system","content":"sys"},{"role":"user","content":"hi"},{"role":"assistant","content":"ab","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},{"role":"tool","tool_call_id":"t1","content":"r"},{"role":"user","content":"warn"},{"role":"user","content":[{"type":"text","text":"x"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AA"}}]},{"role":"user","content":[]}]"#
        );
        // tool-use-only echo for own reasoning, text fallback for the rest
        let ob = Outbound { preserve_as_text: true, max_chars: MaxChars(None), native_echo: Some("deepseek") };
        let out = message_list_json(&m, Some(&Value::String(String::new())), Some(&ob));
        assert!(out.contains(r#"{"role":"assistant","content":"ab","tool_calls":[{"id":"t1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}],"reasoning_content":"think"}"#), "{out}");
        assert!(out.contains(r#"{"role":"assistant","content":"<thinking>only</thinking>"}"#), "{out}");
        assert!(!out.contains("system"));
    }

    #[test]
    fn list_cache_matches_a_fresh_build_while_the_history_grows() {
        let all = msgs(
            r#"[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"reasoning","text":"r","provenance":"deepseek"},{"type":"text","text":"a"}]},{"role":"user","content":[{"type":"text","text":"again \"q\""}]},{"role":"assistant","content":[{"type":"reasoning","text":"why","provenance":"deepseek"},{"type":"tool_use","id":"t1","name":"f","input":{"x":1}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"res\n"}]},{"role":"assistant","content":[{"type":"text","text":"done"}]}]"#,
        );
        let sys = Value::String("sys".into());
        let ob = Outbound { preserve_as_text: false, max_chars: MaxChars(None), native_echo: Some("deepseek") };
        let mut cache = ListCache::default();
        // Grows one message at a time; the tool_use at index 3 flips has_tool_use, which changes
        // how earlier assistant messages echo reasoning: the cache must notice.
        for n in 1..=all.len() {
            let got = cache.message_list_json(&all[..n], 7, Some(&sys), Some(&ob));
            assert_eq!(got, message_list_json(&all[..n], Some(&sys), Some(&ob)), "{n} messages");
        }
        assert!(cache.message_list_json(&all, 7, Some(&sys), Some(&ob)).contains(r#""reasoning_content":"r""#));
        // A replaced history (new epoch) is rebuilt, even when it is longer than the cached one.
        let other = msgs(
            r#"[{"role":"user","content":[{"type":"text","text":"x"}]},{"role":"user","content":[{"type":"text","text":"y"}]},{"role":"user","content":[{"type":"text","text":"z"}]},{"role":"user","content":[{"type":"text","text":"w"}]},{"role":"user","content":[{"type":"text","text":"v"}]},{"role":"user","content":[{"type":"text","text":"u"}]},{"role":"user","content":[{"type":"text","text":"t"}]}]"#,
        );
        assert_eq!(cache.message_list_json(&other, 8, None, None), message_list_json(&other, None, None));
        // A shorter list under the same epoch is not a prefix of what was cached.
        assert_eq!(cache.message_list_json(&other[..2], 8, None, None), message_list_json(&other[..2], None, None));
        assert_eq!(cache.message_list_json(&[], 9, None, None), "[]");
    }

    #[test]
    fn body_precedence() {
        let o = ChatOptions::from_json(r#"{"model":"m","maxTokens":5,"temperature":0.5,"thinking":{"enabled":false,"effort":"low"},"extraBody":{"temperature":1,"reasoning_effort":"minimal","model":"x","tools":[1],"foo":"bar"},"tools":[]}"#).unwrap();
        let body = request_body("[]", tools_json(&o).as_deref(), Some("m"), &o, false);
        assert_eq!(
            body,
            r#"{"max_tokens":5,"temperature":1,"reasoning_effort":"minimal","model":"m","tools":[],"foo":"bar","messages":[],"stream":false}"#
        );
        let o = ChatOptions::from_json(r#"{"model":"m"}"#).unwrap();
        assert_eq!(
            request_body("[]", tools_json(&o).as_deref(), Some("m"), &o, true),
            r#"{"model":"m","messages":[],"stream":true,"stream_options":{"include_usage":true}}"#
        );
        assert_eq!(request_body("[]", tools_json(&o).as_deref(), None, &o, false), r#"{"messages":[],"stream":false}"#);
        let m = msgs(r#"[{"role":"user","content":[{"type":"text"}]}]"#);
        assert_eq!(message_list_json(&m, None, None), r#"[{"role":"user"}]"#);
    }

    #[test]
    fn parses_completion_with_fallback() {
        let body = r#"{"id":"c1","model":"gpt","choices":[{"message":{"role":"assistant","content":"call {\"name\":\"f\",\"arguments\":{\"a\":2}}","reasoning_content":[{"text":"r1"},"r2"]},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3}}"#;
        let r = parse_completion(body, Some(&["f"]), "openai").unwrap();
        assert_eq!(r.stop_reason, "tool_use");
        let j = r.to_json();
        assert!(j.starts_with(r#"{"id":"c1","content":[{"type":"reasoning","text":"r1r2","provenance":"openai"},{"type":"text","text":"call {\"name\":\"f\",\"arguments\":{\"a\":2}}"},{"type":"tool_use","id":"extracted_call_"#), "{j}");
        assert!(j.ends_with(r#"","name":"f","input":{"a":2}}],"model":"gpt","stop_reason":"tool_use","usage":{"input_tokens":7,"output_tokens":3}}"#), "{j}");
        let r = parse_completion(body, None, "openai").unwrap();
        assert_eq!(r.stop_reason, "end_turn");
        let body = r#"{"id":"c","model":"m","choices":[{"message":{"content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{\"cmd\": \"ls\""}},{"id":"b","type":"function","function":{"name":"g","arguments":"[1]"}}]},"finish_reason":"tool_calls"}]}"#;
        let r = parse_completion(body, Some(&["f"]), "openai").unwrap();
        assert_eq!(
            r.to_json(),
            r#"{"id":"c","content":[{"type":"tool_use","id":"a","name":"f","input":{}},{"type":"tool_use","id":"b","name":"g","input":{}}],"model":"m","stop_reason":"tool_use","usage":{"input_tokens":0,"output_tokens":0}}"#
        );
        assert_eq!(
            parse_completion(r#"{"choices":[]}"#, None, "openai").unwrap_err().message,
            "OpenAI returned a completion with no choices"
        );
        assert_eq!(
            parse_completion(
                r#"{"choices":[{"message":{"content":"x"},"finish_reason":"content_filter"}]}"#,
                None,
                "o"
            )
            .unwrap()
            .stop_reason,
            "content_filter"
        );
        // Escapes in borrowed fields, a non-string content, a reasoning string, extra fields.
        let body = r#"{"id":"c\u00e9","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"a\"b\n","reasoning_content":"why","tool_calls":[{"id":"t\/1","type":"function","function":{"name":"f\u0031","arguments":"{\"k\":\"v\\u00e9\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":1,"completion_tokens":2,"total_tokens":3}}"#;
        let r = parse_completion(body, None, "p").unwrap();
        assert_eq!(r.id, "cé");
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (1.0, 2.0));
        assert_eq!(
            serde_json::to_string(&r.content).unwrap(),
            r#"[{"type":"reasoning","text":"why","provenance":"p"},{"type":"text","text":"a\"b\n"},{"type":"tool_use","id":"t/1","name":"f1","input":{"k":"vé"}}]"#
        );
        let r = parse_completion(
            r#"{"choices":[{"message":{"content":[{"type":"text","text":"x"}]},"finish_reason":"stop"}]}"#,
            None,
            "p",
        )
        .unwrap();
        assert_eq!((r.usage.input_tokens, r.usage.output_tokens), (0.0, 0.0));
        assert_eq!(
            serde_json::to_string(&r.content).unwrap(),
            r#"[{"type":"text","text":"[{\"type\":\"text\",\"text\":\"x\"}]"}]"#
        );
    }

    #[test]
    fn framed_bodies_are_request_bodies() {
        let cases = [
            r#"{"model":"m","maxTokens":5,"temperature":0.5}"#,
            r#"{"model":"m","extraBody":{"messages":"early","top_p":1,"x":"\u0000"},"tools":[{"name":"f","description":"d","inputSchema":{"type":"object"}}]}"#,
            r#"{}"#,
        ];
        for json in cases {
            let o = ChatOptions::from_json(json).unwrap();
            let tools = tools_json(&o);
            // The first call fixes the frame; later ones with another model or flag build whole.
            for (model, stream, list) in [
                (Some("m"), false, "[]"),
                (Some("m"), false, r#"[{"role":"user","content":"hi"}]"#),
                (Some("n"), false, "[]"),
                (None, false, "[]"),
                (Some("m"), true, "[]"),
            ] {
                assert_eq!(
                    framed_body(list, tools.as_deref(), model, &o, stream),
                    request_body(list, tools.as_deref(), model, &o, stream),
                    "{json} {model:?} {stream}"
                );
            }
        }
    }

    /// Both completion parsers, side by side: `(fast took it, outcome)`.
    fn both_parsers(body: &str) -> (bool, String, String) {
        fn show(p: Result<Parsed, LlmError>) -> String {
            match p {
                Err(e) => format!("error: {}", e.message),
                Ok(p) => {
                    let c =
                        p.choice.map(|c| format!("{:?} {:?} {:?} {:?}", c.text, c.reasoning, c.calls, c.finish_reason));
                    let u = p.usage.map(|u| (u.prompt_tokens, u.completion_tokens));
                    format!("{:?} {:?} {c:?} {u:?}", p.id, p.model)
                }
            }
        }
        let fast = completion_fast(body);
        (fast.is_some(), fast.map(Ok).map(show).unwrap_or_default(), show(completion_serde(body)))
    }

    #[test]
    fn fast_completion_reads_what_serde_reads() {
        // The usual shapes: the fast reader takes them and agrees with serde.
        let taken = [
            r#"{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_0","type":"function","function":{"name":"lookup","arguments":"{\"key\":\"k0\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}"#,
            r#" { "choices" : [ { "message" : { "content" : "hi \u00e9 \ud83d\ude00", "refusal": null, "annotations": [] }, "finish_reason" : null, "logprobs": {"a": [1.5, -2e3, true]} } ] , "usage" : null , "system_fingerprint" : "fp" } "#,
            r#"{"choices":[{"message":{"content":"x","reasoning_content":"why","tool_calls":null},"delta":null}],"error":{"x":1}}"#,
            r#"{"choices":[{"message":null}],"id":null,"model":null}"#,
            r#"{"choices":[{"message":{"tool_calls":[{"index":0,"id":null,"function":null},{"function":{"name":"f"}}]}}]}"#,
            r#"{"choices":[]}"#,
            r#"{"choices":null}"#,
            r#"{}"#,
            r#"{"usage":{"prompt_tokens":null}}"#,
        ];
        for body in taken {
            let (fast, a, b) = both_parsers(body);
            assert!(fast, "fast reader refused {body}");
            assert_eq!(a, b, "{body}");
        }
        // Everything else goes to serde (its results and error texts), fast reader declining.
        let declined = [
            r#"{"choices":[{"message":{"content":[{"type":"text","text":"x"}]}}]}"#,
            r#"{"choices":[{"message":{"content":"x","reasoning_content":[{"text":"r"}]}}]}"#,
            r#"{"choices":[{"message":{"content":"a"}},{"message":{"content":"b"}}]}"#,
            r#"{"choices":[{"message":{"content":"x"},"delta":{"content":"y"}}]}"#,
            r#"{"id":"a","id":"b","choices":[]}"#,
            r#"{"choices":[{"message":{"content":"x","content":"y"}}]}"#,
            r#"{"choices":[{"finish_reason":"stop","finish_reason":"stop"}]}"#,
            r#"{"choices":[{"delta":null,"delta":null}]}"#,
            r#"{"usage":{"prompt_tokens":1.5,"completion_tokens":2}}"#,
            r#"{"usage":{"prompt_tokens":-1}}"#,
            r#"{"choices":[{"message":{"tool_calls":[{"index":-1}]}}]}"#,
            r#"{"choices":[{"message":{"tool_calls":[null]}}]}"#,
            r#"{"choices":[null]}"#,
            r#"{"\u0069d":"x","choices":[]}"#,
            r#"{"id":7,"choices":[]}"#,
            r#"{"choices":[{"message":{"content":"\ud800"}}]}"#,
            r#"["x",null,[]]"#,
            r#"{"choices":[]} x"#,
            r#"{"choices":[],}"#,
            r#"{"choices":[{"message":{"content":"x"}}]"#,
            "",
            "not json",
        ];
        for body in declined {
            let (fast, _, _) = both_parsers(body);
            assert!(!fast, "fast reader took {body}");
        }
        assert_eq!(
            parse_completion(r#"{"id":"a","id":"b","choices":[]}"#, None, "p").unwrap_err().message,
            "Could not parse response body as JSON: duplicate field `id` at line 1 column 14"
        );
    }

    #[test]
    fn the_text_tool_call_scan_answers_the_abort_signal() {
        let text = "{\\\"a\\\":".repeat(40_000);
        let body = format!(r#"{{"choices":[{{"message":{{"content":"{text}"}},"finish_reason":"stop"}}]}}"#);
        let err = parse_completion_until(&body, Some(&["a"]), "openai", &|| true).unwrap_err();
        assert_eq!((err.kind, err.message.as_str()), (crate::ErrorKind::Aborted, "Request was aborted."));
        assert!(parse_completion_until(&body, Some(&["a"]), "openai", &|| false).is_ok());
        // Without tools there is no scan to stop.
        assert!(parse_completion_until(&body, None, "openai", &|| true).is_ok());
        let mut st = StreamState::new("openai");
        st.text = "{\"a\":".repeat(40_000);
        let o = ChatOptions::from_json(r#"{"tools":[{"name":"a"}]}"#).unwrap();
        assert_eq!(
            st.finish_until(&o, &mut |_e: StreamEvent| {}, &|| true).unwrap_err().kind,
            crate::ErrorKind::Aborted
        );
    }

    #[test]
    fn stream_assembles_tool_calls() {
        let o = ChatOptions::from_json(r#"{"model":"m","tools":[{"name":"f","description":"","inputSchema":{}}]}"#)
            .unwrap();
        let mut events = Vec::new();
        let mut sink = |e: StreamEvent| events.push(serde_json::to_string(&e).unwrap());
        let mut st = StreamState::new("openai");
        for d in [
            r#"{"id":"s","model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":"He"}}]}"#,
            r#"{"id":"s","model":"m","choices":[{"index":0,"delta":{"content":"y","reasoning_content":"hmm"}}]}"#,
            r#"{"id":"s","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\""}}]}}]}"#,
            r#"{"id":"s","model":"m","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":":1}"}}]},"finish_reason":"tool_calls"}]}"#,
            r#"{"id":"s","model":"m","choices":[],"usage":{"prompt_tokens":4,"completion_tokens":2}}"#,
        ] {
            st.on_chunk(d, &mut sink).unwrap();
        }
        let r = st.finish_until(&o, &mut sink, &|| false).unwrap();
        assert_eq!(
            events,
            vec![
                r#"{"type":"text","data":"He"}"#,
                r#"{"type":"text","data":"y"}"#,
                r#"{"type":"reasoning","data":"hmm"}"#,
                r#"{"type":"tool_use","data":{"type":"tool_use","id":"call_1","name":"f","input":{"a":1}}}"#,
            ]
        );
        assert_eq!(
            r.to_json(),
            r#"{"id":"s","content":[{"type":"reasoning","text":"hmm","provenance":"openai"},{"type":"text","text":"Hey"},{"type":"tool_use","id":"call_1","name":"f","input":{"a":1}}],"model":"m","stop_reason":"tool_use","usage":{"input_tokens":4,"output_tokens":2}}"#
        );
        let mut st = StreamState::new("openai");
        let err = st.on_chunk(r#"{"error":{"message":"overloaded"}}"#, &mut |_e: StreamEvent| {}).unwrap_err();
        assert_eq!(err.message, "overloaded");
        assert!(st.on_chunk("{not json", &mut |_e: StreamEvent| {}).is_err());
    }
}
