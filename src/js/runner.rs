//! Binding for the runner machine (`AgentRunner`'s driver in lib/runner.js): plans, runs, their
//! poll and answer calls (the per-turn ones are raw callbacks in `fast.rs`), and the native
//! adapters' calls on a run's own history. Every export is synchronous and `catch_unwind`: a
//! panic becomes a JS exception, never an abort. Errors the user can see are returned as strings
//! so the JS shim builds them in the caller's realm.

use std::cell::RefCell;
use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::convert::{is_error_of, registry_tools};
use super::slab::Slab;

use oma_core::kernel::config::runner_config_from_json;
use oma_core::kernel::context::SummaryCache;
use oma_core::kernel::grants::resolve_tools_railed;
use oma_core::kernel::message::{parse_messages, Message, Strictness, Usage};
use oma_core::kernel::runner::wire::{self, RoundLayout, Wire};
use oma_core::kernel::runner::{
    ActionKind, Awaiting, DriverError, Machine, ModelAnswer, Observers, Pending, RunnerConfig, ToolOutcome,
};

/// Agents are often created per request with identical options: parsed configurations are
/// shared by their JSON text (bounded; invalid ones are not cached).
fn cached_config(json: &str) -> std::result::Result<Arc<RunnerConfig>, String> {
    static CACHE: Mutex<Option<rustc_hash::FxHashMap<String, Arc<RunnerConfig>>>> = Mutex::new(None);
    let mut guard = CACHE.lock().unwrap_or_else(|e| e.into_inner());
    let map = guard.get_or_insert_with(Default::default);
    if let Some(c) = map.get(json) {
        return Ok(c.clone());
    }
    let c = Arc::new(runner_config_from_json(json)?);
    if map.len() >= 256 {
        map.clear();
    }
    map.insert(json.to_string(), c.clone());
    Ok(c)
}

thread_local! {
    static LAST_WARNINGS: RefCell<Vec<String>> = const { RefCell::new(Vec::new()) };
}

/// The warnings of the last `runnerPlan` on this thread (usually none).
#[napi(catch_unwind)]
pub fn runner_warnings() -> Vec<String> {
    LAST_WARNINGS.with(|w| std::mem::take(&mut *w.borrow_mut()))
}

/// The summarize strategy's cache, which lives as long as its runner (CONTRACT §5.6.2); only
/// runners with that strategy allocate one.
#[napi(catch_unwind)]
pub fn summary_cache_new() -> u32 {
    SUMMARY_CACHES.with(|s| s.borrow_mut().insert(Arc::new(Mutex::new(None))))
}

#[napi(catch_unwind)]
pub fn summary_cache_free(id: u32) {
    SUMMARY_CACHES.with(|s| s.borrow_mut().remove(id))
}

/// What a run starts from, for one options text and registry list: the parsed configuration and
/// the granted names. The driver keeps one per pair it has resolved (`lib/runner.js`), so a run
/// passes a small id instead of both texts and the grants are not resolved again.
struct StartPlan {
    cfg: Arc<RunnerConfig>,
    granted: Vec<String>,
}

/// Resolves the grants of `options_json` against a registry's tools (the list `tools_json`) into
/// a start plan (see `StartPlan`), the only place grants are resolved: its names come from
/// `runnerPlanNames`, its warnings from `runnerWarnings`, which the driver calls right after.
/// Free it with `runnerPlanFree`.
#[napi(catch_unwind)]
pub fn runner_plan(options_json: String, tools_json: String) -> Result<u32> {
    let cfg = cached_config(&options_json).map_err(Error::from_reason)?;
    let (tools, rail) = registry_tools(&tools_json).map_err(Error::from_reason)?;
    let view: Vec<(&str, bool)> = tools.iter().map(|(n, rt)| (n.as_str(), *rt)).collect();
    let out = resolve_tools_railed(&cfg.grants, &view, &rail);
    LAST_WARNINGS.with(|w| *w.borrow_mut() = out.warnings);
    Ok(PLANS.with(|s| s.borrow_mut().insert(StartPlan { cfg, granted: out.names })))
}

/// The names start plan `plan` grants, in registry order.
#[napi(catch_unwind)]
pub fn runner_plan_names(plan: u32) -> Result<Vec<String>> {
    PLANS
        .with(|s| s.borrow().get(plan).map(|p| p.granted.clone()))
        .ok_or_else(|| Error::from_reason("oma-kernel: this start plan has already been released"))
}

#[napi(catch_unwind)]
pub fn runner_plan_free(id: u32) {
    PLANS.with(|s| s.borrow_mut().remove(id))
}

/// Starts a run over `initial_json` (`JSON.stringify(initialMessages)`) from start plan `plan`,
/// and returns its id for the `run*` functions; it is released when `Done` is handed out, or by
/// `runRelease`. `summary_cache`: the runner's, if it has one; `has_on_warning` / `emits_events`:
/// who watches the run (`Observers`); `spent`: tokens already spent against the budget (a
/// checked structured-output retry's earlier attempts), unset for every other run.
#[napi(catch_unwind)]
pub fn runner_start(
    plan: u32,
    summary_cache: Option<u32>,
    initial_json: String,
    has_on_warning: bool,
    emits_events: bool,
    spent: Option<f64>,
) -> Result<u32> {
    let initial = parse_messages(&initial_json, Strictness::Lenient).map_err(Error::from_reason)?;
    start(plan, summary_cache, initial, Observers { on_warning: has_on_warning, events: emits_events }, spent)
}

/// `runnerStart` for the conversation `Agent.run(prompt)` builds (one user message with one text
/// block, checked by the driver): no JSON either way.
#[napi(catch_unwind)]
pub fn runner_start_prompt(
    plan: u32,
    summary_cache: Option<u32>,
    prompt: String,
    has_on_warning: bool,
    emits_events: bool,
    spent: Option<f64>,
) -> Result<u32> {
    let observers = Observers { on_warning: has_on_warning, events: emits_events };
    start(plan, summary_cache, vec![Message::user_text(prompt)], observers, spent)
}

fn start(
    plan: u32,
    summary_cache: Option<u32>,
    initial: Vec<Message>,
    observers: Observers,
    spent: Option<f64>,
) -> Result<u32> {
    let (cfg, granted) = PLANS
        .with(|s| s.borrow().get(plan).map(|p| (p.cfg.clone(), p.granted.clone())))
        .ok_or_else(|| Error::from_reason("oma-kernel: this start plan has already been released"))?;
    let cache = match summary_cache {
        Some(id) => SUMMARY_CACHES
            .with(|s| s.borrow().get(id).cloned())
            .ok_or_else(|| Error::from_reason("oma-kernel: this runner has already been released"))?,
        None => Arc::new(Mutex::new(None)),
    };
    let mut m = Machine::new(cfg, cache, initial, granted, observers);
    if let Some(tokens) = spent {
        m.spend_before(tokens);
    }
    Ok(insert_run(Run::new(m)))
}

/// A run in progress. Runners, registries, runs and semaphores live in per-thread slabs and
/// are addressed by small ids through free functions: a napi class method costs ≈250 ns per
/// call (instance checks), a free function ≈40 ns, and the driver makes several calls per turn.
struct Run {
    m: Machine,
    /// Tells this run from a later one in the same slot (a response settles by id and serial).
    serial: u64,
    /// The chat options of the run's native calls, parsed once, with the wire cache that
    /// belongs to them and the adapter they were used with.
    chat: Option<RunChat>,
    /// How the round of the model's last answer is written: `Verdicts` when the driver handed
    /// that answer over with its own copy (`runRespond`'s fifth argument). Set by every answer
    /// `runRespond` takes; a run of a native adapter (`runChat`, `runStream`) never has one.
    round: RoundLayout,
}

struct RunChat {
    options_json: String,
    /// Held (not just its address) so that a later adapter can never pass for it.
    adapter: Arc<oma_llm::Adapter>,
    opts: std::result::Result<Arc<oma_llm::ChatOptions>, oma_llm::LlmError>,
    wire: Arc<oma_llm::WireCache>,
}

impl Run {
    fn new(m: Machine) -> Run {
        static SERIAL: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
        Run {
            m,
            serial: SERIAL.fetch_add(1, std::sync::atomic::Ordering::Relaxed),
            chat: None,
            round: RoundLayout::Full,
        }
    }

    /// Takes the adapter and options of the run's native calls. The driver sends them on a run's
    /// first call only (converting them from JS on every call showed in profiles); `runStream`
    /// sends them every time: parsed once, and the wire cache reset whenever the options or the
    /// adapter change (the cached text depends on both).
    fn chat_setup(&mut self, adapter: &Arc<oma_llm::Adapter>, options_json: String) {
        let fresh =
            !matches!(&self.chat, Some(c) if Arc::ptr_eq(&c.adapter, adapter) && c.options_json == options_json);
        if fresh {
            let opts = super::llm::cached_chat_options(&options_json);
            self.chat = Some(RunChat { options_json, adapter: adapter.clone(), opts, wire: Arc::default() });
        }
    }

    /// What the next native call sends, and the adapter it goes to.
    fn chat_input(&self) -> std::result::Result<(super::llm::ChatInput, Arc<oma_llm::Adapter>), oma_llm::LlmError> {
        let c = self.chat.as_ref().ok_or_else(|| {
            oma_llm::LlmError::other("oma-kernel: runChat needs the adapter and options on a run's first call")
        })?;
        let (messages, epoch) = self.m.shared_conversation();
        Ok((
            super::llm::ChatInput { messages, opts: c.opts.clone()?, reuse: Some((c.wire.clone(), epoch)) },
            c.adapter.clone(),
        ))
    }
}

thread_local! {
    static SUMMARY_CACHES: RefCell<Slab<Arc<Mutex<Option<SummaryCache>>>>> = RefCell::new(Slab::default());
    static PLANS: RefCell<Slab<StartPlan>> = RefCell::new(Slab::default());
    static RUNS: RefCell<Slab<Run>> = RefCell::new(Slab::default());
}

fn insert_run(run: Run) -> u32 {
    RUNS.with(|s| s.borrow_mut().insert(run))
}

fn with_run<R>(id: u32, f: impl FnOnce(&mut Run) -> R) -> Result<R> {
    RUNS.with(|s| match s.borrow_mut().get_mut(id) {
        Some(run) => Ok(f(run)),
        None => Err(Error::from_reason(RELEASED)),
    })
}

/// Polls run `id` and encodes the action (`wire`). `Done` is the run's last action: its slot is
/// freed as it is handed out, so the driver needs no further call.
fn poll_wire(slab: &mut Slab<Run>, id: u32, aborted: bool) -> std::result::Result<Wire, String> {
    let run = slab.get_mut(id).ok_or(RELEASED)?;
    let action = run.m.poll(aborted).map_err(|e| e.to_string())?;
    let done = action.kind() == ActionKind::Done;
    let w = wire::encode(&action, run.round);
    if done {
        slab.remove(id);
        super::memory::run_ended();
    }
    Ok(w)
}

const RELEASED: &str = "oma-kernel: this run has already been released";

/// Frees a run's slot (the driver calls it when its generator is abandoned before `Done`).
#[napi(catch_unwind)]
pub fn run_release(id: u32) {
    RUNS.with(|s| s.borrow_mut().remove(id));
    super::memory::run_ended();
}

/// `runNext` (a raw callback, `fast.rs`): the next action, encoded (`wire`).
pub(super) fn run_next(id: u32, aborted: bool) -> std::result::Result<Wire, String> {
    RUNS.with(|s| poll_wire(&mut s.borrow_mut(), id, aborted))
}

/// An answer as the driver's calls pass it, already read from JS.
pub(super) enum JsResponse<'a> {
    /// `copied`: the driver keeps a copy of the content that this JSON writes exactly.
    Model {
        content_json: Option<&'a str>,
        usage: Usage,
        copied: bool,
    },
    Summary(Option<&'a str>),
    Conversation(Option<&'a str>),
    LoopAction(&'a str),
    ToolResult {
        index: u32,
        content: String,
        is_error: u32,
        usage: Option<Usage>,
        /// Milliseconds, as the driver timed the call.
        duration: f64,
    },
}

impl JsResponse<'_> {
    /// What this answers.
    fn answers(&self) -> Awaiting {
        match self {
            JsResponse::Model { .. } => Awaiting::Model,
            JsResponse::Summary(_) => Awaiting::Summary,
            JsResponse::Conversation(_) => Awaiting::Conversation,
            JsResponse::LoopAction(_) => Awaiting::LoopAction,
            JsResponse::ToolResult { .. } => Awaiting::ToolResults,
        }
    }
}

/// Hands an answer to the machine through the handle of what it waits for (`Machine::pending`:
/// the driver answers by run id, in a later call than the poll, so it cannot keep the poll's
/// handle); an answer of another kind is refused with the machine's driver error. A model answer
/// returns the next action (one crossing less per call; no abort can have happened in between);
/// any other answer returns `None`; a refused value returns `[-1, message]`
/// (`wire::encode_rejected`) for the driver to throw in its own realm. Driver bugs are errors.
pub(super) fn run_respond(id: u32, r: JsResponse<'_>) -> std::result::Result<Option<Wire>, String> {
    RUNS.with(|s| {
        let mut slab = s.borrow_mut();
        let run = slab.get_mut(id).ok_or(RELEASED)?;
        let is_model = matches!(r, JsResponse::Model { .. });
        let answered = match (r, run.m.pending()) {
            (JsResponse::Model { content_json, usage, copied }, Pending::Model(turn)) => {
                let (layout, answer) = if copied {
                    (RoundLayout::Verdicts, ModelAnswer::CopiedParts { content_json, usage })
                } else {
                    (RoundLayout::Full, ModelAnswer::Parts { content_json, usage })
                };
                run.round = layout;
                turn.answer(answer)
            }
            (JsResponse::Summary(json), Pending::Summary(call)) => call.answer(json),
            (JsResponse::Conversation(json), Pending::Conversation(call)) => call.answer(json),
            (JsResponse::LoopAction(action), Pending::LoopAction(policy)) => {
                policy.answer(action);
                Ok(())
            }
            (JsResponse::ToolResult { index, content, is_error, usage, duration }, Pending::ToolResults(mut round)) => {
                let outcome = ToolOutcome { content, is_error: is_error_of(is_error), usage };
                round.answer_timed(index as usize, outcome, duration)
            }
            (r, pending) => Err(pending.refuse(r.answers())),
        };
        match answered {
            Ok(()) if is_model => poll_wire(&mut slab, id, false).map(Some),
            Ok(()) => Ok(None),
            Err(e) => match wire::encode_rejected(&e) {
                Some(rejected) => Ok(Some(Wire::Json(rejected))),
                None => Err(e.to_string()),
            },
        }
    })
}

/// The summary call's answer (`JSON.stringify(response)`): `null`, or a rejection (`wire`).
#[napi(catch_unwind)]
pub fn run_respond_summary(id: u32, response_json: Option<String>) -> Result<Option<String>> {
    rejection(run_respond(id, JsResponse::Summary(response_json.as_deref())))
}

/// The custom strategy's answer (`JSON.stringify` of what `compress` returned, `null` when that
/// was not an array): `null`, or a rejection (`wire`).
#[napi(catch_unwind)]
pub fn run_respond_conversation(id: u32, messages_json: Option<String>) -> Result<Option<String>> {
    rejection(run_respond(id, JsResponse::Conversation(messages_json.as_deref())))
}

/// The loop policy callback's answer (`String(value)`).
#[napi(catch_unwind)]
pub fn run_respond_loop_action(id: u32, action: String) -> Result<()> {
    rejection(run_respond(id, JsResponse::LoopAction(&action))).map(drop)
}

/// A response that moves the machine on without an action to hand back: its rejection, if any.
fn rejection(r: std::result::Result<Option<Wire>, String>) -> Result<Option<String>> {
    r.map(|w| w.map(Wire::into_json)).map_err(Error::from_reason)
}

/// Checks runner options without keeping them (the Agent validates at construction).
#[napi(catch_unwind)]
pub fn validate_runner_options(options_json: String) -> Option<String> {
    cached_config(&options_json).err()
}

// ---------------------------------------------------------------------------------------
// Native adapters on the run's own history: no JS objects on the way to the HTTP body.

/// `adapter.chat` over the run's conversation (as the machine holds it). Resolves with the
/// reply `wire::model_reply_json` writes once the machine has taken the response and moved on to
/// its next action (on the JS thread, before the driver resumes);
/// rejections carry the adapters' error record (see `lib/llm.js`). `adapter` and
/// `optionsJson` are needed on the run's first call; later calls may pass `null` for both.
#[napi(catch_unwind, ts_return_type = "Promise<string>")]
pub fn run_chat<'e>(
    env: &'e napi::Env,
    id: u32,
    adapter: Option<&super::llm::NativeLlmAdapter>,
    options_json: Option<String>,
    cancel: Option<&super::cancel::CancelHandle>,
) -> Result<napi::bindgen_prelude::Object<'e>> {
    let given = adapter.map(|a| a.adapter());
    let (got, serial) = with_run(id, |r| {
        if let (Some(a), Some(o)) = (&given, options_json) {
            r.chat_setup(a, o);
        }
        (r.chat_input(), r.serial)
    })?;
    let (input, adapter) = match (got, given) {
        (Ok((input, a)), _) => (Ok(input), a),
        // Bad options reject the promise, like the adapter's own errors.
        (Err(e), Some(a)) => (Err(e), a),
        (Err(e), None) => return Err(Error::from_reason(e.to_record())),
    };
    let token = super::llm::chat_token(cancel);
    super::llm::spawn_chat_promise(
        env,
        adapter,
        token,
        move || input,
        move |resp| {
            // The next action goes back with the response (one crossing less per call), as
            // `runRespond` returns it for a JS adapter's answer.
            RUNS.with(|s| {
                let mut slab = s.borrow_mut();
                match slab.get_mut(id) {
                    Some(r) if r.serial == serial => {
                        // The reply's blocks are written before the content moves into the machine.
                        let reply = wire::ModelReply::new(resp.usage, &resp.content);
                        let answer = ModelAnswer::Parsed { content: resp.content, usage: resp.usage };
                        let answered = match r.m.pending() {
                            Pending::Model(turn) => turn.answer(answer),
                            other => Err(other.refuse(Awaiting::Model)),
                        };
                        answered.map_err(|e: DriverError| e.to_string())?;
                        Ok(reply.with_next(poll_wire(&mut slab, id, false)?))
                    }
                    _ => Err(RELEASED.to_string()),
                }
            })
            .map_err(oma_llm::LlmError::other)
        },
    )
}

/// `adapter.stream` over the run's conversation, for `streamDeltas`.
#[napi(catch_unwind)]
pub fn run_stream(
    env: &Env,
    id: u32,
    adapter: &super::llm::NativeLlmAdapter,
    options_json: String,
    cancel: Option<&super::cancel::CancelHandle>,
) -> Result<super::llm::NativeLlmStream> {
    let adapter = adapter.adapter();
    let input = with_run(id, |r| {
        r.chat_setup(&adapter, options_json);
        r.chat_input().map(|(input, _)| input)
    })?;
    let token = super::llm::call_token(cancel);
    Ok(super::llm::start_stream(env, adapter, token, move || input))
}
