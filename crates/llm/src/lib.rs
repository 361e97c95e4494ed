//! Native LLM adapters over HTTP (CONTRACT §14–§16): Anthropic, OpenAI and OpenAI-compatible
//! servers (the provider presets, local servers), Azure OpenAI and Gemini.
//!
//! Messages go from kernel structs straight into the request body and responses come
//! straight back into kernel structs; no JS objects on this path. The binding in
//! `src/js/llm.rs` only moves JSON strings.

pub mod anthropic;
pub mod bedrock;
pub mod boundary;
pub mod egress;
pub mod gemini;
pub mod http1;
pub mod limits;
pub mod openai;
pub mod providers;
pub mod reasoning_fallback;
pub mod runtime;
pub mod sse;
pub mod tail;
pub mod text_tool_extractor;
pub mod transport;
pub mod wire;
#[cfg(test)]
mod work;

use std::collections::HashMap;

use serde::ser::{SerializeMap, Serializer};
use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio_util::sync::CancellationToken;

use oma_core::boundary::record::{Field, Kind, Layout, Ty};
use oma_core::kernel::message::{Block, Usage};

pub use providers::{create_adapter, create_adapter_with, Adapter, EchoesReasoning};

/// `LLMToolDef`.
#[derive(Debug, Clone, Deserialize)]
pub struct ToolDef {
    #[serde(default)]
    pub name: String,
    #[serde(default)]
    pub description: Option<Value>,
    #[serde(rename = "inputSchema", default)]
    pub input_schema: Option<Box<RawValue>>,
}

impl ToolDef {
    /// `{"name":…,"description":…,"<schema_key>":<schema>}`: the function declaration every
    /// provider wraps in its own way (an absent description or schema is left out, as in JS).
    pub fn declaration(&self, schema_key: &str, schema: Option<String>) -> String {
        let mut f = oma_core::json::JsObject::new();
        f.set_str("name", &self.name);
        f.set("description", self.description.as_ref());
        f.set_raw(schema_key, schema);
        f.into_json()
    }

    /// The input schema's JSON text, as given.
    pub fn schema_text(&self) -> Option<String> {
        self.input_schema.as_ref().map(|r| r.get().to_string())
    }
}

/// `[a,b,…]` from JSON texts.
pub fn json_array(items: impl Iterator<Item = String>) -> String {
    let mut out = String::from("[");
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&item);
    }
    out.push(']');
    out
}

/// `ThinkingConfig`; kept as JSON values because the wire sends them as the user gave them.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Thinking {
    #[serde(default)]
    pub enabled: Option<Value>,
    #[serde(rename = "budgetTokens", default)]
    pub budget_tokens: Option<Value>,
    #[serde(default)]
    pub effort: Option<Value>,
}

/// The `LLMChatOptions` fields the runner hands an adapter (with `abortSignal` last) and the
/// ones that cross to a native adapter, in the order the runner writes them: [`ChatOptions`]'
/// fields, as JS names them.
pub const CHAT_OPTION_FIELDS: [&str; 15] = [
    "model",
    "tools",
    "maxTokens",
    "temperature",
    "topP",
    "topK",
    "minP",
    "parallelToolCalls",
    "frequencyPenalty",
    "presencePenalty",
    "extraBody",
    "thinking",
    "preserveReasoningAsText",
    "compressReasoningText",
    "systemPrompt",
];

/// `LLMChatOptions` without `abortSignal` (that is the `CancellationToken`). Numeric options
/// stay JSON values: the original forwards whatever the user set, unvalidated.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatOptions {
    #[serde(default)]
    pub model: Option<Value>,
    #[serde(default)]
    pub tools: Option<Vec<ToolDef>>,
    #[serde(default)]
    pub max_tokens: Option<Value>,
    #[serde(default)]
    pub temperature: Option<Value>,
    #[serde(default)]
    pub top_p: Option<Value>,
    #[serde(default)]
    pub top_k: Option<Value>,
    #[serde(default)]
    pub min_p: Option<Value>,
    #[serde(default)]
    pub frequency_penalty: Option<Value>,
    #[serde(default)]
    pub presence_penalty: Option<Value>,
    #[serde(default)]
    pub parallel_tool_calls: Option<Value>,
    #[serde(default)]
    pub extra_body: Option<Value>,
    #[serde(default)]
    pub thinking: Option<Thinking>,
    #[serde(default)]
    pub preserve_reasoning_as_text: Option<Value>,
    #[serde(default)]
    pub compress_reasoning_text: Option<Value>,
    #[serde(default)]
    pub system_prompt: Option<Value>,
    /// `openai::tools_json` of these options, built on first use: a run's calls (and the runs
    /// that share parsed options) send the same tools.
    #[serde(skip)]
    pub openai_tools: std::sync::OnceLock<Option<String>>,
    /// `openai::framed_body`'s text around the message list, built on first use.
    #[serde(skip)]
    pub openai_frame: std::sync::OnceLock<Option<openai::Frame>>,
}

impl ChatOptions {
    pub fn from_json(json: &str) -> Result<ChatOptions, LlmError> {
        serde_json::from_str(json).map_err(|e| LlmError::other(format!("invalid chat options: {e}")))
    }

    /// The system prompt of the providers that send it as a field of its own (Bedrock, Gemini):
    /// a non-empty string only; anything else is left out.
    pub fn system_text(&self) -> Option<&str> {
        match &self.system_prompt {
            Some(Value::String(s)) if !s.is_empty() => Some(s),
            _ => None,
        }
    }

    /// The model id as a string (`String(model)` for the rare non-string).
    pub fn model_str(&self) -> String {
        self.model_cow().into_owned()
    }

    /// `model_str` borrowed when it is a string.
    pub fn model_cow(&self) -> std::borrow::Cow<'_, str> {
        match &self.model {
            Some(Value::String(s)) => std::borrow::Cow::Borrowed(s),
            None | Some(Value::Null) => std::borrow::Cow::Borrowed(""),
            Some(v) => std::borrow::Cow::Owned(v.to_string()),
        }
    }

    pub fn preserve_reasoning(&self) -> bool {
        matches!(self.preserve_reasoning_as_text, Some(Value::Bool(true)))
    }

    pub fn extra_body_map(&self) -> Option<&Map<String, Value>> {
        self.extra_body.as_ref().and_then(Value::as_object)
    }

    pub fn tool_names(&self) -> Vec<&str> {
        self.tools.as_deref().unwrap_or_default().iter().map(|t| t.name.as_str()).collect()
    }
}

/// `LLMResponse`.
#[derive(Debug, Clone)]
pub struct LlmResponse {
    pub id: String,
    pub content: Vec<Block>,
    pub model: String,
    pub stop_reason: String,
    pub usage: Usage,
}

impl Serialize for LlmResponse {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(5))?;
        m.serialize_entry("id", &self.id)?;
        m.serialize_entry("content", &self.content)?;
        m.serialize_entry("model", &self.model)?;
        m.serialize_entry("stop_reason", &self.stop_reason)?;
        m.serialize_entry("usage", &UsageJs(self.usage))?;
        m.end()
    }
}

struct UsageJs(Usage);

impl Serialize for UsageJs {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry("input_tokens", &JsNum(self.0.input_tokens))?;
        m.serialize_entry("output_tokens", &JsNum(self.0.output_tokens))?;
        m.end()
    }
}

/// A number written as JS writes it (`12`, not `12.0`).
struct JsNum(f64);

impl Serialize for JsNum {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let x = self.0;
        if x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15 {
            s.serialize_i64(x as i64)
        } else if x.is_finite() {
            s.serialize_f64(x)
        } else {
            s.serialize_unit()
        }
    }
}

impl LlmResponse {
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("response serialises")
    }
}

/// What a failure is, so the JS side can build the right Error class in its own realm. Its
/// discriminant is its code in [`ERROR_RECORD`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKind {
    /// `InvalidMessageError` (§15.1).
    InvalidMessage,
    /// HTTP status error from the provider.
    Api,
    Connection,
    Timeout,
    Aborted,
    /// `EgressPolicyError` (`LlmError::egress` holds its reason, provider and origin).
    Egress,
    /// Everything else (configuration, unhandled block types, unparseable bodies, …).
    Other,
}

#[derive(Debug, Clone, Serialize)]
pub struct LlmError {
    pub kind: ErrorKind,
    pub message: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    /// For `ErrorKind::Egress`. Boxed: every call's `Result` carries an `LlmError`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub egress: Option<Box<egress::Refusal>>,
}

/// `LLMCallTimeoutError.code`.
pub const CALL_TIMEOUT_CODE: &str = "LLM_CALL_TIMEOUT";
/// `LLMCallTimeoutError`'s message (upstream 1.9's texts), with and without the agent's name.
pub const CALL_TIMEOUT_AGENT: &str = "Agent \"{agent}\" LLM call exceeded per-call timeout of {timeoutMs}ms";
pub const CALL_TIMEOUT: &str = "LLM call exceeded per-call timeout of {timeoutMs}ms";
/// A native adapter's stream that ended before its final response.
pub const STREAM_ENDED_EARLY: &str = "LLM stream ended without a final response";

/// The message of a request its caller aborted (`LlmError::aborted`; the JS driver's abort too).
pub const ABORTED_MESSAGE: &str = "Request was aborted.";

impl LlmError {
    pub fn other(message: impl Into<String>) -> Self {
        LlmError { kind: ErrorKind::Other, message: message.into(), status: None, egress: None }
    }
    pub fn aborted() -> Self {
        LlmError { kind: ErrorKind::Aborted, message: ABORTED_MESSAGE.into(), status: None, egress: None }
    }
    pub fn connection() -> Self {
        LlmError { kind: ErrorKind::Connection, message: "Connection error.".into(), status: None, egress: None }
    }
    pub fn timeout() -> Self {
        LlmError { kind: ErrorKind::Timeout, message: "Request timed out.".into(), status: None, egress: None }
    }

    /// The error as an [`ERROR_RECORD`] (`lib/llm.js` decodes it with the generated decoder).
    pub fn to_record(&self) -> String {
        let mut out = String::new();
        self.write_record(&mut out);
        out
    }

    /// Appends the [`ERROR_RECORD`].
    pub fn write_record(&self, out: &mut String) {
        let w = ERROR_RECORD.write(out, self.kind as usize).str(&self.message).opt_num(self.status.map(f64::from));
        match (self.kind, &self.egress) {
            (ErrorKind::Egress, Some(r)) => {
                w.str(r.reason.as_str()).opt_str(r.provider.as_deref()).opt_str(r.origin.as_deref())
            }
            // (Every egress error is made with its refusal: `egress::refusal`.)
            (ErrorKind::Egress, None) => w.str("").none().none(),
            _ => w,
        }
        .end()
    }
}

impl ErrorKind {
    /// Every kind, in the order of their codes.
    pub const ALL: [ErrorKind; 7] = [
        ErrorKind::InvalidMessage,
        ErrorKind::Api,
        ErrorKind::Connection,
        ErrorKind::Timeout,
        ErrorKind::Aborted,
        ErrorKind::Egress,
        ErrorKind::Other,
    ];
}

/// The fields every error kind carries: its message and an HTTP status.
const ERROR_FIELDS: &[Field] = &[Field::new("message", Ty::Str), Field::optional("status", Ty::Num)];

/// An [`LlmError`] crossing to JS (a rejection's message, a stream's error event): the record
/// `[kind, message, status]`, an egress refusal followed by its reason, provider and origin.
/// `lib/llm.js` builds the Error of the caller's realm from the decoded record.
pub static ERROR_RECORD: Layout = Layout {
    section: "llm",
    name: "error",
    tag: Some("kind"),
    kinds: &[
        Kind { name: "invalid_message", fields: ERROR_FIELDS },
        Kind { name: "api", fields: ERROR_FIELDS },
        Kind { name: "connection", fields: ERROR_FIELDS },
        Kind { name: "timeout", fields: ERROR_FIELDS },
        Kind { name: "aborted", fields: ERROR_FIELDS },
        Kind {
            name: "egress",
            fields: &[
                Field::new("message", Ty::Str),
                Field::optional("status", Ty::Num),
                Field::new("reason", Ty::Text(egress::REASON_TYPE)),
                Field::optional("provider", Ty::Str),
                Field::optional("origin", Ty::Str),
            ],
        },
        Kind { name: "other", fields: ERROR_FIELDS },
    ],
};

impl std::fmt::Display for LlmError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for LlmError {}

/// `StreamEvent` of an adapter's `stream()`; `Done` and `Error` are terminal.
#[derive(Debug, Clone)]
pub enum StreamEvent {
    Text(String),
    Reasoning(String),
    /// Always a `Block::ToolUse`.
    ToolUse(Block),
    Done(LlmResponse),
    Error(LlmError),
}

impl Serialize for StreamEvent {
    /// `{ type, data }`, as upstream's stream yields it.
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        fn typed<M: SerializeMap, T: Serialize>(mut m: M, kind: &str, data: &T) -> Result<M::Ok, M::Error> {
            m.serialize_entry("type", kind)?;
            m.serialize_entry("data", data)?;
            m.end()
        }
        let m = s.serialize_map(Some(2))?;
        match self {
            StreamEvent::Text(t) => typed(m, "text", t),
            StreamEvent::Reasoning(t) => typed(m, "reasoning", t),
            StreamEvent::ToolUse(b) => typed(m, "tool_use", b),
            StreamEvent::Done(r) => typed(m, "done", r),
            StreamEvent::Error(e) => typed(m, "error", e),
        }
    }
}

/// A [`StreamEvent`] crossing to JS, in the batches a native stream's `nextBatch` resolves
/// with (a JSON array of these records): `[kind, data]`, decoded into upstream's
/// `{ type, data }`. `throw` is the binding's: the iterator throws its error instead of
/// yielding it (a failure before the stream could yield an `error` event).
pub static EVENT_RECORD: Layout = Layout {
    section: "llm",
    name: "event",
    tag: Some("type"),
    kinds: &[
        Kind { name: "text", fields: &[Field::new("data", Ty::Str)] },
        Kind { name: "reasoning", fields: &[Field::new("data", Ty::Str)] },
        Kind { name: "tool_use", fields: &[Field::new("data", Ty::Json("unknown"))] },
        Kind { name: "done", fields: &[Field::new("data", Ty::Record(&RESPONSE_RECORD))] },
        Kind { name: "error", fields: &[Field::new("data", Ty::Record(&ERROR_RECORD))] },
        Kind { name: "throw", fields: &[Field::new("data", Ty::Record(&ERROR_RECORD))] },
    ],
};

/// The code of [`EVENT_RECORD`]'s `throw`.
pub const THROW_EVENT: usize = 5;

/// An [`LlmResponse`] as a record (`done`'s data), decoded into upstream's `LLMResponse`.
pub static RESPONSE_RECORD: Layout = Layout {
    section: "llm",
    name: "response",
    tag: None,
    kinds: &[Kind {
        name: "response",
        fields: &[
            Field::new("id", Ty::Str),
            Field::new("content", Ty::Json("unknown[]")),
            Field::new("model", Ty::Str),
            Field::new("stop_reason", Ty::Str),
            Field::new("usage", Ty::Record(&USAGE_RECORD)),
        ],
    }],
};

/// A response's token usage as a record, decoded into `TokenUsage`.
pub static USAGE_RECORD: Layout = Layout {
    section: "llm",
    name: "usage",
    tag: None,
    kinds: &[Kind {
        name: "usage",
        fields: &[Field::new("input_tokens", Ty::Num), Field::new("output_tokens", Ty::Num)],
    }],
};

impl LlmResponse {
    /// Appends the [`RESPONSE_RECORD`].
    pub fn write_record(&self, out: &mut String) {
        RESPONSE_RECORD
            .write(out, 0)
            .str(&self.id)
            .json(|out| out.push_str(&serde_json::to_string(&self.content).expect("blocks serialise")))
            .str(&self.model)
            .str(&self.stop_reason)
            .record(&USAGE_RECORD, |out| {
                USAGE_RECORD.write(out, 0).num(self.usage.input_tokens).num(self.usage.output_tokens).end()
            })
            .end()
    }
}

impl StreamEvent {
    /// Appends the event's [`EVENT_RECORD`].
    pub fn write_record(&self, out: &mut String) {
        match self {
            StreamEvent::Text(t) => EVENT_RECORD.write(out, 0).str(t),
            StreamEvent::Reasoning(t) => EVENT_RECORD.write(out, 1).str(t),
            StreamEvent::ToolUse(b) => EVENT_RECORD
                .write(out, 2)
                .json(|out| out.push_str(&serde_json::to_string(b).expect("a block serialises"))),
            StreamEvent::Done(r) => EVENT_RECORD.write(out, 3).record(&RESPONSE_RECORD, |out| r.write_record(out)),
            StreamEvent::Error(e) => EVENT_RECORD.write(out, 4).record(&ERROR_RECORD, |out| e.write_record(out)),
        }
        .end()
    }

    /// The event as an [`EVENT_RECORD`]'s JSON text.
    pub fn to_record(&self) -> String {
        let mut out = String::new();
        self.write_record(&mut out);
        out
    }
}

/// The `throw` event of `e` (see [`EVENT_RECORD`]).
pub fn throw_record(e: &LlmError) -> String {
    let mut out = String::new();
    EVENT_RECORD.write(&mut out, THROW_EVENT).record(&ERROR_RECORD, |out| e.write_record(out)).end();
    out
}

/// Receives stream events as they are produced.
pub trait EventSink: Send {
    fn emit(&mut self, ev: StreamEvent);
}

impl<F: FnMut(StreamEvent) + Send> EventSink for F {
    fn emit(&mut self, ev: StreamEvent) {
        self(ev)
    }
}

/// A run's reusable request text (see `openai::ListCache`): one per run and chat options,
/// handed to `Adapter::chat_on` / `stream` with the history's epoch.
#[derive(Debug, Default)]
pub struct WireCache(std::sync::Mutex<openai::ListCache>);

/// How a call may reuse the wire text of earlier calls of its run.
pub type Reuse<'a> = Option<(&'a WireCache, u64)>;

/// Environment lookups for key chains and base URLs. JS passes a snapshot of `process.env`
/// (Jest's sandbox has its own copy that the real environment never sees).
pub type Env = HashMap<String, String>;

/// Reads the process environment (for Rust callers without a JS `process.env`).
pub fn process_env() -> Env {
    std::env::vars().collect()
}

/// Shared by the provider modules: a tool input parsed from provider JSON, normalised to the
/// text `JSON.stringify` would give (or `{}` when it is not an object).
pub(crate) fn object_input(v: Option<&Value>) -> Box<RawValue> {
    match v {
        Some(Value::Object(m)) => oma_core::json::raw_object(m),
        _ => oma_core::json::empty_object(),
    }
}

/// The token of calls made without an abort signal. Nothing cancels it, so a call given this
/// very token (by reference) does not register a waiter on it (see `cancelled`).
pub fn never_cancelled() -> &'static CancellationToken {
    static NEVER: std::sync::OnceLock<CancellationToken> = std::sync::OnceLock::new();
    NEVER.get_or_init(CancellationToken::new)
}

/// `cancel.cancelled()`, or pending for good without touching the token when it is
/// `never_cancelled()`.
pub(crate) async fn cancelled(cancel: &CancellationToken) {
    if std::ptr::eq(cancel, never_cancelled()) {
        std::future::pending::<()>().await
    } else {
        cancel.cancelled().await
    }
}

/// `cancel.is_cancelled()`, without a look at `never_cancelled()`.
pub(crate) fn is_aborted(cancel: &CancellationToken) -> bool {
    !std::ptr::eq(cancel, never_cancelled()) && cancel.is_cancelled()
}

/// Runs a future unless the token fires first.
pub(crate) async fn or_abort<T>(
    cancel: &CancellationToken,
    fut: impl std::future::Future<Output = T>,
) -> Result<T, LlmError> {
    tokio::select! {
        biased;
        _ = cancelled(cancel) => Err(LlmError::aborted()),
        v = fut => Ok(v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chat_option_fields_are_the_fields_chat_options_reads() {
        let value = |f: &str| match f {
            "tools" => "[]",
            "thinking" => r#"{"enabled":true,"budgetTokens":1,"effort":1}"#,
            _ => "1",
        };
        let default = format!("{:?}", ChatOptions::default());
        for f in CHAT_OPTION_FIELDS {
            let o = ChatOptions::from_json(&format!("{{\"{f}\":{}}}", value(f))).unwrap();
            assert_ne!(format!("{o:?}"), default, "{f} is not a field of ChatOptions");
        }
        // No field of ChatOptions is left out of the list: with all of them set, none is None.
        let all: Vec<String> = CHAT_OPTION_FIELDS.iter().map(|f| format!("\"{f}\":{}", value(f))).collect();
        let o = ChatOptions::from_json(&format!("{{{}}}", all.join(","))).unwrap();
        assert!(!format!("{o:?}").contains("None"), "a ChatOptions field is missing: {o:?}");
    }

    #[test]
    fn response_json_matches_js_shape() {
        let r = LlmResponse {
            id: "x".into(),
            content: vec![Block::text("hi")],
            model: "m".into(),
            stop_reason: "end_turn".into(),
            usage: Usage { input_tokens: 3.0, output_tokens: 0.5 },
        };
        assert_eq!(
            r.to_json(),
            r#"{"id":"x","content":[{"type":"text","text":"hi"}],"model":"m","stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":0.5}}"#
        );
        let e = StreamEvent::Error(LlmError::aborted());
        assert_eq!(
            serde_json::to_string(&e).unwrap(),
            r#"{"type":"error","data":{"kind":"aborted","message":"Request was aborted."}}"#
        );
    }

    #[test]
    fn error_record_codes_are_the_kinds_in_order() {
        for (code, k) in ErrorKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, code);
            assert_eq!(serde_json::to_string(k).unwrap(), format!("\"{}\"", ERROR_RECORD.kinds[code].name));
        }
        assert_eq!(ERROR_RECORD.kinds.len(), ErrorKind::ALL.len());
        assert_eq!(EVENT_RECORD.kinds[THROW_EVENT].name, "throw");
        let e = LlmError { kind: ErrorKind::Api, message: "429 slow".into(), status: Some(429), egress: None };
        assert_eq!(e.to_record(), r#"[1,"429 slow",429]"#);
        assert_eq!(throw_record(&LlmError::aborted()), r#"[5,[4,"Request was aborted.",null]]"#);
    }

    #[tokio::test]
    async fn the_never_cancelled_token_is_not_waited_on_and_real_ones_abort() {
        let never = never_cancelled();
        assert!(std::ptr::eq(never, never_cancelled()));
        assert_eq!(or_abort(never, async { 7 }).await.unwrap(), 7);
        assert!(!is_aborted(never));
        let pending = tokio::time::timeout(std::time::Duration::from_millis(20), cancelled(never)).await;
        assert!(pending.is_err(), "never_cancelled() must not complete");
        // Any other token is waited on and can fire.
        let own = CancellationToken::new();
        own.cancel();
        assert!(is_aborted(&own));
        assert_eq!(or_abort(&own, std::future::pending::<()>()).await.unwrap_err().message, "Request was aborted.");
    }

    #[test]
    fn options_parse_from_js_json() {
        let o = ChatOptions::from_json(r#"{"model":"m","tools":[{"name":"a","description":"d","inputSchema":{"type":"object"}}],"maxTokens":10,"preserveReasoningAsText":true,"extraBody":{"x":1}}"#).unwrap();
        assert_eq!(o.model_str(), "m");
        assert_eq!(o.tool_names(), vec!["a"]);
        assert!(o.preserve_reasoning());
        assert_eq!(o.extra_body_map().unwrap().get("x").unwrap(), 1);
    }
}
