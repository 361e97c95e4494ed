//! The agent loop (CONTRACT §5.5) as a sans-IO state machine.
//!
//! The machine owns every decision: when to stop (end_turn, maxTurns, abort), the budget with
//! its deferred break, loop detection and its policy, the gate, context strategies, and the
//! order of events. It never performs I/O. Its protocol is quinn-proto's `poll` with
//! rustls's handles (the unbuffered API's `ConnectionState`):
//!
//! - [`Machine::poll`] returns the next [`Action`], which carries everything the driver needs to
//!   perform it (the text to emit, the granted calls to run, the plan to apply, the outcome).
//! - An action that waits for an answer carries the one handle that can give it: [`ModelTurn`]
//!   (`CallModel`), [`ToolRound`] (the calls' outcomes, by index), [`SummaryCall`]
//!   (`Summarize`), [`CompressCall`] (`CustomCompress`), and [`LoopNotice::policy`]'s
//!   [`LoopPolicy`] (`LoopDetected` when the user's callback decides). An answer of the wrong
//!   kind does not compile. Until it is given, `poll` fails with [`DriverError::Unanswered`].
//! - A driver that answers in a later call than the one that polled (the binding answers by run
//!   id, across JS turns) gets the same handle from [`Machine::pending`]; an answer it holds of
//!   another kind is refused with [`Pending::refuse`], [`DriverError::Unexpected`].
//! - A value of the user's that the machine refuses (a malformed adapter response, a bad
//!   compression result) is [`DriverError::Rejected`], whose text is the user-visible error of
//!   the run; the machine still waits.
//!
//! Actions and their order within a turn:
//! 1. `ApplyPlan` when a context rule rewrote the history (tool-result compression from turn 2,
//!    then the strategy), or `CustomCompress` / `Summarize`, which wait for their answer (a
//!    summary is followed by its `ApplyPlan`);
//! 2. `CallModel`, which waits for the model's answer;
//! 3. after the answer: `Text` when the turn has text, `BudgetExceeded` when the budget is
//!    spent (both only when the driver emits events, see [`Observers`]), `LoopDetected` when
//!    the detector fires (waiting for the policy when the user's callback decides);
//! 4. one of: `ToolRound` (waits for one outcome per call, in any order),
//!    `InjectWarning` (the next turn follows), `LoopStopResults` then `Done`,
//!    `FirstTurnWarning` then `Done`, or `Done`.
//!
//! After a tool round, a delegated tool's usage can spend the budget: `BudgetExceeded`, `Done`.
//! `Done` is final: `poll` keeps returning it. The JS driver in `lib/runner.js` performs the
//! actions with the user's adapter and tools (through the wire encoding in `super::wire`); the
//! tests below drive the machine with scripted drivers, no Node involved.

pub mod snapshot;
pub mod wire;

use rustc_hash::FxHashSet;
use std::sync::{Arc, Mutex};

use serde_json::value::RawValue;

use super::context::{self, CompactConfig, Plan, Summarize, SummaryCache};
use super::grants::GrantConfig;
use super::history::History;
use super::loop_detector::{LoopDetector, LoopInfo, LoopKind, Match};
use super::message::{
    parse_content, parse_content_str, parse_copied_content_str, parse_messages, parse_usage, Block, Message, Role,
    Strictness, Usage,
};
use super::tokens::estimate_tokens;
use crate::protocol::Unexpected;

pub const W_TOOL: &str = "WARNING: You appear to be repeating the same tool calls with identical arguments. This suggests you are stuck in a loop. Please try a different approach, use different parameters, or explain what you are trying to accomplish.";
pub const W_TEXT: &str = "WARNING: You appear to be generating the same response repeatedly. This suggests you are stuck in a loop. Please try a different approach or provide new information.";
pub const LOOP_STOPPED_RESULT: &str = "Tool call not executed: the run was stopped by loop detection.";

pub fn not_granted(tool: &str) -> String {
    format!("Tool \"{tool}\" is not granted to this agent. Built-in tools are opt-in: grant it via the agent's \"tools\" allowlist or \"toolPreset\" (or set the orchestrator's \"defaultToolPreset\").")
}

pub fn first_turn_warning(name: &str, n: usize) -> String {
    format!("Agent \"{name}\" has {n} tool(s) available but the model returned no tool calls. If using a local model, verify it supports tool calling (see https://ollama.com/search?c=tools).")
}

#[derive(Debug, Clone, PartialEq)]
pub enum LoopAction {
    /// A configured string (`'warn'`, `'terminate'`, or anything else, which acts as continue).
    Fixed(String),
    /// A JS callback: the driver awaits it and reports its answer with `set_loop_action`.
    Callback,
}

#[derive(Debug, Clone)]
pub struct LoopConfig {
    pub max_repetitions: Option<f64>,
    pub window: Option<f64>,
    pub action: LoopAction,
    /// `loopDetection.match` (beyond the original; `Exact` when unset).
    pub matching: Match,
}

#[derive(Debug, Clone)]
pub enum Strategy {
    SlidingWindow { max_turns: f64 },
    Summarize { max_tokens: f64 },
    Compact(CompactConfig),
    Custom,
}

#[derive(Debug, Clone)]
pub struct RunnerConfig {
    pub max_turns: f64,
    pub max_token_budget: Option<f64>,
    pub agent_name: Option<String>,
    pub loop_detection: Option<LoopConfig>,
    pub strategy: Option<Strategy>,
    /// `Some(minChars)` when `compressToolResults` is on.
    pub compress_tool_results: Option<f64>,
    pub grants: GrantConfig,
}

impl Default for RunnerConfig {
    fn default() -> Self {
        RunnerConfig {
            max_turns: DEFAULT_MAX_TURNS,
            max_token_budget: None,
            agent_name: None,
            loop_detection: None,
            strategy: None,
            compress_tool_results: None,
            grants: GrantConfig {
                tool_preset: super::grants::Opt::Undefined,
                allowed: super::grants::Opt::Undefined,
                disallowed: super::grants::Opt::Undefined,
            },
        }
    }
}

/// The kind of an [`Action`], with its code on the wire (`super::wire`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum ActionKind {
    Done = 0,
    ApplyPlan = 1,
    CustomCompress = 2,
    Summarize = 3,
    CallModel = 4,
    Text = 5,
    BudgetExceeded = 6,
    LoopDetected = 7,
    InjectWarning = 8,
    FirstTurnWarning = 9,
    ToolRound = 10,
    LoopStopResults = 11,
}

impl ActionKind {
    /// Every kind, in code order.
    pub const ALL: [ActionKind; 12] = [
        ActionKind::Done,
        ActionKind::ApplyPlan,
        ActionKind::CustomCompress,
        ActionKind::Summarize,
        ActionKind::CallModel,
        ActionKind::Text,
        ActionKind::BudgetExceeded,
        ActionKind::LoopDetected,
        ActionKind::InjectWarning,
        ActionKind::FirstTurnWarning,
        ActionKind::ToolRound,
        ActionKind::LoopStopResults,
    ];

    /// The name the JS driver knows the kind by (`OP.<name>` in `lib/wire.js`).
    pub fn name(self) -> &'static str {
        match self {
            ActionKind::Done => "DONE",
            ActionKind::ApplyPlan => "APPLY_PLAN",
            ActionKind::CustomCompress => "CUSTOM_COMPRESS",
            ActionKind::Summarize => "SUMMARIZE",
            ActionKind::CallModel => "CALL_MODEL",
            ActionKind::Text => "TEXT",
            ActionKind::BudgetExceeded => "BUDGET_EXCEEDED",
            ActionKind::LoopDetected => "LOOP_DETECTED",
            ActionKind::InjectWarning => "INJECT_WARNING",
            ActionKind::FirstTurnWarning => "FIRST_TURN_WARNING",
            ActionKind::ToolRound => "TOOL_ROUND",
            ActionKind::LoopStopResults => "LOOP_STOP_RESULTS",
        }
    }
}

/// What the driver must do next, with the data to do it (see the module docs for the order).
///
/// An action that waits for an answer carries the one handle that can give it, in the style of
/// rustls's unbuffered `ConnectionState`: the model's answer goes only through [`ModelTurn`],
/// the calls' outcomes only through [`ToolRound`], and so on, so a scripted driver cannot give
/// an answer of the wrong kind: it does not compile. A driver that answers in a later call
/// (the binding, by run id) gets the same handles back from [`Machine::pending`].
#[derive(Debug)]
pub enum Action<'a> {
    /// Rebuild the working conversation from this plan (indices keep the driver's own message
    /// and block objects; see `context::plan_json`).
    ApplyPlan(Plan),
    /// Await `contextStrategy.compress(conversation, estimated_tokens)`; answer through the handle.
    CustomCompress(CompressCall<'a>),
    /// Await the summary call over the handle's `input_json`; answer through the handle.
    Summarize(SummaryCall<'a>),
    /// Await `adapter.chat(conversation, options)`; answer through the handle.
    CallModel(ModelTurn<'a>),
    /// Emit `{ type: 'text', data }` with the turn's text.
    Text(&'a str),
    /// Emit `budget_exceeded` with the tokens spent so far.
    BudgetExceeded { total_tokens: f64 },
    /// Emit `loop_detected`, call onWarning with the detail; when the configuration's policy is
    /// the user's callback, await it and answer through [`LoopNotice::policy`]'s handle.
    LoopDetected(LoopNotice<'a>),
    /// Append a user message with this one text block (and call onMessage).
    InjectWarning(&'static str),
    /// Call `onWarning` with this text.
    FirstTurnWarning(&'a str),
    /// Emit the `tool_use` events, run the granted calls (an ungranted one is answered with
    /// `not_granted`), answer each through the handle, emit the `tool_result` events, append
    /// the result message (with `trailing_warning` as a last text block), call onMessage.
    ToolRound(ToolRound<'a>),
    /// Append the user message answering every call with `result` (is_error), call onMessage.
    LoopStopResults { calls: ToolCalls<'a>, result: &'static str },
    /// The run is over.
    Done(Outcome<'a>),
}

impl Action<'_> {
    pub fn kind(&self) -> ActionKind {
        match self {
            Action::ApplyPlan(_) => ActionKind::ApplyPlan,
            Action::CustomCompress(_) => ActionKind::CustomCompress,
            Action::Summarize(_) => ActionKind::Summarize,
            Action::CallModel(_) => ActionKind::CallModel,
            Action::Text(_) => ActionKind::Text,
            Action::BudgetExceeded { .. } => ActionKind::BudgetExceeded,
            Action::LoopDetected(_) => ActionKind::LoopDetected,
            Action::InjectWarning(_) => ActionKind::InjectWarning,
            Action::FirstTurnWarning(_) => ActionKind::FirstTurnWarning,
            Action::ToolRound(_) => ActionKind::ToolRound,
            Action::LoopStopResults { .. } => ActionKind::LoopStopResults,
            Action::Done(_) => ActionKind::Done,
        }
    }
}

/// `CallModel`'s handle: the only way to give the model's answer for turn [`ModelTurn::turn`].
///
/// An answer of another kind does not compile:
///
/// ```compile_fail,E0308
/// use oma_core::kernel::runner::{ModelTurn, ToolOutcome};
/// fn answer_with_a_tool_result(turn: ModelTurn<'_>) {
///     turn.answer(ToolOutcome { content: String::new(), is_error: None, usage: None });
/// }
/// ```
pub struct ModelTurn<'a> {
    m: &'a mut Machine,
}

impl ModelTurn<'_> {
    pub fn turn(&self) -> u32 {
        self.m.turns
    }

    /// Takes the model's answer. A malformed one is [`DriverError::Rejected`] and leaves the
    /// machine waiting ([`Machine::pending`] hands the handle out again).
    pub fn answer(self, answer: ModelAnswer<'_>) -> Result<(), DriverError> {
        let (content, usage) = match answer {
            ModelAnswer::Json(json) => parse_response(json).map_err(DriverError::Rejected)?,
            ModelAnswer::Parts { content_json, usage } => (parse_content_json(content_json, false)?, usage),
            ModelAnswer::CopiedParts { content_json, usage } => (parse_content_json(content_json, true)?, usage),
            ModelAnswer::Parsed { content, usage } => (content, usage),
        };
        self.m.accept_response(content, usage);
        Ok(())
    }
}

/// `Summarize`'s handle: the summary call's input and the only way to give its response.
pub struct SummaryCall<'a> {
    m: &'a mut Machine,
}

impl SummaryCall<'_> {
    pub fn turn(&self) -> u32 {
        self.m.turns
    }

    /// The messages to summarise, as JSON.
    pub fn input_json(&self) -> &str {
        self.m.summary.as_ref().map(|s| s.3.as_str()).unwrap_or("[]")
    }

    /// Takes `JSON.stringify(response)`, `None` when the adapter returned nothing writable;
    /// the next `poll` returns the plan it makes as `ApplyPlan`.
    pub fn answer(self, response_json: Option<&str>) -> Result<(), DriverError> {
        self.m.on_summary(response_json.unwrap_or(""))
    }
}

/// `CustomCompress`'s handle: the only way to give `contextStrategy.compress`'s result.
pub struct CompressCall<'a> {
    m: &'a mut Machine,
}

impl CompressCall<'_> {
    /// The conversation's estimated size, `compress`'s second argument.
    pub fn estimated_tokens(&self) -> u64 {
        estimate_tokens(&self.m.conv)
    }

    /// Takes `JSON.stringify` of what `compress` returned, `None` when that was not an array.
    /// A refused result is [`DriverError::Rejected`] and leaves the machine waiting.
    pub fn answer(self, messages_json: Option<&str>) -> Result<(), DriverError> {
        self.m.set_conversation(messages_json)
    }
}

/// `LoopDetected`'s data, and the policy's handle when the machine waits for the user's callback.
pub struct LoopNotice<'a> {
    m: &'a mut Machine,
}

impl<'a> LoopNotice<'a> {
    pub fn info(&self) -> &LoopInfo {
        self.m.loop_info.as_ref().expect("a loop was detected")
    }

    /// Whether the machine waits for the user's policy callback (then [`LoopNotice::policy`]
    /// hands out its handle).
    pub fn awaits_policy(&self) -> bool {
        self.m.phase == Phase::AwaitLoopAction
    }

    /// The handle that answers the policy callback, when the machine waits for one.
    pub fn policy(self) -> Option<LoopPolicy<'a>> {
        self.awaits_policy().then_some(LoopPolicy { m: self.m })
    }
}

/// The loop policy callback's handle.
pub struct LoopPolicy<'a> {
    m: &'a mut Machine,
}

impl LoopPolicy<'_> {
    /// Takes the callback's answer (`String(value)`).
    pub fn answer(self, action: &str) {
        self.m.loop_action = Some(action.to_string());
        self.m.phase = Phase::Decide;
    }
}

/// `ToolRound`'s handle: the calls to run, and the only way to give their outcomes, by index,
/// in any order; the next `poll` fails with [`DriverError::Unanswered`] until each has one.
pub struct ToolRound<'a> {
    m: &'a mut Machine,
}

impl ToolRound<'_> {
    pub fn calls(&self) -> ToolCalls<'_> {
        self.m.tool_calls()
    }

    /// A loop warning to append to the result message as its last text block.
    pub fn trailing_warning(&self) -> Option<&'static str> {
        self.m.inject.map(warning_text)
    }

    /// Takes the outcome of call `index` (a later one for the same index replaces it); an index
    /// the round does not have is [`DriverError::Unexpected`]. Its duration is 0: see
    /// [`ToolRound::answer_timed`].
    pub fn answer(&mut self, index: usize, outcome: ToolOutcome) -> Result<(), DriverError> {
        self.answer_timed(index, outcome, 0.0)
    }

    /// [`ToolRound::answer`] with the call's duration in milliseconds, as the driver timed it
    /// (the machine does no I/O, the clock included): `RunResult.toolCalls[].duration`.
    pub fn answer_timed(&mut self, index: usize, outcome: ToolOutcome, duration: f64) -> Result<(), DriverError> {
        let slot = self.m.results.get_mut(index).ok_or(DriverError::Unexpected(Unexpected {
            awaiting: Awaiting::ToolResults,
            got: Awaiting::ToolResults,
        }))?;
        let usage = outcome.usage.map(|u| Usage::finite(u.input_tokens, u.output_tokens));
        *slot = Some(ToolOutcome { usage, ..outcome });
        // (A non-finite duration would not survive a snapshot's JSON.)
        self.m.round_durations[index] = if duration.is_finite() { duration } else { 0.0 };
        Ok(())
    }
}

macro_rules! opaque_debug {
    ($($t:ident),*) => {$(
        impl std::fmt::Debug for $t<'_> {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(stringify!($t))
            }
        }
    )*};
}
opaque_debug!(ModelTurn, SummaryCall, CompressCall, LoopNotice, LoopPolicy, ToolRound);

/// What the machine waits for, with the handle that gives it: [`Machine::pending`], for a
/// driver that answers in a later call than the one that polled (the binding answers by run id
/// across JS turns, so it cannot keep `poll`'s borrowing handle).
#[derive(Debug)]
pub enum Pending<'a> {
    Nothing,
    Conversation(CompressCall<'a>),
    Summary(SummaryCall<'a>),
    Model(ModelTurn<'a>),
    LoopAction(LoopPolicy<'a>),
    ToolResults(ToolRound<'a>),
}

impl Pending<'_> {
    pub fn awaiting(&self) -> Awaiting {
        match self {
            Pending::Nothing => Awaiting::Nothing,
            Pending::Conversation(_) => Awaiting::Conversation,
            Pending::Summary(_) => Awaiting::Summary,
            Pending::Model(_) => Awaiting::Model,
            Pending::LoopAction(_) => Awaiting::LoopAction,
            Pending::ToolResults(_) => Awaiting::ToolResults,
        }
    }

    /// The refusal of an answer to `got` given while the machine waits for this: the error a
    /// driver that answers by kind (the binding) reports for a wrong one.
    pub fn refuse(&self, got: Awaiting) -> DriverError {
        DriverError::Unexpected(Unexpected { awaiting: self.awaiting(), got })
    }
}

/// The turn's tool calls exactly as the gate judged them, in block order: the machine's own
/// copy. The driver executes, records and answers these, never the adapter's live objects: a
/// block whose `toJSON` hides it, or a `name` getter that answers differently on each read,
/// must not run an ungranted tool.
#[derive(Clone, Copy)]
pub struct ToolCalls<'a> {
    blocks: &'a [Block],
    granted: &'a FxHashSet<String>,
}

impl std::fmt::Debug for ToolCalls<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// One call of a [`ToolCalls`].
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    pub id: &'a str,
    pub name: &'a str,
    pub input: &'a RawValue,
    /// The provider's signature (Gemini): keeps the event's block equal to the response's.
    pub signature: Option<&'a str>,
    /// Whether the execution gate lets it run.
    pub granted: bool,
}

impl<'a> ToolCalls<'a> {
    pub fn iter(&self) -> impl Iterator<Item = ToolCall<'a>> + 'a {
        let granted = self.granted;
        self.blocks.iter().filter_map(move |b| match b {
            Block::ToolUse { id, name, input, signature } => {
                Some(ToolCall { id, name, input, signature: signature.as_deref(), granted: granted.contains(name) })
            }
            _ => None,
        })
    }

    pub fn len(&self) -> usize {
        // Counted without the gate's lookups `iter` makes.
        self.blocks.iter().filter(|b| matches!(b, Block::ToolUse { .. })).count()
    }

    pub fn is_empty(&self) -> bool {
        self.iter().next().is_none()
    }
}

/// Who watches the run: some actions exist only for someone to see them, and are not produced
/// when nobody does (each would cost the driver a crossing for nothing).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Observers {
    /// The driver has an `onWarning` callback: `FirstTurnWarning` is produced only for it.
    pub on_warning: bool,
    /// The driver hands events to a consumer (`stream()`; `run()` keeps only the result):
    /// `Text` and `BudgetExceeded`, which do nothing but emit an event, are produced only then.
    pub events: bool,
}

impl Observers {
    pub const ALL: Observers = Observers { on_warning: true, events: true };
}

/// What a finished run produced.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome<'a> {
    pub output: &'a str,
    pub usage: Usage,
    pub turns: u32,
    pub budget_exceeded: bool,
    pub loop_detected: bool,
    pub aborted: bool,
}

/// The outcome of one call of a [`ToolRound`].
#[derive(Debug, Clone)]
pub struct ToolOutcome {
    pub content: String,
    pub is_error: Option<bool>,
    /// A delegated run's `metadata.tokenUsage`.
    pub usage: Option<Usage>,
}

/// One executed call as `RunResult.toolCalls` reports it ([`Machine::tool_calls_made`]): the
/// call as the gate judged it, and its output as the history got it.
#[derive(Debug, Clone, Copy)]
pub struct ToolCallRecord<'a> {
    pub name: &'a str,
    pub input: &'a RawValue,
    pub output: &'a str,
    /// Milliseconds, as the driver timed the call ([`ToolRound::answer_timed`]).
    pub duration: f64,
}

/// The forms a model's answer can come in.
#[derive(Debug)]
pub enum ModelAnswer<'a> {
    /// A whole `LLMResponse` as JSON.
    Json(&'a str),
    /// `JSON.stringify(response.content)` (`None` when there is none) and the usage counts,
    /// which spares a JS driver serialising the whole response.
    Parts { content_json: Option<&'a str>, usage: Usage },
    /// `Parts` from a driver holding a copy of the content: calls may be written as arrays
    /// (`message::parse_copied_content_str`).
    CopiedParts { content_json: Option<&'a str>, usage: Usage },
    /// Already parsed (the native adapters).
    Parsed { content: Vec<Block>, usage: Usage },
}

/// What an action is waiting for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Awaiting {
    Nothing,
    Conversation,
    Summary,
    Model,
    LoopAction,
    ToolResults,
}

impl Awaiting {
    fn of(phase: Phase) -> Awaiting {
        match phase {
            Phase::AwaitCustom => Awaiting::Conversation,
            Phase::AwaitSummary => Awaiting::Summary,
            Phase::AwaitResponse => Awaiting::Model,
            Phase::AwaitLoopAction => Awaiting::LoopAction,
            Phase::AwaitToolResults => Awaiting::ToolResults,
            _ => Awaiting::Nothing,
        }
    }

    /// What is awaited, in the driver errors' words.
    fn awaited(self) -> &'static str {
        match self {
            Awaiting::Nothing => "nothing",
            Awaiting::Conversation => "the custom compression result",
            Awaiting::Summary => "the summary response",
            Awaiting::Model => "the model response",
            Awaiting::LoopAction => "the loop action",
            Awaiting::ToolResults => "the tool results",
        }
    }

    /// An answer to this, in the driver errors' words.
    fn answer(self) -> &'static str {
        match self {
            Awaiting::Nothing => "nothing",
            Awaiting::Conversation => "compression result",
            Awaiting::Summary => "summary response",
            Awaiting::Model => "model response",
            Awaiting::LoopAction => "loop action",
            Awaiting::ToolResults => "tool result",
        }
    }
}

/// How a driver's call failed.
#[derive(Debug, Clone, PartialEq)]
pub enum DriverError {
    /// `poll` while the last action still waits for its answer (some tool results, for
    /// `ToolResults`): a driver bug.
    Unanswered(Awaiting),
    /// An answer (to `got`) the machine is not waiting for, or a tool result for a call the
    /// round does not have: a driver bug, possible only for a driver that answers by kind
    /// ([`Pending::refuse`]); the handles cannot give it.
    Unexpected(Unexpected<Awaiting, Awaiting>),
    /// The user's value was refused; the text is the run's error message.
    Rejected(String),
}

impl std::fmt::Display for DriverError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DriverError::Unanswered(a) => write!(f, "driver error: {} not reported", a.awaited()),
            DriverError::Unexpected(Unexpected { awaiting, got }) => {
                write!(f, "driver error: unexpected {} while waiting for {}", got.answer(), awaiting.awaited())
            }
            DriverError::Rejected(msg) => f.write_str(msg),
        }
    }
}

impl std::error::Error for DriverError {}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    TurnStart,
    Strategy,
    AwaitCustom,
    AwaitSummary,
    Call,
    AwaitResponse,
    AwaitLoopAction,
    Decide,
    AwaitToolResults,
    AfterTools,
    Finished,
}

impl Phase {
    /// Every phase, in discriminant order (a snapshot writes the discriminant).
    const ALL: [Phase; 11] = [
        Phase::TurnStart,
        Phase::Strategy,
        Phase::AwaitCustom,
        Phase::AwaitSummary,
        Phase::Call,
        Phase::AwaitResponse,
        Phase::AwaitLoopAction,
        Phase::Decide,
        Phase::AwaitToolResults,
        Phase::AfterTools,
        Phase::Finished,
    ];
}

pub struct Machine {
    cfg: Arc<RunnerConfig>,
    cache: Arc<Mutex<Option<SummaryCache>>>,
    conv: History,
    usage: Usage,
    /// Tokens spent against the budget before this run (a checked structured-output retry's
    /// earlier attempts, issue 19); not part of the run's own usage.
    spent: f64,
    turns: u32,
    final_output: String,
    budget_exceeded: bool,
    loop_detected: bool,
    aborted: bool,
    detector: Option<LoopDetector>,
    loop_warned: bool,
    /// Looked up once per call of every round: Fx, not SipHash (≈ 0.1k instructions a call).
    granted: FxHashSet<String>,
    tools_offered: usize,
    observers: Observers,
    phase: Phase,
    queue: std::collections::VecDeque<ActionKind>,
    // Per-turn state.
    turn_text: String,
    /// The ids of the turn's tool_use blocks, for the results that answer them.
    tool_uses: Vec<String>,
    pending_break: bool,
    inject: Option<LoopKind>,
    loop_info: Option<LoopInfo>,
    loop_action: Option<String>,
    results: Vec<Option<ToolOutcome>>,
    /// The durations of the round's calls, by index (0 until answered).
    round_durations: Vec<f64>,
    /// `RunResult.toolCalls` as data: per executed round, where its result message is in the
    /// run's added messages (`History::added`), whose previous one is the round's assistant
    /// message; with the calls' durations, in call order. The records are read from those
    /// messages ([`Machine::tool_calls_made`]): nothing is copied per call.
    rounds: Vec<usize>,
    durations: Vec<f64>,
    plan: Option<Plan>,
    summary: Option<(String, usize, Vec<usize>, String)>,
    /// The text of the last `InjectWarning`.
    injected: Option<&'static str>,
    first_turn_warning: String,
}

impl Machine {
    /// `initial`: the conversation handed to `stream()`; `granted`: the resolved tool names.
    pub fn new(
        cfg: Arc<RunnerConfig>,
        cache: Arc<Mutex<Option<SummaryCache>>>,
        initial: Vec<Message>,
        granted: Vec<String>,
        observers: Observers,
    ) -> Machine {
        let detector = cfg.loop_detection.as_ref().map(|l| {
            let mut d = detector_of(l);
            // Seed from history so a loop spanning prompt() calls is still seen.
            for m in initial.iter().filter(|m| m.role == Role::Assistant) {
                let calls: Vec<(&str, &str)> = m
                    .content
                    .iter()
                    .filter_map(|b| match b {
                        Block::ToolUse { name, input, .. } => Some((name.as_str(), input.get())),
                        _ => None,
                    })
                    .collect();
                if !calls.is_empty() {
                    d.record_tool_calls(&calls);
                }
                let text = m.text();
                if !text.is_empty() {
                    d.record_text(&text);
                }
            }
            d
        });
        Machine {
            tools_offered: granted.len(),
            granted: granted.into_iter().collect(),
            cfg,
            cache,
            conv: History::new(initial),
            usage: Usage::default(),
            spent: 0.0,
            turns: 0,
            final_output: String::new(),
            budget_exceeded: false,
            loop_detected: false,
            aborted: false,
            detector,
            loop_warned: false,
            observers,
            phase: Phase::TurnStart,
            queue: Default::default(),
            turn_text: String::new(),
            tool_uses: Vec::new(),
            pending_break: false,
            inject: None,
            loop_info: None,
            loop_action: None,
            results: Vec::new(),
            round_durations: Vec::new(),
            rounds: Vec::new(),
            durations: Vec::new(),
            plan: None,
            summary: None,
            injected: None,
            first_turn_warning: String::new(),
        }
    }

    /// The next action, with its data; see the module docs.
    pub fn poll(&mut self, aborted: bool) -> Result<Action<'_>, DriverError> {
        let kind = self.step(aborted)?;
        Ok(self.action(kind))
    }

    /// What the machine waits for, without a handle.
    pub fn awaiting(&self) -> Awaiting {
        Awaiting::of(self.phase)
    }

    /// The handle that answers what the machine waits for (the one the last action handed
    /// out), for a driver that answers in a later call than the one that polled.
    pub fn pending(&mut self) -> Pending<'_> {
        match self.phase {
            Phase::AwaitCustom => Pending::Conversation(CompressCall { m: self }),
            Phase::AwaitSummary => Pending::Summary(SummaryCall { m: self }),
            Phase::AwaitResponse => Pending::Model(ModelTurn { m: self }),
            Phase::AwaitLoopAction => Pending::LoopAction(LoopPolicy { m: self }),
            Phase::AwaitToolResults => Pending::ToolResults(ToolRound { m: self }),
            _ => Pending::Nothing,
        }
    }

    /// Builds the action of kind `kind` from the state `step` left.
    fn action(&mut self, kind: ActionKind) -> Action<'_> {
        match kind {
            ActionKind::Done => Action::Done(self.outcome()),
            ActionKind::ApplyPlan => Action::ApplyPlan(self.plan.take().unwrap_or_default()),
            ActionKind::CustomCompress => Action::CustomCompress(CompressCall { m: self }),
            ActionKind::Summarize => Action::Summarize(SummaryCall { m: self }),
            ActionKind::CallModel => Action::CallModel(ModelTurn { m: self }),
            ActionKind::Text => Action::Text(&self.turn_text),
            ActionKind::BudgetExceeded => Action::BudgetExceeded { total_tokens: self.spent + self.usage.total() },
            ActionKind::LoopDetected => Action::LoopDetected(LoopNotice { m: self }),
            ActionKind::InjectWarning => Action::InjectWarning(self.injected.expect("a warning was injected")),
            ActionKind::FirstTurnWarning => Action::FirstTurnWarning(&self.first_turn_warning),
            ActionKind::ToolRound => Action::ToolRound(ToolRound { m: self }),
            ActionKind::LoopStopResults => {
                Action::LoopStopResults { calls: self.tool_calls(), result: LOOP_STOPPED_RESULT }
            }
        }
    }

    /// The outcome so far (final once `poll` has returned `Done`).
    /// Counts `tokens` spent before this run against `maxTokenBudget` (they stay out of the
    /// run's usage): a checked structured-output retry starts with its earlier attempts' tokens.
    pub fn spend_before(&mut self, tokens: f64) {
        if tokens.is_finite() && tokens > 0.0 {
            self.spent = tokens;
        }
    }

    pub fn outcome(&self) -> Outcome<'_> {
        Outcome {
            output: &self.final_output,
            usage: self.usage,
            turns: self.turns,
            budget_exceeded: self.budget_exceeded,
            loop_detected: self.loop_detected,
            aborted: self.aborted,
        }
    }

    fn step(&mut self, aborted: bool) -> Result<ActionKind, DriverError> {
        if let Some(op) = self.queue.pop_front() {
            return Ok(op);
        }
        loop {
            match self.phase {
                Phase::TurnStart => {
                    if aborted {
                        self.aborted = true;
                        return Ok(self.finish());
                    }
                    if (self.turns as f64) >= self.cfg.max_turns {
                        return Ok(self.finish());
                    }
                    self.turns += 1;
                    self.phase = Phase::Strategy;
                    if let (Some(min), true) = (self.cfg.compress_tool_results, self.turns > 1) {
                        if let Some(plan) = context::compress_tool_results(&self.conv, min) {
                            return Ok(self.stage_plan(plan));
                        }
                    }
                }
                Phase::Strategy => {
                    self.phase = Phase::Call;
                    match &self.cfg.strategy {
                        None => {}
                        Some(Strategy::SlidingWindow { max_turns }) => {
                            if let Some(plan) = context::sliding_window(&self.conv, *max_turns) {
                                return Ok(self.stage_plan(plan));
                            }
                        }
                        Some(Strategy::Compact(c)) => {
                            if let Some(plan) = context::compact(&self.conv, c) {
                                return Ok(self.stage_plan(plan));
                            }
                        }
                        Some(Strategy::Custom) => {
                            self.phase = Phase::AwaitCustom;
                            return Ok(ActionKind::CustomCompress);
                        }
                        Some(Strategy::Summarize { max_tokens }) => {
                            let decision = {
                                let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
                                context::summarize(&self.conv, *max_tokens, cache.as_ref())
                            };
                            match decision {
                                Summarize::Unchanged => {}
                                Summarize::Plan(plan) => return Ok(self.stage_plan(plan)),
                                Summarize::Call { signature, input_json, first_user, recent } => {
                                    self.summary = Some((signature, first_user, recent, input_json));
                                    self.phase = Phase::AwaitSummary;
                                    return Ok(ActionKind::Summarize);
                                }
                            }
                        }
                    }
                }
                Phase::AwaitCustom | Phase::AwaitSummary | Phase::AwaitResponse | Phase::AwaitLoopAction => {
                    return Err(DriverError::Unanswered(Awaiting::of(self.phase)))
                }
                Phase::Call => {
                    self.phase = Phase::AwaitResponse;
                    return Ok(ActionKind::CallModel);
                }
                Phase::Decide => {
                    if let Some(op) = self.decide() {
                        return Ok(op);
                    }
                }
                Phase::AwaitToolResults => {
                    if self.results.iter().any(Option::is_none) {
                        return Err(DriverError::Unanswered(Awaiting::ToolResults));
                    }
                    self.append_tool_results();
                    self.phase = Phase::AfterTools;
                }
                Phase::AfterTools => {
                    if self.pending_break {
                        return Ok(self.finish());
                    }
                    let delegated: Option<Usage> =
                        self.results.iter().flatten().filter_map(|r| r.usage).fold(None, |acc, u| {
                            let mut a = acc.unwrap_or_default();
                            a.add(u);
                            Some(a)
                        });
                    self.results.clear();
                    self.round_durations.clear();
                    if delegated.is_some() {
                        if let Some(budget) = self.cfg.max_token_budget {
                            if self.spent + self.usage.total() > budget {
                                self.budget_exceeded = true;
                                self.final_output = self.turn_text.clone();
                                self.phase = Phase::Finished;
                                if !self.observers.events {
                                    return Ok(ActionKind::Done);
                                }
                                self.queue.push_back(ActionKind::Done);
                                return Ok(ActionKind::BudgetExceeded);
                            }
                        }
                    }
                    self.phase = Phase::TurnStart;
                }
                Phase::Finished => return Ok(ActionKind::Done),
            }
        }
    }

    fn stage_plan(&mut self, plan: Plan) -> ActionKind {
        self.conv.replace(context::apply(&self.conv, &plan));
        self.plan = Some(plan);
        ActionKind::ApplyPlan
    }

    /// The custom strategy's answer (`JSON.stringify` of what `compress` returned).
    fn set_conversation(&mut self, json: Option<&str>) -> Result<(), DriverError> {
        const BAD: &str = "contextStrategy.custom.compress must return a non-empty LLMMessage[]";
        let bad = || DriverError::Rejected(BAD.into());
        let json = json.ok_or_else(bad)?;
        if !json.trim_start().starts_with('[') {
            return Err(bad());
        }
        let msgs = parse_messages(json, Strictness::Lenient).map_err(DriverError::Rejected)?;
        if msgs.is_empty() {
            return Err(bad());
        }
        self.conv.replace(msgs);
        self.phase = Phase::Call;
        Ok(())
    }

    /// The summary call's response; stages the plan the next `poll` returns as `ApplyPlan`.
    fn on_summary(&mut self, response_json: &str) -> Result<(), DriverError> {
        let (content, usage) = parse_response(response_json).map_err(DriverError::Rejected)?;
        let usage = Usage::finite(usage.input_tokens, usage.output_tokens);
        let text: String = content
            .iter()
            .filter_map(|b| match b {
                Block::Text { text: Some(t) } => Some(t.as_str()),
                _ => None,
            })
            .collect();
        let prefix = context::summary_prefix(&text);
        let (signature, fu, recent, _) = self.summary.take().expect("a summary is pending");
        let plan = context::summary_plan(&self.conv, fu, &recent, &prefix);
        *self.cache.lock().unwrap_or_else(|e| e.into_inner()) = Some(SummaryCache { signature, prefix });
        self.usage.add(usage);
        self.conv.replace(context::apply(&self.conv, &plan));
        self.plan = Some(plan);
        self.queue.push_back(ActionKind::ApplyPlan);
        self.phase = Phase::Call;
        Ok(())
    }

    /// Takes a checked answer.
    fn accept_response(&mut self, content: Vec<Block>, usage: Usage) {
        let usage = Usage::finite(usage.input_tokens, usage.output_tokens);
        self.usage.add(usage);
        self.turn_text.clear();
        self.tool_uses.clear();
        for b in &content {
            match b {
                Block::Text { text: Some(t) } => self.turn_text.push_str(t),
                Block::ToolUse { id, .. } => self.tool_uses.push(id.clone()),
                _ => {}
            }
        }
        if !self.turn_text.is_empty() && self.observers.events {
            self.queue.push_back(ActionKind::Text);
        }
        if let Some(budget) = self.cfg.max_token_budget {
            if self.spent + self.usage.total() > budget {
                self.budget_exceeded = true;
                self.final_output = self.turn_text.clone();
                self.pending_break = true;
                if self.observers.events {
                    self.queue.push_back(ActionKind::BudgetExceeded);
                }
            }
        }
        self.inject = None;
        self.loop_info = None;
        self.loop_action = None;
        self.phase = Phase::Decide;
        if let Some(d) = self.detector.as_mut() {
            let calls = content.iter().filter_map(|b| match b {
                Block::ToolUse { name, input, .. } => Some((name.as_str(), input.get())),
                _ => None,
            });
            let tool_info = match self.tool_uses.len() {
                0 => None,
                // One call (the usual turn): no vector.
                1 => d.record_tool_calls(&[calls.clone().next().expect("one tool_use")]),
                _ => d.record_tool_calls(&calls.collect::<Vec<_>>()),
            };
            let text_info = if self.turn_text.is_empty() { None } else { d.record_text(&self.turn_text) };
            match tool_info.or(text_info) {
                Some(info) => {
                    self.loop_info = Some(info);
                    self.queue.push_back(ActionKind::LoopDetected);
                    match &self.cfg.loop_detection.as_ref().unwrap().action {
                        LoopAction::Fixed(a) => self.loop_action = Some(a.clone()),
                        LoopAction::Callback => self.phase = Phase::AwaitLoopAction,
                    }
                }
                None => self.loop_warned = false,
            }
        }
        self.conv.push(Message { role: Role::Assistant, content });
    }

    fn decide(&mut self) -> Option<ActionKind> {
        if let Some(info) = &self.loop_info {
            let kind = info.kind;
            match self.loop_action.as_deref() {
                Some("terminate") => return Some(self.stop_for_loop()),
                Some("warn") | Some("inject") => {
                    if self.loop_warned {
                        return Some(self.stop_for_loop());
                    }
                    self.loop_warned = true;
                    self.inject = Some(kind);
                }
                _ => {}
            }
        }
        if self.tool_uses.is_empty() {
            if self.pending_break {
                return Some(self.finish());
            }
            if let Some(kind) = self.inject.take() {
                let text = warning_text(kind);
                self.conv.push(Message::user_text(text));
                self.injected = Some(text);
                self.phase = Phase::TurnStart;
                return Some(ActionKind::InjectWarning);
            }
            self.final_output = self.turn_text.clone();
            if self.turns == 1 && self.tools_offered > 0 && self.observers.on_warning {
                let name = self.cfg.agent_name.as_deref().unwrap_or("unknown");
                self.first_turn_warning = first_turn_warning(name, self.tools_offered);
                let done = self.finish();
                self.queue.push_back(done);
                return Some(ActionKind::FirstTurnWarning);
            }
            return Some(self.finish());
        }
        self.results.clear();
        self.results.resize(self.tool_uses.len(), None);
        self.round_durations.clear();
        self.round_durations.resize(self.tool_uses.len(), 0.0);
        self.phase = Phase::AwaitToolResults;
        Some(ActionKind::ToolRound)
    }

    fn stop_for_loop(&mut self) -> ActionKind {
        self.loop_detected = true;
        self.final_output = self.turn_text.clone();
        if self.tool_uses.is_empty() {
            return self.finish();
        }
        // §21: answer every tool_use so the returned history stays replayable.
        let content = self
            .tool_uses
            .iter()
            .map(|id| Block::ToolResult {
                tool_use_id: id.clone(),
                content: LOOP_STOPPED_RESULT.to_string(),
                is_error: Some(true),
            })
            .collect();
        self.conv.push(Message { role: Role::User, content });
        let done = self.finish();
        self.queue.push_back(done);
        ActionKind::LoopStopResults
    }

    fn finish(&mut self) -> ActionKind {
        self.phase = Phase::Finished;
        if self.final_output.is_empty() {
            if let Some(m) = self.conv.iter().rev().find(|m| m.role == Role::Assistant) {
                self.final_output = m.text();
            }
        }
        ActionKind::Done
    }

    /// The calls of the turn's assistant message (the last one: during `LoopStopResults` the
    /// answering user message follows it).
    fn tool_calls(&self) -> ToolCalls<'_> {
        let blocks = self.conv.iter().rev().find(|m| m.role == Role::Assistant).map(|m| &m.content[..]).unwrap_or(&[]);
        ToolCalls { blocks, granted: &self.granted }
    }

    fn append_tool_results(&mut self) {
        let mut content: Vec<Block> = Vec::with_capacity(self.results.len() + self.inject.is_some() as usize);
        // The round is over: ids and result texts move into the history (no copies); the
        // outcomes keep their usage for the post-delegation budget check.
        for (k, r) in self.results.iter_mut().enumerate() {
            let r = r.as_mut().unwrap();
            if let Some(u) = r.usage {
                self.usage.add(u);
            }
            content.push(Block::ToolResult {
                tool_use_id: std::mem::take(&mut self.tool_uses[k]),
                content: std::mem::take(&mut r.content),
                is_error: r.is_error,
            });
        }
        if let Some(kind) = self.inject.take() {
            content.push(Block::text(warning_text(kind)));
        }
        self.rounds.push(self.conv.added_len());
        self.durations.extend_from_slice(&self.round_durations);
        self.conv.push(Message { role: Role::User, content });
    }

    pub fn conversation(&self) -> &[Message] {
        &self.conv
    }

    /// Every message the run added to the conversation, in order, as they were added (a context
    /// strategy's rewrite does not change them): `RunResult.messages`.
    pub fn added_messages(&self) -> impl Iterator<Item = &Message> {
        self.conv.added()
    }

    /// Every executed call of the run, in order (`RunResult.toolCalls`): the calls of each tool
    /// round (not those a loop stop answered), with their outputs as the history got them.
    pub fn tool_calls_made(&self) -> Vec<ToolCallRecord<'_>> {
        let added: Vec<&Message> = self.conv.added().collect();
        let mut durations = self.durations.iter();
        let mut out = Vec::with_capacity(self.durations.len());
        for &at in &self.rounds {
            let calls = added[at - 1].content.iter().filter_map(|b| match b {
                Block::ToolUse { name, input, .. } => Some((name.as_str(), &**input)),
                _ => None,
            });
            let outputs = added[at].content.iter().filter_map(|b| match b {
                Block::ToolResult { content, .. } => Some(content.as_str()),
                _ => None,
            });
            for ((name, input), output) in calls.zip(outputs) {
                let duration = *durations.next().expect("a duration per executed call");
                out.push(ToolCallRecord { name, input, output, duration });
            }
        }
        out
    }

    /// The conversation for a request that reads it elsewhere (no copy), with its epoch.
    pub fn shared_conversation(&self) -> (Arc<Vec<Message>>, u64) {
        (self.conv.shared(), self.conv.epoch())
    }
}

/// A fresh loop detector of configuration `l`.
fn detector_of(l: &LoopConfig) -> LoopDetector {
    LoopDetector::new(l.max_repetitions, l.window).with_match(l.matching)
}

fn warning_text(kind: LoopKind) -> &'static str {
    match kind {
        LoopKind::ToolRepetition => W_TOOL,
        LoopKind::TextRepetition => W_TEXT,
    }
}

/// Reads an `LLMResponse` strictly enough that a broken adapter fails the run with a clear
/// message instead of corrupting the history.
pub fn parse_response(json: &str) -> Result<(Vec<Block>, Usage), String> {
    #[derive(serde::Deserialize)]
    struct R<'a> {
        #[serde(borrow, default)]
        content: Option<&'a RawValue>,
        #[serde(borrow, default)]
        usage: Option<&'a RawValue>,
    }
    if !json.trim_start().starts_with('{') {
        return Err(malformed(NOT_AN_OBJECT));
    }
    let r: R = serde_json::from_str(json).map_err(|_| malformed(NOT_AN_OBJECT))?;
    let content = r.content.ok_or_else(|| malformed("\"content\" is missing"))?;
    let blocks = parse_content(content, Strictness::Strict).map_err(|e| malformed(&e))?;
    Ok((blocks, parse_usage(r.usage)))
}

const NOT_AN_OBJECT: &str = "expected an object with a \"content\" array";

fn malformed(detail: &str) -> String {
    format!("LLM adapter returned a malformed response: {detail}")
}

/// The content of `ModelAnswer::Parts` (`copied`: `CopiedParts`), read as strictly as
/// `parse_response` reads it.
fn parse_content_json(content_json: Option<&str>, copied: bool) -> Result<Vec<Block>, DriverError> {
    let json = content_json.ok_or_else(|| DriverError::Rejected(malformed(NOT_AN_OBJECT)))?;
    let parsed = if copied { parse_copied_content_str(json) } else { parse_content_str(json, Strictness::Strict) };
    parsed.map_err(|e| DriverError::Rejected(malformed(&e)))
}

/// `RunnerOptions.maxTurns` when unset.
pub const DEFAULT_MAX_TURNS: f64 = 10.0;

/// The texts the JS driver of the runner (`lib/runner.js`, `lib/errors.js`) produces, through
/// `lib/generated/boundary.js`; `{name}` marks a parameter.
pub mod texts {
    /// `TokenBudgetExceededError.code`.
    pub const TOKEN_BUDGET_EXCEEDED_CODE: &str = "TOKEN_BUDGET_EXCEEDED";
    /// `TokenBudgetExceededError`'s message.
    pub const TOKEN_BUDGET_EXCEEDED: &str =
        "Agent \"{agent}\" exceeded token budget: {tokensUsed} tokens used (budget: {budget})";
    /// An adapter's response whose `content` `JSON.stringify` cannot write; `reason` is one of
    /// the `UNSERIALISABLE_*` texts.
    pub const MALFORMED_CONTENT: &str =
        "LLM adapter returned a malformed response: \"content\" cannot be written as JSON ({reason})";
    pub const UNSERIALISABLE_TOO_DEEP: &str = "it is nested too deeply: Maximum call stack size exceeded";
    pub const UNSERIALISABLE_CIRCULAR: &str = "it holds a circular reference";
    pub const UNSERIALISABLE_BIGINT: &str = "it holds a BigInt";
    pub const UNSERIALISABLE_THREW: &str = "serialising it threw: {message}";
    /// A run aborted while a user callback (`contextStrategy.compress`, …) had not settled.
    pub const ABORTED_WHILE: &str = "The run was aborted while {what} had not settled";
    /// A tool's result that cannot be read (a throwing getter, a revoked proxy).
    pub const RESULT_UNREADABLE: &str = "Tool \"{name}\" returned a result that cannot be read: {message}";
}

#[cfg(test)]
// Each test starts from the default configuration and states the one field it is about.
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::*;
    use crate::kernel::grants::Opt;

    /// A machine over `initial` (a JSON message list) with `granted` tools; also the round trips'
    /// machine in `wire`.
    pub(super) fn machine(cfg: RunnerConfig, initial: &str, granted: &[&str]) -> Machine {
        Machine::new(
            Arc::new(cfg),
            Arc::new(Mutex::new(None)),
            parse_messages(initial, Strictness::Lenient).unwrap(),
            granted.iter().map(|s| s.to_string()).collect(),
            Observers::ALL,
        )
    }
    pub(super) const START: &str = r#"[{"role":"user","content":[{"type":"text","text":"go"}]}]"#;

    pub(super) fn text_resp(t: &str, i: u32, o: u32) -> String {
        format!(
            r#"{{"id":"r","content":[{{"type":"text","text":"{t}"}}],"model":"m","stop_reason":"end_turn","usage":{{"input_tokens":{i},"output_tokens":{o}}}}}"#
        )
    }
    pub(super) fn tool_resp(calls: &[(&str, &str)], text: &str) -> String {
        let mut blocks: Vec<String> = Vec::new();
        if !text.is_empty() {
            blocks.push(format!(r#"{{"type":"text","text":"{text}"}}"#));
        }
        for (id, name) in calls {
            blocks.push(format!(r#"{{"type":"tool_use","id":"{id}","name":"{name}","input":{{"q":1}}}}"#));
        }
        format!(
            r#"{{"id":"r","content":[{}],"model":"m","stop_reason":"tool_use","usage":{{"input_tokens":10,"output_tokens":5}}}}"#,
            blocks.join(",")
        )
    }

    /// The kind of the next action.
    fn next(m: &mut Machine, aborted: bool) -> ActionKind {
        m.poll(aborted).unwrap().kind()
    }

    /// A model call answered with `reply`: the action after it.
    fn answered(m: &mut Machine, reply: &str) -> ActionKind {
        let Action::CallModel(turn) = m.poll(false).unwrap() else { panic!("not a model call") };
        turn.answer(ModelAnswer::Json(reply)).unwrap();
        next(m, false)
    }

    /// A loop detection over every turn (no window) whose action is `action`.
    pub(super) fn detecting(max_repetitions: Option<f64>, action: &str, matching: Match) -> Option<LoopConfig> {
        Some(LoopConfig { max_repetitions, window: None, action: LoopAction::Fixed(action.into()), matching })
    }

    /// The model's answer `json`, through the handle of the model call the machine waits for.
    fn respond_json(m: &mut Machine, json: &str) -> Result<(), DriverError> {
        let Pending::Model(turn) = m.pending() else { panic!("not waiting for the model") };
        turn.answer(ModelAnswer::Json(json))
    }

    /// The outcome of call `index` of the round the machine waits for.
    fn tool_result(m: &mut Machine, index: usize, content: &str, is_error: Option<bool>, usage: Option<Usage>) {
        let Pending::ToolResults(mut round) = m.pending() else { panic!("not waiting for a round") };
        round.answer(index, ToolOutcome { content: content.into(), is_error, usage }).unwrap();
    }

    /// The JSON of the plan of the next action, which must be `ApplyPlan`.
    fn plan_of(m: &mut Machine) -> String {
        match m.poll(false).unwrap() {
            Action::ApplyPlan(plan) => context::plan_json(&plan),
            other => panic!("{other:?}"),
        }
    }

    /// A scripted driver: canned model responses; granted tools answer "ok", others the gate's
    /// text; a loop policy callback answers "terminate". Returns the kinds of the actions.
    fn drive(m: &mut Machine, responses: &[String]) -> Vec<ActionKind> {
        let mut kinds = Vec::new();
        let mut r = responses.iter();
        loop {
            let action = m.poll(false).unwrap();
            kinds.push(action.kind());
            match action {
                Action::Done(_) => return kinds,
                Action::CallModel(turn) => {
                    turn.answer(ModelAnswer::Json(r.next().expect("ran out of responses"))).unwrap()
                }
                Action::ToolRound(mut round) => {
                    let outcomes: Vec<ToolOutcome> = round
                        .calls()
                        .iter()
                        .map(|c| ToolOutcome {
                            content: if c.granted { "ok".into() } else { not_granted(c.name) },
                            is_error: if c.granted { None } else { Some(true) },
                            usage: None,
                        })
                        .collect();
                    for (index, outcome) in outcomes.into_iter().enumerate() {
                        round.answer(index, outcome).unwrap();
                    }
                }
                Action::LoopDetected(notice) => {
                    if let Some(policy) = notice.policy() {
                        policy.answer("terminate");
                    }
                }
                _ => {}
            }
        }
    }

    #[test]
    fn single_turn_end() {
        let mut m = machine(RunnerConfig::default(), START, &[]);
        let ops = drive(&mut m, &[text_resp("hello", 3, 4)]);
        assert_eq!(ops, vec![ActionKind::CallModel, ActionKind::Text, ActionKind::Done]);
        assert_eq!(m.outcome().output, "hello");
        assert_eq!(m.outcome().usage.total(), 7.0);
        assert_eq!(m.outcome().turns, 1);
    }

    #[test]
    fn tool_round_then_answer_and_gate() {
        let mut m = machine(RunnerConfig::default(), START, &["a"]);
        let ops = drive(&mut m, &[tool_resp(&[("1", "a"), ("2", "b")], ""), text_resp("fin", 1, 1)]);
        assert_eq!(
            ops,
            vec![
                ActionKind::CallModel,
                ActionKind::ToolRound,
                ActionKind::CallModel,
                ActionKind::Text,
                ActionKind::Done
            ]
        );
        let c = m.conversation();
        assert_eq!(c.len(), 4);
        assert_eq!(
            c[2].to_json(),
            format!(
                r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"1","content":"ok"}},{{"type":"tool_result","tool_use_id":"2","content":"{}","is_error":true}}]}}"#,
                not_granted("b").replace('"', "\\\"")
            )
        );
    }

    #[test]
    fn max_turns_exit_uses_last_assistant_text() {
        let mut cfg = RunnerConfig::default();
        cfg.max_turns = 2.0;
        let mut m = machine(cfg, START, &["a"]);
        let ops = drive(&mut m, &[tool_resp(&[("1", "a")], "step1"), tool_resp(&[("2", "a")], "step2")]);
        assert_eq!(ops.last(), Some(&ActionKind::Done));
        assert_eq!(m.outcome().turns, 2);
        assert_eq!(m.outcome().output, "step2");
    }

    #[test]
    fn zero_max_turns_returns_input_history_text() {
        let mut cfg = RunnerConfig::default();
        cfg.max_turns = 0.0;
        let mut m = machine(
            cfg,
            r#"[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"text","text":"old"}]}]"#,
            &[],
        );
        assert_eq!(drive(&mut m, &[]), vec![ActionKind::Done]);
        assert_eq!(m.outcome().output, "old");
    }

    #[test]
    fn abort_between_turns_is_a_normal_exit() {
        let mut m = machine(RunnerConfig::default(), START, &["a"]);
        assert_eq!(answered(&mut m, &tool_resp(&[("1", "a")], "")), ActionKind::ToolRound);
        tool_result(&mut m, 0, "ok", None, None);
        assert_eq!(next(&mut m, true), ActionKind::Done);
        assert!(m.outcome().aborted);
    }

    #[test]
    fn budget_defers_break_until_tool_round_done() {
        let cfg = RunnerConfig { max_token_budget: Some(10.0), ..RunnerConfig::default() };
        let mut m = machine(cfg, START, &["a"]);
        let ops = drive(&mut m, &[tool_resp(&[("1", "a")], "thinking")]);
        assert_eq!(
            ops,
            vec![
                ActionKind::CallModel,
                ActionKind::Text,
                ActionKind::BudgetExceeded,
                ActionKind::ToolRound,
                ActionKind::Done
            ]
        );
        assert!(m.outcome().budget_exceeded);
        assert_eq!(m.outcome().output, "thinking");
        assert_eq!(m.conversation().len(), 3);
    }

    #[test]
    fn tokens_spent_before_the_run_count_toward_the_budget_but_not_its_usage() {
        let cfg = RunnerConfig { max_token_budget: Some(100.0), ..RunnerConfig::default() };
        let cfg = Arc::new(cfg);
        let new = |spent: f64| {
            let mut m = Machine::new(
                cfg.clone(),
                Arc::new(Mutex::new(None)),
                parse_messages(START, Strictness::Lenient).unwrap(),
                Vec::new(),
                Observers::ALL,
            );
            m.spend_before(spent);
            m
        };
        // 60 spent before, 50 in this run: over 100 at the first answer.
        let mut m = new(60.0);
        assert_eq!(answered(&mut m, &text_resp("x", 30, 20)), ActionKind::Text);
        match m.poll(false).unwrap() {
            Action::BudgetExceeded { total_tokens } => assert_eq!(total_tokens, 110.0),
            other => panic!("{other:?}"),
        }
        assert_eq!(next(&mut m, false), ActionKind::Done);
        assert!(m.outcome().budget_exceeded);
        assert_eq!(m.outcome().usage.total(), 50.0);
        // Nothing spent before: within the budget.
        let mut m = new(0.0);
        let ops = drive(&mut m, &[text_resp("x", 30, 20)]);
        assert_eq!(ops, vec![ActionKind::CallModel, ActionKind::Text, ActionKind::Done]);
        assert!(!m.outcome().budget_exceeded);
        // 90 spent: a tool turn's 15 tokens spend the rest (its round still runs first).
        let mut m = new(90.0);
        m.granted.insert("d".into());
        assert_eq!(answered(&mut m, &tool_resp(&[("1", "d")], "")), ActionKind::BudgetExceeded);
        assert!(m.outcome().budget_exceeded);
    }

    #[test]
    fn post_delegation_budget_check() {
        let cfg = RunnerConfig { max_token_budget: Some(100.0), ..RunnerConfig::default() };
        let mut m = machine(cfg, START, &["delegate"]);
        assert_eq!(answered(&mut m, &tool_resp(&[("1", "delegate")], "")), ActionKind::ToolRound);
        tool_result(&mut m, 0, "sub answer", Some(false), Some(Usage { input_tokens: 80.0, output_tokens: 20.0 }));
        assert_eq!(next(&mut m, false), ActionKind::BudgetExceeded);
        assert_eq!(next(&mut m, false), ActionKind::Done);
        assert_eq!(m.outcome().usage.total(), 115.0);
        assert!(m.outcome().budget_exceeded);
    }

    #[test]
    fn loop_warn_injects_then_terminates_with_paired_history() {
        let mut cfg = RunnerConfig::default();
        cfg.loop_detection = detecting(None, "warn", Match::Exact);
        let mut m = machine(cfg, START, &["a"]);
        let same = tool_resp(&[("1", "a")], "");
        let ops = drive(&mut m, &[same.clone(), same.clone(), same.clone(), same.clone()]);
        assert_eq!(
            ops,
            vec![
                ActionKind::CallModel,
                ActionKind::ToolRound,
                ActionKind::CallModel,
                ActionKind::ToolRound,
                ActionKind::CallModel,
                ActionKind::LoopDetected,
                ActionKind::ToolRound,
                ActionKind::CallModel,
                ActionKind::LoopDetected,
                ActionKind::LoopStopResults,
                ActionKind::Done
            ]
        );
        assert!(m.outcome().loop_detected);
        let c = m.conversation();
        // Third tool round carries the trailing warning text.
        assert!(c[6].to_json().ends_with(&format!(r#"{{"type":"text","text":"{W_TOOL}"}}]}}"#)));
        // The terminating turn's tool_use is answered.
        let last = c.last().unwrap().to_json();
        assert!(last.contains(LOOP_STOPPED_RESULT) && last.contains(r#""is_error":true"#));
    }

    #[test]
    fn canonical_loop_match_catches_reformatted_repeats_and_exact_does_not() {
        let call = |input: &str| {
            format!(
                r#"{{"id":"r","content":[{{"type":"tool_use","id":"1","name":"bash","input":{input}}}],"model":"m","stop_reason":"tool_use","usage":{{"input_tokens":1,"output_tokens":1}}}}"#
            )
        };
        let responses = [
            call(r#"{"command":"ls  -la ","cwd":"./src/"}"#),
            call(r#"{"cwd":"src","command":"LS -la"}"#),
            call(r#"{"command":"ls -la","cwd":"src/"}"#),
            text_resp("fin", 1, 1),
        ];
        let run = |matching| {
            let mut cfg = RunnerConfig::default();
            cfg.loop_detection = detecting(None, "terminate", matching);
            let mut m = machine(cfg, START, &["bash"]);
            let ops = drive(&mut m, &responses);
            (ops.iter().filter(|o| **o == ActionKind::LoopDetected).count(), m.outcome().loop_detected)
        };
        assert_eq!(run(Match::Canonical), (1, true));
        assert_eq!(run(Match::Exact), (0, false));
        // Seeded from the history too: two earlier variants make the first new one the third.
        let mut cfg = RunnerConfig::default();
        cfg.loop_detection = detecting(None, "terminate", Match::Canonical);
        let initial = r#"[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"tool_use","id":"a","name":"bash","input":{"command":"ls -la","cwd":"src"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":"ok"}]},{"role":"assistant","content":[{"type":"tool_use","id":"b","name":"bash","input":{"command":" ls -LA","cwd":"./src"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"b","content":"ok"}]}]"#;
        let mut m = machine(cfg, initial, &["bash"]);
        let ops = drive(&mut m, &responses[2..]);
        assert_eq!(ops[..2], [ActionKind::CallModel, ActionKind::LoopDetected]);
        assert!(m.outcome().loop_detected);
    }

    #[test]
    fn text_loop_inject_adds_user_message() {
        let mut cfg = RunnerConfig::default();
        cfg.max_turns = 10.0;
        cfg.loop_detection = detecting(Some(2.0), "warn", Match::Exact);
        let initial = r#"[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"text","text":"same"}]},{"role":"user","content":[{"type":"text","text":"again"}]}]"#;
        let mut m = machine(cfg, initial, &[]);
        // Seeded with "same" from history: the first answer is already a repetition.
        let ops = drive(&mut m, &[text_resp("same", 1, 1), text_resp("different", 1, 1)]);
        assert_eq!(
            ops,
            vec![
                ActionKind::CallModel,
                ActionKind::Text,
                ActionKind::LoopDetected,
                ActionKind::InjectWarning,
                ActionKind::CallModel,
                ActionKind::Text,
                ActionKind::Done
            ]
        );
        assert_eq!(m.outcome().output, "different");
    }

    #[test]
    fn callback_policy_and_continue() {
        let mut cfg = RunnerConfig::default();
        cfg.max_turns = 4.0;
        cfg.loop_detection = detecting(Some(2.0), "continue", Match::Exact);
        let mut m = machine(cfg, START, &["a"]);
        let same = tool_resp(&[("1", "a")], "");
        let ops = drive(&mut m, &[same.clone(), same.clone(), same.clone(), same.clone()]);
        assert_eq!(ops.iter().filter(|o| **o == ActionKind::LoopDetected).count(), 3);
        assert!(!m.outcome().loop_detected);
        assert_eq!(m.outcome().turns, 4);
    }

    #[test]
    fn unobserved_actions_are_not_produced() {
        let cfg = RunnerConfig { max_token_budget: Some(10.0), ..RunnerConfig::default() };
        let quiet = Observers { on_warning: false, events: false };
        let mut m = Machine::new(
            Arc::new(cfg),
            Arc::new(Mutex::new(None)),
            parse_messages(START, Strictness::Lenient).unwrap(),
            vec!["a".into()],
            quiet,
        );
        // Text, the budget event and the first-turn warning are skipped; the outcome is the same.
        assert_eq!(drive(&mut m, &[text_resp("spent", 8, 8)]), vec![ActionKind::CallModel, ActionKind::Done]);
        let o = m.outcome();
        assert!(o.budget_exceeded);
        assert_eq!(o.output, "spent");

        // The post-delegation budget check ends the run the same way.
        let cfg = RunnerConfig { max_token_budget: Some(100.0), ..RunnerConfig::default() };
        let mut m = Machine::new(
            Arc::new(cfg),
            Arc::new(Mutex::new(None)),
            parse_messages(START, Strictness::Lenient).unwrap(),
            vec!["delegate".into()],
            quiet,
        );
        assert_eq!(answered(&mut m, &tool_resp(&[("1", "delegate")], "")), ActionKind::ToolRound);
        tool_result(&mut m, 0, "sub", None, Some(Usage { input_tokens: 80.0, output_tokens: 20.0 }));
        assert_eq!(next(&mut m, false), ActionKind::Done);
        assert!(m.outcome().budget_exceeded);
    }

    #[test]
    fn first_turn_warning_when_tools_offered() {
        let mut m = machine(RunnerConfig::default(), START, &["a"]);
        assert_eq!(answered(&mut m, &text_resp("no tools", 1, 1)), ActionKind::Text);
        match m.poll(false).unwrap() {
            Action::FirstTurnWarning(text) => assert_eq!(text, first_turn_warning("unknown", 1)),
            other => panic!("{other:?}"),
        }
        assert_eq!(next(&mut m, false), ActionKind::Done);
    }

    #[test]
    fn malformed_responses_are_rejected_without_touching_history() {
        let mut m = machine(RunnerConfig::default(), START, &[]);
        assert_eq!(next(&mut m, false), ActionKind::CallModel);
        for bad in ["null", "{}", r#"{"content":"x"}"#, r#"{"content":[{"type":"tool_use","id":"1"}]}"#, "[]"] {
            let e = respond_json(&mut m, bad).unwrap_err().to_string();
            assert!(e.starts_with("LLM adapter returned a malformed response: "), "{e}");
        }
        assert_eq!(m.conversation().len(), 1);
    }

    #[test]
    fn tool_calls_are_the_gated_copy_and_outlive_the_loop_stop() {
        let mut m = machine(RunnerConfig::default(), START, &["a"]);
        assert_eq!(
            answered(
                &mut m,
                r#"{"content":[{"type":"text","text":"x"},{"type":"tool_use","id":"1","name":"a","input":{"z":1,"a":[2]}},{"type":"tool_use","id":"2\"","name":"b\u00e9","input":{},"signature":"s"}]}"#
            ),
            ActionKind::Text
        );
        let Action::ToolRound(round) = m.poll(false).unwrap() else { panic!() };
        assert_eq!(round.trailing_warning(), None);
        let calls: Vec<_> =
            round.calls().iter().map(|c| (c.id, c.name, c.input.get(), c.signature, c.granted)).collect();
        assert_eq!(calls, vec![("1", "a", r#"{"z":1,"a":[2]}"#, None, true), ("2\"", "bé", "{}", Some("s"), false)]);

        let mut cfg = RunnerConfig::default();
        cfg.loop_detection = detecting(Some(1.0), "terminate", Match::Exact);
        let mut m = machine(cfg, START, &["a"]);
        assert_eq!(answered(&mut m, &tool_resp(&[("7", "a")], "")), ActionKind::LoopDetected);
        let Action::LoopStopResults { calls, result } = m.poll(false).unwrap() else { panic!() };
        assert_eq!(result, LOOP_STOPPED_RESULT);
        assert_eq!(calls.iter().map(|c| (c.id, c.input.get())).collect::<Vec<_>>(), vec![("7", r#"{"q":1}"#)]);
    }

    #[test]
    fn non_finite_usage_never_reaches_the_totals() {
        let cfg = RunnerConfig { max_token_budget: Some(100.0), ..RunnerConfig::default() };
        let mut m = machine(cfg, START, &["a"]);
        let Action::CallModel(turn) = m.poll(false).unwrap() else { panic!() };
        turn.answer(ModelAnswer::Parts {
            content_json: Some(r#"[{"type":"tool_use","id":"1","name":"a","input":{}}]"#),
            usage: Usage { input_tokens: f64::NAN, output_tokens: f64::INFINITY },
        })
        .unwrap();
        assert_eq!(next(&mut m, false), ActionKind::ToolRound);
        tool_result(&mut m, 0, "ok", None, Some(Usage { input_tokens: f64::NEG_INFINITY, output_tokens: 4.0 }));
        assert_eq!(answered(&mut m, &text_resp("fin", 1, 2)), ActionKind::Text);
        assert_eq!(next(&mut m, false), ActionKind::Done);
        assert_eq!(m.outcome().usage, Usage { input_tokens: 1.0, output_tokens: 6.0 });
        assert!(!m.outcome().budget_exceeded);
    }

    #[test]
    fn sliding_window_and_custom_strategies_stage_plans() {
        let mut cfg = RunnerConfig::default();
        cfg.strategy = Some(Strategy::SlidingWindow { max_turns: 1.0 });
        let hist = r#"[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"text","text":"1"}]},{"role":"user","content":[{"type":"text","text":"2"}]},{"role":"assistant","content":[{"type":"text","text":"3"}]},{"role":"user","content":[{"type":"text","text":"4"}]}]"#;
        let mut m = machine(cfg, hist, &[]);
        assert!(plan_of(&mut m).starts_with("[0,"));
        assert_eq!(next(&mut m, false), ActionKind::CallModel);

        let mut cfg = RunnerConfig::default();
        cfg.strategy = Some(Strategy::Custom);
        let mut m = machine(cfg, START, &[]);
        let Action::CustomCompress(call) = m.poll(false).unwrap() else { panic!() };
        let bad = DriverError::Rejected("contextStrategy.custom.compress must return a non-empty LLMMessage[]".into());
        assert_eq!(call.answer(Some("[]")).unwrap_err(), bad);
        // A refused result leaves the machine waiting, with the handle to answer again.
        let compress = |m: &mut Machine, json| {
            let Pending::Conversation(call) = m.pending() else { panic!("not waiting for compress") };
            call.answer(json)
        };
        assert_eq!(compress(&mut m, None).unwrap_err(), bad);
        // Still waiting: polling is a driver error until the answer is accepted.
        assert_eq!(m.poll(false).unwrap_err(), DriverError::Unanswered(Awaiting::Conversation));
        compress(&mut m, Some(START)).unwrap();
        assert_eq!(next(&mut m, false), ActionKind::CallModel);
    }

    #[test]
    fn compress_tool_results_from_turn_two() {
        let mut cfg = RunnerConfig::default();
        cfg.compress_tool_results = Some(1.0);
        cfg.grants.tool_preset = Opt::Undefined;
        let mut m = machine(cfg, START, &["a"]);
        assert_eq!(answered(&mut m, &tool_resp(&[("1", "a")], "")), ActionKind::ToolRound);
        tool_result(&mut m, 0, "result text", None, None);
        assert_eq!(answered(&mut m, &tool_resp(&[("2", "a")], "")), ActionKind::ToolRound);
        tool_result(&mut m, 0, "second", None, None);
        // Turn 3: the first result has been consumed → compressed.
        assert!(plan_of(&mut m).contains("[Tool output compressed — 11 chars, already processed]"));
    }

    #[test]
    fn records_and_added_messages_keep_what_a_compression_rewrote() {
        let mut cfg = RunnerConfig::default();
        cfg.compress_tool_results = Some(1.0);
        let mut m = machine(cfg, START, &["a"]);
        assert_eq!(answered(&mut m, &tool_resp(&[("1", "a"), ("2", "a")], "")), ActionKind::ToolRound);
        let Pending::ToolResults(mut round) = m.pending() else { panic!() };
        let outcome = |text: &str| ToolOutcome { content: text.into(), is_error: None, usage: None };
        round.answer_timed(1, outcome("second output"), 4.0).unwrap();
        round.answer(0, outcome("first output")).unwrap();
        assert_eq!(answered(&mut m, &tool_resp(&[("3", "a")], "")), ActionKind::ToolRound);
        tool_result(&mut m, 0, "third output", None, None);
        // Turn 3 compresses the first round's results in the conversation ...
        assert!(plan_of(&mut m).contains("[Tool output compressed"));
        assert!(!m.conversation()[2].to_json().contains("first output"));
        assert_eq!(answered(&mut m, &text_resp("fin", 1, 1)), ActionKind::Text);
        assert_eq!(next(&mut m, false), ActionKind::Done);
        // ... not in what the run reports it added and ran.
        let calls: Vec<_> = m.tool_calls_made().iter().map(|c| (c.name, c.input.get(), c.output, c.duration)).collect();
        assert_eq!(
            calls,
            [
                ("a", r#"{"q":1}"#, "first output", 0.0),
                ("a", r#"{"q":1}"#, "second output", 4.0),
                ("a", r#"{"q":1}"#, "third output", 0.0)
            ]
        );
        let added: Vec<String> = m.added_messages().map(Message::to_json).collect();
        assert_eq!(added.len(), 5);
        assert!(added[1].contains("first output") && added[1].contains("second output"));
        assert!(added[4].contains("fin"));
    }

    #[test]
    fn pending_hands_out_the_awaited_handle_and_refuses_by_kind_with_the_driver_texts() {
        let mut m = machine(RunnerConfig::default(), START, &["a"]);
        assert_eq!(m.awaiting(), Awaiting::Nothing);
        assert!(matches!(m.pending(), Pending::Nothing));
        assert_eq!(next(&mut m, false), ActionKind::CallModel);
        assert_eq!(m.awaiting(), Awaiting::Model);
        let refused = m.pending().refuse(Awaiting::LoopAction);
        assert_eq!(refused.to_string(), "driver error: unexpected loop action while waiting for the model response");
        respond_json(&mut m, &tool_resp(&[("1", "a"), ("2", "a")], "")).unwrap();
        assert_eq!(next(&mut m, false), ActionKind::ToolRound);
        let Pending::ToolResults(mut round) = m.pending() else { panic!() };
        assert_eq!(round.calls().len(), 2);
        // An index the round does not have.
        let outcome = || ToolOutcome { content: "ok".into(), is_error: None, usage: None };
        let e = round.answer(2, outcome()).unwrap_err();
        assert_eq!(e.to_string(), "driver error: unexpected tool result while waiting for the tool results");
        round.answer(1, outcome()).unwrap();
        assert_eq!(m.poll(false).unwrap_err().to_string(), "driver error: the tool results not reported");
        let Pending::ToolResults(mut round) = m.pending() else { panic!() };
        round.answer(0, outcome()).unwrap();
        assert_eq!(
            m.pending().refuse(Awaiting::Summary).to_string(),
            "driver error: unexpected summary response while waiting for the tool results"
        );
        assert_eq!(next(&mut m, false), ActionKind::CallModel);
    }
}
