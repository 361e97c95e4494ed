//! The Agent (CONTRACT §4.4–§4.8 and §21) as a sans-IO state machine: the lifecycle, the run
//! sequence (beforeRun → runner → budget short-cut → structured output with its retry →
//! afterRun → the agent trace), the shape of every result, and prompt()'s history rule.
//!
//! The driver (`lib/agent.js`) holds everything that is the user's JS: the hooks, the runner,
//! the Zod schema, the messages and results (built in the caller's realm). It starts a run with
//! [`AgentRun::start`], performs the [`Action`] of each [`Step`] and reports what happened with
//! [`AgentRun::answer`], until [`Action::Finish`]. Nothing else decides. This is the protocol of
//! every machine of the kernel (`crate::protocol`).
//!
//! Every event kind has one answer per phase; any other event is an [`AgentError`] (a driver
//! bug), and leaves the machine as it was.
//!
//! The machine is a small `Copy` value, and `answer` a pure function of it and the event: the
//! binding hands it to JS packed with each step in one number ([`wire::pack`]), so a run keeps
//! no native state and needs no release, and the driver may remember answers that carry no text
//! (a run without hooks or schema then costs no crossing at steady state).
//!
//! A plain run is `start` → `RunRunner` → `RunnerDone` → `Finish`; with everything configured:
//! `BeforeRun` → `RunRunner` → `Validate` → (`RunRunner` retry → `Validate`) → `AfterRun` →
//! `Trace` → `Finish`; a throw anywhere → `Trace` of the failed result (with `onTrace`) →
//! `Finish`.
//!
//! `Setup::retries` is the number of structured-output retries: one, as the original, unless
//! `AgentConfig.outputSchemaRetries` (beyond the original, issue 19; [`output_schema_retries`])
//! sets it. A setting also makes the retries checked (`Setup::checked_retries`): every attempt's
//! usage counts toward `maxTokenBudget` (each retry's runner starts with the earlier attempts'
//! tokens spent), and no retry starts after an attempt that exceeded the budget, was aborted or
//! timed out. Unset, the original's single retry runs as it always did.
//!
//! Richer inputs (upstream 1.15) did not change the sequence: a run over a caller's message list
//! (or `prompt()` with content blocks) is checked and copied by the driver before `start`, so a
//! bad input rejects the call and never reaches the machine; a beforeRun that returns messages
//! replaces the run's messages before the driver reports [`Event::HookReturned`], whose
//! `has_user` then reads the new list.

use std::fmt;

use super::structured_output::{extract_json, feedback_text};
use crate::protocol::Unexpected;

pub mod state;

/// How the run was entered (§4.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// `run(prompt)`: a fresh conversation; the history is neither read nor written.
    Run = 0,
    /// `prompt(message)`: the driver has appended the user message to the history; the run's
    /// [`History`] verdict says what becomes of it.
    Prompt = 1,
    /// `stream(prompt)`: no structured output, no agent trace (§4.7).
    Stream = 2,
}

/// What the Agent and the call were configured with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Setup {
    pub entry: Entry,
    pub before_run: bool,
    pub after_run: bool,
    /// `config.outputSchema` is set (ignored by `stream`).
    pub output_schema: bool,
    /// The caller passed `onTrace` (ignored by `stream`).
    pub trace: bool,
    /// How many times a structured output that fails is retried.
    pub retries: u8,
    /// `outputSchemaRetries` was set: the retries are checked (see the module docs).
    pub checked_retries: bool,
}

/// Structured-output retries when nothing says otherwise: one, as the original.
pub const DEFAULT_RETRIES: u8 = 1;

/// The most `outputSchemaRetries` may ask for: each retry is a whole runner run, so the bound
/// keeps a schema the model never meets from multiplying a run's cost without end.
pub const MAX_RETRIES: u8 = 5;

/// `AgentConfig.outputSchemaRetries` (given: `undefined` is the original's single retry): an
/// integer from 0 (no retry) to [`MAX_RETRIES`], else the configuration error's text.
pub fn output_schema_retries(v: &serde_json::Value) -> Result<u8, String> {
    match v.as_f64() {
        Some(n) if n.fract() == 0.0 && (0.0..=f64::from(MAX_RETRIES)).contains(&n) => Ok(n as u8),
        _ => Err(invalid_retries_text(&super::config::describe(v))),
    }
}

/// The configuration error of an `outputSchemaRetries` described by `got`.
pub fn invalid_retries_text(got: &str) -> String {
    format!("Invalid configuration: outputSchemaRetries must be an integer from 0 to {MAX_RETRIES}, got {got}")
}

impl Setup {
    pub fn new(entry: Entry) -> Setup {
        Setup {
            entry,
            before_run: false,
            after_run: false,
            output_schema: false,
            trace: false,
            retries: DEFAULT_RETRIES,
            checked_retries: false,
        }
    }
    fn structured(&self) -> bool {
        self.output_schema && self.entry != Entry::Stream
    }
    fn traced(&self) -> bool {
        self.trace && self.entry != Entry::Stream
    }
}

/// The Agent's lifecycle status (§4.8). `Idle` is only reached by `reset()`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Idle = 0,
    /// A run started: every other field is kept, except a stale `error`, which goes (§21).
    Running = 1,
    Completed = 2,
    /// With the error that ended the run.
    Error = 3,
}

impl Status {
    pub const ALL: [Status; 4] = [Status::Idle, Status::Running, Status::Completed, Status::Error];
    pub const fn as_str(self) -> &'static str {
        match self {
            Status::Idle => "idle",
            Status::Running => "running",
            Status::Completed => "completed",
            Status::Error => "error",
        }
    }
}

/// The flags of a runner result (`RunResult`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunFlags {
    pub budget_exceeded: bool,
    pub loop_detected: bool,
    pub aborted: bool,
}

/// The shape of the result the driver builds from the runner results it holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    /// `{ success, output, messages, tokenUsage, toolCalls, structured }` (the `structured` key
    /// always present: the last validated value when `structured`, else `undefined`), then
    /// `loopDetected`, `budgetExceeded`, `aborted`, `timedOut` (each only when true).
    /// Not `merged`: every field is the one runner result's own. `merged` (after retries):
    /// `output` the last attempt's; `messages` every attempt's messages in order, each attempt
    /// but the last followed by the feedback message its failure produced; `tokenUsage` the sum;
    /// `toolCalls` all attempts' in order.
    Result { success: bool, structured: bool, merged: bool, flags: RunFlags, timed_out: bool },
    /// A run that threw: `{ success: false, output: <the error's message>, messages: [],
    /// tokenUsage: { input_tokens: 0, output_tokens: 0 }, toolCalls: [], structured: undefined }`
    /// plus `aborted: true, timedOut: true` when the timeout had fired (§4.6, §21). `stream`
    /// yields `{ type: 'error', data: error }` instead.
    Failed { timed_out: bool },
}

/// What `prompt()` does with its history once the run is over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum History {
    /// Not a `prompt()` run.
    Untouched = 0,
    /// Append every message of the returned result's `messages` (after afterRun).
    Commit = 1,
    /// A failed run: the history goes back to what it was before the call (§21).
    Rollback = 2,
}

/// The messages a runner run is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Conversation {
    /// The run's messages (those beforeRun returned, when it returned some). With
    /// `rewrite_last_user`, the last user message is replaced by a new one, `{ role: 'user',
    /// content }`, whose text blocks collapse into one with the hook's returned prompt. Where that
    /// block goes depends on whose messages they are. A string input whose hook kept the messages
    /// (1.7, §4.4): first, then the old non-text blocks in order. A caller's list or blocks, or
    /// messages the hook returned (upstream 1.15): where the first text block stood, the other
    /// text blocks removed, the non-text blocks in their places; first when there was no text
    /// block. The two agree on every message a string input makes. These are "the outgoing
    /// messages" of the run from then on.
    Outgoing { rewrite_last_user: bool },
    /// A structured-output retry: the outgoing messages, then each attempt's messages followed
    /// by its feedback message, `{ role: 'user', content: [{ type: 'text', text: feedback }] }`
    /// (this attempt's feedback is `feedback`). `count_spent`: the runner starts with the tokens
    /// of every earlier attempt already spent against `maxTokenBudget` (checked retries).
    Retry { feedback: String, count_spent: bool },
}

/// What the driver does next.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Await `config.beforeRun({ prompt, messages, agent })`: `prompt` the concatenated text of
    /// the text blocks of the last user message (`''` without one), `messages` a deep copy of the
    /// run's messages (upstream 1.15), `agent` a copy of the config without the two hooks. Report
    /// [`Event::HookReturned`], or [`Event::Threw`] (the hook threw, or returned messages that
    /// fail the input check, or a prompt that is not a string for messages that are the
    /// caller's).
    BeforeRun,
    /// Await the runner on `conversation` with the run's options (the first time: obtain the
    /// runner and build the options, §4.1, §4.3); `stream` iterates `runner.stream` and passes
    /// its events on. Report [`Event::RunnerDone`] (with the output's text when
    /// `report_output`), [`Event::RunnerError`] (stream) or [`Event::Threw`].
    RunRunner { conversation: Conversation, report_output: bool },
    /// `JSON.parse(json)`, then the schema's `safeParse` (§7.3). Report [`Event::Valid`] (keep
    /// the parsed value: it is the result's `structured`), or [`Event::Invalid`] with the
    /// message of the error it threw.
    Validate { json: String },
    /// Build the result when `build` is given, then await `config.afterRun(result)`, whose
    /// value replaces it. Report [`Event::AfterRunReturned`] or [`Event::Threw`].
    AfterRun { build: Option<Shape> },
    /// Build the result when `build` is given, then emit the `agent` trace of the (current)
    /// result. Report [`Event::TraceEmitted`] or [`Event::Threw`].
    Trace { build: Option<Shape> },
    /// Build the result when `build` is given and hand it back (`stream`: yield `done`, or the
    /// error for a [`Shape::Failed`]); apply `history`. The run is over.
    Finish { build: Option<Shape>, history: History },
    /// `stream`: pass the runner's `error` event on, and keep iterating.
    PassError,
}

/// One answer of the machine: set the lifecycle status first (when given), add the runner
/// result just reported to the Agent's token usage (when `add_usage`), then perform `action`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Step {
    pub status: Option<Status>,
    pub add_usage: bool,
    pub action: Action,
}

/// What the driver reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event<'a> {
    /// beforeRun returned a context. `changed`: its `prompt` is not (`!==`) the prompt it was
    /// given; `has_user`: the messages (those it returned, if any) have a user message to rewrite.
    HookReturned {
        changed: bool,
        has_user: bool,
    },
    /// The runner finished (`stream`: its `done` event). `timed_out`: the run's timeout had fired
    /// by then; `output`: `String(result.output)` when the action asked for it.
    RunnerDone {
        flags: RunFlags,
        timed_out: bool,
        output: Option<&'a str>,
    },
    /// `stream`: the runner yielded an `error` event.
    RunnerError,
    Valid,
    Invalid {
        message: &'a str,
    },
    AfterRunReturned,
    TraceEmitted,
    /// The step threw (the hook, obtaining the runner, the runner, afterRun, the trace).
    /// `timed_out`: the run's timeout had fired by then.
    Threw {
        timed_out: bool,
    },
}

impl Event<'_> {
    fn kind(&self) -> EventKind {
        match self {
            Event::HookReturned { .. } => EventKind::HookReturned,
            Event::RunnerDone { .. } => EventKind::RunnerDone,
            Event::RunnerError => EventKind::RunnerError,
            Event::Valid => EventKind::Valid,
            Event::Invalid { .. } => EventKind::Invalid,
            Event::AfterRunReturned => EventKind::AfterRunReturned,
            Event::TraceEmitted => EventKind::TraceEmitted,
            Event::Threw { .. } => EventKind::Threw,
        }
    }
}

/// An event's kind (its code on the wire).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventKind {
    HookReturned = 1,
    RunnerDone = 2,
    RunnerError = 3,
    Valid = 4,
    Invalid = 5,
    AfterRunReturned = 6,
    TraceEmitted = 7,
    Threw = 8,
}

/// Where the run is: which report the machine waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    Hook = 0,
    Runner = 1,
    Verdict = 2,
    AfterRun = 3,
    Trace = 4,
    /// The failed run's trace: whatever it does, the failed result is returned.
    FailedTrace = 5,
    /// `Finish` was handed out, and a throw still fails the run: while the driver builds the
    /// result (a runner result it cannot read), or, in `stream`, while it passes on the runner's
    /// last events.
    Built = 6,
    Done = 7,
}

const PHASES: [Phase; 8] = [
    Phase::Hook,
    Phase::Runner,
    Phase::Verdict,
    Phase::AfterRun,
    Phase::Trace,
    Phase::FailedTrace,
    Phase::Built,
    Phase::Done,
];

/// A driver's mistake: the machine was told something it cannot have asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AgentError {
    /// An event (`got`) that is not an answer to what the machine asked for in its phase
    /// (`awaiting`).
    Unexpected(Unexpected<Phase, EventKind>),
    /// The runner result of a structured-output run came without the output's text.
    MissingOutput,
    /// A packed machine or event that no machine produced.
    Malformed(&'static str),
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            AgentError::Unexpected(Unexpected { awaiting, got }) => {
                write!(f, "oma-kernel: agent driver error: {got:?} reported while waiting in phase {awaiting:?}")
            }
            AgentError::MissingOutput => {
                write!(f, "oma-kernel: agent driver error: the runner result was reported without its output")
            }
            AgentError::Malformed(what) => write!(f, "oma-kernel: agent driver error: malformed {what}"),
        }
    }
}

impl std::error::Error for AgentError {}

/// One run of an Agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AgentRun {
    setup: Setup,
    phase: Phase,
    /// Runner runs started.
    attempts: u8,
    /// The flags of the last runner result, and whether the timeout had fired by then: what
    /// the result of a validated output carries.
    last: RunFlags,
    timed_out: bool,
}

impl AgentRun {
    /// Starts a run: the status becomes `Running` (a stale error goes, §21).
    pub fn start(setup: Setup) -> (AgentRun, Step) {
        let mut run = AgentRun { setup, phase: Phase::Hook, attempts: 0, last: RunFlags::default(), timed_out: false };
        let action = if setup.before_run { Action::BeforeRun } else { run.first_runner(false) };
        (run, Step { status: Some(Status::Running), add_usage: false, action })
    }

    /// What the machine waits for: the phase whose reports it takes.
    pub fn phase(&self) -> Phase {
        self.phase
    }

    pub fn setup(&self) -> Setup {
        self.setup
    }

    /// Takes the driver's report of the last step's action; the next step. An event that
    /// answers nothing the machine asked for is [`AgentError::Unexpected`], and leaves the
    /// machine as it was.
    pub fn answer(&mut self, event: Event) -> Result<Step, AgentError> {
        let step = |status, action| Step { status, add_usage: false, action };
        match (self.phase, event) {
            (Phase::Hook, Event::HookReturned { changed, has_user }) => {
                Ok(step(None, self.first_runner(changed && has_user)))
            }
            (Phase::Runner, Event::RunnerDone { flags, timed_out, output }) => {
                if self.setup.structured() && output.is_none() {
                    return Err(AgentError::MissingOutput);
                }
                self.last = flags;
                self.timed_out = timed_out;
                let mut s = self.on_runner_done(output.unwrap_or_default());
                s.add_usage = true;
                Ok(s)
            }
            (Phase::Runner, Event::RunnerError) if self.setup.entry == Entry::Stream => {
                Ok(step(Some(Status::Error), Action::PassError))
            }
            (Phase::Verdict, Event::Valid) => {
                let shape = if self.attempts == 1 {
                    // The budget was handled before validation: the loop and abort flags remain.
                    let flags = RunFlags { budget_exceeded: false, ..self.last };
                    Shape::Result { success: true, structured: true, merged: false, flags, timed_out: self.timed_out }
                } else {
                    self.merged(true, true)
                };
                Ok(self.decided(shape, Some(Status::Completed)))
            }
            (Phase::Verdict, Event::Invalid { message }) => Ok(self.invalid(message)),
            (Phase::AfterRun, Event::AfterRunReturned) => Ok(self.complete(None)),
            (Phase::Trace, Event::TraceEmitted) => {
                self.phase = Phase::Done;
                Ok(step(None, Action::Finish { build: None, history: self.commit() }))
            }
            // The failed result is returned whatever its trace does.
            (Phase::FailedTrace, Event::TraceEmitted | Event::Threw { .. }) => {
                self.phase = Phase::Done;
                Ok(step(None, Action::Finish { build: None, history: History::Rollback.only_for(self.setup.entry) }))
            }
            (
                Phase::Hook | Phase::Runner | Phase::AfterRun | Phase::Trace | Phase::Built,
                Event::Threw { timed_out },
            ) => Ok(self.failed(timed_out)),
            (phase, event) => Err(AgentError::Unexpected(Unexpected { awaiting: phase, got: event.kind() })),
        }
    }

    fn first_runner(&mut self, rewrite_last_user: bool) -> Action {
        self.phase = Phase::Runner;
        self.attempts = 1;
        Action::RunRunner {
            conversation: Conversation::Outgoing { rewrite_last_user },
            report_output: self.setup.structured(),
        }
    }

    fn on_runner_done(&mut self, output: &str) -> Step {
        let budget_exceeded = self.last.budget_exceeded;
        // The budget takes precedence over validation (§4.5), on the first run only.
        if !self.setup.structured() || (budget_exceeded && self.attempts == 1) {
            let shape = Shape::Result {
                success: !budget_exceeded,
                structured: false,
                merged: false,
                flags: self.last,
                timed_out: self.timed_out,
            };
            return self.decided(shape, None);
        }
        match extract_json(output) {
            Ok(json) => {
                self.phase = Phase::Verdict;
                Step { status: None, add_usage: false, action: Action::Validate { json: json.to_string() } }
            }
            Err(message) => self.invalid(&message),
        }
    }

    /// The output failed extraction or validation with `message`: retried while retries are
    /// left, else the run completes unsuccessfully with the merged result.
    fn invalid(&mut self, message: &str) -> Step {
        // Checked retries stop at an attempt that spent the budget, or that the run's abort or
        // timeout cut short: another one could only end the same way.
        let stopped = self.setup.checked_retries && (self.last.budget_exceeded || self.last.aborted || self.timed_out);
        if self.attempts <= self.setup.retries && !stopped {
            self.attempts += 1;
            self.phase = Phase::Runner;
            let conversation =
                Conversation::Retry { feedback: feedback_text(message), count_spent: self.setup.checked_retries };
            return Step {
                status: None,
                add_usage: false,
                action: Action::RunRunner { conversation, report_output: true },
            };
        }
        let shape = self.merged(false, false);
        self.decided(shape, Some(Status::Completed))
    }

    /// A result over every attempt: `loopDetected` is not carried (a kept quirk, §4.5); the
    /// budget and abort flags are the last attempt's.
    fn merged(&self, success: bool, structured: bool) -> Shape {
        let flags = RunFlags { loop_detected: false, ..self.last };
        Shape::Result { success, structured, merged: self.attempts > 1, flags, timed_out: self.timed_out }
    }

    /// The result is decided (and built in this step): afterRun, then completion. `status`: the
    /// structured path completes before afterRun; the plain and budget paths after it (§4.5).
    fn decided(&mut self, shape: Shape, status: Option<Status>) -> Step {
        if self.setup.after_run {
            self.phase = Phase::AfterRun;
            return Step { status, add_usage: false, action: Action::AfterRun { build: Some(shape) } };
        }
        self.complete(Some(shape))
    }

    fn complete(&mut self, build: Option<Shape>) -> Step {
        let action = if self.setup.traced() {
            self.phase = Phase::Trace;
            Action::Trace { build }
        } else {
            let open = build.is_some() || self.setup.entry == Entry::Stream;
            self.phase = if open { Phase::Built } else { Phase::Done };
            Action::Finish { build, history: self.commit() }
        };
        Step { status: Some(Status::Completed), add_usage: false, action }
    }

    fn commit(&self) -> History {
        History::Commit.only_for(self.setup.entry)
    }

    fn failed(&mut self, timed_out: bool) -> Step {
        let build = Some(Shape::Failed { timed_out });
        let action = if self.setup.traced() {
            self.phase = Phase::FailedTrace;
            Action::Trace { build }
        } else {
            self.phase = Phase::Done;
            Action::Finish { build, history: History::Rollback.only_for(self.setup.entry) }
        };
        Step { status: Some(Status::Error), add_usage: false, action }
    }
}

impl History {
    /// Its name in the decoded step (`lib/agent.js`).
    pub const fn as_str(self) -> &'static str {
        match self {
            History::Untouched => "untouched",
            History::Commit => "commit",
            History::Rollback => "rollback",
        }
    }

    /// Only `prompt()` has a history to commit or roll back.
    fn only_for(self, entry: Entry) -> History {
        if entry == Entry::Prompt {
            self
        } else {
            History::Untouched
        }
    }
}

/// What the machine waits for, with the handle that reports it: the typed form of
/// [`AgentRun::answer`] for a Rust driver, in the style of the runner's `Pending`. Each handle
/// takes only the events its phase takes, so a report of the wrong kind does not compile. (The
/// JS driver reports by event code through the binding, `wire::event_from`: its generated
/// `answer` types do the same for JS, and the binding refuses a wrong one with
/// [`AgentError::Unexpected`].)
///
/// A verdict given while beforeRun is awaited does not compile:
///
/// ```compile_fail,E0599
/// use oma_core::kernel::agent::{AgentRun, Entry, Pending, Setup};
/// let mut setup = Setup::new(Entry::Run);
/// setup.before_run = true;
/// let (mut run, _) = AgentRun::start(setup);
/// if let Pending::BeforeRun(hook) = run.pending() {
///     hook.valid();
/// }
/// ```
#[derive(Debug)]
pub enum Pending<'a> {
    /// [`Action::BeforeRun`].
    BeforeRun(HookCall<'a>),
    /// [`Action::RunRunner`].
    Runner(RunnerCall<'a>),
    /// [`Action::Validate`].
    Verdict(Validation<'a>),
    /// [`Action::AfterRun`].
    AfterRun(AfterRunCall<'a>),
    /// [`Action::Trace`] (of a result, or of the failed result).
    Trace(TraceCall<'a>),
    /// [`Action::Finish`] was handed out, and a throw still fails the run ([`Phase::Built`]).
    Built(Building<'a>),
    /// The run is over.
    Done,
}

/// Reports an event the handle's phase takes: the machine cannot refuse it.
fn taken(run: &mut AgentRun, event: Event) -> Step {
    run.answer(event).expect("the handle's phase takes this event")
}

/// The beforeRun hook's handle.
#[derive(Debug)]
pub struct HookCall<'a>(&'a mut AgentRun);

impl HookCall<'_> {
    /// The hook returned a context (see [`Event::HookReturned`]).
    pub fn returned(self, changed: bool, has_user: bool) -> Step {
        taken(self.0, Event::HookReturned { changed, has_user })
    }
    pub fn threw(self, timed_out: bool) -> Step {
        taken(self.0, Event::Threw { timed_out })
    }
}

/// The runner run's handle.
#[derive(Debug)]
pub struct RunnerCall<'a>(&'a mut AgentRun);

impl RunnerCall<'_> {
    /// The runner finished (see [`Event::RunnerDone`]); a structured run's result without its
    /// output is [`AgentError::MissingOutput`].
    pub fn done(self, flags: RunFlags, timed_out: bool, output: Option<&str>) -> Result<Step, AgentError> {
        self.0.answer(Event::RunnerDone { flags, timed_out, output })
    }
    /// `stream`: the runner yielded an `error` event (any other entry: [`AgentError::Unexpected`]).
    pub fn error(self) -> Result<Step, AgentError> {
        self.0.answer(Event::RunnerError)
    }
    pub fn threw(self, timed_out: bool) -> Step {
        taken(self.0, Event::Threw { timed_out })
    }
}

/// The structured output's validation handle.
#[derive(Debug)]
pub struct Validation<'a>(&'a mut AgentRun);

impl Validation<'_> {
    pub fn valid(self) -> Step {
        taken(self.0, Event::Valid)
    }
    /// The parse or the schema failed with `message`.
    pub fn invalid(self, message: &str) -> Step {
        taken(self.0, Event::Invalid { message })
    }
}

/// The afterRun hook's handle.
#[derive(Debug)]
pub struct AfterRunCall<'a>(&'a mut AgentRun);

impl AfterRunCall<'_> {
    pub fn returned(self) -> Step {
        taken(self.0, Event::AfterRunReturned)
    }
    pub fn threw(self, timed_out: bool) -> Step {
        taken(self.0, Event::Threw { timed_out })
    }
}

/// The agent trace's handle.
#[derive(Debug)]
pub struct TraceCall<'a>(&'a mut AgentRun);

impl TraceCall<'_> {
    pub fn emitted(self) -> Step {
        taken(self.0, Event::TraceEmitted)
    }
    pub fn threw(self, timed_out: bool) -> Step {
        taken(self.0, Event::Threw { timed_out })
    }
}

/// The handle while the finished run's result is built.
#[derive(Debug)]
pub struct Building<'a>(&'a mut AgentRun);

impl Building<'_> {
    pub fn threw(self, timed_out: bool) -> Step {
        taken(self.0, Event::Threw { timed_out })
    }
}

impl AgentRun {
    /// The handle that reports what the machine waits for (see [`Pending`]).
    pub fn pending(&mut self) -> Pending<'_> {
        match self.phase {
            Phase::Hook => Pending::BeforeRun(HookCall(self)),
            Phase::Runner => Pending::Runner(RunnerCall(self)),
            Phase::Verdict => Pending::Verdict(Validation(self)),
            Phase::AfterRun => Pending::AfterRun(AfterRunCall(self)),
            Phase::Trace | Phase::FailedTrace => Pending::Trace(TraceCall(self)),
            Phase::Built => Pending::Built(Building(self)),
            Phase::Done => Pending::Done,
        }
    }
}

/// The packed forms the binding exchanges with the driver, defined here only: the setup, the
/// event and the step are word layouts ([`wire::SETUP`], [`wire::EVENT`], [`wire::STEP`], the
/// first of the boundary's three encodings, `crate::boundary::word`), from which
/// `lib/generated/boundary.js` renders the step's decoder (a union on `op`) and an encoder per
/// event and setup kind; `lib/agent.js` spells no bit. The masks below are the same fields'.
///
/// | value | layout |
/// |---|---|
/// | setup (`u32`) | bits 0–1 the `Entry`, 2 beforeRun, 3 afterRun, 4 outputSchema, 5 onTrace, 6–8 retries, 9 checked retries |
/// | event (`u32`) | bits 0–3 the `EventKind`, 4 budgetExceeded, 5 loopDetected, 6 aborted, 7 timed out, 8 the hook changed the prompt, 9 there is a user message; the text (output, error message) is a separate argument |
/// | step word (a JS number below 2^42) | bits 0–19 the step, bits 20–41 the machine (the driver hands the whole word back with the next event) |
/// | step | bits 0–3 the action, 4–5 the status to set (0 none), 6 add the usage; `RunRunner`: 7 rewrite the last user message, 8 a retry, 9 report the output, 10 count the earlier attempts' tokens; `AfterRun`/`Trace`/`Finish`: 7 build a result, 8 the failed one, 9 success, 10 structured, 11 merged, 12 loopDetected, 13 budgetExceeded, 14 aborted, 15 timedOut; `Finish`: 16–17 the `History` |
///
/// A step with a text (`Validate`'s JSON, a retry's feedback) crosses as a record, `[word, text]`.
/// Each event kind declares the steps it answers (`Kind::answers`): the generated
/// `answer(step, event)` is typed to take only those, so that the JS driver answering a step with
/// another kind's event does not type-check (`__test__/types/src/agent-protocol.ts`), and the
/// binding refuses it at run time ([`AgentError::Unexpected`]).
pub mod wire {
    use super::*;

    use crate::boundary::word::{Field, Kind, Layout};

    // The step: the action in bits 0–3, the status to set (0 none) in 4–5, add the usage 6; the
    // action's data above. Each bit is declared once, as a field of `STEP` (rendered for JS).
    const F_STATUS: Field = Field::names("status", 4, 2, &STATUS_NAMES);
    const F_ADD_USAGE: Field = Field::flag("addUsage", 6);
    // RunRunner's data.
    const F_REWRITE_LAST_USER: Field = Field::flag("rewriteLastUser", 7);
    const F_RETRY: Field = Field::flag("retry", 8);
    const F_REPORT_OUTPUT: Field = Field::flag("reportOutput", 9);
    const F_COUNT_SPENT: Field = Field::flag("countSpent", 10);
    // AfterRun's, Trace's and Finish's: the shape of the result to build.
    const F_BUILD: Field = Field::flag("build", 7);
    const F_FAILED: Field = Field::flag("failed", 8);
    const F_SUCCESS: Field = Field::flag("success", 9);
    const F_STRUCTURED: Field = Field::flag("structured", 10);
    const F_MERGED: Field = Field::flag("merged", 11);
    const F_LOOP_DETECTED: Field = Field::flag("loopDetected", 12);
    const F_BUDGET_EXCEEDED: Field = Field::flag("budgetExceeded", 13);
    const F_ABORTED: Field = Field::flag("aborted", 14);
    const F_TIMED_OUT: Field = Field::flag("timedOut", 15);
    // Finish's.
    const F_HISTORY: Field = Field::names("history", 16, 2, &HISTORY_NAMES);
    const STEP_BITS: u32 = 20;

    /// The status a step sets, by code (0: none; `Idle` is only `reset()`'s).
    const STATUS_NAMES: [Option<&str>; 4] =
        [None, Some(Status::Running.as_str()), Some(Status::Completed.as_str()), Some(Status::Error.as_str())];
    const HISTORY_NAMES: [Option<&str>; 3] =
        [Some(History::Untouched.as_str()), Some(History::Commit.as_str()), Some(History::Rollback.as_str())];

    pub const ACTION_MASK: u32 = STEP.kind_mask();
    pub const STATUS_SHIFT: u32 = F_STATUS.shift;
    pub const STATUS_MASK: u32 = F_STATUS.mask();
    pub const ADD_USAGE: u32 = F_ADD_USAGE.mask();
    pub const REWRITE_LAST_USER: u32 = F_REWRITE_LAST_USER.mask();
    pub const RETRY: u32 = F_RETRY.mask();
    pub const REPORT_OUTPUT: u32 = F_REPORT_OUTPUT.mask();
    pub const COUNT_SPENT: u32 = F_COUNT_SPENT.mask();
    pub const BUILD: u32 = F_BUILD.mask();
    pub const FAILED: u32 = F_FAILED.mask();
    pub const SUCCESS: u32 = F_SUCCESS.mask();
    pub const STRUCTURED: u32 = F_STRUCTURED.mask();
    pub const MERGED: u32 = F_MERGED.mask();
    pub const LOOP_DETECTED: u32 = F_LOOP_DETECTED.mask();
    pub const BUDGET_EXCEEDED: u32 = F_BUDGET_EXCEEDED.mask();
    pub const ABORTED: u32 = F_ABORTED.mask();
    pub const TIMED_OUT: u32 = F_TIMED_OUT.mask();
    pub const HISTORY_SHIFT: u32 = F_HISTORY.shift;
    pub const HISTORY_MASK: u32 = F_HISTORY.mask();

    // Action codes.
    pub const BEFORE_RUN: u32 = 1;
    pub const RUN_RUNNER: u32 = 2;
    pub const VALIDATE: u32 = 3;
    pub const AFTER_RUN: u32 = 4;
    pub const TRACE: u32 = 5;
    pub const FINISH: u32 = 6;
    pub const PASS_ERROR: u32 = 7;

    const SHAPE: &[Field] = &[
        F_BUILD,
        F_FAILED,
        F_SUCCESS,
        F_STRUCTURED,
        F_MERGED,
        F_LOOP_DETECTED,
        F_BUDGET_EXCEEDED,
        F_ABORTED,
        F_TIMED_OUT,
    ];
    const FINISH_FIELDS: &[Field] = &[
        F_BUILD,
        F_FAILED,
        F_SUCCESS,
        F_STRUCTURED,
        F_MERGED,
        F_LOOP_DETECTED,
        F_BUDGET_EXCEEDED,
        F_ABORTED,
        F_TIMED_OUT,
        F_HISTORY,
    ];
    const fn step_kind(name: &'static str, code: u32, fields: &'static [Field]) -> Kind {
        Kind { name, code, fields, answers: &[] }
    }

    /// The step's layout: `lib/agent.js` reads a step only through the decoder rendered from it
    /// (`boundary.agent.step.decode`), a union on `op`.
    pub const STEP: Layout = Layout {
        tag: "op",
        kind_width: 4,
        common: &[F_STATUS, F_ADD_USAGE],
        kinds: &[
            step_kind("beforeRun", BEFORE_RUN, &[]),
            step_kind("runRunner", RUN_RUNNER, &[F_REWRITE_LAST_USER, F_RETRY, F_REPORT_OUTPUT, F_COUNT_SPENT]),
            step_kind("validate", VALIDATE, &[]),
            step_kind("afterRun", AFTER_RUN, SHAPE),
            step_kind("trace", TRACE, SHAPE),
            step_kind("finish", FINISH, FINISH_FIELDS),
            step_kind("passError", PASS_ERROR, &[]),
        ],
        unknown: Some(super::texts::DRIVER_UNKNOWN_ACTION),
        encode: false,
        answering: None,
    };

    // Events: the kind (`EventKind`) in bits 0–3, then the flags.
    const E_BUDGET_EXCEEDED: Field = Field::flag("budgetExceeded", 4);
    const E_LOOP_DETECTED: Field = Field::flag("loopDetected", 5);
    const E_ABORTED: Field = Field::flag("aborted", 6);
    const E_TIMED_OUT: Field = Field::flag("timedOut", 7);
    const E_CHANGED: Field = Field::flag("changed", 8);
    const E_HAS_USER: Field = Field::flag("hasUser", 9);
    pub const EVENT_KIND_MASK: u32 = EVENT.kind_mask();
    pub const EV_BUDGET_EXCEEDED: u32 = E_BUDGET_EXCEEDED.mask();
    pub const EV_LOOP_DETECTED: u32 = E_LOOP_DETECTED.mask();
    pub const EV_ABORTED: u32 = E_ABORTED.mask();
    pub const EV_TIMED_OUT: u32 = E_TIMED_OUT.mask();
    pub const EV_CHANGED: u32 = E_CHANGED.mask();
    pub const EV_HAS_USER: u32 = E_HAS_USER.mask();
    /// Every event code is below this: a driver may key a step word and an event as one number
    /// (`word * EVENT_SPAN + event`, exact below 2^53).
    pub const EVENT_SPAN: u32 = 1 << 10;

    /// What the machine takes after each step (`AgentRun::answer`), by the step's `op`: the
    /// generated encoder of an event is typed as an answer to these steps only, so that JS
    /// answering a step with another event does not type-check. (`threw`: every step that
    /// awaits the user's code; `Finish` while its result is built.)
    const fn event_kind(
        name: &'static str,
        kind: EventKind,
        fields: &'static [Field],
        answers: &'static [&'static str],
    ) -> Kind {
        Kind { name, code: kind as u32, fields, answers }
    }
    /// The event's layout: `lib/agent.js` writes events only through the encoders rendered from
    /// it (`boundary.agent.event.encode`); the text (output, error message) is an argument apart.
    pub const EVENT: Layout = Layout {
        tag: "kind",
        kind_width: 4,
        common: &[],
        kinds: &[
            event_kind("hookReturned", EventKind::HookReturned, &[E_CHANGED, E_HAS_USER], &["beforeRun"]),
            event_kind(
                "runnerDone",
                EventKind::RunnerDone,
                &[E_BUDGET_EXCEEDED, E_LOOP_DETECTED, E_ABORTED, E_TIMED_OUT],
                &["runRunner", "passError"],
            ),
            event_kind("runnerError", EventKind::RunnerError, &[], &["runRunner", "passError"]),
            event_kind("valid", EventKind::Valid, &[], &["validate"]),
            event_kind("invalid", EventKind::Invalid, &[], &["validate"]),
            event_kind("afterRunReturned", EventKind::AfterRunReturned, &[], &["afterRun"]),
            event_kind("traceEmitted", EventKind::TraceEmitted, &[], &["trace"]),
            event_kind(
                "threw",
                EventKind::Threw,
                &[E_TIMED_OUT],
                &["beforeRun", "runRunner", "passError", "afterRun", "trace", "finish"],
            ),
        ],
        unknown: None,
        encode: true,
        answering: Some(STEP.tag),
    };

    // Setups: the entry in bits 0–1, the flags, the retries (at most 7, `MAX_RETRIES` is 5) in
    // bits 6–8, then whether they are checked.
    const S_BEFORE_RUN: Field = Field::flag("beforeRun", 2);
    const S_AFTER_RUN: Field = Field::flag("afterRun", 3);
    const S_OUTPUT_SCHEMA: Field = Field::flag("outputSchema", 4);
    const S_TRACE: Field = Field::flag("trace", 5);
    const S_RETRIES: Field = Field::int("retries", 6, 3);
    const S_CHECKED_RETRIES: Field = Field::flag("checkedRetries", 9);
    pub const ENTRY_MASK: u32 = SETUP.kind_mask();
    pub const SETUP_BEFORE_RUN: u32 = S_BEFORE_RUN.mask();
    pub const SETUP_AFTER_RUN: u32 = S_AFTER_RUN.mask();
    pub const SETUP_OUTPUT_SCHEMA: u32 = S_OUTPUT_SCHEMA.mask();
    pub const SETUP_TRACE: u32 = S_TRACE.mask();
    pub const RETRIES_SHIFT: u32 = S_RETRIES.shift;
    pub const RETRIES_MASK: u32 = S_RETRIES.mask();
    pub const SETUP_CHECKED_RETRIES: u32 = S_CHECKED_RETRIES.mask();
    const SETUP_BITS: u32 = 10;

    /// The setup's layout: `lib/agent.js` writes a setup through the encoder of its entry
    /// (`boundary.agent.setup.encode.run(...)`).
    pub const SETUP: Layout = Layout {
        tag: "entry",
        kind_width: 2,
        common: &[S_BEFORE_RUN, S_AFTER_RUN, S_OUTPUT_SCHEMA, S_TRACE, S_RETRIES, S_CHECKED_RETRIES],
        kinds: &[
            Kind { name: "run", code: Entry::Run as u32, fields: &[], answers: &[] },
            Kind { name: "prompt", code: Entry::Prompt as u32, fields: &[], answers: &[] },
            Kind { name: "stream", code: Entry::Stream as u32, fields: &[], answers: &[] },
        ],
        unknown: None,
        encode: true,
        answering: None,
    };

    /// The setup bits of `outputSchemaRetries: n` (a checked `n`; the driver writes them with
    /// `SETUP`'s encoder).
    #[cfg(test)]
    pub fn retries_setup(n: u8) -> u32 {
        u32::from(n.min(MAX_RETRIES)) << RETRIES_SHIFT | SETUP_CHECKED_RETRIES
    }

    pub fn setup_from(code: u32) -> Result<Setup, AgentError> {
        let entry = match code & ENTRY_MASK {
            0 => Entry::Run,
            1 => Entry::Prompt,
            2 => Entry::Stream,
            _ => return Err(AgentError::Malformed("setup")),
        };
        if code >> SETUP_BITS != 0 {
            return Err(AgentError::Malformed("setup"));
        }
        Ok(Setup {
            entry,
            before_run: code & SETUP_BEFORE_RUN != 0,
            after_run: code & SETUP_AFTER_RUN != 0,
            output_schema: code & SETUP_OUTPUT_SCHEMA != 0,
            trace: code & SETUP_TRACE != 0,
            retries: ((code & RETRIES_MASK) >> RETRIES_SHIFT) as u8,
            checked_retries: code & SETUP_CHECKED_RETRIES != 0,
        })
    }

    /// The inverse of `setup_from` (retries beyond 7 are not representable: `None`).
    pub fn setup_code(s: Setup) -> Option<u32> {
        if u32::from(s.retries) > RETRIES_MASK >> RETRIES_SHIFT {
            return None;
        }
        let bits = [
            (s.before_run, SETUP_BEFORE_RUN),
            (s.after_run, SETUP_AFTER_RUN),
            (s.output_schema, SETUP_OUTPUT_SCHEMA),
            (s.trace, SETUP_TRACE),
            (s.checked_retries, SETUP_CHECKED_RETRIES),
        ];
        Some(set(s.entry as u32, &bits) | u32::from(s.retries) << RETRIES_SHIFT)
    }

    fn set(mut code: u32, bits: &[(bool, u32)]) -> u32 {
        for &(on, bit) in bits {
            if on {
                code |= bit;
            }
        }
        code
    }

    fn shape_code(s: Shape) -> u32 {
        match s {
            Shape::Failed { timed_out } => set(BUILD | FAILED, &[(timed_out, TIMED_OUT)]),
            Shape::Result { success, structured, merged, flags, timed_out } => set(
                BUILD,
                &[
                    (success, SUCCESS),
                    (structured, STRUCTURED),
                    (merged, MERGED),
                    (flags.loop_detected, LOOP_DETECTED),
                    (flags.budget_exceeded, BUDGET_EXCEEDED),
                    (flags.aborted, ABORTED),
                    (timed_out, TIMED_OUT),
                ],
            ),
        }
    }

    fn shape_from(c: u32) -> Option<Shape> {
        if c & BUILD == 0 {
            return None;
        }
        let timed_out = c & TIMED_OUT != 0;
        if c & FAILED != 0 {
            return Some(Shape::Failed { timed_out });
        }
        Some(Shape::Result {
            success: c & SUCCESS != 0,
            structured: c & STRUCTURED != 0,
            merged: c & MERGED != 0,
            flags: RunFlags {
                loop_detected: c & LOOP_DETECTED != 0,
                budget_exceeded: c & BUDGET_EXCEEDED != 0,
                aborted: c & ABORTED != 0,
            },
            timed_out,
        })
    }

    /// The step's bits, and its text (the JSON to validate, or the retry's feedback).
    pub fn step_code(step: &Step) -> (u32, Option<&str>) {
        let head = step.status.map_or(0, |s| (s as u32) << STATUS_SHIFT) | if step.add_usage { ADD_USAGE } else { 0 };
        let (action, text) = match &step.action {
            Action::BeforeRun => (BEFORE_RUN, None),
            Action::RunRunner { conversation: Conversation::Outgoing { rewrite_last_user }, report_output } => {
                (set(RUN_RUNNER, &[(*rewrite_last_user, REWRITE_LAST_USER), (*report_output, REPORT_OUTPUT)]), None)
            }
            Action::RunRunner { conversation: Conversation::Retry { feedback, count_spent }, report_output } => (
                set(RUN_RUNNER | RETRY, &[(*report_output, REPORT_OUTPUT), (*count_spent, COUNT_SPENT)]),
                Some(feedback.as_str()),
            ),
            Action::Validate { json } => (VALIDATE, Some(json.as_str())),
            Action::AfterRun { build } => (AFTER_RUN | build.map_or(0, shape_code), None),
            Action::Trace { build } => (TRACE | build.map_or(0, shape_code), None),
            Action::Finish { build, history } => {
                (FINISH | build.map_or(0, shape_code) | (*history as u32) << HISTORY_SHIFT, None)
            }
            Action::PassError => (PASS_ERROR, None),
        };
        (head | action, text)
    }

    /// A step as the driver reads it (its text given back with it).
    pub fn step_from(c: u32, text: Option<&str>) -> Result<Step, AgentError> {
        let bad = AgentError::Malformed("step");
        let need = || text.map(str::to_string).ok_or(AgentError::Malformed("step without its text"));
        let status = match (c & STATUS_MASK) >> STATUS_SHIFT {
            0 => None,
            s => Some(Status::ALL[s as usize]),
        };
        let action = match c & ACTION_MASK {
            BEFORE_RUN => Action::BeforeRun,
            RUN_RUNNER => Action::RunRunner {
                conversation: if c & RETRY != 0 {
                    Conversation::Retry { feedback: need()?, count_spent: c & COUNT_SPENT != 0 }
                } else {
                    Conversation::Outgoing { rewrite_last_user: c & REWRITE_LAST_USER != 0 }
                },
                report_output: c & REPORT_OUTPUT != 0,
            },
            VALIDATE => Action::Validate { json: need()? },
            AFTER_RUN => Action::AfterRun { build: shape_from(c) },
            TRACE => Action::Trace { build: shape_from(c) },
            FINISH => Action::Finish {
                build: shape_from(c),
                history: match (c & HISTORY_MASK) >> HISTORY_SHIFT {
                    0 => History::Untouched,
                    1 => History::Commit,
                    2 => History::Rollback,
                    _ => return Err(bad),
                },
            },
            PASS_ERROR => Action::PassError,
            _ => return Err(bad),
        };
        Ok(Step { status, add_usage: c & ADD_USAGE != 0, action })
    }

    /// An event from its code and its text: the output (RunnerDone) or the message (Invalid).
    pub fn event_from(code: u32, text: Option<&str>) -> Result<Event<'_>, AgentError> {
        let on = |bit: u32| code & bit != 0;
        let flags = RunFlags {
            budget_exceeded: on(EV_BUDGET_EXCEEDED),
            loop_detected: on(EV_LOOP_DETECTED),
            aborted: on(EV_ABORTED),
        };
        const HOOK: u32 = EventKind::HookReturned as u32;
        const DONE: u32 = EventKind::RunnerDone as u32;
        const ERROR: u32 = EventKind::RunnerError as u32;
        const VALID: u32 = EventKind::Valid as u32;
        const INVALID: u32 = EventKind::Invalid as u32;
        const AFTER: u32 = EventKind::AfterRunReturned as u32;
        const TRACED: u32 = EventKind::TraceEmitted as u32;
        const THREW: u32 = EventKind::Threw as u32;
        Ok(match code & EVENT_KIND_MASK {
            HOOK => Event::HookReturned { changed: on(EV_CHANGED), has_user: on(EV_HAS_USER) },
            DONE => Event::RunnerDone { flags, timed_out: on(EV_TIMED_OUT), output: text },
            ERROR => Event::RunnerError,
            VALID => Event::Valid,
            INVALID => Event::Invalid { message: text.ok_or(AgentError::Malformed("Invalid without its message"))? },
            AFTER => Event::AfterRunReturned,
            TRACED => Event::TraceEmitted,
            THREW => Event::Threw { timed_out: on(EV_TIMED_OUT) },
            _ => return Err(AgentError::Malformed("event")),
        })
    }

    /// An event's code (its text aside): the inverse of `event_from`.
    pub fn event_code(e: &Event) -> u32 {
        let kind = e.kind() as u32;
        match *e {
            Event::HookReturned { changed, has_user } => set(kind, &[(changed, EV_CHANGED), (has_user, EV_HAS_USER)]),
            Event::RunnerDone { flags, timed_out, .. } => set(
                kind,
                &[
                    (flags.budget_exceeded, EV_BUDGET_EXCEEDED),
                    (flags.loop_detected, EV_LOOP_DETECTED),
                    (flags.aborted, EV_ABORTED),
                    (timed_out, EV_TIMED_OUT),
                ],
            ),
            Event::Threw { timed_out } => set(kind, &[(timed_out, EV_TIMED_OUT)]),
            _ => kind,
        }
    }

    /// The step's bits of a word.
    pub fn step_bits(word: f64) -> u32 {
        (word as u64 & ((1 << STEP_BITS) - 1)) as u32
    }

    // The machine's bits, above the step's: setup (10), phase (3), attempts (5), the last
    // runner flags (3, as the event encodes them), timed_out (1): 22 bits, so the word stays
    // below 2^42.
    const PHASE_SHIFT: u32 = SETUP_BITS;
    const ATTEMPTS_SHIFT: u32 = PHASE_SHIFT + 3;
    const FLAGS_SHIFT: u32 = ATTEMPTS_SHIFT + 5;
    const TIMED_OUT_SHIFT: u32 = FLAGS_SHIFT + 3;
    const MACHINE_BITS: u32 = TIMED_OUT_SHIFT + 1;

    /// The machine and its step as one JS number (`None` for a setup with more retries than
    /// the wire holds).
    pub fn pack(run: &AgentRun, step_bits: u32) -> Option<f64> {
        let flags = event_code(&Event::RunnerDone { flags: run.last, timed_out: false, output: None }) >> 4;
        let m = u64::from(setup_code(run.setup)?)
            | u64::from(run.phase as u32) << PHASE_SHIFT
            | u64::from(run.attempts) << ATTEMPTS_SHIFT
            | u64::from(flags) << FLAGS_SHIFT
            | u64::from(run.timed_out) << TIMED_OUT_SHIFT;
        Some(((m << STEP_BITS) | u64::from(step_bits)) as f64)
    }

    /// The machine a word holds (its step bits are ignored).
    pub fn unpack(word: f64) -> Result<AgentRun, AgentError> {
        let bad = AgentError::Malformed("machine word");
        if !(word >= 0.0 && word < (1u64 << (STEP_BITS + MACHINE_BITS)) as f64 && word.fract() == 0.0) {
            return Err(bad);
        }
        let m = (word as u64 >> STEP_BITS) as u32;
        let field = |shift: u32, bits: u32| (m >> shift) & ((1 << bits) - 1);
        let setup = setup_from(field(0, SETUP_BITS))?;
        let phase = *PHASES.get(field(PHASE_SHIFT, 3) as usize).ok_or(bad.clone())?;
        let attempts = field(ATTEMPTS_SHIFT, 5) as u8;
        let flags = match event_from(EventKind::RunnerDone as u32 | field(FLAGS_SHIFT, 3) << 4, None)? {
            Event::RunnerDone { flags, .. } => flags,
            _ => return Err(bad),
        };
        Ok(AgentRun { setup, phase, attempts, last: flags, timed_out: field(TIMED_OUT_SHIFT, 1) == 1 })
    }
}

/// The texts `lib/agent.js` throws (through `lib/generated/boundary.js`): `{name}` marks a
/// parameter. The `DRIVER_*` ones are driver bugs (a step the driver does not perform).
pub mod texts {
    /// The runner's `agentRole` for an agent without a system prompt; with one, its first
    /// [`ROLE_PROMPT_LENGTH`] UTF-16 units.
    pub const DEFAULT_ROLE: &str = "assistant";
    pub const ROLE_PROMPT_LENGTH: u32 = 50;
    /// Upstream's text for `messages` that are not structured-cloneable (§15.1 does not cover it).
    pub const MESSAGES_NOT_CLONEABLE: &str =
        "messages must contain cloneable structured data (strings, arrays, and plain data objects)";
    /// Upstream's text for a `beforeRun` hook whose `prompt` is not a string.
    pub const PROMPT_NOT_STRING: &str = "beforeRun.prompt must be a string";
    pub const DRIVER_TEXT_ON_TEXTLESS_PATH: &str =
        "oma-kernel: agent driver got a step with a text on a path without texts";
    pub const DRIVER_EXPECTED_ACTION: &str = "oma-kernel: agent driver expected action {expected}, got {got}";
    pub const DRIVER_UNKNOWN_ACTION: &str = "oma-kernel: unknown agent action {code}";
}

#[cfg(test)]
mod tests {
    use super::wire;
    use super::*;

    /// What the scripted user code does.
    struct World {
        /// beforeRun: `Some(changed)`, or `None` for a hook that throws.
        hook: Option<bool>,
        /// Each runner run: its output and flags, or `None` for a run that throws.
        runs: Vec<Option<(&'static str, RunFlags)>>,
        /// The schema: the parsed JSON text → the Zod error's message, if any.
        schema: fn(&str) -> Result<(), String>,
        after_run_throws: bool,
        trace_throws: bool,
        /// The timeout has fired before the runner settles.
        timed_out: bool,
    }

    impl Default for World {
        fn default() -> Self {
            World {
                hook: Some(false),
                runs: vec![Some(("done", RunFlags::default()))],
                schema: |_| Ok(()),
                after_run_throws: false,
                trace_throws: false,
                timed_out: false,
            }
        }
    }

    /// What the driver did, in order, and how the run ended.
    #[derive(Debug, Default)]
    struct Log {
        statuses: Vec<Status>,
        steps: Vec<Step>,
        /// The conversation of each runner run, and the feedback texts sent.
        runner_calls: Vec<Conversation>,
        validated: Vec<String>,
        usage_added: usize,
        built: Vec<Shape>,
        finish: Option<History>,
    }

    /// A scripted driver: performs each action against `world`, and goes through the wire as
    /// the binding and the JS driver do (the machine travels packed in the step's word).
    fn drive(setup: Setup, mut world: World) -> Log {
        let mut log = Log::default();
        let (run, step) = AgentRun::start(setup);
        let mut word = through_wire(&run, &step);
        let mut runs = world.runs.drain(..);
        loop {
            let (mut run, step) = word;
            if let Some(s) = step.status {
                log.statuses.push(s);
            }
            if step.add_usage {
                log.usage_added += 1;
            }
            log.steps.push(step.clone());
            let built = |log: &mut Log, b: &Option<Shape>| log.built.extend(*b);
            let output;
            let event = match &step.action {
                Action::BeforeRun => match world.hook {
                    Some(changed) => Event::HookReturned { changed, has_user: true },
                    None => Event::Threw { timed_out: false },
                },
                Action::RunRunner { conversation, report_output } => {
                    log.runner_calls.push(conversation.clone());
                    match runs.next().expect("a scripted runner run") {
                        Some((out, flags)) => {
                            output = out;
                            Event::RunnerDone {
                                flags,
                                timed_out: world.timed_out,
                                output: report_output.then_some(output),
                            }
                        }
                        None => Event::Threw { timed_out: world.timed_out },
                    }
                }
                Action::Validate { json } => {
                    log.validated.push(json.clone());
                    match (world.schema)(json) {
                        Ok(()) => Event::Valid,
                        Err(m) => {
                            let m: &'static str = Box::leak(m.into_boxed_str());
                            Event::Invalid { message: m }
                        }
                    }
                }
                Action::AfterRun { build } => {
                    built(&mut log, build);
                    if world.after_run_throws {
                        Event::Threw { timed_out: world.timed_out }
                    } else {
                        Event::AfterRunReturned
                    }
                }
                Action::Trace { build } => {
                    built(&mut log, build);
                    if world.trace_throws {
                        Event::Threw { timed_out: world.timed_out }
                    } else {
                        Event::TraceEmitted
                    }
                }
                Action::Finish { build, history } => {
                    built(&mut log, build);
                    log.finish = Some(*history);
                    assert!(matches!(run.phase(), Phase::Done | Phase::Built));
                    return log;
                }
                Action::PassError => unreachable!("no stream errors scripted"),
            };
            // The event crosses as its code and text.
            let text = match event {
                Event::RunnerDone { output, .. } => output,
                Event::Invalid { message } => Some(message),
                _ => None,
            };
            let event = wire::event_from(wire::event_code(&event), text).unwrap();
            let step = run.answer(event).unwrap();
            word = through_wire(&run, &step);
        }
    }

    /// The machine and step as the driver gets them back from the binding.
    fn through_wire(run: &AgentRun, step: &Step) -> (AgentRun, Step) {
        let (bits, text) = wire::step_code(step);
        let word = wire::pack(run, bits).unwrap();
        let back = wire::unpack(word).unwrap();
        assert_eq!(&back, run);
        let decoded = wire::step_from((word as u64 & 0xfffff) as u32, text).unwrap();
        assert_eq!(&decoded, step);
        (back, decoded)
    }

    fn setup(entry: Entry) -> Setup {
        Setup::new(entry)
    }

    fn result(success: bool, structured: bool, merged: bool, flags: RunFlags) -> Shape {
        Shape::Result { success, structured, merged, flags, timed_out: false }
    }

    const NONE: RunFlags = RunFlags { budget_exceeded: false, loop_detected: false, aborted: false };
    const BUDGET: RunFlags = RunFlags { budget_exceeded: true, loop_detected: false, aborted: false };
    const LOOPED: RunFlags = RunFlags { budget_exceeded: false, loop_detected: true, aborted: false };

    fn outgoing(rewrite_last_user: bool) -> Conversation {
        Conversation::Outgoing { rewrite_last_user }
    }

    fn answer_schema(json: &str) -> Result<(), String> {
        if json.contains("\"answer\"") {
            Ok(())
        } else {
            Err(validation_failed([(Some("answer"), "Required")]))
        }
    }

    use super::super::structured_output::validation_failed;

    #[test]
    fn plain_success_is_two_steps() {
        let log = drive(setup(Entry::Run), World::default());
        assert_eq!(log.steps.len(), 2);
        assert_eq!(log.statuses, [Status::Running, Status::Completed]);
        assert_eq!(log.runner_calls, [outgoing(false)]);
        assert_eq!(log.usage_added, 1);
        assert_eq!(log.built, [result(true, false, false, NONE)]);
        assert_eq!(log.finish, Some(History::Untouched));
        // The runner's output is not asked for without a schema.
        assert_eq!(log.steps[0].action, Action::RunRunner { conversation: outgoing(false), report_output: false });
    }

    #[test]
    fn budget_exceeded_fails_without_validation_and_still_runs_after_run() {
        let mut s = setup(Entry::Run);
        s.output_schema = true;
        s.after_run = true;
        let log = drive(s, World { runs: vec![Some(("not json", BUDGET))], ..World::default() });
        assert!(log.validated.is_empty());
        assert_eq!(log.runner_calls.len(), 1);
        assert_eq!(log.built, [result(false, false, false, BUDGET)]);
        // Still running while afterRun runs; completed after it.
        assert_eq!(log.steps[1].status, None);
        assert!(matches!(log.steps[1].action, Action::AfterRun { .. }));
        assert_eq!(log.statuses, [Status::Running, Status::Completed]);
    }

    #[test]
    fn structured_ok_first_time_keeps_loop_and_abort_flags() {
        let mut s = setup(Entry::Run);
        s.output_schema = true;
        s.after_run = true;
        let flags = RunFlags { budget_exceeded: false, loop_detected: true, aborted: true };
        let world =
            World { runs: vec![Some(("Here: {\"answer\": 1} ok", flags))], schema: answer_schema, ..World::default() };
        let log = drive(s, world);
        assert_eq!(log.validated, ["{\"answer\": 1}"]);
        assert_eq!(log.built, [result(true, true, false, flags)]);
        // Completed before afterRun on the structured path, and again after it.
        assert_eq!(log.statuses, [Status::Running, Status::Completed, Status::Completed]);
        assert!(matches!(log.steps[2].action, Action::AfterRun { .. }));
        assert_eq!(log.steps[2].status, Some(Status::Completed));
    }

    #[test]
    fn retry_ok_after_an_extraction_failure_merges_without_loop_flag() {
        let mut s = setup(Entry::Run);
        s.output_schema = true;
        let world = World {
            runs: vec![Some(("not json at all", LOOPED)), Some(("{\"answer\":\"ok\"}", BUDGET))],
            schema: answer_schema,
            ..World::default()
        };
        let log = drive(s, world);
        let feedback = feedback_text("Failed to extract JSON from output. Raw output begins with: \"not json at all\"");
        assert_eq!(log.runner_calls, [outgoing(false), Conversation::Retry { feedback, count_spent: false }]);
        assert_eq!(log.validated, ["{\"answer\":\"ok\"}"]);
        assert_eq!(log.usage_added, 2);
        // Budget from the retry only; loopDetected is not carried (kept quirk).
        assert_eq!(log.built, [result(true, true, true, BUDGET)]);
        assert_eq!(log.statuses, [Status::Running, Status::Completed]);
    }

    #[test]
    fn retry_after_a_validation_failure_carries_its_message() {
        let mut s = setup(Entry::Run);
        s.output_schema = true;
        let world = World {
            runs: vec![Some(("{\"x\": 1}", NONE)), Some(("{\"answer\": 2}", NONE))],
            schema: answer_schema,
            ..World::default()
        };
        let log = drive(s, world);
        assert_eq!(
            log.runner_calls[1],
            Conversation::Retry {
                feedback: feedback_text("Output validation failed:\n  - answer: Required"),
                count_spent: false
            }
        );
        assert_eq!(log.built, [result(true, true, true, NONE)]);
    }

    #[test]
    fn retry_fails_completes_unsuccessfully_after_exactly_one_retry() {
        let mut s = setup(Entry::Prompt);
        s.output_schema = true;
        let world = World {
            runs: vec![Some(("nope", NONE)), Some(("{\"still\": 0}", NONE))],
            schema: answer_schema,
            ..World::default()
        };
        let log = drive(s, world);
        assert_eq!(log.runner_calls.len(), 2);
        assert_eq!(log.built, [result(false, false, true, NONE)]);
        assert_eq!(log.statuses, [Status::Running, Status::Completed]);
        // The run did not throw: prompt() keeps the merged messages.
        assert_eq!(log.finish, Some(History::Commit));
    }

    #[test]
    fn more_retries_when_the_setup_allows_them() {
        let mut s = setup(Entry::Run);
        s.output_schema = true;
        s.retries = 3;
        let world = World {
            runs: vec![Some(("a", NONE)), Some(("b", NONE)), Some(("c", NONE)), Some(("{\"answer\": 1}", NONE))],
            schema: answer_schema,
            ..World::default()
        };
        let log = drive(s, world);
        assert_eq!(log.runner_calls.len(), 4);
        assert_eq!(log.built, [result(true, true, true, NONE)]);
        s.retries = 0;
        let log = drive(s, World { runs: vec![Some(("a", NONE))], ..World::default() });
        assert_eq!(log.runner_calls.len(), 1);
        assert_eq!(log.built, [result(false, false, false, NONE)]);
    }

    fn checked(retries: u8) -> Setup {
        let mut s = wire::setup_from(Entry::Run as u32 | wire::retries_setup(retries)).unwrap();
        s.output_schema = true;
        s
    }

    const ABORTED: RunFlags = RunFlags { budget_exceeded: false, loop_detected: false, aborted: true };

    #[test]
    fn checked_retries_succeeding_at_the_third_attempt_count_every_attempt() {
        let world = World {
            runs: vec![Some(("a", NONE)), Some(("{\"nope\": 1}", LOOPED)), Some(("{\"answer\": 1}", NONE))],
            schema: answer_schema,
            ..World::default()
        };
        let log = drive(checked(3), world);
        assert_eq!(log.usage_added, 3);
        assert_eq!(log.built, [result(true, true, true, NONE)]);
        // Each retry carries the last failure's feedback and counts the earlier attempts' tokens.
        let feedbacks: Vec<_> = log.runner_calls[1..]
            .iter()
            .map(|c| match c {
                Conversation::Retry { feedback, count_spent: true } => feedback.clone(),
                other => panic!("{other:?}"),
            })
            .collect();
        assert_eq!(
            feedbacks,
            [
                feedback_text("Failed to extract JSON from output. Raw output begins with: \"a\""),
                feedback_text("Output validation failed:\n  - answer: Required")
            ]
        );
    }

    #[test]
    fn checked_retries_that_never_succeed_stop_after_the_last_one() {
        for n in 0..=MAX_RETRIES {
            let world = World { runs: vec![Some(("x", NONE)); usize::from(n) + 1], ..World::default() };
            let log = drive(checked(n), world);
            assert_eq!(log.runner_calls.len(), usize::from(n) + 1);
            assert_eq!(log.built, [result(false, false, n > 0, NONE)]);
            assert_eq!(log.statuses, [Status::Running, Status::Completed]);
        }
    }

    #[test]
    fn checked_retries_stop_at_the_budget_an_abort_or_the_timeout() {
        // The second attempt spent the budget (counting the first): no third, whatever is left.
        let world = World { runs: vec![Some(("x", NONE)), Some(("y", BUDGET))], ..World::default() };
        let log = drive(checked(5), world);
        assert_eq!(log.runner_calls.len(), 2);
        assert_eq!(log.built, [result(false, false, true, BUDGET)]);
        // A budget spent by the first attempt is the original's short-cut, before validation.
        let log = drive(checked(5), World { runs: vec![Some(("x", BUDGET))], ..World::default() });
        assert!(log.validated.is_empty());
        assert_eq!(log.built, [result(false, false, false, BUDGET)]);
        // A valid output of an attempt that spent the budget is still the structured result.
        let world = World {
            runs: vec![Some(("x", NONE)), Some(("{\"answer\": 2}", BUDGET))],
            schema: answer_schema,
            ..World::default()
        };
        assert_eq!(drive(checked(5), world).built, [result(true, true, true, BUDGET)]);
        // Aborted between attempts.
        let world = World { runs: vec![Some(("x", NONE)), Some(("y", ABORTED))], ..World::default() };
        let log = drive(checked(5), world);
        assert_eq!(log.runner_calls.len(), 2);
        assert_eq!(log.built, [result(false, false, true, ABORTED)]);
        let log = drive(checked(5), World { runs: vec![Some(("x", ABORTED))], ..World::default() });
        assert_eq!(log.runner_calls.len(), 1);
        assert_eq!(log.built, [result(false, false, false, ABORTED)]);
        // The run's timeout had fired.
        let log = drive(checked(5), World { runs: vec![Some(("x", NONE))], timed_out: true, ..World::default() });
        assert_eq!(log.runner_calls.len(), 1);
        assert_eq!(
            log.built,
            [Shape::Result { success: false, structured: false, merged: false, flags: NONE, timed_out: true }]
        );
    }

    #[test]
    fn unset_retries_keep_the_original_single_retry_even_after_an_abort() {
        let mut s = setup(Entry::Run);
        s.output_schema = true;
        let log = drive(s, World { runs: vec![Some(("x", ABORTED)), Some(("y", ABORTED))], ..World::default() });
        assert_eq!(log.runner_calls.len(), 2);
        assert!(matches!(log.runner_calls[1], Conversation::Retry { count_spent: false, .. }));
        assert_eq!(wire::setup_from(u32::from(DEFAULT_RETRIES) << wire::RETRIES_SHIFT).unwrap(), setup(Entry::Run));
    }

    #[test]
    fn output_schema_retries_setting() {
        use serde_json::json;
        for n in 0..=5 {
            assert_eq!(output_schema_retries(&json!(n)), Ok(n as u8));
        }
        assert_eq!(output_schema_retries(&json!(2.0)), Ok(2));
        for (v, got) in [
            (json!(6), "6"),
            (json!(-1), "-1"),
            (json!(1.5), "1.5"),
            (json!("3"), "\"3\""),
            (json!(null), "null"),
            (json!(true), "true"),
        ] {
            assert_eq!(
                output_schema_retries(&v).unwrap_err(),
                format!("Invalid configuration: outputSchemaRetries must be an integer from 0 to 5, got {got}")
            );
        }
        let s = wire::setup_from(wire::retries_setup(4)).unwrap();
        assert_eq!((s.retries, s.checked_retries), (4, true));
    }

    #[test]
    fn runner_throws_fails_the_run_and_prompt_rolls_back() {
        let log = drive(setup(Entry::Prompt), World { runs: vec![None], ..World::default() });
        assert_eq!(log.statuses, [Status::Running, Status::Error]);
        assert_eq!(log.usage_added, 0);
        assert_eq!(log.built, [Shape::Failed { timed_out: false }]);
        assert_eq!(log.finish, Some(History::Rollback));
    }

    #[test]
    fn a_throwing_retry_fails_the_run_after_the_first_usage_was_added() {
        let mut s = setup(Entry::Run);
        s.output_schema = true;
        let log = drive(s, World { runs: vec![Some(("bad", NONE)), None], ..World::default() });
        assert_eq!(log.usage_added, 1);
        assert_eq!(log.built, [Shape::Failed { timed_out: false }]);
        assert_eq!(log.statuses, [Status::Running, Status::Error]);
    }

    #[test]
    fn hooks_throw() {
        let mut s = setup(Entry::Prompt);
        s.before_run = true;
        let log = drive(s, World { hook: None, ..World::default() });
        assert!(log.runner_calls.is_empty());
        assert_eq!(log.statuses, [Status::Running, Status::Error]);
        assert_eq!(log.finish, Some(History::Rollback));

        let mut s = setup(Entry::Run);
        s.after_run = true;
        let log = drive(s, World { after_run_throws: true, ..World::default() });
        assert_eq!(log.usage_added, 1);
        assert_eq!(log.built, [result(true, false, false, NONE), Shape::Failed { timed_out: false }]);
        assert_eq!(log.statuses, [Status::Running, Status::Error]);
    }

    #[test]
    fn before_run_rewrites_only_a_changed_prompt() {
        let mut s = setup(Entry::Run);
        s.before_run = true;
        let log = drive(s, World { hook: Some(true), ..World::default() });
        assert_eq!(log.steps[0].action, Action::BeforeRun);
        assert_eq!(log.statuses[0], Status::Running);
        assert_eq!(log.runner_calls, [outgoing(true)]);
        let log = drive(s, World { hook: Some(false), ..World::default() });
        assert_eq!(log.runner_calls, [outgoing(false)]);
        // Nothing to rewrite without a user message.
        let (mut run, _) = AgentRun::start(s);
        let step = run.answer(Event::HookReturned { changed: true, has_user: false }).unwrap();
        assert_eq!(step.action, Action::RunRunner { conversation: outgoing(false), report_output: false });
    }

    #[test]
    fn timed_out() {
        // Between turns: the run ends normally, flagged.
        let world = World {
            timed_out: true,
            runs: vec![Some(("partial", RunFlags { aborted: true, ..NONE }))],
            ..World::default()
        };
        let log = drive(setup(Entry::Run), world);
        let aborted = RunFlags { aborted: true, ..NONE };
        assert_eq!(
            log.built,
            [Shape::Result { success: true, structured: false, merged: false, flags: aborted, timed_out: true }]
        );
        // In flight: the runner throws; the failed result says aborted and timed out.
        let log = drive(setup(Entry::Run), World { timed_out: true, runs: vec![None], ..World::default() });
        assert_eq!(log.built, [Shape::Failed { timed_out: true }]);
    }

    #[test]
    fn trace_follows_the_result_and_a_throwing_trace_fails_the_run() {
        let mut s = setup(Entry::Prompt);
        s.trace = true;
        let log = drive(s, World::default());
        assert!(matches!(log.steps[1].action, Action::Trace { build: Some(_) }));
        assert_eq!(log.steps.last().unwrap().action, Action::Finish { build: None, history: History::Commit });

        let log = drive(s, World { trace_throws: true, ..World::default() });
        // The trace of the failed result is emitted too, and its own throw is ignored.
        assert_eq!(log.built, [result(true, false, false, NONE), Shape::Failed { timed_out: false }]);
        assert_eq!(log.statuses, [Status::Running, Status::Completed, Status::Error]);
        assert_eq!(log.finish, Some(History::Rollback));
    }

    #[test]
    fn prompt_history_rollback_on_every_failure_commit_otherwise() {
        for world in [
            World { hook: None, ..World::default() },
            World { runs: vec![None], ..World::default() },
            World { after_run_throws: true, ..World::default() },
        ] {
            let mut s = setup(Entry::Prompt);
            s.before_run = true;
            s.after_run = true;
            assert_eq!(drive(s, world).finish, Some(History::Rollback));
        }
        let mut s = setup(Entry::Prompt);
        s.after_run = true;
        assert_eq!(drive(s, World::default()).finish, Some(History::Commit));
        assert_eq!(
            drive(setup(Entry::Run), World { runs: vec![None], ..World::default() }).finish,
            Some(History::Untouched)
        );
    }

    #[test]
    fn stream_neither_validates_nor_traces_and_passes_errors_on() {
        let mut s = setup(Entry::Stream);
        s.output_schema = true;
        s.trace = true;
        let log = drive(s, World { runs: vec![Some(("not json", BUDGET))], ..World::default() });
        assert_eq!(log.built, [result(false, false, false, BUDGET)]);
        assert!(log.validated.is_empty());
        assert!(!log.steps.iter().any(|s| matches!(s.action, Action::Trace { .. })));

        let (mut run, _) = AgentRun::start(s);
        let step = run.answer(Event::RunnerError).unwrap();
        assert_eq!(step, Step { status: Some(Status::Error), add_usage: false, action: Action::PassError });
        assert_eq!(run.phase(), Phase::Runner);

        // A throw after `done` (with afterRun: the result was built before) still fails it.
        s.after_run = true;
        let (mut run, _) = AgentRun::start(s);
        run.answer(Event::RunnerDone { flags: NONE, timed_out: false, output: None }).unwrap();
        let step = run.answer(Event::AfterRunReturned).unwrap();
        assert_eq!(step.action, Action::Finish { build: None, history: History::Untouched });
        let step = run.answer(Event::Threw { timed_out: false }).unwrap();
        assert_eq!(step.status, Some(Status::Error));
    }

    #[test]
    fn a_result_that_cannot_be_built_fails_the_run() {
        let (mut run, _) = AgentRun::start(setup(Entry::Prompt));
        let step = run.answer(Event::RunnerDone { flags: NONE, timed_out: false, output: None }).unwrap();
        assert!(matches!(step.action, Action::Finish { build: Some(_), history: History::Commit }));
        let step = run.answer(Event::Threw { timed_out: false }).unwrap();
        assert_eq!(
            step,
            Step {
                status: Some(Status::Error),
                add_usage: false,
                action: Action::Finish { build: Some(Shape::Failed { timed_out: false }), history: History::Rollback },
            }
        );
        // The failed result is built from the error alone: nothing more to report.
        assert_eq!(run.phase(), Phase::Done);
        assert!(run.answer(Event::Threw { timed_out: false }).is_err());
    }

    #[test]
    fn misuse_is_a_typed_error_and_leaves_the_machine_as_it_was() {
        let (mut run, _) = AgentRun::start(setup(Entry::Run));
        let before = run;
        assert_eq!(
            run.answer(Event::Valid),
            Err(AgentError::Unexpected(Unexpected { awaiting: Phase::Runner, got: EventKind::Valid }))
        );
        assert_eq!(
            run.answer(Event::RunnerError).unwrap_err(),
            AgentError::Unexpected(Unexpected { awaiting: Phase::Runner, got: EventKind::RunnerError })
        );
        assert_eq!(run, before);
        let mut s = setup(Entry::Run);
        s.output_schema = true;
        let (mut run, _) = AgentRun::start(s);
        assert_eq!(
            run.answer(Event::RunnerDone { flags: NONE, timed_out: false, output: None }),
            Err(AgentError::MissingOutput)
        );
        assert_eq!(wire::unpack(-1.0), Err(AgentError::Malformed("machine word")));
        assert_eq!(wire::unpack(0.5), Err(AgentError::Malformed("machine word")));
        assert!(wire::event_from(0, None).is_err());
        assert!(wire::setup_from(3).is_err());
        assert!(wire::setup_code(Setup { retries: 8, ..setup(Entry::Run) }).is_none());
    }

    #[test]
    fn the_typed_handles_drive_a_structured_run_with_a_retry_and_hooks() {
        let mut s = setup(Entry::Prompt);
        s.before_run = true;
        s.after_run = true;
        s.output_schema = true;
        s.trace = true;
        let (mut run, step) = AgentRun::start(s);
        assert_eq!(step.action, Action::BeforeRun);
        let Pending::BeforeRun(hook) = run.pending() else { panic!("{:?}", run.phase()) };
        assert!(matches!(hook.returned(false, true).action, Action::RunRunner { report_output: true, .. }));
        let Pending::Runner(runner) = run.pending() else { panic!() };
        // A structured run's result needs its output.
        assert_eq!(runner.done(NONE, false, None), Err(AgentError::MissingOutput));
        let Pending::Runner(runner) = run.pending() else { panic!() };
        let step = runner.done(NONE, false, Some("not json")).unwrap();
        assert!(matches!(step.action, Action::RunRunner { conversation: Conversation::Retry { .. }, .. }));
        let Pending::Runner(runner) = run.pending() else { panic!() };
        // Outside `stream`, the runner's error event is not an answer.
        assert!(matches!(runner.error(), Err(AgentError::Unexpected(_))));
        let Pending::Runner(runner) = run.pending() else { panic!() };
        let step = runner.done(NONE, false, Some(r#"{"a":1}"#)).unwrap();
        assert_eq!(step.action, Action::Validate { json: r#"{"a":1}"#.into() });
        let Pending::Verdict(verdict) = run.pending() else { panic!() };
        assert!(matches!(verdict.valid().action, Action::AfterRun { build: Some(_) }));
        let Pending::AfterRun(after) = run.pending() else { panic!() };
        assert!(matches!(after.returned().action, Action::Trace { build: None }));
        let Pending::Trace(trace) = run.pending() else { panic!() };
        assert_eq!(trace.emitted().action, Action::Finish { build: None, history: History::Commit });
        assert!(matches!(run.pending(), Pending::Done));
    }

    /// The generated answer types (`agent::wire::EVENT`'s `answers`) let every event the
    /// machine takes through, and name no pair the machine never takes: explored over every
    /// machine reachable from every setup.
    #[test]
    fn the_declared_answers_are_exactly_what_the_machine_takes() {
        use std::collections::HashSet;
        let flags = [NONE, LOOPED, RunFlags { budget_exceeded: true, loop_detected: false, aborted: true }];
        let mut events = vec![Event::RunnerError, Event::Valid, Event::Invalid { message: "m" }];
        events.extend([Event::AfterRunReturned, Event::TraceEmitted]);
        for b in [false, true] {
            events.push(Event::HookReturned { changed: b, has_user: !b });
            events.push(Event::HookReturned { changed: b, has_user: b });
            events.push(Event::Threw { timed_out: b });
            for f in flags {
                for output in [None, Some("{\"a\": 1}"), Some("no json")] {
                    events.push(Event::RunnerDone { flags: f, timed_out: b, output });
                }
            }
        }
        let op = |step: &Step| {
            let code = wire::step_code(step).0 & wire::ACTION_MASK;
            wire::STEP.kinds.iter().find(|k| k.code == code).expect("a declared step").name
        };
        let mut todo = Vec::new();
        for entry in [Entry::Run, Entry::Prompt, Entry::Stream] {
            for bits in 0..64u32 {
                let code = entry as u32
                    | bits << 2
                        & (wire::SETUP_BEFORE_RUN
                            | wire::SETUP_AFTER_RUN
                            | wire::SETUP_OUTPUT_SCHEMA
                            | wire::SETUP_TRACE)
                    | (bits >> 4) << wire::RETRIES_SHIFT;
                for checked in [0, wire::SETUP_CHECKED_RETRIES] {
                    todo.push(AgentRun::start(wire::setup_from(code | checked).unwrap()));
                }
            }
        }
        let mut seen = HashSet::new();
        let mut taken = HashSet::new();
        while let Some((run, step)) = todo.pop() {
            for e in &events {
                let mut next = run;
                let Ok(s) = next.answer(*e) else { continue };
                let kind = wire::EVENT.kinds.iter().find(|k| k.code == e.kind() as u32).unwrap();
                assert!(kind.answers.contains(&op(&step)), "{} answers {} ({:?})", kind.name, op(&step), run.phase);
                taken.insert((kind.name, op(&step)));
                if seen.insert(wire::pack(&next, wire::step_code(&s).0).unwrap().to_bits()) {
                    todo.push((next, s));
                }
            }
        }
        let declared: HashSet<(&str, &str)> =
            wire::EVENT.kinds.iter().flat_map(|k| k.answers.iter().map(move |a| (k.name, *a))).collect();
        assert_eq!(taken, declared);
    }

    #[test]
    fn codes_are_distinct_where_they_share_a_field() {
        let actions = [
            wire::BEFORE_RUN,
            wire::RUN_RUNNER,
            wire::VALIDATE,
            wire::AFTER_RUN,
            wire::TRACE,
            wire::FINISH,
            wire::PASS_ERROR,
        ];
        for a in actions {
            assert_eq!(a & !wire::ACTION_MASK, 0);
            assert_eq!(actions.iter().filter(|&&b| b == a).count(), 1);
        }
        let shape = [
            wire::BUILD,
            wire::FAILED,
            wire::SUCCESS,
            wire::STRUCTURED,
            wire::MERGED,
            wire::LOOP_DETECTED,
            wire::BUDGET_EXCEEDED,
            wire::ABORTED,
            wire::TIMED_OUT,
        ];
        let head = wire::ACTION_MASK | wire::STATUS_MASK | wire::ADD_USAGE;
        let mut seen = head | wire::HISTORY_MASK;
        for bit in shape {
            assert_eq!(seen & bit, 0);
            seen |= bit;
        }
        let events = [
            wire::EV_BUDGET_EXCEEDED,
            wire::EV_LOOP_DETECTED,
            wire::EV_ABORTED,
            wire::EV_TIMED_OUT,
            wire::EV_CHANGED,
            wire::EV_HAS_USER,
        ];
        let run_runner = [wire::REWRITE_LAST_USER, wire::RETRY, wire::REPORT_OUTPUT, wire::COUNT_SPENT];
        let mut seen = head;
        for bit in run_runner {
            assert_eq!(seen & bit, 0);
            seen |= bit;
        }
        assert!(seen < 1 << 20);
        assert!(events.iter().fold(wire::EVENT_KIND_MASK, |all, bit| all | bit) < wire::EVENT_SPAN);
        // A word times the span plus an event stays an exact JS number.
        let setup = Setup {
            before_run: true,
            after_run: true,
            output_schema: true,
            trace: true,
            retries: 7,
            checked_retries: true,
            ..setup(Entry::Stream)
        };
        let run = AgentRun { setup, phase: Phase::Done, attempts: 16, last: LOOPED, timed_out: true };
        let word = wire::pack(&run, 0xfffff).unwrap();
        assert!(word * f64::from(wire::EVENT_SPAN) + f64::from(wire::EVENT_SPAN) < 2f64.powi(53));
        assert_eq!(wire::unpack(word).unwrap(), run);
        for layout in [wire::STEP, wire::EVENT, wire::SETUP] {
            layout.check();
        }
    }
}
