//! A run's whole state as data: [`Machine::snapshot`] writes it as JSON, [`Machine::restore`]
//! makes a machine that goes on exactly as the snapshotted one would (the prerequisite for
//! durable runs, issue 33).
//!
//! What is not in it: the configuration and the summarize strategy's cache handle, which the
//! runner that restores the run supplies (the same options give the same configuration; the
//! cache's current value is in the snapshot, as the runner's state across runs), and the
//! history's epoch (a restored history is new to every request builder).
//!
//! A snapshot is taken at an action boundary: right after [`Machine::poll`] handed out an
//! action (a waiting action's answer not yet given, or given in part: a round's settled
//! outcomes are in it), or right after an answer. The one state it refuses is a context plan
//! staged and not yet handed out (after a summary's answer, before the `poll` that hands out its
//! `ApplyPlan`): the plan only tells the driver how to rebuild its own copy of the conversation,
//! which a restored driver builds from the machine's history anyway.
//!
//! The text is versioned (`v`); its layout is this module's private business: nothing but
//! `restore` reads it. serde is already the crate's JSON reader (`message`, `config`); the
//! messages are written by `Message::write_json` and read by `parse_messages`, the history's
//! own format.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;

use super::{ActionKind, Machine, Observers, Phase, RunnerConfig, ToolOutcome, W_TOOL};
use crate::kernel::context::SummaryCache;
use crate::kernel::history::History;
use crate::kernel::loop_detector::{LoopInfo, LoopKind};
use crate::kernel::message::{parse_messages, Message, Strictness, Usage};

const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct Snap {
    v: u32,
    conversation: Box<RawValue>,
    /// `History::added_parts`.
    earlier: Box<RawValue>,
    fresh_from: usize,
    usage: (f64, f64),
    spent: f64,
    turns: u32,
    final_output: String,
    budget_exceeded: bool,
    loop_detected: bool,
    aborted: bool,
    /// The loop detector's memory (tool signatures, texts), when the run detects loops.
    detector: Option<(VecDeque<String>, VecDeque<String>)>,
    loop_warned: bool,
    granted: Vec<String>,
    tools_offered: usize,
    observers: (bool, bool),
    phase: u8,
    queue: Vec<u8>,
    turn_text: String,
    tool_uses: Vec<String>,
    pending_break: bool,
    inject: Option<u8>,
    loop_info: Option<(u8, usize, String)>,
    loop_action: Option<String>,
    /// The round's outcomes so far.
    results: Vec<Option<Settled>>,
    round_durations: Vec<f64>,
    summary: Option<(String, usize, Vec<usize>, String)>,
    injected: Option<u8>,
    first_turn_warning: String,
    rounds: Vec<usize>,
    durations: Vec<f64>,
    /// The summarize strategy's cache (signature, prefix), the runner's state across runs.
    summary_cache: Option<(String, String)>,
}

/// A settled call of the round in flight: content, isError, a delegated run's usage.
type Settled = (String, Option<bool>, Option<(f64, f64)>);

/// Why a snapshot could not be taken or restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SnapshotError {
    /// A context plan is staged and not yet handed out (see the module docs): poll first.
    PlanStaged,
    /// The text is not a snapshot this version reads.
    Malformed(String),
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotError::PlanStaged => {
                f.write_str("oma-kernel: a run cannot be snapshotted while a context plan is staged")
            }
            SnapshotError::Malformed(why) => write!(f, "oma-kernel: malformed run snapshot: {why}"),
        }
    }
}

impl std::error::Error for SnapshotError {}

fn messages_json<'a>(msgs: impl Iterator<Item = &'a Message>) -> Box<RawValue> {
    let mut out = String::from("[");
    for (k, m) in msgs.enumerate() {
        if k > 0 {
            out.push(',');
        }
        m.write_json(&mut out);
    }
    out.push(']');
    RawValue::from_string(out).expect("Message::write_json writes JSON")
}

fn kind_code(k: LoopKind) -> u8 {
    match k {
        LoopKind::ToolRepetition => 0,
        LoopKind::TextRepetition => 1,
    }
}

fn kind_of(code: u8) -> Result<LoopKind, SnapshotError> {
    match code {
        0 => Ok(LoopKind::ToolRepetition),
        1 => Ok(LoopKind::TextRepetition),
        _ => Err(malformed("loop kind")),
    }
}

fn malformed(what: &str) -> SnapshotError {
    SnapshotError::Malformed(what.to_string())
}

impl Machine {
    /// The run's whole state as JSON (see the module docs for when it can be taken).
    pub fn snapshot(&self) -> Result<String, SnapshotError> {
        if self.plan.is_some() {
            return Err(SnapshotError::PlanStaged);
        }
        let (earlier, fresh_from) = self.conv.added_parts();
        let mut granted: Vec<String> = self.granted.iter().cloned().collect();
        // (A set: sorted, so equal states write equal text.)
        granted.sort_unstable();
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let snap = Snap {
            v: VERSION,
            conversation: messages_json(self.conv.iter()),
            earlier: messages_json(earlier.iter()),
            fresh_from,
            usage: (self.usage.input_tokens, self.usage.output_tokens),
            spent: self.spent,
            turns: self.turns,
            final_output: self.final_output.clone(),
            budget_exceeded: self.budget_exceeded,
            loop_detected: self.loop_detected,
            aborted: self.aborted,
            detector: self.detector.as_ref().map(|d| {
                let (tools, texts) = d.memory();
                (tools.clone(), texts.clone())
            }),
            loop_warned: self.loop_warned,
            granted,
            tools_offered: self.tools_offered,
            observers: (self.observers.on_warning, self.observers.events),
            phase: self.phase as u8,
            queue: self.queue.iter().map(|k| *k as u8).collect(),
            turn_text: self.turn_text.clone(),
            tool_uses: self.tool_uses.clone(),
            pending_break: self.pending_break,
            inject: self.inject.map(kind_code),
            loop_info: self.loop_info.as_ref().map(|i| (kind_code(i.kind), i.repetitions, i.detail.clone())),
            loop_action: self.loop_action.clone(),
            results: self
                .results
                .iter()
                .map(|r| {
                    r.as_ref()
                        .map(|o| (o.content.clone(), o.is_error, o.usage.map(|u| (u.input_tokens, u.output_tokens))))
                })
                .collect(),
            round_durations: self.round_durations.clone(),
            summary: self.summary.clone(),
            injected: self
                .injected
                .map(|t| kind_code(if t == W_TOOL { LoopKind::ToolRepetition } else { LoopKind::TextRepetition })),
            first_turn_warning: self.first_turn_warning.clone(),
            rounds: self.rounds.clone(),
            durations: self.durations.clone(),
            summary_cache: cache.as_ref().map(|c| (c.signature.clone(), c.prefix.clone())),
        };
        Ok(serde_json::to_string(&snap).expect("a snapshot is writable"))
    }

    /// A machine in the state `snapshot` wrote, under the configuration `cfg` (the options of the
    /// run's runner) and with the runner's summary cache `cache`, which takes the snapshot's value.
    pub fn restore(
        cfg: Arc<RunnerConfig>,
        cache: Arc<Mutex<Option<SummaryCache>>>,
        snapshot: &str,
    ) -> Result<Machine, SnapshotError> {
        let s: Snap = serde_json::from_str(snapshot).map_err(|e| SnapshotError::Malformed(e.to_string()))?;
        if s.v != VERSION {
            return Err(malformed("version"));
        }
        let read = |raw: &RawValue| parse_messages(raw.get(), Strictness::Lenient).map_err(SnapshotError::Malformed);
        let conv = History::restore(read(&s.conversation)?, read(&s.earlier)?, s.fresh_from)
            .ok_or_else(|| malformed("fresh_from"))?;
        let detector = match (cfg.loop_detection.as_ref(), s.detector) {
            (Some(l), Some((tools, texts))) => Some(super::detector_of(l).with_memory(tools, texts)),
            (None, None) => None,
            _ => return Err(malformed("loop detection differs from the configuration's")),
        };
        let phase = *Phase::ALL.get(s.phase as usize).ok_or_else(|| malformed("phase"))?;
        let queue = s
            .queue
            .iter()
            .map(|&k| ActionKind::ALL.get(k as usize).copied().ok_or_else(|| malformed("queued action")))
            .collect::<Result<_, _>>()?;
        if s.round_durations.len() != s.results.len() || s.rounds.iter().any(|&at| at == 0 || at >= conv.added_len()) {
            return Err(malformed("tool rounds"));
        }
        let loop_info = match s.loop_info {
            Some((kind, repetitions, detail)) => Some(LoopInfo { kind: kind_of(kind)?, repetitions, detail }),
            None => None,
        };
        if let Some((signature, prefix)) = s.summary_cache {
            *cache.lock().unwrap_or_else(|e| e.into_inner()) = Some(SummaryCache { signature, prefix });
        }
        Ok(Machine {
            cfg,
            cache,
            conv,
            usage: Usage { input_tokens: s.usage.0, output_tokens: s.usage.1 },
            spent: s.spent,
            turns: s.turns,
            final_output: s.final_output,
            budget_exceeded: s.budget_exceeded,
            loop_detected: s.loop_detected,
            aborted: s.aborted,
            detector,
            loop_warned: s.loop_warned,
            granted: s.granted.into_iter().collect(),
            tools_offered: s.tools_offered,
            observers: Observers { on_warning: s.observers.0, events: s.observers.1 },
            phase,
            queue,
            turn_text: s.turn_text,
            tool_uses: s.tool_uses,
            pending_break: s.pending_break,
            inject: s.inject.map(kind_of).transpose()?,
            loop_info,
            loop_action: s.loop_action,
            results: s
                .results
                .into_iter()
                .map(|r| {
                    r.map(|(content, is_error, usage)| ToolOutcome {
                        content,
                        is_error,
                        usage: usage.map(|(i, o)| Usage { input_tokens: i, output_tokens: o }),
                    })
                })
                .collect(),
            round_durations: s.round_durations,
            rounds: s.rounds,
            durations: s.durations,
            plan: None,
            summary: s.summary,
            injected: s.injected.map(kind_of).transpose()?.map(super::warning_text),
            first_turn_warning: s.first_turn_warning,
        })
    }
}

#[cfg(test)]
#[allow(clippy::field_reassign_with_default)]
mod tests {
    use super::super::tests::{detecting, machine, text_resp, tool_resp, START};
    use super::super::*;
    use super::{malformed as refused, SnapshotError};
    use crate::kernel::loop_detector::Match;

    /// A scripted driver's own state, which a restored run takes over as it was (the JS
    /// driver's counterpart is what the machine cannot hold: its resources).
    #[derive(Clone, Default)]
    struct Script {
        /// The next canned model response.
        next: usize,
        /// The calls of the round in flight still to answer (answered last first, one per step).
        left: Vec<usize>,
    }

    /// What a driver sees of an action, as text: every field it acts on.
    fn seen(action: &Action<'_>) -> String {
        match action {
            Action::ApplyPlan(plan) => format!("plan {}", context::plan_json(plan)),
            Action::CustomCompress(c) => format!("compress {}", c.estimated_tokens()),
            Action::Summarize(c) => format!("summarize {} {}", c.turn(), c.input_json()),
            Action::CallModel(t) => format!("model {}", t.turn()),
            Action::LoopDetected(n) => format!("loop {:?} {}", n.info(), n.awaits_policy()),
            Action::ToolRound(r) => format!("round {:?} {:?}", r.calls(), r.trailing_warning()),
            other => format!("{other:?}"),
        }
    }

    /// One step of the scripted driver: an answer (one outcome of a round at a time) when the
    /// machine waits for one, else a poll, whose action is recorded. Returns false once `Done`.
    fn step(m: &mut Machine, script: &mut Script, responses: &[String], trace: &mut Vec<String>) -> bool {
        // A round whose calls are all answered goes on with the next poll.
        let answered = m.awaiting() == Awaiting::ToolResults && script.left.is_empty();
        match if answered { Pending::Nothing } else { m.pending() } {
            Pending::Model(turn) => {
                turn.answer(ModelAnswer::Json(&responses[script.next])).unwrap();
                script.next += 1;
            }
            Pending::Summary(call) => {
                let turn = call.turn();
                call.answer(Some(&text_resp(&format!("summary of turn {turn}"), 2, 3))).unwrap();
            }
            Pending::Conversation(_) => {
                // The custom strategy keeps the first message and the last two.
                let c = m.conversation();
                let kept: Vec<String> = c
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| *i == 0 || i + 2 >= c.len())
                    .map(|(_, m)| m.to_json())
                    .collect();
                let json = format!("[{}]", kept.join(","));
                let Pending::Conversation(call) = m.pending() else { unreachable!() };
                call.answer(Some(&json)).unwrap();
            }
            Pending::LoopAction(policy) => policy.answer("warn"),
            Pending::ToolResults(mut round) => {
                let index = script.left.pop().expect("a call left to answer");
                let call = round.calls().iter().nth(index).unwrap();
                let outcome = ToolOutcome {
                    content: format!("{}#{index} of {}", call.name, call.id),
                    is_error: if call.granted { (index % 2 == 1).then_some(false) } else { Some(true) },
                    usage: (call.name == "d").then_some(Usage { input_tokens: 40.0, output_tokens: 10.0 }),
                };
                round.answer_timed(index, outcome, 1.5 * index as f64 + 2.0).unwrap();
            }
            Pending::Nothing => {
                let action = m.poll(false).unwrap();
                trace.push(seen(&action));
                match action {
                    Action::Done(_) => return false,
                    Action::ToolRound(round) => script.left = (0..round.calls().len()).collect(),
                    _ => {}
                }
            }
        }
        true
    }

    /// Everything a run reports at its end, as text.
    fn result(m: &Machine) -> String {
        let added: Vec<String> = m.added_messages().map(Message::to_json).collect();
        let calls: Vec<String> = m
            .tool_calls_made()
            .iter()
            .map(|c| format!("{} {} {} {}", c.name, c.input.get(), c.output, c.duration))
            .collect();
        let conv: Vec<String> = m.conversation().iter().map(Message::to_json).collect();
        format!("{:?}\n{added:?}\n{calls:?}\n{conv:?}", m.outcome())
    }

    /// Runs the script through, then again once per step boundary: snapshotted there, restored
    /// into a fresh machine (with a fresh summary cache) and driven on. Every restored run's
    /// actions and result equal the uninterrupted run's. Returns the run's trace.
    fn check(cfg: RunnerConfig, initial: &str, granted: &[&str], responses: &[String]) -> Vec<String> {
        let cfg = Arc::new(cfg);
        let fresh = || machine((*cfg).clone(), initial, granted);
        let (mut m, mut script, mut trace) = (fresh(), Script::default(), Vec::new());
        let mut steps = 0;
        while step(&mut m, &mut script, responses, &mut trace) {
            steps += 1;
        }
        let whole = (trace.clone(), result(&m));
        for at in 0..=steps {
            let (mut m, mut script, mut trace) = (fresh(), Script::default(), Vec::new());
            for _ in 0..at {
                assert!(step(&mut m, &mut script, responses, &mut trace));
            }
            let snap = match m.snapshot() {
                Ok(snap) => snap,
                // The one refused state: a summary's answer given, its plan not yet polled.
                Err(SnapshotError::PlanStaged) => {
                    assert!(m.poll(false).unwrap().kind() == ActionKind::ApplyPlan, "step {at}");
                    continue;
                }
                Err(e) => panic!("step {at}: {e}"),
            };
            drop(m);
            let mut r = Machine::restore(cfg.clone(), Arc::new(Mutex::new(None)), &snap).unwrap();
            // The restored machine writes the same state.
            assert_eq!(r.snapshot().unwrap(), snap, "step {at}");
            while step(&mut r, &mut script, responses, &mut trace) {}
            assert_eq!((trace, result(&r)), whole, "restored at step {at}");
        }
        whole.0
    }

    fn count(trace: &[String], prefix: &str) -> usize {
        trace.iter().filter(|t| t.starts_with(prefix)).count()
    }

    #[test]
    fn restored_tool_rounds_continue_identically_even_mid_round() {
        let responses = [
            tool_resp(&[("1", "a"), ("2", "b"), ("3", "a")], "thinking"),
            tool_resp(&[("4", "a")], ""),
            text_resp("fin", 1, 1),
        ];
        let trace = check(RunnerConfig::default(), START, &["a"], &responses);
        assert_eq!(count(&trace, "round"), 2);
        // The records: every executed call, its output as the history got it, its duration.
        let mut m = machine(RunnerConfig::default(), START, &["a"]);
        let mut script = Script::default();
        while step(&mut m, &mut script, &responses, &mut Vec::new()) {}
        let calls: Vec<_> = m.tool_calls_made().iter().map(|c| (c.name, c.output, c.duration)).collect();
        assert_eq!(calls[0], ("a", "a#0 of 1", 2.0));
        assert_eq!(calls[1].0, "b");
        assert!(calls[1].1.starts_with("Tool \"b\"") || calls[1].1 == "b#1 of 2");
        assert_eq!(calls.len(), 4);
        assert_eq!(m.added_messages().count(), 5);
    }

    #[test]
    fn restored_loop_detection_continues_identically() {
        let same = tool_resp(&[("1", "a")], "");
        let responses = vec![same.clone(), same.clone(), same.clone(), same.clone(), same];
        // warn, then terminate: the detector's memory and the warned flag cross the snapshot.
        let mut cfg = RunnerConfig::default();
        cfg.loop_detection = detecting(None, "warn", Match::Exact);
        let trace = check(cfg, START, &["a"], &responses);
        assert!(trace.last().unwrap().contains("loop_detected: true"), "{trace:?}");
        // The user's policy callback, awaited across the snapshot.
        let mut cfg = RunnerConfig::default();
        cfg.loop_detection = Some(LoopConfig {
            max_repetitions: Some(2.0),
            window: None,
            action: LoopAction::Callback,
            matching: Match::Canonical,
        });
        let trace = check(cfg, START, &["a"], &responses);
        assert!(count(&trace, "loop") >= 2);
        // A text loop's injected warning.
        let mut cfg = RunnerConfig::default();
        cfg.loop_detection = detecting(Some(2.0), "warn", Match::Exact);
        let texts = [text_resp("same", 1, 1), text_resp("same", 1, 1), text_resp("other", 1, 1)];
        let initial = r#"[{"role":"user","content":[{"type":"text","text":"go"}]},{"role":"assistant","content":[{"type":"text","text":"same"}]},{"role":"user","content":[{"type":"text","text":"again"}]}]"#;
        let trace = check(cfg, initial, &[], &texts);
        assert!(trace.iter().any(|t| t.starts_with("InjectWarning")), "{trace:?}");
    }

    #[test]
    fn restored_context_strategies_continue_identically() {
        let rounds: Vec<String> = (0..4)
            .map(|k| tool_resp(&[(&format!("c{k}"), "a")], &"words ".repeat(30)))
            .chain([text_resp("fin", 1, 1)])
            .collect();
        // Summarize: the summary call, its plan, and the runner's cache carried by the snapshot.
        let mut cfg = RunnerConfig::default();
        cfg.strategy = Some(Strategy::Summarize { max_tokens: 60.0 });
        let trace = check(cfg, START, &["a"], &rounds);
        assert!(count(&trace, "summarize") >= 1 && count(&trace, "plan") >= 1, "{trace:?}");
        // Tool-result compression with a sliding window.
        let mut cfg = RunnerConfig::default();
        cfg.compress_tool_results = Some(1.0);
        cfg.strategy = Some(Strategy::SlidingWindow { max_turns: 2.0 });
        let trace = check(cfg, START, &["a"], &rounds);
        assert!(count(&trace, "plan") >= 2, "{trace:?}");
        // The user's compress.
        let mut cfg = RunnerConfig::default();
        cfg.strategy = Some(Strategy::Custom);
        let trace = check(cfg, START, &["a"], &rounds);
        assert_eq!(count(&trace, "compress"), 5);
    }

    #[test]
    fn restored_budget_and_warnings_continue_identically() {
        // A delegated run's usage spends the budget after its round.
        let cfg = RunnerConfig { max_token_budget: Some(60.0), ..RunnerConfig::default() };
        let responses = [tool_resp(&[("1", "d"), ("2", "a")], ""), text_resp("never", 1, 1)];
        let trace = check(cfg, START, &["a", "d"], &responses);
        assert!(trace.iter().any(|t| t.starts_with("BudgetExceeded")), "{trace:?}");
        // The model's own usage, with a turn of text.
        let cfg = RunnerConfig { max_token_budget: Some(5.0), ..RunnerConfig::default() };
        let trace = check(cfg, START, &["a"], &[tool_resp(&[("1", "a")], "spent")]);
        assert!(trace.last().unwrap().contains("budget_exceeded: true"), "{trace:?}");
        // The first-turn warning.
        let trace = check(RunnerConfig::default(), START, &["a"], &[text_resp("no tools", 1, 1)]);
        assert!(trace.iter().any(|t| t.starts_with("FirstTurnWarning")), "{trace:?}");
    }

    #[test]
    fn a_staged_plan_and_foreign_text_are_refused() {
        let mut cfg = RunnerConfig::default();
        cfg.strategy = Some(Strategy::Summarize { max_tokens: 1.0 });
        let initial = r#"[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"text","text":"1"}]},{"role":"user","content":[{"type":"text","text":"2"}]},{"role":"assistant","content":[{"type":"text","text":"3"}]},{"role":"user","content":[{"type":"text","text":"4"}]}]"#;
        let mut m = machine(cfg.clone(), initial, &[]);
        let Action::Summarize(call) = m.poll(false).unwrap() else { panic!() };
        call.answer(Some(&text_resp("sum", 1, 1))).unwrap();
        assert_eq!(m.snapshot().unwrap_err(), SnapshotError::PlanStaged);
        assert_eq!(m.poll(false).unwrap().kind(), ActionKind::ApplyPlan);
        let snap = m.snapshot().unwrap();
        let restore = |text: &str| Machine::restore(Arc::new(cfg.clone()), Arc::new(Mutex::new(None)), text).err();
        assert!(restore(&snap).is_none());
        assert!(matches!(restore("{}"), Some(SnapshotError::Malformed(_))));
        assert_eq!(restore(&snap.replacen(r#"{"v":1"#, r#"{"v":2"#, 1)), Some(refused("version")));
        // A configuration that does not detect loops cannot take a detector's memory.
        let mut looping = cfg.clone();
        looping.loop_detection = detecting(None, "warn", Match::Exact);
        let other = Machine::restore(Arc::new(looping), Arc::new(Mutex::new(None)), &snap).err();
        assert_eq!(other, Some(refused("loop detection differs from the configuration's")));
    }
}
