//! The ToolExecutor (CONTRACT §9.2) as a sans-IO machine: the order of the steps of one tool
//! call and every text the call can end with.
//!
//! lookup → abort check → input check → abort check → [gate → abort check] → execute → output check
//! → output limit
//!
//! A call with a timeout (`ToolDefinition.timeoutMs`, or the executor's / runner's
//! `toolTimeoutMs`) may end `execute` with [`Answer::TimedOut`]: the driver's timer, not the
//! tool, decided the outcome, and the call's error text is [`timed_out_text`].
//!
//! A call with an `onToolCall` gate starts at [`Step::GatedLookup`] and walks its own copies of
//! the steps before the gate, so the table itself has no way from such a call to
//! [`Step::Execute`] but through an allow the machine read at [`Step::Gate`]: a driver cannot
//! skip the gate by answering the plain steps.
//!
//! The machine asks for one thing at a time ([`ToolCall::poll`], an [`Action`]); the driver
//! performs it (the JS shim: it looks the tool up, reads the abort signal, calls the user's Zod
//! `safeParse` or the native JSON Schema validator, awaits `execute`, reads `maxOutputChars`)
//! and answers through [`ToolCall::answer`], which hands back the next action. Values stay with the driver (the parsed input, the tool's result
//! object); the machine sees only what it decides on.
//!
//! The machine's state is its [`Step`] plus, while the output limit of an error text is read,
//! that text: a driver may keep both and [`ToolCall::resume`] the machine, so a driver that
//! crosses a language boundary need not keep a machine object per call. Which answers move
//! on without any data is [`transition`] (the JS driver walks that table on the happy path
//! without calling the machine); every other answer goes through [`ToolCall::answer`].

use crate::json::js_number;
use crate::kernel::truncate::truncate_tool_output;
use crate::protocol::Unexpected;
use crate::tool::builtin::input::{self, InputView, ToolInput};

/// One issue of an input or output check: `path` is the issue's path joined with `.`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Issue {
    pub path: String,
    pub message: String,
}

impl Issue {
    pub fn new(path: impl Into<String>, message: impl Into<String>) -> Issue {
        Issue { path: path.into(), message: message.into() }
    }
}

/// Where a call is. Each step but the three `Return*` asks the driver for one thing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Step {
    Lookup = 0,
    AbortBeforeInput,
    CheckInput,
    AbortBeforeExecute,
    Execute,
    CheckOutput,
    /// The output limit for the tool's own result.
    LimitResult,
    /// The output limit for the error text the machine holds (a tool that threw).
    LimitError,
    ReturnResult,
    ReturnCut,
    ReturnError,
    /// The steps before the gate of a call that has one (see the module doc).
    GatedLookup,
    GatedAbortBeforeInput,
    GatedCheckInput,
    AbortBeforeGate,
    /// Call the gate: [`Answer::Decision`], or [`Answer::Threw`] when it threw or rejected.
    Gate,
    /// After an allow: the abort check, then `Execute`.
    AbortAfterGate,
    /// After a deny or a suspend: the abort check, then the refusal's text the call holds.
    AbortAfterRefusal,
}

impl Step {
    pub const ALL: [Step; 18] = [
        Step::Lookup,
        Step::AbortBeforeInput,
        Step::CheckInput,
        Step::AbortBeforeExecute,
        Step::Execute,
        Step::CheckOutput,
        Step::LimitResult,
        Step::LimitError,
        Step::ReturnResult,
        Step::ReturnCut,
        Step::ReturnError,
        Step::GatedLookup,
        Step::GatedAbortBeforeInput,
        Step::GatedCheckInput,
        Step::AbortBeforeGate,
        Step::Gate,
        Step::AbortAfterGate,
        Step::AbortAfterRefusal,
    ];

    pub fn from_code(code: u32) -> Option<Step> {
        Step::ALL.get(code as usize).copied()
    }

    /// What the driver does at this step, without the data the machine may hold.
    pub fn action_kind(self) -> ActionKind {
        match self {
            Step::Lookup | Step::GatedLookup => ActionKind::Lookup,
            Step::AbortBeforeInput
            | Step::AbortBeforeExecute
            | Step::GatedAbortBeforeInput
            | Step::AbortBeforeGate
            | Step::AbortAfterGate
            | Step::AbortAfterRefusal => ActionKind::CheckAbort,
            Step::CheckInput | Step::GatedCheckInput => ActionKind::CheckInput,
            Step::Gate => ActionKind::CallGate,
            Step::Execute => ActionKind::Execute,
            Step::CheckOutput => ActionKind::ParseOutput,
            Step::LimitResult | Step::LimitError => ActionKind::ReadLimit,
            Step::ReturnResult => ActionKind::ReturnResult,
            Step::ReturnCut => ActionKind::ReturnCut,
            Step::ReturnError => ActionKind::ReturnError,
        }
    }
}

/// The kinds of [`Action`], as a driver that keeps only the step dispatches on them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum ActionKind {
    Lookup = 0,
    CheckAbort,
    CheckInput,
    Execute,
    ParseOutput,
    ReadLimit,
    ReturnResult,
    ReturnCut,
    ReturnError,
    CallGate,
}

impl ActionKind {
    pub const ALL: [ActionKind; 10] = [
        ActionKind::Lookup,
        ActionKind::CheckAbort,
        ActionKind::CheckInput,
        ActionKind::Execute,
        ActionKind::ParseOutput,
        ActionKind::ReadLimit,
        ActionKind::ReturnResult,
        ActionKind::ReturnCut,
        ActionKind::ReturnError,
        ActionKind::CallGate,
    ];

    pub fn name(self) -> &'static str {
        match self {
            ActionKind::Lookup => "LOOKUP",
            ActionKind::CheckAbort => "CHECK_ABORT",
            ActionKind::CheckInput => "CHECK_INPUT",
            ActionKind::Execute => "EXECUTE",
            ActionKind::ParseOutput => "PARSE_OUTPUT",
            ActionKind::ReadLimit => "READ_LIMIT",
            ActionKind::ReturnResult => "RETURN_RESULT",
            ActionKind::ReturnCut => "RETURN_CUT",
            ActionKind::ReturnError => "RETURN_ERROR",
            ActionKind::CallGate => "CALL_GATE",
        }
    }
}

/// What the machine asks the driver to do.
#[derive(Clone, Debug, PartialEq)]
pub enum Action<'a> {
    /// Find the tool in the registry: [`Answer::Found`] or [`Answer::Missing`].
    Lookup,
    /// Read the call's abort signal: [`Answer::NotAborted`] or [`Answer::Aborted`].
    CheckAbort,
    /// Check the input with the tool's input schema: a Zod schema's `safeParse` (its `data`
    /// is the input `execute` gets), the native JSON Schema validator, or, for a built-in
    /// tool, a description of the input ([`Answer::BuiltinInput`]) that the machine checks.
    CheckInput,
    /// Call `execute(input, context)` and await it; classify what it returned or threw. With a
    /// timeout, the tool gets a signal that also aborts when it passes, and the driver answers
    /// [`Answer::TimedOut`] at once then, whether or not `execute` ever settles.
    Execute,
    /// Parse the result's `data` with the tool's output schema, if it has one.
    ParseOutput,
    /// Read `tool.maxOutputChars ?? executor.maxToolOutputChars` and compare the text's
    /// length with it: the result's `data` at [`Step::LimitResult`], the machine's error text
    /// at [`Step::LimitError`].
    ReadLimit,
    /// Resolve with the tool's result object as it is.
    ReturnResult,
    /// Resolve with a copy of the tool's result (`{ ...result, data }`) whose `data` is the
    /// result's `data` cut to `max` UTF-16 units (`truncate_tool_output`).
    ReturnCut { max: usize },
    /// Resolve with `{ data: this, isError: true }`.
    ReturnError(&'a str),
    /// Call the `onToolCall` gate (sync or async) with the call's context (`toolName`, the
    /// checked `input`, `agentName`, `consequential` when true, `runId`, `taskId`, `toolCallId`
    /// when defined) and describe what it decided ([`Answer::Decision`]) or threw.
    CallGate,
}

/// A gate's decision as the driver sees it; the machine validates it (upstream's rules).
#[derive(Clone, Debug, PartialEq)]
pub struct Decision<'a> {
    /// A non-null object (anything else is an invalid decision).
    pub object: bool,
    /// Its `action` when that is a string.
    pub action: Option<&'a str>,
    pub reason: Reason<'a>,
}

/// A decision's `reason`.
#[derive(Clone, Debug, PartialEq)]
pub enum Reason<'a> {
    Absent,
    Text(&'a str),
    /// Present (not `undefined`) but not a string: the decision is invalid.
    NotText,
}

/// What a valid decision asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GateAction {
    Allow,
    Deny,
    /// Upstream's durable approval (1.14+): only an orchestrated checkpointed task can suspend;
    /// here the call ends with an error result (see [`suspend_text`]).
    Suspend,
}

impl GateAction {
    pub fn name(self) -> &'static str {
        match self {
            GateAction::Allow => "allow",
            GateAction::Deny => "deny",
            GateAction::Suspend => "suspend",
        }
    }
}

/// The gate's recorded verdict: the result's `metadata.toolCallGate`. A reason is kept only
/// for deny and suspend (an allow's reason is dropped, as upstream).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Verdict {
    pub action: GateAction,
    pub reason: Option<String>,
}

impl Decision<'_> {
    /// Upstream's validation: a non-null object whose `action` is one it knows and whose
    /// `reason`, if present, is a string.
    pub fn verdict(&self) -> Option<Verdict> {
        if !self.object {
            return None;
        }
        let action = match self.action? {
            "allow" => GateAction::Allow,
            "deny" => GateAction::Deny,
            "suspend" => GateAction::Suspend,
            _ => return None,
        };
        let reason = match self.reason {
            Reason::Absent => None,
            Reason::Text(r) => Some(r),
            Reason::NotText => return None,
        };
        let reason = if action == GateAction::Allow { None } else { reason.map(str::to_string) };
        Some(Verdict { action, reason })
    }
}

/// The text of a gate's `suspend` outside an orchestrated checkpointed task. Upstream's own
/// text for this case could not be read (its 1.14+ executor is not available); this one is
/// the kernel's.
pub fn suspend_text(name: &str) -> String {
    format!(
        "Tool \"{name}\" was suspended by onToolCall, but only an orchestrated checkpointed task can suspend a tool call; the call was not executed."
    )
}

/// The result text of a call whose timeout passed before `execute` settled (beyond upstream,
/// which has no per-tool timeout). `ms` is written as JS writes the number.
pub fn timed_out_text(name: &str, ms: f64) -> String {
    format!("Tool \"{name}\" timed out after {}ms.", js_number(ms))
}

/// The error of a per-tool timeout setting that is not a number of milliseconds. `setting`
/// names where it was given (`ToolExecutorOptions.toolTimeoutMs`, `tool "x" timeoutMs`, …),
/// `got` describes the value.
pub fn invalid_timeout_text(setting: &str, got: &str) -> String {
    format!("{setting} must be a number of milliseconds (unset, 0 or less: no timeout), got {got}")
}

/// Texts of a call that the JS drivers write themselves (through `lib/generated/boundary.js`);
/// `{name}` marks a parameter.
pub mod texts {
    /// A result that is not an object (the machine's `BAD_RESULT`, and the runner's own read).
    pub const INVALID_RESULT_NOT_OBJECT: &str =
        "Tool \"{name}\" returned an invalid result: expected an object with a string \"data\", got {got}";
    /// The answer to a call that was running (its gate or its tool awaited) when its abort
    /// signal fired.
    pub const ABORTED_DURING_EXECUTION: &str = "Tool \"{name}\" was aborted during execution.";
    /// The setting name of a tool's own `timeoutMs` (the `setting` of [`super::invalid_timeout_text`]).
    pub const TOOL_TIMEOUT_SETTING: &str = "timeoutMs of tool \"{name}\"";
}

/// `ToolExecutorOptions.maxConcurrency` when unset.
pub const DEFAULT_MAX_CONCURRENCY: u32 = 4;

/// How a tool's result failed the result checks (§9.2 step 7).
#[derive(Clone, Debug, PartialEq)]
pub enum BadResult {
    /// `undefined` or `null` (`"undefined"` / `"null"`): reading its `isError` throws.
    Nullish(&'static str),
    /// Not an object: its `typeof`.
    NotObject(String),
    /// `data` is not a string: `"null"` or its `typeof`.
    DataNotString(String),
}

/// The driver's answer to the current [`Action`]. [`AnswerKind`] names them without data.
#[derive(Clone, Debug, PartialEq)]
pub enum Answer<'a> {
    Found,
    Missing,
    NotAborted,
    Aborted,
    InputValid,
    InputInvalid(Vec<Issue>),
    /// A getter or Proxy trap threw while the input was read.
    InputUnreadable(String),
    /// `JSON.stringify` of the input threw (a JSON Schema tool).
    InputNotJson(String),
    /// A built-in tool's input as the driver sees it; the machine checks it.
    BuiltinInput(&'static ToolInput, InputView<'a>),
    /// `execute` gave an object with a string `data`; `is_error` is its `isError`.
    Returned {
        is_error: bool,
    },
    BadResult(BadResult),
    /// `execute` (or reading its result, the output schema or the limit) threw this text.
    Threw(String),
    OutputValid,
    OutputInvalid(Vec<Issue>),
    /// No limit is set, or the text is no longer than it.
    LimitFits,
    /// The limit (`maxOutputChars`), shorter than the text.
    Limit(f64),
    /// What the gate returned (or its promise resolved with).
    Decision(Decision<'a>),
    /// The call's timeout (in ms) passed before `execute` settled: the driver aborted the
    /// tool's signal and does not wait for it.
    TimedOut(f64),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum AnswerKind {
    Found = 0,
    Missing,
    NotAborted,
    Aborted,
    InputValid,
    InputInvalid,
    InputUnreadable,
    InputNotJson,
    BuiltinInput,
    Returned,
    ReturnedIsError,
    BadResult,
    Threw,
    OutputValid,
    OutputInvalid,
    LimitFits,
    Limit,
    Decision,
    TimedOut,
}

impl AnswerKind {
    pub const ALL: [AnswerKind; 19] = [
        AnswerKind::Found,
        AnswerKind::Missing,
        AnswerKind::NotAborted,
        AnswerKind::Aborted,
        AnswerKind::InputValid,
        AnswerKind::InputInvalid,
        AnswerKind::InputUnreadable,
        AnswerKind::InputNotJson,
        AnswerKind::BuiltinInput,
        AnswerKind::Returned,
        AnswerKind::ReturnedIsError,
        AnswerKind::BadResult,
        AnswerKind::Threw,
        AnswerKind::OutputValid,
        AnswerKind::OutputInvalid,
        AnswerKind::LimitFits,
        AnswerKind::Limit,
        AnswerKind::Decision,
        AnswerKind::TimedOut,
    ];

    pub fn from_code(code: u32) -> Option<AnswerKind> {
        AnswerKind::ALL.get(code as usize).copied()
    }

    pub fn name(self) -> &'static str {
        match self {
            AnswerKind::Found => "FOUND",
            AnswerKind::Missing => "MISSING",
            AnswerKind::NotAborted => "NOT_ABORTED",
            AnswerKind::Aborted => "ABORTED",
            AnswerKind::InputValid => "INPUT_VALID",
            AnswerKind::InputInvalid => "INPUT_INVALID",
            AnswerKind::InputUnreadable => "INPUT_UNREADABLE",
            AnswerKind::InputNotJson => "INPUT_NOT_JSON",
            AnswerKind::BuiltinInput => "BUILTIN_INPUT",
            AnswerKind::Returned => "RETURNED",
            AnswerKind::ReturnedIsError => "RETURNED_IS_ERROR",
            AnswerKind::BadResult => "BAD_RESULT",
            AnswerKind::Threw => "THREW",
            AnswerKind::OutputValid => "OUTPUT_VALID",
            AnswerKind::OutputInvalid => "OUTPUT_INVALID",
            AnswerKind::LimitFits => "LIMIT_FITS",
            AnswerKind::Limit => "LIMIT",
            AnswerKind::Decision => "DECISION",
            AnswerKind::TimedOut => "TIMED_OUT",
        }
    }
}

impl Answer<'_> {
    pub fn kind(&self) -> AnswerKind {
        match self {
            Answer::Found => AnswerKind::Found,
            Answer::Missing => AnswerKind::Missing,
            Answer::NotAborted => AnswerKind::NotAborted,
            Answer::Aborted => AnswerKind::Aborted,
            Answer::InputValid => AnswerKind::InputValid,
            Answer::InputInvalid(_) => AnswerKind::InputInvalid,
            Answer::InputUnreadable(_) => AnswerKind::InputUnreadable,
            Answer::InputNotJson(_) => AnswerKind::InputNotJson,
            Answer::BuiltinInput(..) => AnswerKind::BuiltinInput,
            Answer::Returned { is_error: false } => AnswerKind::Returned,
            Answer::Returned { is_error: true } => AnswerKind::ReturnedIsError,
            Answer::BadResult(_) => AnswerKind::BadResult,
            Answer::Threw(_) => AnswerKind::Threw,
            Answer::OutputValid => AnswerKind::OutputValid,
            Answer::OutputInvalid(_) => AnswerKind::OutputInvalid,
            Answer::LimitFits => AnswerKind::LimitFits,
            Answer::Limit(_) => AnswerKind::Limit,
            Answer::Decision(_) => AnswerKind::Decision,
            Answer::TimedOut(_) => AnswerKind::TimedOut,
        }
    }
}

/// Where an answer leads, before its data is looked at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transition {
    /// To this step, whatever the answer's data (nothing to render).
    To(Step),
    /// The machine reads the answer's data (a text to render, a check to run, a limit).
    Decide,
    /// The answer does not belong to this step.
    Invalid,
}

/// The order of the steps: the one definition both [`ToolCall::answer`] and the JS driver's
/// table follow.
pub fn transition(step: Step, kind: AnswerKind) -> Transition {
    use AnswerKind as K;
    use Step as S;
    use Transition::{Decide, Invalid, To};
    match (step, kind) {
        (S::Lookup, K::Found) => To(S::AbortBeforeInput),
        (S::GatedLookup, K::Found) => To(S::GatedAbortBeforeInput),
        (S::Lookup | S::GatedLookup, K::Missing) => Decide,
        (S::AbortBeforeInput, K::NotAborted) => To(S::CheckInput),
        (S::GatedAbortBeforeInput, K::NotAborted) => To(S::GatedCheckInput),
        (S::AbortBeforeExecute, K::NotAborted) => To(S::Execute),
        (S::AbortBeforeGate, K::NotAborted) => To(S::Gate),
        // Reached only from an allow (`decide`): the one way from a gated call to Execute.
        (S::AbortAfterGate, K::NotAborted) => To(S::Execute),
        (S::AbortAfterRefusal, K::NotAborted) => To(S::ReturnError),
        (
            S::AbortBeforeInput
            | S::AbortBeforeExecute
            | S::GatedAbortBeforeInput
            | S::AbortBeforeGate
            | S::AbortAfterGate
            | S::AbortAfterRefusal,
            K::Aborted,
        ) => Decide,
        (S::CheckInput, K::InputValid) => To(S::AbortBeforeExecute),
        (S::GatedCheckInput, K::InputValid) => To(S::AbortBeforeGate),
        (
            S::CheckInput | S::GatedCheckInput,
            K::InputInvalid | K::InputUnreadable | K::InputNotJson | K::BuiltinInput,
        ) => Decide,
        (S::Gate, K::Decision | K::Threw) => Decide,
        (S::Execute, K::Returned) => To(S::CheckOutput),
        // A result that reports its own error is not checked against the output schema.
        (S::Execute, K::ReturnedIsError) => To(S::LimitResult),
        (S::Execute, K::BadResult) => Decide,
        // Only while `execute` is awaited: the timeout covers the tool, not the gate's wait.
        (S::Execute, K::TimedOut) => Decide,
        (S::CheckOutput, K::OutputValid) => To(S::LimitResult),
        (S::CheckOutput, K::OutputInvalid) => Decide,
        // The original wraps everything after `execute` starts in one try: whatever throws
        // there becomes the tool's error text.
        (S::Execute | S::CheckOutput | S::LimitResult, K::Threw) => Decide,
        (S::LimitResult, K::LimitFits) => To(S::ReturnResult),
        (S::LimitResult | S::LimitError, K::Limit) => Decide,
        (S::LimitError, K::LimitFits) => To(S::ReturnError),
        // A limit that cannot be read leaves the error text whole.
        (S::LimitError, K::Threw) => To(S::ReturnError),
        _ => Invalid,
    }
}

/// The protocol as the JS driver walks it (`executor` in `lib/generated/boundary.js`): the
/// [`transition`] table flattened to numbers, and the codes of the answers that carry bits.
pub mod wire {
    use super::{transition, AnswerKind, Step, Transition};

    /// A `next` entry for an answer the machine must see ([`Transition::Decide`]).
    pub const DECIDE: i32 = -1;
    /// A `next` entry for an answer the step does not take ([`Transition::Invalid`]).
    pub const INVALID: i32 = -2;

    /// The bits of a `DECISION` answer's `num`: how the gate's decision looks to the driver.
    pub const DECISION_OBJECT: u32 = 1;
    pub const DECISION_ACTION_STRING: u32 = 2;
    pub const DECISION_REASON_STRING: u32 = 4;
    pub const DECISION_REASON_OTHER: u32 = 8;
    pub const DECISION_BITS: [(&str, u32); 4] = [
        ("OBJECT", DECISION_OBJECT),
        ("ACTION_STRING", DECISION_ACTION_STRING),
        ("REASON_STRING", DECISION_REASON_STRING),
        ("REASON_OTHER", DECISION_REASON_OTHER),
    ];

    /// The names of a `BAD_RESULT` answer's sub-codes (its `num`), by code.
    pub const BAD_RESULT_KINDS: [&str; 3] = ["NULLISH", "NOT_OBJECT", "DATA_NOT_STRING"];

    /// The `next` entry of `(step, kind)`: the next step's code, [`DECIDE`] or [`INVALID`].
    pub fn next(step: Step, kind: AnswerKind) -> i32 {
        match transition(step, kind) {
            Transition::To(s) => s as i32,
            Transition::Decide => DECIDE,
            Transition::Invalid => INVALID,
        }
    }
}

/// An answer the current step does not take (a driver bug): the machines' one misuse error
/// (`crate::protocol`), awaiting a step's answer.
pub type Misuse = Unexpected<Step, AnswerKind>;

impl std::fmt::Display for Misuse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the tool executor cannot take {} at step {:?}", self.got.name(), self.awaiting)
    }
}

impl std::error::Error for Misuse {}

/// One tool call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    /// The tool's name as called, then (once found) as the registry holds it.
    name: String,
    step: Step,
    /// The error text being returned (steps `LimitError`, `ReturnError`).
    text: String,
    /// The limit the result's `data` is cut to (step `ReturnCut`).
    cut: usize,
    /// The gate's verdict, once the machine read a valid decision.
    verdict: Option<Verdict>,
}

impl ToolCall {
    pub fn new(name: impl Into<String>) -> ToolCall {
        ToolCall { name: name.into(), step: Step::Lookup, text: String::new(), cut: 0, verdict: None }
    }

    /// A call with an `onToolCall` gate: it cannot reach `Execute` without the gate's allow.
    pub fn gated(name: impl Into<String>) -> ToolCall {
        ToolCall { step: Step::GatedLookup, ..ToolCall::new(name) }
    }

    /// The machine at `step`, holding `text` (see [`ToolCall::text`]): what a driver that
    /// keeps only these two rebuilds. `name` is the tool's name (the registered tool's own
    /// `name` once found).
    pub fn resume(name: impl Into<String>, step: Step, text: impl Into<String>) -> ToolCall {
        ToolCall { name: name.into(), step, text: text.into(), cut: 0, verdict: None }
    }

    /// The gate's verdict (the result's `metadata.toolCallGate`), once it decided.
    pub fn verdict(&self) -> Option<&Verdict> {
        self.verdict.as_ref()
    }

    pub fn step(&self) -> Step {
        self.step
    }

    /// The error text the call holds at `LimitError`, `AbortAfterRefusal` and `ReturnError`;
    /// empty otherwise.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// What the machine asks for now, with the data it holds for it.
    pub fn poll(&self) -> Action<'_> {
        match self.step.action_kind() {
            ActionKind::Lookup => Action::Lookup,
            ActionKind::CheckAbort => Action::CheckAbort,
            ActionKind::CheckInput => Action::CheckInput,
            ActionKind::Execute => Action::Execute,
            ActionKind::ParseOutput => Action::ParseOutput,
            ActionKind::ReadLimit => Action::ReadLimit,
            ActionKind::ReturnResult => Action::ReturnResult,
            ActionKind::ReturnCut => Action::ReturnCut { max: self.cut },
            ActionKind::ReturnError => Action::ReturnError(&self.text),
            ActionKind::CallGate => Action::CallGate,
        }
    }

    /// The one entry: the driver's answer to the current action ([`ToolCall::poll`]); the next
    /// action.
    pub fn answer(&mut self, answer: Answer) -> Result<Action<'_>, Misuse> {
        let kind = answer.kind();
        match transition(self.step, kind) {
            Transition::Invalid => return Err(Misuse { awaiting: self.step, got: kind }),
            Transition::To(next) => self.step = next,
            Transition::Decide => self.decide(answer),
        }
        Ok(self.poll())
    }

    fn fail(&mut self, text: String) {
        self.text = text;
        self.step = Step::ReturnError;
    }

    fn decide(&mut self, answer: Answer) {
        let name = &self.name;
        match answer {
            Answer::Missing => self.fail(format!("Tool \"{name}\" is not registered in the ToolRegistry.")),
            Answer::Aborted => self.fail(format!("Tool \"{name}\" was aborted before execution began.")),
            Answer::InputInvalid(issues) => self.fail(invalid_input(name, &issues)),
            Answer::InputUnreadable(msg) => {
                self.fail(invalid_input(name, &[Issue::new("", format!("input cannot be read: {msg}"))]))
            }
            Answer::InputNotJson(msg) => {
                self.fail(invalid_input(name, &[Issue::new("", format!("input cannot be written as JSON: {msg}"))]))
            }
            Answer::BuiltinInput(tool, view) => match input::check(tool, &view) {
                Some(issues) => self.fail(invalid_input(name, &issues)),
                None if self.step == Step::GatedCheckInput => self.step = Step::AbortBeforeGate,
                None => self.step = Step::AbortBeforeExecute,
            },
            // Upstream's texts; the gate's own failures carry no verdict.
            Answer::Threw(msg) if self.step == Step::Gate => {
                self.fail(format!("Tool \"{name}\" onToolCall hook threw an error: {msg}"))
            }
            Answer::Decision(decision) => match decision.verdict() {
                None => self.fail(format!("Tool \"{name}\" onToolCall hook returned an invalid onToolCall decision.")),
                Some(verdict) => {
                    // Upstream checks the abort signal after a valid decision and before acting
                    // on it: a deny of an aborted call reads as the abort.
                    match (verdict.action, verdict.reason.as_deref()) {
                        (GateAction::Allow, _) => self.step = Step::AbortAfterGate,
                        (action, reason) => {
                            self.text = match (action, reason) {
                                // An empty reason counts as none (upstream tests its truthiness).
                                (GateAction::Deny, Some(r)) if !r.is_empty() => {
                                    format!("Tool \"{name}\" denied by onToolCall: {r}")
                                }
                                (GateAction::Deny, _) => format!("Tool \"{name}\" denied by onToolCall."),
                                _ => suspend_text(name),
                            };
                            self.step = Step::AbortAfterRefusal;
                        }
                    }
                    self.verdict = Some(verdict);
                }
            },
            Answer::BadResult(BadResult::Nullish(v)) => {
                self.threw(&format!("Cannot read properties of {v} (reading 'isError')"))
            }
            Answer::BadResult(BadResult::NotObject(t)) => self.fail(crate::boundary::fill(
                texts::INVALID_RESULT_NOT_OBJECT,
                &[("name", name.as_str()), ("got", t.as_str())],
            )),
            Answer::BadResult(BadResult::DataNotString(t)) => {
                self.fail(format!("Tool \"{name}\" returned an invalid result: \"data\" must be a string, got {t}"))
            }
            Answer::Threw(msg) => self.threw(&msg),
            // Limited like a thrown error's text: both are the kernel's words about the call.
            Answer::TimedOut(ms) => {
                self.text = timed_out_text(&self.name, ms);
                self.step = Step::LimitError;
            }
            Answer::OutputInvalid(issues) => {
                self.fail(format!("Invalid output for tool \"{name}\":\n{}", issue_lines(&issues)))
            }
            Answer::Limit(max) => self.limit(max),
            // `transition` routes every other answer without data.
            _ => unreachable!("transition() decides {:?} at {:?}", answer.kind(), self.step),
        }
    }

    fn threw(&mut self, msg: &str) {
        self.text = format!("Tool \"{}\" threw an error: {msg}", self.name);
        self.step = Step::LimitError;
    }

    /// A limit shorter than the text. A limit of 0 or less means none; otherwise the text is
    /// cut to it (a fraction rounds down, NaN cuts to nothing, as the original's conversion).
    fn limit(&mut self, max: f64) {
        // `NaN <= 0` is false: NaN cuts (to 0).
        let cut = if max <= 0.0 { None } else { Some(max as usize) };
        match (self.step, cut) {
            (Step::LimitResult, None) => self.step = Step::ReturnResult,
            (Step::LimitResult, Some(n)) => {
                self.cut = n;
                self.step = Step::ReturnCut;
            }
            (_, None) => self.step = Step::ReturnError,
            (_, Some(n)) => {
                self.text = truncate_tool_output(&self.text, n);
                self.step = Step::ReturnError;
            }
        }
    }
}

/// What the call waits for, with the handle that answers it: the typed form of
/// [`ToolCall::answer`] for a Rust driver, in the style of the runner's `Pending`. Each handle
/// takes only the answers its action takes (the [`transition`] table stays the one definition:
/// a test ties every handle's answers to it), so an answer of the wrong kind does not compile.
/// The JS driver answers by kind through the binding, and a wrong one is a [`Misuse`].
///
/// An input verdict given to the lookup does not compile:
///
/// ```compile_fail,E0599
/// use oma_core::tool::executor::{Pending, ToolCall};
/// let mut call = ToolCall::new("t");
/// if let Pending::Lookup(lookup) = call.pending() {
///     lookup.valid();
/// }
/// ```
#[derive(Debug)]
pub enum Pending<'c> {
    Lookup(Lookup<'c>),
    CheckAbort(AbortCheck<'c>),
    CheckInput(InputCheck<'c>),
    CallGate(GateCall<'c>),
    Execute(Execution<'c>),
    ParseOutput(OutputCheck<'c>),
    ReadLimit(LimitRead<'c>),
    /// The call is over: [`ToolCall::poll`] says with what.
    Done,
}

impl ToolCall {
    /// The handle that answers what the call waits for (see [`Pending`]).
    pub fn pending(&mut self) -> Pending<'_> {
        match self.step.action_kind() {
            ActionKind::Lookup => Pending::Lookup(Lookup(self)),
            ActionKind::CheckAbort => Pending::CheckAbort(AbortCheck(self)),
            ActionKind::CheckInput => Pending::CheckInput(InputCheck(self)),
            ActionKind::CallGate => Pending::CallGate(GateCall(self)),
            ActionKind::Execute => Pending::Execute(Execution(self)),
            ActionKind::ParseOutput => Pending::ParseOutput(OutputCheck(self)),
            ActionKind::ReadLimit => Pending::ReadLimit(LimitRead(self)),
            ActionKind::ReturnResult | ActionKind::ReturnCut | ActionKind::ReturnError => Pending::Done,
        }
    }
}

/// Gives an answer the handle's action takes: the machine cannot refuse it.
fn taken<'c>(call: &'c mut ToolCall, answer: Answer) -> Action<'c> {
    call.answer(answer).expect("the handle's action takes this answer")
}

macro_rules! handles {
    ($($(#[$doc:meta])* $name:ident { $($(#[$mdoc:meta])* fn $method:ident($($arg:ident: $ty:ty),*) => $answer:expr;)* })*) => {$(
        $(#[$doc])*
        #[derive(Debug)]
        pub struct $name<'c>(&'c mut ToolCall);

        impl<'c> $name<'c> {
            $(
                $(#[$mdoc])*
                pub fn $method(self, $($arg: $ty),*) -> Action<'c> {
                    taken(self.0, $answer)
                }
            )*
        }
    )*};
}

handles! {
    /// [`Action::Lookup`]'s handle.
    Lookup {
        fn found() => Answer::Found;
        fn missing() => Answer::Missing;
    }
    /// [`Action::CheckAbort`]'s handle.
    AbortCheck {
        fn not_aborted() => Answer::NotAborted;
        fn aborted() => Answer::Aborted;
    }
    /// [`Action::CheckInput`]'s handle.
    InputCheck {
        fn valid() => Answer::InputValid;
        fn invalid(issues: Vec<Issue>) => Answer::InputInvalid(issues);
        /// A getter or Proxy trap threw while the input was read.
        fn unreadable(message: String) => Answer::InputUnreadable(message);
        /// `JSON.stringify` of the input threw (a JSON Schema tool).
        fn not_json(message: String) => Answer::InputNotJson(message);
        /// A built-in tool's input as the driver sees it; the machine checks it.
        fn builtin(tool: &'static ToolInput, view: InputView<'_>) => Answer::BuiltinInput(tool, view);
    }
    /// [`Action::CallGate`]'s handle.
    GateCall {
        fn decision(decision: Decision<'_>) => Answer::Decision(decision);
        fn threw(message: String) => Answer::Threw(message);
    }
    /// [`Action::Execute`]'s handle.
    Execution {
        fn returned(is_error: bool) => Answer::Returned { is_error };
        fn bad_result(bad: BadResult) => Answer::BadResult(bad);
        fn threw(message: String) => Answer::Threw(message);
        /// The call's timeout (ms) passed before `execute` settled.
        fn timed_out(ms: f64) => Answer::TimedOut(ms);
    }
    /// [`Action::ParseOutput`]'s handle.
    OutputCheck {
        fn valid() => Answer::OutputValid;
        fn invalid(issues: Vec<Issue>) => Answer::OutputInvalid(issues);
        fn threw(message: String) => Answer::Threw(message);
    }
    /// [`Action::ReadLimit`]'s handle.
    LimitRead {
        fn fits() => Answer::LimitFits;
        /// The limit, shorter than the text.
        fn limit(max: f64) => Answer::Limit(max);
        fn threw(message: String) => Answer::Threw(message);
    }
}

fn issue_lines(issues: &[Issue]) -> String {
    let mut out = String::new();
    for (i, issue) in issues.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str("  \u{2022} ");
        out.push_str(&issue.path);
        out.push_str(": ");
        out.push_str(&issue.message);
    }
    out
}

/// The text of a failed input check (also what a built-in tool's own `execute` returns).
pub fn invalid_input(name: &str, issues: &[Issue]) -> String {
    format!("Invalid input for tool \"{name}\":\n{}", issue_lines(issues))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::builtin::input::{FieldValue, JsType};

    /// A scripted driver: answers in order; records each action the machine asked for and
    /// checks it against the script. Ends with the final action.
    fn drive(name: &str, script: Vec<(ActionKind, Answer<'static>)>) -> (Vec<ActionKind>, Action<'static>) {
        drive_call(&mut ToolCall::new(name), script)
    }

    /// `drive` on a call the test made (a gated one keeps its verdict for the test to read).
    fn drive_call(
        call: &mut ToolCall,
        script: Vec<(ActionKind, Answer<'static>)>,
    ) -> (Vec<ActionKind>, Action<'static>) {
        let mut seen = Vec::new();
        for (expect, answer) in script {
            let kind = call.step().action_kind();
            assert_eq!(kind, expect, "asked for {kind:?}, the script expected {expect:?}");
            seen.push(kind);
            call.answer(answer).unwrap();
        }
        let end = match call.poll() {
            Action::ReturnError(t) => Action::ReturnError(Box::leak(t.to_string().into_boxed_str())),
            other => other.clone_static(),
        };
        (seen, end)
    }

    impl Action<'_> {
        fn clone_static(&self) -> Action<'static> {
            match self {
                Action::Lookup => Action::Lookup,
                Action::CheckAbort => Action::CheckAbort,
                Action::CheckInput => Action::CheckInput,
                Action::Execute => Action::Execute,
                Action::ParseOutput => Action::ParseOutput,
                Action::ReadLimit => Action::ReadLimit,
                Action::ReturnResult => Action::ReturnResult,
                Action::ReturnCut { max } => Action::ReturnCut { max: *max },
                Action::CallGate => Action::CallGate,
                Action::ReturnError(_) => unreachable!(),
            }
        }
    }

    use ActionKind as A;

    fn happy_until_execute() -> Vec<(ActionKind, Answer<'static>)> {
        vec![
            (A::Lookup, Answer::Found),
            (A::CheckAbort, Answer::NotAborted),
            (A::CheckInput, Answer::InputValid),
            (A::CheckAbort, Answer::NotAborted),
        ]
    }

    fn with(
        mut head: Vec<(ActionKind, Answer<'static>)>,
        tail: Vec<(ActionKind, Answer<'static>)>,
    ) -> Vec<(ActionKind, Answer<'static>)> {
        head.extend(tail);
        head
    }

    fn error(text: &str) -> Action<'static> {
        Action::ReturnError(Box::leak(text.to_string().into_boxed_str()))
    }

    #[test]
    fn happy_path_asks_in_the_contracts_order_and_returns_the_result() {
        let script = with(
            happy_until_execute(),
            vec![
                (A::Execute, Answer::Returned { is_error: false }),
                (A::ParseOutput, Answer::OutputValid),
                (A::ReadLimit, Answer::LimitFits),
            ],
        );
        let (seen, end) = drive("t", script);
        assert_eq!(
            seen,
            [A::Lookup, A::CheckAbort, A::CheckInput, A::CheckAbort, A::Execute, A::ParseOutput, A::ReadLimit]
        );
        assert_eq!(end, Action::ReturnResult);
    }

    #[test]
    fn an_error_result_skips_the_output_schema() {
        let script = with(
            happy_until_execute(),
            vec![(A::Execute, Answer::Returned { is_error: true }), (A::ReadLimit, Answer::LimitFits)],
        );
        assert_eq!(drive("t", script).1, Action::ReturnResult);
    }

    #[test]
    fn missing_tool_and_aborts() {
        let (seen, end) = drive("nope", vec![(A::Lookup, Answer::Missing)]);
        assert_eq!(seen, [A::Lookup]);
        assert_eq!(end, error("Tool \"nope\" is not registered in the ToolRegistry."));
        let (_, end) = drive("t", vec![(A::Lookup, Answer::Found), (A::CheckAbort, Answer::Aborted)]);
        assert_eq!(end, error("Tool \"t\" was aborted before execution began."));
        let mut script = happy_until_execute();
        script[3].1 = Answer::Aborted;
        assert_eq!(drive("t", script).1, error("Tool \"t\" was aborted before execution began."));
    }

    fn input(answer: Answer<'static>) -> Action<'static> {
        drive("t", vec![(A::Lookup, Answer::Found), (A::CheckAbort, Answer::NotAborted), (A::CheckInput, answer)]).1
    }

    #[test]
    fn input_failures() {
        assert_eq!(
            input(Answer::InputInvalid(vec![Issue::new("n", "Expected number, received string")])),
            error("Invalid input for tool \"t\":\n  \u{2022} n: Expected number, received string")
        );
        assert_eq!(
            input(Answer::InputInvalid(vec![Issue::new("", "a"), Issue::new("x.0", "b")])),
            error("Invalid input for tool \"t\":\n  \u{2022} : a\n  \u{2022} x.0: b")
        );
        assert_eq!(
            input(Answer::InputUnreadable("getter".into())),
            error("Invalid input for tool \"t\":\n  \u{2022} : input cannot be read: getter")
        );
        assert_eq!(
            input(Answer::InputNotJson("Converting circular structure to JSON".into())),
            error("Invalid input for tool \"t\":\n  \u{2022} : input cannot be written as JSON: Converting circular structure to JSON")
        );
    }

    #[test]
    fn builtin_input_is_checked_by_the_machine() {
        let tool = input::tool("file_read").unwrap();
        let fields: &'static [FieldValue] = Box::leak(Box::new([
            FieldValue { ty: JsType::Undefined, num: 0.0 },
            FieldValue { ty: JsType::Number, num: 1.5 },
            FieldValue { ty: JsType::Undefined, num: 0.0 },
        ]));
        assert_eq!(
            input(Answer::BuiltinInput(tool, InputView { top: JsType::Object, fields })),
            error("Invalid input for tool \"t\":\n  \u{2022} path: Required\n  \u{2022} offset: Expected integer, received float")
        );
        let valid: &'static [FieldValue] = Box::leak(Box::new([
            FieldValue { ty: JsType::String, num: 3.0 },
            FieldValue { ty: JsType::Undefined, num: 0.0 },
            FieldValue { ty: JsType::Undefined, num: 0.0 },
        ]));
        let script = vec![
            (A::Lookup, Answer::Found),
            (A::CheckAbort, Answer::NotAborted),
            (A::CheckInput, Answer::BuiltinInput(tool, InputView { top: JsType::Object, fields: valid })),
            (A::CheckAbort, Answer::NotAborted),
            (A::Execute, Answer::Returned { is_error: false }),
            (A::ParseOutput, Answer::OutputValid),
            (A::ReadLimit, Answer::LimitFits),
        ];
        assert_eq!(drive("file_read", script).1, Action::ReturnResult);
        assert_eq!(
            input(Answer::BuiltinInput(tool, InputView { top: JsType::Array, fields: &[] })),
            error("Invalid input for tool \"t\":\n  \u{2022} : Expected object, received array")
        );
    }

    fn executed(answer: Answer<'static>, rest: Vec<(ActionKind, Answer<'static>)>) -> Action<'static> {
        let mut script = with(happy_until_execute(), vec![(A::Execute, answer)]);
        script.extend(rest);
        drive("t", script).1
    }

    #[test]
    fn bad_results_as_the_original_words_them() {
        let invalid = |bad: BadResult, text: &str| {
            assert_eq!(
                executed(Answer::BadResult(bad), vec![]),
                error(&format!("Tool \"t\" returned an invalid result: {text}"))
            );
        };
        invalid(BadResult::NotObject("number".into()), "expected an object with a string \"data\", got number");
        invalid(BadResult::NotObject("function".into()), "expected an object with a string \"data\", got function");
        invalid(BadResult::DataNotString("null".into()), "\"data\" must be a string, got null");
        invalid(BadResult::DataNotString("number".into()), "\"data\" must be a string, got number");
        // A nullish result is a throw (reading `isError`), so its text is limited like one.
        for got in ["undefined", "null"] {
            assert_eq!(
                executed(Answer::BadResult(BadResult::Nullish(got)), vec![(A::ReadLimit, Answer::LimitFits)]),
                error(&format!("Tool \"t\" threw an error: Cannot read properties of {got} (reading 'isError')"))
            );
        }
        // An invalid result's text is not limited: the call ends at once.
        let mut call = ToolCall::resume("t", Step::Execute, "");
        let end = call.answer(Answer::BadResult(BadResult::NotObject("number".into()))).unwrap();
        assert!(matches!(end, Action::ReturnError(_)));
    }

    /// What the JS driver relies on: a call whose every answer is the plain one walks the table
    /// from lookup to `ReturnResult` without the machine ever reading an answer.
    #[test]
    fn the_happy_path_needs_no_decision() {
        let happy = [
            AnswerKind::Found,
            AnswerKind::NotAborted,
            AnswerKind::InputValid,
            AnswerKind::NotAborted,
            AnswerKind::Returned,
            AnswerKind::OutputValid,
            AnswerKind::LimitFits,
        ];
        let mut step = Step::Lookup;
        for kind in happy {
            match transition(step, kind) {
                Transition::To(next) => step = next,
                other => panic!("{kind:?} at {step:?}: {other:?}"),
            }
        }
        assert_eq!(step, Step::ReturnResult);
        // A tool's own error result and a thrown error whose text fits: no decision either,
        // except rendering the thrown text.
        assert_eq!(transition(Step::Execute, AnswerKind::ReturnedIsError), Transition::To(Step::LimitResult));
        assert_eq!(transition(Step::Execute, AnswerKind::Threw), Transition::Decide);
        assert_eq!(transition(Step::LimitError, AnswerKind::LimitFits), Transition::To(Step::ReturnError));
    }

    #[test]
    fn thrown_errors_are_limited_unless_the_limit_cannot_be_read() {
        assert_eq!(
            executed(Answer::Threw("kaput".into()), vec![(A::ReadLimit, Answer::LimitFits)]),
            error("Tool \"t\" threw an error: kaput")
        );
        assert_eq!(
            executed(Answer::Threw("kaput".into()), vec![(A::ReadLimit, Answer::Threw("getter".into()))]),
            error("Tool \"t\" threw an error: kaput")
        );
        assert_eq!(
            executed(Answer::Threw("kaput".into()), vec![(A::ReadLimit, Answer::Limit(10.0))]),
            error("Tool \"t\" t")
        );
        // 0 or less: no limit.
        assert_eq!(
            executed(Answer::Threw("kaput".into()), vec![(A::ReadLimit, Answer::Limit(0.0))]),
            error("Tool \"t\" threw an error: kaput")
        );
        // Reading the result's limit threw: that becomes the error, itself limited.
        assert_eq!(
            executed(
                Answer::Returned { is_error: false },
                vec![
                    (A::ParseOutput, Answer::OutputValid),
                    (A::ReadLimit, Answer::Threw("getter".into())),
                    (A::ReadLimit, Answer::LimitFits)
                ]
            ),
            error("Tool \"t\" threw an error: getter")
        );
        // The output schema threw.
        assert_eq!(
            executed(
                Answer::Returned { is_error: false },
                vec![(A::ParseOutput, Answer::Threw("schema".into())), (A::ReadLimit, Answer::LimitFits)]
            ),
            error("Tool \"t\" threw an error: schema")
        );
    }

    #[test]
    fn output_schema_and_result_limits() {
        assert_eq!(
            executed(
                Answer::Returned { is_error: false },
                vec![(
                    A::ParseOutput,
                    Answer::OutputInvalid(vec![Issue::new("", "String must contain at most 3 character(s)")])
                )]
            ),
            error("Invalid output for tool \"t\":\n  \u{2022} : String must contain at most 3 character(s)")
        );
        let limited = |max: f64| {
            executed(
                Answer::Returned { is_error: false },
                vec![(A::ParseOutput, Answer::OutputValid), (A::ReadLimit, Answer::Limit(max))],
            )
        };
        // The driver cuts the result's data it holds.
        assert_eq!(limited(50.0), Action::ReturnCut { max: 50 });
        assert_eq!(limited(10.5), Action::ReturnCut { max: 10 });
        assert_eq!(limited(-1.0), Action::ReturnResult);
        assert_eq!(limited(f64::NAN), Action::ReturnCut { max: 0 });
    }

    #[test]
    fn resume_continues_where_a_driver_left_off() {
        let mut call = ToolCall::resume("t", Step::LimitError, "Tool \"t\" threw an error: kaput");
        assert_eq!(call.answer(Answer::Limit(12.0)).unwrap(), Action::ReturnError("Tool \"t\" thr"));
        let mut call = ToolCall::resume("t", Step::Execute, "");
        assert_eq!(call.answer(Answer::Returned { is_error: false }).unwrap(), Action::ParseOutput);
    }

    #[test]
    fn misuse_is_a_typed_error() {
        let mut call = ToolCall::new("t");
        assert_eq!(
            call.answer(Answer::OutputValid),
            Err(Misuse { awaiting: Step::Lookup, got: AnswerKind::OutputValid })
        );
        let mut done = ToolCall::resume("t", Step::ReturnResult, "");
        assert!(done.answer(Answer::Found).is_err());
        assert_eq!(
            Misuse { awaiting: Step::Execute, got: AnswerKind::Found }.to_string(),
            "the tool executor cannot take FOUND at step Execute"
        );
    }

    #[test]
    fn a_timeout_ends_the_call_with_the_kernels_text_limited_like_a_throw() {
        assert_eq!(
            executed(Answer::TimedOut(5000.0), vec![(A::ReadLimit, Answer::LimitFits)]),
            error("Tool \"t\" timed out after 5000ms.")
        );
        // The number as JS writes it (a fraction, an exponent).
        assert_eq!(timed_out_text("t", 0.5), "Tool \"t\" timed out after 0.5ms.");
        assert_eq!(timed_out_text("t", 1e21), "Tool \"t\" timed out after 1e+21ms.");
        assert_eq!(
            executed(Answer::TimedOut(200.0), vec![(A::ReadLimit, Answer::Limit(12.0))]),
            error("Tool \"t\" tim")
        );
        assert_eq!(
            executed(Answer::TimedOut(200.0), vec![(A::ReadLimit, Answer::Threw("getter".into()))]),
            error("Tool \"t\" timed out after 200ms.")
        );
        // Only while execute is awaited: never at the gate (its wait is not covered) nor later.
        for step in Step::ALL {
            let expected = if step == Step::Execute { Transition::Decide } else { Transition::Invalid };
            assert_eq!(transition(step, AnswerKind::TimedOut), expected, "{step:?}");
        }
        assert_eq!(
            invalid_timeout_text("AgentConfig.toolTimeoutMs", "NaN"),
            "AgentConfig.toolTimeoutMs must be a number of milliseconds (unset, 0 or less: no timeout), got NaN"
        );
    }

    #[test]
    fn a_timed_out_call_after_an_allow_keeps_the_verdict() {
        let (seen, end, v) = gated(vec![
            (A::CallGate, decision("allow", Reason::Absent)),
            (A::CheckAbort, Answer::NotAborted),
            (A::Execute, Answer::TimedOut(50.0)),
            (A::ReadLimit, Answer::LimitFits),
        ]);
        assert_eq!(seen.last(), Some(&A::ReadLimit));
        assert_eq!(end, error("Tool \"t\" timed out after 50ms."));
        assert_eq!(v, verdict(GateAction::Allow, None));
    }

    const ALLOW: Decision<'static> = Decision { object: true, action: Some("allow"), reason: Reason::Absent };

    fn decision(action: &'static str, reason: Reason<'static>) -> Answer<'static> {
        Answer::Decision(Decision { object: true, action: Some(action), reason })
    }

    /// A gated call up to the gate (lookup, abort, input, abort), then `rest`.
    fn gated(rest: Vec<(ActionKind, Answer<'static>)>) -> (Vec<ActionKind>, Action<'static>, Option<Verdict>) {
        let mut call = ToolCall::gated("t");
        let mut script = happy_until_execute();
        script.extend(rest);
        let (seen, end) = drive_call(&mut call, script);
        (seen, end, call.verdict().cloned())
    }

    fn verdict(action: GateAction, reason: Option<&str>) -> Option<Verdict> {
        Some(Verdict { action, reason: reason.map(str::to_string) })
    }

    #[test]
    fn an_allowed_call_asks_the_gate_then_checks_abort_then_executes() {
        let (seen, end, v) = gated(vec![
            (A::CallGate, decision("allow", Reason::Text("dropped"))),
            (A::CheckAbort, Answer::NotAborted),
            (A::Execute, Answer::Returned { is_error: false }),
            (A::ParseOutput, Answer::OutputValid),
            (A::ReadLimit, Answer::LimitFits),
        ]);
        assert_eq!(
            seen,
            [
                A::Lookup,
                A::CheckAbort,
                A::CheckInput,
                A::CheckAbort,
                A::CallGate,
                A::CheckAbort,
                A::Execute,
                A::ParseOutput,
                A::ReadLimit
            ]
        );
        assert_eq!(end, Action::ReturnResult);
        // An allow's reason is dropped.
        assert_eq!(v, verdict(GateAction::Allow, None));
        // After an allow, errors keep the verdict (the driver attaches it to every result).
        let (_, end, v) = gated(vec![
            (A::CallGate, decision("allow", Reason::Absent)),
            (A::CheckAbort, Answer::NotAborted),
            (A::Execute, Answer::Threw("kaput".into())),
            (A::ReadLimit, Answer::LimitFits),
        ]);
        assert_eq!(end, error("Tool \"t\" threw an error: kaput"));
        assert_eq!(v, verdict(GateAction::Allow, None));
    }

    #[test]
    fn denials_use_upstreams_texts_and_keep_the_reason() {
        let deny = |reason| gated(vec![(A::CallGate, decision("deny", reason)), (A::CheckAbort, Answer::NotAborted)]);
        let (_, end, v) = deny(Reason::Text("not today"));
        assert_eq!(end, error("Tool \"t\" denied by onToolCall: not today"));
        assert_eq!(v, verdict(GateAction::Deny, Some("not today")));
        let (_, end, v) = deny(Reason::Absent);
        assert_eq!(end, error("Tool \"t\" denied by onToolCall."));
        assert_eq!(v, verdict(GateAction::Deny, None));
        // An empty reason is kept in the verdict but reads as none.
        let (_, end, v) = deny(Reason::Text(""));
        assert_eq!(end, error("Tool \"t\" denied by onToolCall."));
        assert_eq!(v, verdict(GateAction::Deny, Some("")));
    }

    #[test]
    fn suspend_outside_a_checkpointed_task_is_refused_with_the_kernels_text() {
        let (_, end, v) =
            gated(vec![(A::CallGate, decision("suspend", Reason::Text("ask"))), (A::CheckAbort, Answer::NotAborted)]);
        assert_eq!(end, error(&suspend_text("t")));
        assert_eq!(v, verdict(GateAction::Suspend, Some("ask")));
    }

    #[test]
    fn a_throwing_gate_and_invalid_decisions_end_without_a_verdict() {
        let (_, end, v) = gated(vec![(A::CallGate, Answer::Threw("boom".into()))]);
        assert_eq!(end, error("Tool \"t\" onToolCall hook threw an error: boom"));
        assert_eq!(v, None);
        let invalid = error("Tool \"t\" onToolCall hook returned an invalid onToolCall decision.");
        for d in [
            Decision { object: false, action: None, reason: Reason::Absent },
            Decision { object: true, action: None, reason: Reason::Absent },
            Decision { object: true, action: Some("maybe"), reason: Reason::Absent },
            Decision { object: true, action: Some("deny"), reason: Reason::NotText },
            Decision { object: true, action: Some("allow"), reason: Reason::NotText },
        ] {
            let (seen, end, v) = gated(vec![(A::CallGate, Answer::Decision(d))]);
            assert_eq!(seen.len(), 5);
            assert_eq!(end, invalid);
            assert_eq!(v, None);
        }
    }

    #[test]
    fn the_abort_check_after_the_gate_wins_over_its_verdict() {
        for d in [decision("allow", Reason::Absent), decision("deny", Reason::Text("no"))] {
            let (_, end, v) = gated(vec![(A::CallGate, d), (A::CheckAbort, Answer::Aborted)]);
            assert_eq!(end, error("Tool \"t\" was aborted before execution began."));
            assert!(v.is_some());
        }
        // The gated copies of the early steps keep their texts.
        let mut call = ToolCall::gated("nope");
        call.answer(Answer::Missing).unwrap();
        assert_eq!(call.poll(), Action::ReturnError("Tool \"nope\" is not registered in the ToolRegistry."));
        let (_, end, _) = gated(vec![]);
        assert_eq!(end, Action::CallGate);
        let mut call = ToolCall::resume("t", Step::AbortBeforeGate, "");
        call.answer(Answer::Aborted).unwrap();
        assert_eq!(call.poll(), Action::ReturnError("Tool \"t\" was aborted before execution began."));
    }

    /// The native enforcement: from a gated call's first step, no sequence of data-free
    /// answers reaches `Execute` without passing `Gate`, and `Gate` itself moves on only
    /// through the machine's reading of a decision.
    #[test]
    fn a_gated_call_reaches_execute_only_through_an_allow() {
        let mut seen = std::collections::HashSet::new();
        let mut todo = vec![Step::GatedLookup];
        while let Some(step) = todo.pop() {
            if !seen.insert(step) {
                continue;
            }
            assert_ne!(step, Step::Execute, "the table leads a gated call to Execute");
            for kind in AnswerKind::ALL {
                if let Transition::To(next) = transition(step, kind) {
                    todo.push(next);
                }
            }
        }
        assert!(seen.contains(&Step::Gate));
        assert!(!seen.contains(&Step::AbortAfterGate));
        // A built-in tool's input checked by the machine keeps the call gated.
        let tool = input::tool("file_read").unwrap();
        let valid: &'static [FieldValue] = Box::leak(Box::new([
            FieldValue { ty: JsType::String, num: 3.0 },
            FieldValue { ty: JsType::Undefined, num: 0.0 },
            FieldValue { ty: JsType::Undefined, num: 0.0 },
        ]));
        let mut call = ToolCall::resume("file_read", Step::GatedCheckInput, "");
        call.answer(Answer::BuiltinInput(tool, InputView { top: JsType::Object, fields: valid })).unwrap();
        assert_eq!(call.step(), Step::AbortBeforeGate);
        // Only an allow leads on to AbortAfterGate.
        for d in [decision("deny", Reason::Absent), decision("suspend", Reason::Absent)] {
            let mut call = ToolCall::resume("t", Step::Gate, "");
            call.answer(d).unwrap();
            assert_eq!(call.step(), Step::AbortAfterRefusal);
        }
    }

    /// `transition` and `answer` agree: every `To` is where `answer` goes, and every answer
    /// the table calls invalid is refused.
    #[test]
    fn the_table_is_the_machine() {
        for step in Step::ALL {
            for kind in AnswerKind::ALL {
                let sample = match kind {
                    AnswerKind::Found => Answer::Found,
                    AnswerKind::Missing => Answer::Missing,
                    AnswerKind::NotAborted => Answer::NotAborted,
                    AnswerKind::Aborted => Answer::Aborted,
                    AnswerKind::InputValid => Answer::InputValid,
                    AnswerKind::InputInvalid => Answer::InputInvalid(vec![]),
                    AnswerKind::InputUnreadable => Answer::InputUnreadable(String::new()),
                    AnswerKind::InputNotJson => Answer::InputNotJson(String::new()),
                    AnswerKind::BuiltinInput => {
                        Answer::BuiltinInput(&input::TOOLS[0], InputView { top: JsType::Null, fields: &[] })
                    }
                    AnswerKind::Returned => Answer::Returned { is_error: false },
                    AnswerKind::ReturnedIsError => Answer::Returned { is_error: true },
                    AnswerKind::BadResult => Answer::BadResult(BadResult::NotObject("number".into())),
                    AnswerKind::Threw => Answer::Threw(String::new()),
                    AnswerKind::OutputValid => Answer::OutputValid,
                    AnswerKind::OutputInvalid => Answer::OutputInvalid(vec![]),
                    AnswerKind::LimitFits => Answer::LimitFits,
                    AnswerKind::Limit => Answer::Limit(5.0),
                    AnswerKind::Decision => Answer::Decision(ALLOW),
                    AnswerKind::TimedOut => Answer::TimedOut(5.0),
                };
                assert_eq!(sample.kind(), kind);
                let mut call = ToolCall::resume("t", step, "text");
                let r = call.answer(sample).map(|_| ()).map(|()| call.step());
                match transition(step, kind) {
                    Transition::To(next) => assert_eq!(r, Ok(next)),
                    Transition::Invalid => assert!(r.is_err()),
                    Transition::Decide => assert!(r.is_ok()),
                }
            }
        }
        // The typed handles take exactly the answers the table takes at each step.
        // Whether `p` is one of these handles; if so, gives it the answer (which panics if the
        // machine refuses it).
        macro_rules! taken_by {
            ($p:expr, $($pat:pat => $call:expr),+) => {
                match $p {
                    $($pat => {
                        $call;
                        true
                    })+
                    _ => false,
                }
            };
        }
        type Try = fn(Pending<'_>) -> bool;
        let tries: [(AnswerKind, Try); 19] = [
            (AnswerKind::Found, |p| taken_by!(p, Pending::Lookup(h) => h.found())),
            (AnswerKind::Missing, |p| taken_by!(p, Pending::Lookup(h) => h.missing())),
            (AnswerKind::NotAborted, |p| taken_by!(p, Pending::CheckAbort(h) => h.not_aborted())),
            (AnswerKind::Aborted, |p| taken_by!(p, Pending::CheckAbort(h) => h.aborted())),
            (AnswerKind::InputValid, |p| taken_by!(p, Pending::CheckInput(h) => h.valid())),
            (AnswerKind::InputInvalid, |p| taken_by!(p, Pending::CheckInput(h) => h.invalid(vec![]))),
            (AnswerKind::InputUnreadable, |p| taken_by!(p, Pending::CheckInput(h) => h.unreadable("x".into()))),
            (AnswerKind::InputNotJson, |p| taken_by!(p, Pending::CheckInput(h) => h.not_json("x".into()))),
            (AnswerKind::BuiltinInput, |p| {
                let view = InputView { top: JsType::Null, fields: &[] };
                taken_by!(p, Pending::CheckInput(h) => h.builtin(&input::TOOLS[0], view))
            }),
            (AnswerKind::Returned, |p| taken_by!(p, Pending::Execute(h) => h.returned(false))),
            (AnswerKind::ReturnedIsError, |p| taken_by!(p, Pending::Execute(h) => h.returned(true))),
            (
                AnswerKind::BadResult,
                |p| taken_by!(p, Pending::Execute(h) => h.bad_result(BadResult::NotObject("number".into()))),
            ),
            (AnswerKind::Threw, |p| {
                taken_by!(p, Pending::CallGate(h) => h.threw("x".into()), Pending::Execute(h) => h.threw("x".into()),
                    Pending::ParseOutput(h) => h.threw("x".into()), Pending::ReadLimit(h) => h.threw("x".into()))
            }),
            (AnswerKind::OutputValid, |p| taken_by!(p, Pending::ParseOutput(h) => h.valid())),
            (AnswerKind::OutputInvalid, |p| taken_by!(p, Pending::ParseOutput(h) => h.invalid(vec![]))),
            (AnswerKind::LimitFits, |p| taken_by!(p, Pending::ReadLimit(h) => h.fits())),
            (AnswerKind::Limit, |p| taken_by!(p, Pending::ReadLimit(h) => h.limit(5.0))),
            (AnswerKind::Decision, |p| taken_by!(p, Pending::CallGate(h) => h.decision(ALLOW))),
            (AnswerKind::TimedOut, |p| taken_by!(p, Pending::Execute(h) => h.timed_out(5.0))),
        ];
        for step in Step::ALL {
            for (kind, try_it) in tries {
                let mut call = ToolCall::resume("t", step, "text");
                let taken = try_it(call.pending());
                assert_eq!(taken, transition(step, kind) != Transition::Invalid, "{step:?} {kind:?}");
            }
            let mut call = ToolCall::resume("t", step, "text");
            let over = matches!(call.poll(), Action::ReturnResult | Action::ReturnCut { .. } | Action::ReturnError(_));
            assert_eq!(matches!(call.pending(), Pending::Done), over);
        }
        for (i, s) in Step::ALL.iter().enumerate() {
            assert_eq!(*s as usize, i);
            assert_eq!(Step::from_code(i as u32), Some(*s));
        }
        for (i, k) in AnswerKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
        for (i, k) in ActionKind::ALL.iter().enumerate() {
            assert_eq!(*k as usize, i);
        }
    }
}
