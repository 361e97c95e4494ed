//! An Agent run's whole state as data (issue 31 point 3, docs/internals/run-state.md items 8–9):
//! what a checkpoint of the run needs to continue, held next to the machine rather than in the
//! driver's objects, with [`RunState::snapshot`] / [`RunState::restore`] through JSON.
//!
//! [`AgentRun`] itself stays the small `Copy` machine the binding packs into a word. A
//! `RunState` wraps it with what the run gathered: the pending step with its text (the JSON to
//! validate, a retry's feedback), every attempt's runner result as JSON-able data, the retry
//! feedback texts, the hook's outcome (its prompt, where the last user message is, the
//! messages it returned), the run's start and its deadline as absolute times. From these it
//! answers what the driver used to compute on its own: the usage each step adds, the tokens of
//! earlier attempts a checked retry starts with (`BUDGET_SPENT`), the conversation of a retry.
//!
//! What stays with the driver are resources and objects it rebuilds from this state: the
//! runner and its adapter, the signals (the timeout from [`RunState::remaining_ms`]), the
//! caller's options and their `onMessage` closure, the hooks and the schema, and the validated
//! structured value (the user's schema may transform it into a non-JSON value: a restored run
//! re-validates the kept JSON).

use super::{wire, Action, AgentError, AgentRun, Conversation, Event, RunFlags, Setup, Step};
use serde_json::{json, Value};

/// One attempt's runner result, as data.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// `RunResult.messages`, a JSON array.
    pub messages: String,
    /// `RunResult.toolCalls` as JSON (each call's `output` as JSON takes it), a JSON array.
    pub tool_calls: String,
    /// `String(RunResult.output)`.
    pub output: String,
    pub input_tokens: u64,
    pub output_tokens: u64,
    pub flags: RunFlags,
    /// The run's timeout had fired when the result came.
    pub timed_out: bool,
}

/// What beforeRun led to.
#[derive(Debug, Clone, PartialEq)]
pub struct Hooked {
    /// The prompt the hook returned.
    pub prompt: String,
    /// Where the last user message of the outgoing messages is (`None`: there is none).
    pub index: Option<u64>,
    /// Which layout rewrites it (`rewriteLastUser` in lib/agent.js).
    pub in_place: bool,
    /// The messages the hook returned when they replace the run's, a JSON array.
    pub messages: Option<String>,
}

/// The driver's report of the pending step's action, with what it produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Report<'a> {
    HookReturned { changed: bool, hooked: Hooked },
    RunnerDone(Attempt),
    RunnerError,
    Valid,
    Invalid { message: &'a str },
    AfterRunReturned,
    TraceEmitted,
    Threw { timed_out: bool },
}

/// An Agent run: the machine, its pending step, and what the run gathered (see the module docs).
#[derive(Debug, Clone, PartialEq)]
pub struct RunState {
    run: AgentRun,
    step: Step,
    attempts: Vec<Attempt>,
    feedbacks: Vec<String>,
    hooked: Option<Hooked>,
    /// Epoch milliseconds.
    start_ms: f64,
    deadline_ms: Option<f64>,
}

impl RunState {
    /// Starts a run at `start_ms` (epoch milliseconds).
    pub fn start(setup: Setup, start_ms: f64) -> RunState {
        let (run, step) = AgentRun::start(setup);
        RunState { run, step, attempts: Vec::new(), feedbacks: Vec::new(), hooked: None, start_ms, deadline_ms: None }
    }

    /// The step the driver performs now.
    pub fn step(&self) -> &Step {
        &self.step
    }

    pub fn attempts(&self) -> &[Attempt] {
        &self.attempts
    }

    /// The feedback text each failed attempt produced, in order.
    pub fn feedbacks(&self) -> &[String] {
        &self.feedbacks
    }

    pub fn hooked(&self) -> Option<&Hooked> {
        self.hooked.as_ref()
    }

    pub fn start_ms(&self) -> f64 {
        self.start_ms
    }

    /// The run's timeout started (`timeoutMs` after `now_ms`): kept as the absolute time.
    pub fn set_deadline(&mut self, now_ms: f64, timeout_ms: f64) {
        self.deadline_ms = Some(now_ms + timeout_ms);
    }

    /// What is left of the timeout at `now_ms` (a restored run's new timer); `None`: no timeout.
    pub fn remaining_ms(&self, now_ms: f64) -> Option<f64> {
        self.deadline_ms.map(|d| (d - now_ms).max(0.0))
    }

    /// The usage the current step adds to the Agent's (`Step::add_usage`): the last attempt's.
    pub fn usage_to_add(&self) -> (u64, u64) {
        match self.attempts.last() {
            Some(a) if self.step.add_usage => (a.input_tokens, a.output_tokens),
            _ => (0, 0),
        }
    }

    /// The tokens of every attempt so far: what a checked retry's runner starts with spent
    /// against `maxTokenBudget` (`BUDGET_SPENT`).
    pub fn spent(&self) -> u64 {
        self.attempts.iter().map(|a| a.input_tokens + a.output_tokens).sum()
    }

    /// The tokens of every attempt, summed (a merged result's `tokenUsage`).
    pub fn usage(&self) -> (u64, u64) {
        self.attempts.iter().fold((0, 0), |(i, o), a| (i + a.input_tokens, o + a.output_tokens))
    }

    /// Takes the driver's report of the pending step's action; the next step. A report the
    /// machine does not take is its [`AgentError`], and leaves the state as it was.
    pub fn answer(&mut self, report: Report) -> Result<&Step, AgentError> {
        let mut run = self.run;
        let next = match &report {
            Report::HookReturned { changed, hooked } => {
                run.answer(Event::HookReturned { changed: *changed, has_user: hooked.index.is_some() })?
            }
            Report::RunnerDone(a) => {
                let structured = matches!(self.step.action, Action::RunRunner { report_output: true, .. });
                run.answer(Event::RunnerDone {
                    flags: a.flags,
                    timed_out: a.timed_out,
                    output: structured.then_some(a.output.as_str()),
                })?
            }
            Report::RunnerError => run.answer(Event::RunnerError)?,
            Report::Valid => run.answer(Event::Valid)?,
            Report::Invalid { message } => run.answer(Event::Invalid { message })?,
            Report::AfterRunReturned => run.answer(Event::AfterRunReturned)?,
            Report::TraceEmitted => run.answer(Event::TraceEmitted)?,
            Report::Threw { timed_out } => run.answer(Event::Threw { timed_out: *timed_out })?,
        };
        // Taken: the state follows.
        match report {
            Report::HookReturned { hooked, .. } => self.hooked = Some(hooked),
            Report::RunnerDone(a) => self.attempts.push(a),
            _ => {}
        }
        if let Action::RunRunner { conversation: Conversation::Retry { feedback, .. }, .. } = &next.action {
            self.feedbacks.push(feedback.clone());
        }
        self.run = run;
        self.step = next;
        Ok(&self.step)
    }

    /// The state as JSON text.
    pub fn snapshot(&self) -> String {
        let (bits, text) = wire::step_code(&self.step);
        let attempts: Vec<Value> = self
            .attempts
            .iter()
            .map(|a| {
                json!({
                    "messages": a.messages,
                    "toolCalls": a.tool_calls,
                    "output": a.output,
                    "inputTokens": a.input_tokens,
                    "outputTokens": a.output_tokens,
                    "budgetExceeded": a.flags.budget_exceeded,
                    "loopDetected": a.flags.loop_detected,
                    "aborted": a.flags.aborted,
                    "timedOut": a.timed_out,
                })
            })
            .collect();
        let hooked = self
            .hooked
            .as_ref()
            .map(|h| json!({ "prompt": h.prompt, "index": h.index, "inPlace": h.in_place, "messages": h.messages }));
        json!({
            // The machine and its step in one number, as the binding hands it out.
            "word": wire::pack(&self.run, bits),
            "text": text,
            "attempts": attempts,
            "feedbacks": self.feedbacks,
            "hooked": hooked,
            "startMs": self.start_ms,
            "deadlineMs": self.deadline_ms,
        })
        .to_string()
    }

    /// The state a [`RunState::snapshot`] holds.
    pub fn restore(snapshot: &str) -> Result<RunState, AgentError> {
        let bad = || AgentError::Malformed("run snapshot");
        let v: Value = serde_json::from_str(snapshot).map_err(|_| bad())?;
        let str_of = |v: &Value| v.as_str().map(str::to_string).ok_or_else(bad);
        let u64_of = |v: &Value| v.as_u64().ok_or_else(bad);
        let bool_of = |v: &Value| v.as_bool().ok_or_else(bad);
        let word = v["word"].as_f64().ok_or_else(bad)?;
        let run = wire::unpack(word)?;
        let step = wire::step_from(wire::step_bits(word), v["text"].as_str())?;
        let mut attempts = Vec::new();
        for a in v["attempts"].as_array().ok_or_else(bad)? {
            let flags = RunFlags {
                budget_exceeded: bool_of(&a["budgetExceeded"])?,
                loop_detected: bool_of(&a["loopDetected"])?,
                aborted: bool_of(&a["aborted"])?,
            };
            attempts.push(Attempt {
                messages: str_of(&a["messages"])?,
                tool_calls: str_of(&a["toolCalls"])?,
                output: str_of(&a["output"])?,
                input_tokens: u64_of(&a["inputTokens"])?,
                output_tokens: u64_of(&a["outputTokens"])?,
                flags,
                timed_out: bool_of(&a["timedOut"])?,
            });
        }
        let feedbacks = v["feedbacks"].as_array().ok_or_else(bad)?.iter().map(str_of).collect::<Result<_, _>>()?;
        let hooked = match &v["hooked"] {
            Value::Null => None,
            h => Some(Hooked {
                prompt: str_of(&h["prompt"])?,
                index: if h["index"].is_null() { None } else { Some(u64_of(&h["index"])?) },
                in_place: bool_of(&h["inPlace"])?,
                messages: if h["messages"].is_null() { None } else { Some(str_of(&h["messages"])?) },
            }),
        };
        let deadline_ms =
            if v["deadlineMs"].is_null() { None } else { Some(v["deadlineMs"].as_f64().ok_or_else(bad)?) };
        Ok(RunState {
            run,
            step,
            attempts,
            feedbacks,
            hooked,
            start_ms: v["startMs"].as_f64().ok_or_else(bad)?,
            deadline_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Entry, History, Shape};
    use super::*;

    /// What the scripted user code does (see agent.rs's `World`).
    #[derive(Clone)]
    struct World {
        /// beforeRun: `Some(changed)`, or `None` for a hook that throws.
        hook: Option<bool>,
        /// Each runner run: output, flags, tokens in/out; `None` for a run that throws.
        runs: Vec<Option<(&'static str, RunFlags, u64, u64)>>,
        /// The schema accepts JSON with this key.
        key: &'static str,
        after_run_throws: bool,
        trace_throws: bool,
    }

    /// One step as the driver saw it: the step, the usage it adds, the spent tokens a checked
    /// retry starts with, the feedbacks and hook outcome so far.
    type Seen = (Step, (u64, u64), u64, Vec<String>, Option<Hooked>);

    /// The driver's report for the pending step (`None` at `Finish`). The world's position is
    /// read off the state (the attempts so far), so that a restored run goes on where it was.
    fn perform(state: &RunState, world: &World) -> Option<Report<'static>> {
        let step = state.step();
        Some(match &step.action {
            Action::BeforeRun => match world.hook {
                Some(changed) => Report::HookReturned {
                    changed,
                    hooked: Hooked {
                        prompt: if changed { "new".into() } else { "old".into() },
                        index: Some(0),
                        in_place: changed,
                        messages: changed.then(|| r#"[{"role":"user","content":"new"}]"#.to_string()),
                    },
                },
                None => Report::Threw { timed_out: false },
            },
            Action::RunRunner { .. } => match world.runs[state.attempts().len()] {
                Some((output, flags, input_tokens, output_tokens)) => Report::RunnerDone(Attempt {
                    messages: format!(r#"[{{"role":"assistant","content":"{output}"}}]"#),
                    tool_calls: "[]".into(),
                    output: output.into(),
                    input_tokens,
                    output_tokens,
                    flags,
                    timed_out: false,
                }),
                None => Report::Threw { timed_out: true },
            },
            Action::Validate { json } => {
                if json.contains(world.key) {
                    Report::Valid
                } else {
                    Report::Invalid { message: "Output validation failed: missing key" }
                }
            }
            Action::AfterRun { .. } if world.after_run_throws => Report::Threw { timed_out: false },
            Action::AfterRun { .. } => Report::AfterRunReturned,
            Action::Trace { .. } if world.trace_throws => Report::Threw { timed_out: false },
            Action::Trace { .. } => Report::TraceEmitted,
            Action::Finish { .. } => return None,
            Action::PassError => unreachable!("no stream errors scripted"),
        })
    }

    /// Drives a run to its end; with `checkpoint_at`, the state is snapshotted before that step
    /// and the run goes on from the restored snapshot instead.
    fn drive(setup: Setup, world: &World, checkpoint_at: Option<usize>) -> (Vec<Seen>, String) {
        let mut state = RunState::start(setup, 1_000.0);
        state.set_deadline(1_000.0, 30_000.0);
        let mut seen = Vec::new();
        loop {
            if checkpoint_at == Some(seen.len()) {
                let snapshot = state.snapshot();
                let restored = RunState::restore(&snapshot).unwrap();
                assert_eq!(restored, state, "the snapshot holds the whole state");
                assert_eq!(restored.snapshot(), snapshot);
                state = restored;
            }
            seen.push((
                state.step().clone(),
                state.usage_to_add(),
                state.spent(),
                state.feedbacks().to_vec(),
                state.hooked().cloned(),
            ));
            match perform(&state, world) {
                Some(report) => {
                    state.answer(report).unwrap();
                }
                None => return (seen, state.snapshot()),
            }
        }
    }

    const NONE: RunFlags = RunFlags { budget_exceeded: false, loop_detected: false, aborted: false };
    const LOOPED: RunFlags = RunFlags { budget_exceeded: false, loop_detected: true, aborted: false };

    fn setups() -> Vec<Setup> {
        let mut out = Vec::new();
        for entry in [Entry::Run, Entry::Prompt] {
            for bits in 0..16u8 {
                let mut s = Setup::new(entry);
                s.before_run = bits & 1 != 0;
                s.after_run = bits & 2 != 0;
                s.output_schema = bits & 4 != 0;
                s.trace = bits & 8 != 0;
                out.push(s);
                let mut checked = s;
                checked.retries = 3;
                checked.checked_retries = true;
                out.push(checked);
            }
        }
        out
    }

    fn worlds() -> Vec<World> {
        let ok = World {
            hook: Some(true),
            runs: vec![Some(("{\"a\": 1}", LOOPED, 10, 5))],
            key: "\"a\"",
            after_run_throws: false,
            trace_throws: false,
        };
        let retried = World {
            hook: Some(false),
            runs: vec![
                Some(("no json", NONE, 10, 5)),
                Some(("{\"b\": 1}", NONE, 20, 7)),
                Some(("{\"b\": 2}", NONE, 30, 9)),
                Some(("{\"a\": 3}", LOOPED, 40, 11)),
            ],
            key: "\"a\"",
            after_run_throws: false,
            trace_throws: true,
        };
        let throws = World { hook: None, runs: vec![None], after_run_throws: true, ..ok.clone() };
        let runner_throws = World { hook: Some(true), runs: vec![Some(("x", NONE, 1, 1)), None], ..retried.clone() };
        vec![ok, retried, throws, runner_throws]
    }

    #[test]
    fn a_run_snapshotted_at_any_step_and_restored_continues_with_the_identical_steps() {
        let mut checkpoints = 0;
        for setup in setups() {
            for world in worlds() {
                let (full, end) = drive(setup, &world, None);
                for k in 0..full.len() {
                    let (again, end_again) = drive(setup, &world, Some(k));
                    assert_eq!(again, full, "{setup:?}, restored before step {k}");
                    assert_eq!(end_again, end);
                    checkpoints += 1;
                }
            }
        }
        assert!(checkpoints > 500, "{checkpoints}");
    }

    #[test]
    fn the_state_holds_what_a_retry_needs() {
        let mut setup = Setup::new(Entry::Prompt);
        setup.output_schema = true;
        setup.retries = 3;
        setup.checked_retries = true;
        setup.trace = true;
        let (seen, end) = drive(setup, &worlds()[1], None);
        // Four attempts: each retry carries the earlier attempts' tokens, and the feedbacks.
        let retries: Vec<&Seen> = seen
            .iter()
            .filter(|s| matches!(s.0.action, Action::RunRunner { conversation: Conversation::Retry { .. }, .. }))
            .collect();
        assert_eq!(retries.iter().map(|s| s.2).collect::<Vec<_>>(), [15, 42, 81]);
        assert_eq!(retries.iter().map(|s| s.3.len()).collect::<Vec<_>>(), [1, 2, 3]);
        let last = seen.last().unwrap();
        assert!(matches!(last.0.action, Action::Finish { build: None, history: History::Rollback }), "{last:?}");
        let state = RunState::restore(&end).unwrap();
        assert_eq!(state.usage(), (100, 32));
        assert_eq!(state.remaining_ms(11_000.0), Some(20_000.0));
        assert_eq!(state.remaining_ms(40_000.0), Some(0.0));
        assert_eq!(state.attempts()[3].output, "{\"a\": 3}");
        assert!(matches!(
            seen.iter().find(|s| matches!(s.0.action, Action::Trace { .. })).unwrap().0.action,
            Action::Trace { build: Some(Shape::Result { success: true, merged: true, .. }) }
        ));
    }

    #[test]
    fn a_report_the_machine_does_not_take_leaves_the_state_as_it_was() {
        let mut state = RunState::start(Setup::new(Entry::Run), 0.0);
        let before = state.clone();
        assert!(state.answer(Report::Valid).is_err());
        assert_eq!(state, before);
        assert!(RunState::restore("{}").is_err());
        assert!(RunState::restore(&state.snapshot().replace("\"word\":", "\"word\":0.5,\"x\":")).is_err());
    }
}
