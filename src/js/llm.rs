//! napi binding of the native LLM adapters. Only JSON strings cross the boundary: messages
//! come in as `JSON.stringify` of the ones not sent before (`ChatHistory`; a stream takes them
//! all); replies go out as the runner wire's text, stream events as batches of
//! `oma_llm::EVENT_RECORD`s and failures as `oma_llm::ERROR_RECORD`s, which `lib/llm.js` decodes
//! with the generated decoders (and turns into Errors of the caller's realm).

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll};

use napi::bindgen_prelude::{FromNapiValue, Object, PromiseRaw};
use napi::{Env, Error, Result, Status};
use napi_derive::napi;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::cancel::CancelHandle;
use oma_core::kernel::history::History;
use oma_core::kernel::message::{parse_messages, Message, Strictness};
use oma_llm::egress::{EgressPolicy, PolicyObject};
use oma_llm::tail::put_long_strings;
use oma_llm::{Adapter, ChatOptions, LlmError, LlmResponse, StreamEvent, WireCache};

type Resolver = Box<dyn FnOnce(Env) -> Result<String> + Send>;

/// A failure as data: the Error's message is the error's record, which `lib/llm.js`
/// (`fromNative`) decodes to build the Error of its realm. (napi-rs's deferreds reject only
/// with Error objects: the record rides in the message.)
fn js_err(e: LlmError) -> Error {
    Error::new(Status::GenericFailure, e.to_record())
}

/// What one call sends: the messages, the options, and for a run's own history the cache
/// that lets it reuse the wire text of earlier calls.
pub struct ChatInput {
    pub messages: Arc<Vec<Message>>,
    pub opts: Arc<ChatOptions>,
    pub reuse: Option<(Arc<WireCache>, u64)>,
}

impl ChatInput {
    fn reuse(&self) -> oma_llm::Reuse<'_> {
        self.reuse.as_ref().map(|(c, e)| (&**c, *e))
    }
}

/// Parsed chat options by their JSON text, shared by runs and adapter calls with the same
/// options (bounded; invalid ones are not kept): each would otherwise parse its tools' schemas.
pub(crate) fn cached_chat_options(json: &str) -> std::result::Result<Arc<ChatOptions>, LlmError> {
    static CACHE: std::sync::Mutex<Option<rustc_hash::FxHashMap<String, Arc<ChatOptions>>>> =
        std::sync::Mutex::new(None);
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(Default::default);
    if let Some(o) = map.get(json) {
        return Ok(o.clone());
    }
    let o = Arc::new(ChatOptions::from_json(json)?);
    if map.len() >= 64 {
        map.clear();
    }
    map.insert(json.to_string(), o.clone());
    Ok(o)
}

fn parse_input(messages_json: &str, options_json: &str) -> std::result::Result<ChatInput, LlmError> {
    let messages = parse_messages(messages_json, Strictness::Lenient).map_err(LlmError::other)?;
    let opts = ChatOptions::from_json(options_json)?;
    Ok(ChatInput { messages: Arc::new(messages), opts: Arc::new(opts), reuse: None })
}

fn token_of(cancel: Option<&CancelHandle>) -> CancellationToken {
    // A child token: closing one stream must not trip the caller's handle.
    cancel.map(|c| c.token().child_token()).unwrap_or_default()
}

/// What an adapter's own `chat` resolves with (the layout is `wire::chat_reply`'s).
fn response_json(r: LlmResponse) -> std::result::Result<String, LlmError> {
    Ok(oma_core::kernel::runner::wire::chat_reply(&r.id, &r.model, &r.stop_reason, r.usage, &r.content))
}

/// Runs one `chat` and returns a promise of what `done` makes of the response; `done` runs on
/// the JS thread (the kernel's fast path hands the response to its machine there). On the main
/// thread, HTTP and HTTPS endpoints reached directly are served from its event loop
/// (`Adapter::on_any_http`), anything else from the LLM I/O thread. Rejections carry the
/// `LlmError`'s record (see `lib/llm.js` `fromNative`).
pub fn spawn_chat_promise<'e, F, D>(
    env: &'e Env,
    adapter: Arc<Adapter>,
    cancel: Option<CancellationToken>,
    input: F,
    done: D,
) -> Result<Object<'e>>
where
    F: FnOnce() -> std::result::Result<ChatInput, LlmError> + Send + 'static,
    D: FnOnce(LlmResponse) -> std::result::Result<String, LlmError> + Send + 'static,
{
    if adapter.on_any_http() && super::uv::available(env.raw()) {
        // No threadsafe function per call: the promise is settled from the loop's callback.
        if let Some((deferred, promise)) = super::uv::promise(env.raw()) {
            super::uv::spawn_local(move |http| async move {
                let out = guarded(async move {
                    let i = input()?;
                    let cancel = cancel.as_ref().unwrap_or_else(|| oma_llm::never_cancelled());
                    adapter.chat_on(http, &i.messages, i.reuse(), &i.opts, cancel).await
                })
                .await;
                deferred.settle(out.and_then(|r| finish(done, r)).map_err(|e| e.to_record()));
            });
            // SAFETY: `promise` is the promise `uv::promise` just created in this call's env.
            return unsafe { Object::from_napi_value(env.raw(), promise) };
        }
    }
    let (deferred, promise) = env.create_deferred::<String, Resolver>()?;
    oma_llm::runtime::spawn(async move {
        let out = guarded(async move {
            let i = input()?;
            let cancel = cancel.as_ref().unwrap_or_else(|| oma_llm::never_cancelled());
            adapter.chat(&i.messages, i.reuse(), &i.opts, cancel).await
        })
        .await;
        match out {
            Ok(r) => deferred.resolve(Box::new(move |_| finish(done, r).map_err(js_err))),
            Err(e) => deferred.reject(js_err(e)),
        }
    });
    Ok(promise)
}

/// `done(r)` with a panic turned into an error (it runs inside a loop callback).
fn finish<D>(done: D, r: LlmResponse) -> std::result::Result<String, LlmError>
where
    D: FnOnce(LlmResponse) -> std::result::Result<String, LlmError>,
{
    catch_unwind(AssertUnwindSafe(|| done(r)))
        .unwrap_or_else(|_| Err(LlmError::other("internal error: handling the LLM response panicked")))
}

/// `fut`, with a panic turned into an error: a panicking request rejects its promise instead
/// of leaving it pending.
async fn guarded<T>(fut: impl Future<Output = std::result::Result<T, LlmError>>) -> std::result::Result<T, LlmError> {
    CatchUnwind(Box::pin(fut))
        .await
        .unwrap_or_else(|_| Err(LlmError::other("internal error: the LLM request task panicked")))
}

/// Polls a future, turning a panic into `Err`. (A task of its own would do the same at the
/// price of a second spawn and wake-up per call.)
struct CatchUnwind<F: Future>(Pin<Box<F>>);

impl<F: Future> Future for CatchUnwind<F> {
    type Output = std::thread::Result<F::Output>;
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        match catch_unwind(AssertUnwindSafe(|| self.0.as_mut().poll(cx))) {
            Ok(Poll::Pending) => Poll::Pending,
            Ok(Poll::Ready(v)) => Poll::Ready(Ok(v)),
            Err(panic) => Poll::Ready(Err(panic)),
        }
    }
}

/// A native adapter handle. The JS adapter object carries it under
/// `Symbol.for('oma-kernel.native-adapter')`; Rust code takes `&NativeLlmAdapter` and calls
/// [`NativeLlmAdapter::adapter`] to run turns without any JS in between.
#[napi]
pub struct NativeLlmAdapter {
    inner: Arc<Adapter>,
}

impl NativeLlmAdapter {
    /// The shared adapter for the Rust fast path (`Adapter::chat(&[Message], …)`).
    pub fn adapter(&self) -> Arc<Adapter> {
        self.inner.clone()
    }
}

#[napi]
impl NativeLlmAdapter {
    /// `createAdapter` minus the JS parts. `env_json` is a snapshot of the relevant
    /// `process.env` entries (see `llmEnvVars`); `egress` the normalised egress policy.
    #[napi(factory, catch_unwind)]
    pub fn create(
        provider: String,
        api_key: Option<String>,
        base_url: Option<String>,
        region: Option<String>,
        env_json: String,
        egress: Option<&NativeEgressPolicy>,
    ) -> Result<NativeLlmAdapter> {
        let env: oma_llm::Env = serde_json::from_str(&env_json)
            .map_err(|e| js_err(LlmError::other(format!("invalid env snapshot: {e}"))))?;
        let a = oma_llm::create_adapter_with(
            &provider,
            api_key.as_deref(),
            base_url.as_deref(),
            region.as_deref(),
            &env,
            egress.map(|p| &p.inner),
        )
        .map_err(js_err)?;
        Ok(NativeLlmAdapter { inner: Arc::new(a) })
    }

    #[napi(getter, catch_unwind)]
    pub fn name(&self) -> String {
        self.inner.name().to_string()
    }

    #[napi(getter, catch_unwind)]
    pub fn echoes_reasoning(&self) -> String {
        self.inner.echoes_reasoning().as_str().to_string()
    }

    /// The record of what one adapter object sends (see `ChatHistory::chat`).
    #[napi(catch_unwind)]
    pub fn new_history(&self) -> ChatHistory {
        ChatHistory { adapter: self.inner.clone(), state: std::sync::Mutex::new(None) }
    }

    /// Starts streaming at once; events are pulled with `NativeLlmStream.nextBatch`.
    #[napi(catch_unwind)]
    pub fn stream(
        &self,
        env: &Env,
        messages_json: String,
        options_json: String,
        cancel: Option<&CancelHandle>,
    ) -> NativeLlmStream {
        start_stream(env, self.inner.clone(), token_of(cancel), move || parse_input(&messages_json, &options_json))
    }
}

/// What one adapter object sent last, to its adapter: the messages as a kernel `History`, and
/// the wire cache that goes with them and the options text.
#[napi]
pub struct ChatHistory {
    adapter: Arc<Adapter>,
    state: std::sync::Mutex<Option<SentState>>,
}

struct SentState {
    history: History,
    options_json: String,
    opts: Arc<ChatOptions>,
    wire: Arc<WireCache>,
}

#[napi]
impl ChatHistory {
    /// `chat` over the first `keep` messages sent last time, followed by `tail_json`:
    /// `lib/llm.js` checks that those messages are the same objects with the same contents, so
    /// only the new ones cross as JSON, and their wire text is reused as in a run. Long strings
    /// of the tail cross beside it, each an `oma_llm::tail::LONG_STRING_RECORD` (the JSON has
    /// `""` there). Bad JSON or options throw here and leave the history as it was.
    /// `options_json` null: the options of the last call.
    #[napi(catch_unwind, ts_return_type = "Promise<string>")]
    pub fn chat<'e>(
        &self,
        env: &'e Env,
        keep: u32,
        tail_json: String,
        #[napi(ts_arg_type = "Array<[number, number, number, string]> | undefined | null")] long: Option<
            Vec<(u32, u32, u32, LongText)>,
        >,
        options_json: Option<String>,
        cancel: Option<&CancelHandle>,
    ) -> Result<Object<'e>> {
        let mut tail = parse_messages(&tail_json, Strictness::Lenient).map_err(|e| js_err(LlmError::other(e)))?;
        if let Some(long) = long {
            put_long_strings(&mut tail, long.into_iter().map(|(k, i, j, LongText(s))| (k, i, j, s)))
                .map_err(|e| js_err(LlmError::other(e)))?;
        }
        let input = self.advance(keep as usize, tail, options_json).map_err(js_err)?;
        spawn_chat_promise(env, self.adapter.clone(), chat_token(cancel), move || Ok(input), response_json)
    }
}

/// A long string argument, read in one pass (see `text::with_utf8`): these are the tool results.
pub struct LongText(String);

impl FromNapiValue for LongText {
    unsafe fn from_napi_value(env: napi::sys::napi_env, value: napi::sys::napi_value) -> Result<Self> {
        // SAFETY: napi-rs passes this conversion the current call's env and argument, as
        // `with_utf8` requires.
        unsafe { super::text::with_utf8(env, value, str::to_string) }
            .map(LongText)
            .ok_or_else(|| Error::new(Status::StringExpected, "expected a string"))
    }
}

impl napi::bindgen_prelude::TypeName for LongText {
    fn type_name() -> &'static str {
        "String"
    }
    fn value_type() -> napi::ValueType {
        napi::ValueType::String
    }
}

impl ChatHistory {
    fn advance(
        &self,
        keep: usize,
        tail: Vec<Message>,
        options_json: Option<String>,
    ) -> std::result::Result<ChatInput, LlmError> {
        let mut guard = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let st = match (guard.as_mut(), options_json) {
            (Some(st), None) => st,
            (None, None) => return Err(LlmError::other("oma-kernel: adapter history out of step")),
            // The wire text depends on the options (system prompt, reasoning settings).
            (Some(st), Some(o)) if st.options_json == o => st,
            (_, Some(options_json)) => {
                let opts = cached_chat_options(&options_json)?;
                let history = guard.take().map(|st| st.history).unwrap_or_else(|| History::new(Vec::new()));
                guard.insert(SentState { history, options_json, opts, wire: Arc::default() })
            }
        };
        st.history
            .keep_then_extend(keep, tail)
            .ok_or_else(|| LlmError::other("oma-kernel: adapter history out of step"))?;
        Ok(ChatInput {
            messages: st.history.shared(),
            opts: st.opts.clone(),
            reuse: Some((st.wire.clone(), st.history.epoch())),
        })
    }
}

/// Starts `adapter.stream` over the input `input` builds (the runner's native path hands in
/// its own history). Events are pulled with `NativeLlmStream.nextBatch`. As for `chat`: on the
/// main thread, endpoints its loop can serve (`Adapter::on_any_http`) stream from there, and a
/// pull is settled from the loop's callback that read the events; anything else streams on the
/// LLM I/O thread through a channel.
pub fn start_stream<F>(env: &Env, adapter: Arc<Adapter>, token: CancellationToken, input: F) -> NativeLlmStream
where
    F: FnOnce() -> std::result::Result<ChatInput, LlmError> + Send + 'static,
{
    if adapter.on_any_http() && super::uv::available(env.raw()) {
        let st = Rc::new(LocalStream::default());
        let (task_st, task_token) = (st.clone(), token.clone());
        super::uv::spawn_local(move |http| Delivering {
            st: task_st.clone(),
            fut: Box::pin(async move {
                // The sink must be `Send` (the I/O thread's streams share the code): the events
                // go through a mutex that only this thread ever locks.
                let events = task_st.events.clone();
                let mut sink = move |ev: StreamEvent| push_event(&events, &ev.to_record());
                let outcome = guarded(async {
                    let i = input()?;
                    adapter.stream_on(http, &i.messages, i.reuse(), &i.opts, &task_token, &mut sink).await
                })
                .await;
                if let Err(e) = outcome {
                    push_event(&task_st.events, &throw_event(e));
                }
            }),
        });
        return NativeLlmStream { source: Source::Local(st), cancel: token };
    }
    spawn_stream(adapter, token, input)
}

/// `start_stream` on the LLM I/O thread: events go through a channel to the pulls.
fn spawn_stream<F>(adapter: Arc<Adapter>, token: CancellationToken, input: F) -> NativeLlmStream
where
    F: FnOnce() -> std::result::Result<ChatInput, LlmError> + Send + 'static,
{
    let (tx, rx) = unbounded_channel::<String>();
    let task_token = token.clone();
    oma_llm::runtime::spawn(async move {
        let tx2 = tx.clone();
        let mut sink = move |ev: StreamEvent| {
            let _ = tx2.send(ev.to_record());
        };
        let outcome = match input() {
            Ok(i) => adapter.stream(&i.messages, i.reuse(), &i.opts, &task_token, &mut sink).await,
            Err(e) => Err(e),
        };
        if let Err(e) = outcome {
            send_throw(&tx, e);
        }
    });
    NativeLlmStream { source: Source::Remote(Arc::new(Mutex::new(rx))), cancel: token }
}

/// A main-thread stream's events not pulled yet, and the pulls waiting for some.
#[derive(Default)]
struct LocalStream {
    /// The events, comma-separated (the inside of the next batch's JSON array).
    events: Arc<std::sync::Mutex<String>>,
    /// The stream's task has finished: once `events` is empty, pulls get `[]`.
    ended: Cell<bool>,
    waiting: RefCell<VecDeque<super::uv::Deferred>>,
}

fn push_event(events: &std::sync::Mutex<String>, event: &str) {
    let mut e = events.lock().unwrap_or_else(|e| e.into_inner());
    if !e.is_empty() {
        e.push(',');
    }
    e.push_str(event);
}

impl LocalStream {
    /// The next batch, if there is one to give.
    fn batch(&self) -> Option<String> {
        let mut e = self.events.lock().unwrap_or_else(|e| e.into_inner());
        if e.is_empty() && !self.ended.get() {
            return None;
        }
        Some(format!("[{}]", std::mem::take(&mut *e)))
    }

    /// Settles a waiting pull with what arrived (on the loop's thread, in a handle scope).
    fn deliver(&self) {
        if self.waiting.borrow().is_empty() {
            return;
        }
        if let Some(batch) = self.batch() {
            let next = self.waiting.borrow_mut().pop_front();
            if let Some(d) = next {
                d.settle(Ok(batch));
            }
        }
    }
}

/// A main-thread stream's task: after each poll (all the events one read brought are in),
/// a waiting pull gets them in one batch.
struct Delivering<F: Future<Output = ()>> {
    st: Rc<LocalStream>,
    fut: Pin<Box<F>>,
}

impl<F: Future<Output = ()>> Future for Delivering<F> {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let done = self.fut.as_mut().poll(cx).is_ready();
        if done {
            self.st.ended.set(true);
        }
        self.st.deliver();
        if done {
            // Every later pull answers at once; pulls already waiting get `[]` now.
            while !self.st.waiting.borrow().is_empty() {
                self.st.deliver();
            }
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    }
}

enum Source {
    /// Events sent from the LLM I/O thread.
    Remote(Arc<Mutex<UnboundedReceiver<String>>>),
    /// Events pushed by a task on this (the main) thread's loop.
    Local(Rc<LocalStream>),
}

/// Cancellation token for a call: a child of the run's handle, so closing one stream does not
/// trip the caller's handle.
pub fn call_token(cancel: Option<&CancelHandle>) -> CancellationToken {
    token_of(cancel)
}

/// `call_token` for a `chat`, which never cancels its own token: `None` without a handle (the
/// call then runs on `oma_llm::never_cancelled()`, no token per call and no waiter on it).
pub fn chat_token(cancel: Option<&CancelHandle>) -> Option<CancellationToken> {
    cancel.map(|c| c.token().child_token())
}

fn send_throw(tx: &UnboundedSender<String>, e: LlmError) {
    let _ = tx.send(throw_event(e));
}

/// The event that makes the iterator throw `e` (`lib/llm.js`).
fn throw_event(e: LlmError) -> String {
    oma_llm::throw_record(&e)
}

/// Pull side of a native stream (≈1 µs per event when batched, see NAPI-NOTES).
#[napi]
pub struct NativeLlmStream {
    source: Source,
    cancel: CancellationToken,
}

#[napi]
impl NativeLlmStream {
    /// Resolves with a JSON array of the events available (at least one), each an
    /// `oma_llm::EVENT_RECORD`, or `[]` at the end.
    #[napi(catch_unwind, ts_return_type = "Promise<string>")]
    pub fn next_batch<'e>(&self, env: &'e Env) -> Result<PromiseRaw<'e, String>> {
        let rx = match &self.source {
            Source::Remote(rx) => rx.clone(),
            Source::Local(st) => {
                let (deferred, promise) = super::uv::promise(env.raw())
                    .ok_or_else(|| Error::new(Status::GenericFailure, "could not create a promise"))?;
                st.waiting.borrow_mut().push_back(deferred);
                // Events already read (or the end) settle it now; else the loop's callback will.
                st.deliver();
                // SAFETY: `promise` is the promise value just made in this napi call's env.
                return unsafe { PromiseRaw::from_napi_value(env.raw(), promise) };
            }
        };
        env.spawn_future(async move {
            let mut rx = rx.lock().await;
            let mut out = String::from("[");
            if let Some(first) = rx.recv().await {
                out.push_str(&first);
                while let Ok(more) = rx.try_recv() {
                    out.push(',');
                    out.push_str(&more);
                }
            }
            out.push(']');
            Ok(out)
        })
    }

    /// Stops the request (early `break` of the consumer).
    #[napi(catch_unwind)]
    pub fn close(&self) {
        self.cancel.cancel();
    }
}

/// Request attempts the main thread's event loop has sent itself (`oma_uv::LocalHttp`), for
/// the tests that check which path a call took; 0 before its first.
#[napi(catch_unwind)]
pub fn llm_loop_requests() -> f64 {
    super::uv::local_requests() as f64
}

/// A normalised egress policy (upstream's `normalizeEgressPolicy`), for `NativeLlmAdapter.create`.
#[napi]
pub struct NativeEgressPolicy {
    inner: EgressPolicy,
}

#[napi]
impl NativeEgressPolicy {
    /// The policy from what `lib/llm.js` read of the user's value (`oma_llm::egress::PolicyObject`):
    /// `is_object` is false for null, a primitive or an array. Throws the `invalid-policy` error.
    #[napi(factory, catch_unwind)]
    pub fn normalize(
        is_object: bool,
        mode: Option<String>,
        keys: Vec<String>,
        allowed_origins: Option<Vec<Option<String>>>,
    ) -> Result<NativeEgressPolicy> {
        let object = is_object.then(|| PolicyObject {
            mode: mode.as_deref(),
            keys: &keys,
            allowed_origins: allowed_origins.as_deref(),
        });
        Ok(NativeEgressPolicy { inner: EgressPolicy::normalize(object).map_err(js_err)? })
    }

    #[napi(getter, catch_unwind)]
    pub fn mode(&self) -> String {
        self.inner.mode().to_string()
    }

    #[napi(getter, catch_unwind)]
    pub fn allowed_origins(&self) -> Vec<String> {
        self.inner.allowed_origins().to_vec()
    }

    /// The refusal (an `oma_llm::ERROR_RECORD`) of a request by `provider` to `url`, or `null` when the
    /// policy allows it: for a client whose first request the JS side must refuse with an
    /// `EgressPolicyError` (the MCP bridge's `url`); the transport checks every request anyway.
    #[napi(catch_unwind)]
    pub fn refusal(&self, url: String, provider: String) -> Option<String> {
        self.inner.check(&url, &provider).err().map(|e| e.to_record())
    }
}

/// The `unsupported` error (an `oma_llm::ERROR_RECORD`) of a user's own adapter under a policy.
#[napi(catch_unwind)]
pub fn egress_adapter_unsupported(provider: String) -> String {
    oma_llm::egress::unsupported(&provider, oma_llm::egress::CUSTOM_ADAPTER_DETAIL).to_record()
}

/// The environment variables `createAdapter(provider)` reads; JS snapshots them from
/// `process.env` (per provider: each read of `process.env` is a call into Node).
#[napi(catch_unwind)]
pub fn llm_env_vars(provider: String, has_api_key: bool, has_base_url: bool, has_region: bool) -> Vec<String> {
    let given = oma_llm::providers::Given { api_key: has_api_key, base_url: has_base_url, region: has_region };
    oma_llm::providers::env_vars_for(&provider, given).iter().map(|s| s.to_string()).collect()
}

/// `extractToolCallsFromText(text, knownToolNames)` → JSON array of tool_use blocks.
#[napi(catch_unwind)]
pub fn extract_tool_calls_from_text_json(text: String, known_tool_names: Vec<String>) -> String {
    let names: Vec<&str> = known_tool_names.iter().map(String::as_str).collect();
    serde_json::to_string(&oma_llm::text_tool_extractor::extract_tool_calls_from_text(&text, &names))
        .expect("blocks serialise")
}

/// `repairToolArgs(raw)` → JSON object text, or `null`.
#[napi(catch_unwind)]
pub fn repair_tool_args_json(raw: String) -> Option<String> {
    oma_llm::text_tool_extractor::repair_tool_args(&raw)
        .map(|m| oma_core::json::to_js_json(&serde_json::Value::Object(m)))
}
