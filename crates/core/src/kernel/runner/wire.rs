//! The runner's actions as they cross to the JS driver: the one definition of the op codes and
//! layouts. `lib/wire.js` decodes them; it reads the codes from `lib/generated/boundary.js`
//! (rendered from `crate::boundary`), so the numbers are written nowhere else.
//!
//! An action crosses as one value:
//! - `CallModel` as a number: bits 0–4 the kind ([`ActionKind::CallModel`]), the rest the turn
//!   (`turn << KIND_BITS`). It is the one action of every LLM call, and a number costs the
//!   driver no parse.
//! - a `TOOL_ROUND` of the verdicts layout (below) whose calls are all granted, none with a
//!   signature, and that has no trailing warning, also as a number: the kind, and the number of
//!   calls (`calls << KIND_BITS`).
//! - every other action as a JSON array, the kind's code first:
//!
//! | kind | layout |
//! |---|---|
//! | `DONE` | `[0, output, inputTokens, outputTokens, turns, budgetExceeded, loopDetected, aborted]` |
//! | `APPLY_PLAN` | `[1, plan]` (`context::plan_json`) |
//! | `CUSTOM_COMPRESS` | `[2, estimatedTokens]` |
//! | `SUMMARIZE` | `[3, turn, messages]` |
//! | `TEXT` | `[5, text]` |
//! | `BUDGET_EXCEEDED` | `[6, totalTokens]` |
//! | `LOOP_DETECTED` | `[7, kind, repetitions, detail, awaitsPolicy]` |
//! | `INJECT_WARNING` | `[8, text]` |
//! | `FIRST_TURN_WARNING` | `[9, text]` |
//! | `TOOL_ROUND` | `[10, trailingWarning \| null, id, name, input, granted, signature \| null, …]` (five fields a call) |
//! | `TOOL_ROUND`, verdicts only ([`RoundLayout::Verdicts`]) | `[10, trailingWarning \| null, granted, signature \| null, …]` (two fields a call) |
//! | `LOOP_STOP_RESULTS` | `[11, resultText, id, …]` |
//!
//! A round answers the model's last answer. When the driver handed that answer over with a copy of
//! its own (`runRespond`'s fifth argument: a copy JSON writes exactly as it is, so the machine's
//! calls are that copy's calls, in order, field for field; a call is written there flat as
//! `id, name, input` or as `[id, name, input, signature]`, read by
//! `message::parse_copied_content_str`), the round carries only the verdicts and the signatures
//! (the one field the machine may read differently: a non-string one is dropped, half a
//! surrogate pair replaced): the calls' ids, names and inputs are not written again here and
//! parsed again in JS. The driver tells the layouts apart by the
//! third element (a boolean there, a string id in the full layout). W1 16×10: ≈ 380 ns of
//! `JSON.parse` per call, against ≈ 130 ns for the driver's copy.
//!
//! A response the machine refused crosses as `[-1, message]` ([`REJECTED`]), so that the driver
//! builds the run's error in its own realm.
//!
//! A native adapter's answer reaches JS as one reply string of fields separated by U+0001
//! ([`SEP`]), which `lib/wire.js` splits and builds with object literals:
//! - a run's reply ([`model_reply`]): `next action␁inputTokens␁outputTokens` and the blocks, the
//!   machine having taken the content and moved on before the driver resumes;
//! - `adapter.chat`'s reply ([`chat_reply`]): `inputTokens␁outputTokens␁id␁model␁stop_reason`
//!   and the blocks.
//!
//! Blocks: `t␁text`, `u␁id␁name␁input JSON`, `s␁id␁name␁input JSON␁signature` (a tool_use with
//! a signature), and `j␁block JSON` for any other block. A string field that holds U+0001 or
//! starts with `"` is written as its JSON string (JSON never holds U+0001 raw), so every
//! response fits and there is no second layout. Measured against one JSON array per reply
//! (`JSON.parse` building the same objects), W5 with a release build: 3.0k / 3.2k / 1.4k fewer
//! instructions per LLM call for `Agent.run` at T = 1 / 5 / 20 (78.1k against 81.1k at T = 1),
//! 4.3k for `adapter.chat` alone (71.1k against 75.4k).
//!
//! Answers go the other way, one call per handle of [`Pending`](super::Pending) (types in
//! `lib/native.d.ts`):
//!
//! | call | arguments | returns |
//! |---|---|---|
//! | `runRespond` | `id, contentJson \| null, inputTokens, outputTokens, copied?` | the next action, or a rejection |
//! | `runToolResult` | `id, index, content, isError (0 false, 1 true, 2 unset)(, inputTokens, outputTokens)` | `undefined` |
//! | `runRespondSummary` | `id, responseJson \| null` | `null`, or a rejection |
//! | `runRespondConversation` | `id, messagesJson \| null` | `null`, or a rejection |
//! | `runRespondLoopAction` | `id, action` | nothing |

use super::{Action, DriverError, ToolCall, ToolCalls};
use crate::json::{push_json_string, push_uint};
use crate::kernel::context;
use crate::kernel::message::{Block, Usage};

/// Bits of a numeric action that hold its kind.
pub const KIND_BITS: u32 = 5;

/// The code of a refused response (see the module docs).
pub const REJECTED: i32 = -1;

/// An encoded action.
#[derive(Debug, Clone, PartialEq)]
pub enum Wire {
    Number(u32),
    Json(String),
}

impl Wire {
    /// The JSON text of the value (a number is its decimal text): what a reply embeds.
    pub fn into_json(self) -> String {
        match self {
            Wire::Number(n) => n.to_string(),
            Wire::Json(s) => s,
        }
    }
}

/// How a `TOOL_ROUND` carries its calls (see the module docs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoundLayout {
    /// Every field of every call.
    Full,
    /// The verdicts and signatures only: the driver holds a copy of the answer.
    Verdicts,
}

pub fn encode(action: &Action<'_>, layout: RoundLayout) -> Wire {
    let code = action.kind() as u8;
    if let Action::CallModel(call) = action {
        return Wire::Number(code as u32 | call.turn() << KIND_BITS);
    }
    // A round's calls, read once.
    let round = match action {
        Action::ToolRound(round) => Some((round.calls(), round.trailing_warning())),
        _ => None,
    };
    if let Some(n) = round.and_then(|(calls, warning)| granted_round_count(&calls, warning, layout)) {
        return Wire::Number(code as u32 | n << KIND_BITS);
    }
    // Written in place (no text per field): this runs for most actions of every run. A round
    // is sized up front (it grew through five reallocations at 16 calls).
    let capacity = match round {
        Some((calls, _)) if layout == RoundLayout::Full => 64 + calls.blocks.iter().map(call_len).sum::<usize>(),
        Some((calls, _)) => 64 + 12 * calls.blocks.len(),
        None => 64,
    };
    let mut out = String::with_capacity(capacity);
    out.push('[');
    push_uint(&mut out, code as u64);
    let out_ = &mut out;
    match action {
        Action::Done(o) => {
            str_field(out_, o.output);
            num_field(out_, o.usage.input_tokens);
            num_field(out_, o.usage.output_tokens);
            num_field(out_, o.turns as f64);
            raw_field(out_, boolean(o.budget_exceeded));
            raw_field(out_, boolean(o.loop_detected));
            raw_field(out_, boolean(o.aborted));
        }
        Action::ApplyPlan(plan) => raw_field(out_, &context::plan_json(plan)),
        Action::CustomCompress(call) => num_field(out_, call.estimated_tokens() as f64),
        Action::Summarize(call) => {
            num_field(out_, call.turn() as f64);
            raw_field(out_, call.input_json());
        }
        Action::Text(text) | Action::FirstTurnWarning(text) => str_field(out_, text),
        Action::InjectWarning(text) => str_field(out_, text),
        Action::BudgetExceeded { total_tokens } => num_field(out_, *total_tokens),
        Action::LoopDetected(notice) => {
            let info = notice.info();
            str_field(out_, info.kind.as_str());
            num_field(out_, info.repetitions as f64);
            str_field(out_, &info.detail);
            raw_field(out_, boolean(notice.awaits_policy()));
        }
        Action::ToolRound(_) => {
            let (calls, warning) = round.expect("read above");
            match warning {
                Some(w) => str_field(out_, w),
                None => raw_field(out_, "null"),
            }
            match layout {
                RoundLayout::Full => push_calls(out_, &calls),
                RoundLayout::Verdicts => push_verdicts(out_, &calls),
            }
        }
        Action::LoopStopResults { calls, result } => {
            str_field(out_, result);
            for c in calls.iter() {
                str_field(out_, c.id);
            }
        }
        // Returned above, before any allocation.
        Action::CallModel(_) => {}
    }
    out.push(']');
    Wire::Json(out)
}

/// The number of calls of a round that crosses as a number (see the module docs): the verdicts
/// layout, no trailing warning, every call granted and none with a signature. That is nearly
/// every round, and a number spares the round's text and the driver's `JSON.parse` of it
/// (≈ 300 instructions per call in W1 16×10).
fn granted_round_count(calls: &ToolCalls<'_>, warning: Option<&str>, layout: RoundLayout) -> Option<u32> {
    if layout != RoundLayout::Verdicts || warning.is_some() {
        return None;
    }
    let mut n = 0u32;
    for c in calls.iter() {
        if !c.granted || c.signature.is_some() || n == u32::MAX >> KIND_BITS {
            return None;
        }
        n += 1;
    }
    Some(n)
}

/// The calls flat, five fields each: an array per call cost `JSON.parse` ≈ 0.6k instructions
/// per call in W1 16×10.
fn push_calls(out: &mut String, calls: &ToolCalls<'_>) {
    for c in calls.iter() {
        str_field(out, c.id);
        str_field(out, c.name);
        raw_field(out, c.input.get());
        push_verdict(out, c);
    }
}

fn push_verdicts(out: &mut String, calls: &ToolCalls<'_>) {
    for c in calls.iter() {
        push_verdict(out, c);
    }
}

/// A call's last two fields in either layout: the gate's verdict and the signature.
fn push_verdict(out: &mut String, c: ToolCall<'_>) {
    raw_field(out, boolean(c.granted));
    match c.signature {
        Some(sig) => str_field(out, sig),
        None => raw_field(out, "null"),
    }
}

/// About the bytes a block takes in a round's layout (none unless it is a call): its texts and
/// the quotes, commas and verdict around them.
fn call_len(b: &Block) -> usize {
    match b {
        Block::ToolUse { id, name, input, signature } => {
            id.len() + name.len() + input.get().len() + signature.as_ref().map_or(4, |s| s.len() + 2) + 16
        }
        _ => 0,
    }
}

fn raw_field(out: &mut String, json: &str) {
    out.push(',');
    out.push_str(json);
}

fn str_field(out: &mut String, s: &str) {
    out.push(',');
    push_json_string(out, s);
}

fn num_field(out: &mut String, x: f64) {
    out.push(',');
    push_js_number(out, x);
}

/// Separates the fields of a reply (see the module docs).
pub const SEP: char = '\u{1}';

/// A run's reply: the next action, the usage and the blocks of the answer (see the module docs).
/// The blocks are written before the content moves into the machine, the action after.
pub struct ModelReply(String);

impl ModelReply {
    pub fn new(usage: Usage, content: &[Block]) -> ModelReply {
        let mut out = String::with_capacity(64);
        push_number(&mut out, usage.input_tokens);
        push_number(&mut out, usage.output_tokens);
        push_blocks(&mut out, content);
        ModelReply(out)
    }

    /// The reply's text, with the action the machine moved on to.
    pub fn with_next(self, next: Wire) -> String {
        let mut out = next.into_json();
        out.push_str(&self.0);
        out
    }
}

/// `adapter.chat`'s reply (see the module docs).
pub fn chat_reply(id: &str, model: &str, stop_reason: &str, usage: Usage, content: &[Block]) -> String {
    let mut out = String::with_capacity(64);
    push_js_number(&mut out, usage.input_tokens);
    push_number(&mut out, usage.output_tokens);
    push_field(&mut out, id);
    push_field(&mut out, model);
    push_field(&mut out, stop_reason);
    push_blocks(&mut out, content);
    out
}

fn push_number(out: &mut String, x: f64) {
    out.push(SEP);
    push_js_number(out, x);
}

/// A field as it is, or as its JSON string when it holds the separator or starts with `"`.
fn push_field(out: &mut String, s: &str) {
    out.push(SEP);
    if s.starts_with('"') || memchr::memchr(1, s.as_bytes()).is_some() {
        push_json_string(out, s);
    } else {
        out.push_str(s);
    }
}

fn push_tag(out: &mut String, tag: &str) {
    out.push(SEP);
    out.push_str(tag);
}

fn push_blocks(out: &mut String, content: &[Block]) {
    for b in content {
        match b {
            Block::Text { text: Some(t) } => {
                push_tag(out, "t");
                push_field(out, t);
            }
            Block::ToolUse { id, name, input, signature } => {
                push_tag(out, if signature.is_some() { "s" } else { "u" });
                push_field(out, id);
                push_field(out, name);
                // JSON text: never holds the separator raw.
                push_tag(out, input.get());
                if let Some(sig) = signature {
                    push_field(out, sig);
                }
            }
            other => {
                push_tag(out, "j");
                out.push(SEP);
                other.write_json(out);
            }
        }
    }
}

/// `[-1, message]` for a refused response; `None` for a driver bug (the binding throws it).
pub fn encode_rejected(e: &DriverError) -> Option<String> {
    match e {
        DriverError::Rejected(msg) => {
            let mut out = format!("[{REJECTED}");
            str_field(&mut out, msg);
            out.push(']');
            Some(out)
        }
        _ => None,
    }
}

/// Token counts are finite (the machine counts a non-finite one as 0); integers are written
/// without a fraction, as JS writes them.
fn push_js_number(out: &mut String, x: f64) {
    if x.fract() == 0.0 && x.abs() < 9.007_199_254_740_992e15 {
        if x < 0.0 {
            out.push('-');
        }
        push_uint(out, x.abs() as u64);
    } else {
        out.push_str(&serde_json::to_string(&x).expect("a finite number serialises"));
    }
}

fn boolean(b: bool) -> &'static str {
    if b {
        "true"
    } else {
        "false"
    }
}

/// The texts `lib/wire.js` and `lib/runner.js` throw when the wire and the driver disagree
/// (driver bugs; `{name}` marks a parameter).
pub mod driver_texts {
    pub const UNKNOWN_ACTION: &str = "oma-kernel: unknown runner action {code}";
    pub const UNKNOWN_OPERATION: &str = "oma-kernel: unknown runner operation";
    pub const ROUND_MISMATCH: &str = "oma-kernel: a tool round does not match the answer it came from";
    pub const UNKNOWN_BLOCK_TAG: &str = "oma-kernel: unknown block tag in a reply: {tag}";
}

#[cfg(test)]
// Each test starts from the default configuration and states the one field it is about.
#[allow(clippy::field_reassign_with_default)]
mod tests {
    //! Round trips: every action is encoded, decoded the way `lib/wire.js` decodes it, and
    //! compared with the action the machine produced.
    use serde_json::{json, Value};

    use super::*;
    use crate::kernel::loop_detector::Match;
    use crate::kernel::message::Usage;
    use crate::kernel::runner::tests::machine;
    use crate::kernel::runner::{
        ActionKind, Awaiting, LoopAction, LoopConfig, Machine, ModelAnswer, Pending, RunnerConfig, Strategy,
        ToolOutcome, LOOP_STOPPED_RESULT, W_TOOL,
    };

    /// The decoder of `lib/wire.js`, field for field: `(kind, named fields)`.
    fn decode(w: &Wire) -> (ActionKind, Value) {
        let kind_of = |c: u64| *ActionKind::ALL.iter().find(|k| **k as u64 == c).expect("a known code");
        let a: Vec<Value> = match w {
            Wire::Number(n) => {
                return (kind_of((n & ((1 << KIND_BITS) - 1)) as u64), json!({ "turn": n >> KIND_BITS }))
            }
            Wire::Json(s) => serde_json::from_str(s).expect("the wire is JSON"),
        };
        let kind = kind_of(a[0].as_u64().unwrap());
        let v = match kind {
            ActionKind::Done => json!({
                "output": a[1], "inputTokens": a[2], "outputTokens": a[3], "turns": a[4],
                "budgetExceeded": a[5], "loopDetected": a[6], "aborted": a[7],
            }),
            ActionKind::ApplyPlan => json!({ "plan": a[1] }),
            ActionKind::CustomCompress => json!({ "estimatedTokens": a[1] }),
            ActionKind::Summarize => json!({ "turn": a[1], "messages": a[2] }),
            ActionKind::Text | ActionKind::InjectWarning | ActionKind::FirstTurnWarning => json!({ "text": a[1] }),
            ActionKind::BudgetExceeded => json!({ "totalTokens": a[1] }),
            ActionKind::LoopDetected => json!({
                "kind": a[1], "repetitions": a[2], "detail": a[3], "awaitsPolicy": a[4],
            }),
            ActionKind::ToolRound => json!({
                "trailingWarning": a[1],
                "calls": a[2..].chunks(5).map(|c| {
                    assert_eq!(c.len(), 5, "five fields a call");
                    let mut call = json!({ "id": c[0], "name": c[1], "input": c[2], "granted": c[3] });
                    if !c[4].is_null() {
                        call["signature"] = c[4].clone();
                    }
                    call
                }).collect::<Vec<_>>(),
            }),
            ActionKind::LoopStopResults => json!({ "result": a[1], "ids": a[2..] }),
            ActionKind::CallModel => unreachable!("CallModel crosses as a number"),
        };
        (kind, v)
    }

    /// The same fields read from the action itself.
    fn expected(action: &Action<'_>) -> Value {
        match action {
            Action::Done(o) => json!({
                "output": o.output, "inputTokens": o.usage.input_tokens, "outputTokens": o.usage.output_tokens,
                "turns": o.turns, "budgetExceeded": o.budget_exceeded, "loopDetected": o.loop_detected,
                "aborted": o.aborted,
            }),
            Action::ApplyPlan(plan) => {
                json!({ "plan": serde_json::from_str::<Value>(&context::plan_json(plan)).unwrap() })
            }
            Action::CustomCompress(call) => json!({ "estimatedTokens": call.estimated_tokens() }),
            Action::Summarize(call) => {
                json!({ "turn": call.turn(), "messages": serde_json::from_str::<Value>(call.input_json()).unwrap() })
            }
            Action::CallModel(call) => json!({ "turn": call.turn() }),
            Action::Text(t) | Action::FirstTurnWarning(t) => json!({ "text": t }),
            Action::InjectWarning(t) => json!({ "text": t }),
            Action::BudgetExceeded { total_tokens } => json!({ "totalTokens": total_tokens }),
            Action::LoopDetected(notice) => json!({
                "kind": notice.info().kind.as_str(), "repetitions": notice.info().repetitions,
                "detail": notice.info().detail, "awaitsPolicy": notice.awaits_policy(),
            }),
            Action::ToolRound(round) => json!({
                "trailingWarning": round.trailing_warning(),
                "calls": round.calls().iter().map(|c| {
                    let mut call = json!({
                        "id": c.id, "name": c.name,
                        "input": serde_json::from_str::<Value>(c.input.get()).unwrap(), "granted": c.granted,
                    });
                    if let Some(sig) = c.signature {
                        call["signature"] = sig.into();
                    }
                    call
                }).collect::<Vec<_>>(),
            }),
            Action::LoopStopResults { calls, result } => {
                json!({ "result": result, "ids": calls.iter().map(|c| c.id).collect::<Vec<_>>() })
            }
        }
    }

    /// Polls once and checks the round trip; returns the kind.
    fn round_trip(m: &mut Machine) -> ActionKind {
        let action = m.poll(false).unwrap();
        let wire = encode(&action, RoundLayout::Full);
        let (kind, fields) = decode(&wire);
        assert_eq!(kind, action.kind());
        // Numbers compare as JS reads them (12 and 12.0 are one value).
        let norm = |v: Value| serde_json::from_str::<Value>(&v.to_string().replace(".0,", ",")).unwrap();
        assert_eq!(norm(fields), norm(expected(&action)), "{wire:?}");
        kind
    }

    /// A configuration whose loop detector fires on the first repeat and answers with `action`.
    fn looping(action: LoopAction) -> RunnerConfig {
        let mut cfg = RunnerConfig::default();
        cfg.loop_detection =
            Some(LoopConfig { max_repetitions: Some(1.0), window: None, action, matching: Match::Exact });
        cfg
    }

    const START: &str = r#"[{"role":"user","content":[{"type":"text","text":"go \"quoted\"\n"}]}]"#;

    fn model(m: &mut Machine, content: &str, i: f64, o: f64) {
        let usage = Usage { input_tokens: i, output_tokens: o };
        let Pending::Model(turn) = m.pending() else { panic!("not waiting for the model") };
        turn.answer(ModelAnswer::Parts { content_json: Some(content), usage }).unwrap();
    }

    fn result(m: &mut Machine, index: usize) {
        let Pending::ToolResults(mut round) = m.pending() else { panic!("not waiting for a round") };
        round.answer(index, ToolOutcome { content: "ok".into(), is_error: None, usage: None }).unwrap();
    }

    #[test]
    fn call_model_text_first_turn_warning_done() {
        let mut m = machine(RunnerConfig::default(), START, &["a"]);
        assert_eq!(round_trip(&mut m), ActionKind::CallModel);
        model(&mut m, r#"[{"type":"text","text":"hé \u0001 \"x\""}]"#, 3.0, 4.5);
        assert_eq!(round_trip(&mut m), ActionKind::Text);
        assert_eq!(round_trip(&mut m), ActionKind::FirstTurnWarning);
        assert_eq!(round_trip(&mut m), ActionKind::Done);
    }

    #[test]
    fn tool_round_with_gate_signature_and_trailing_warning() {
        let cfg = looping(LoopAction::Fixed("warn".into()));
        let mut m = machine(cfg, START, &["a"]);
        assert_eq!(round_trip(&mut m), ActionKind::CallModel);
        model(
            &mut m,
            r#"[{"type":"tool_use","id":"1","name":"a","input":{"z":[1,{"q":"\""}]}},{"type":"tool_use","id":"2\"","name":"b","input":{},"signature":"s"}]"#,
            1.0,
            1.0,
        );
        assert_eq!(round_trip(&mut m), ActionKind::LoopDetected);
        let action = m.poll(false).unwrap();
        assert!(matches!(&action, Action::ToolRound(round) if round.trailing_warning() == Some(W_TOOL)));
        drop(action);
        // Polling again while results are missing is an error, not a second action.
        assert!(m.poll(false).is_err());
        result(&mut m, 0);
        result(&mut m, 1);
        assert_eq!(round_trip(&mut m), ActionKind::CallModel);
    }

    #[test]
    fn tool_round_encodes_each_call() {
        let mut m = machine(RunnerConfig::default(), START, &["a"]);
        m.poll(false).unwrap();
        model(
            &mut m,
            r#"[{"type":"tool_use","id":"1","name":"a","input":{"k":"v"}},{"type":"tool_use","id":"2","name":"b","input":{"n":null},"signature":"sig"}]"#,
            1.0,
            1.0,
        );
        let action = m.poll(false).unwrap();
        assert_eq!(
            encode(&action, RoundLayout::Full),
            Wire::Json(r#"[10,null,"1","a",{"k":"v"},true,null,"2","b",{"n":null},false,"sig"]"#.into())
        );
        drop(action);
        let mut m2 = machine(RunnerConfig::default(), START, &["a"]);
        m2.poll(false).unwrap();
        model(&mut m2, r#"[{"type":"tool_use","id":"1","name":"a","input":{}}]"#, 1.0, 1.0);
        assert_eq!(round_trip(&mut m2), ActionKind::ToolRound);
    }

    #[test]
    fn tool_round_of_a_copied_answer_carries_verdicts_and_signatures_only() {
        let mut m = machine(RunnerConfig::default(), START, &["a"]);
        m.poll(false).unwrap();
        // Blocks that are not calls take no field; a signature the machine reads differently
        // from the driver's copy (not a string: dropped; half a surrogate pair: replaced) is
        // written as the machine holds it.
        model(
            &mut m,
            r#"[{"type":"text","text":"t"},{"type":"tool_use","id":"1","name":"a","input":{"k":"v"}},{"type":"tool_use","id":"2","name":"b","input":{},"signature":"sig"},{"type":"tool_use","id":"3","name":"a","input":{},"signature":7},{"type":"tool_use","id":"4","name":"a","input":{},"signature":"x\ud800"}]"#,
            1.0,
            1.0,
        );
        assert_eq!(round_trip(&mut m), ActionKind::Text);
        let action = m.poll(false).unwrap();
        assert_eq!(
            encode(&action, RoundLayout::Verdicts),
            Wire::Json("[10,null,true,null,false,\"sig\",true,null,true,\"x\u{fffd}\"]".into())
        );
        // Every other action is written as in the full layout.
        drop(action);
        result(&mut m, 0);
        result(&mut m, 1);
        result(&mut m, 2);
        result(&mut m, 3);
        let action = m.poll(false).unwrap();
        assert_eq!(encode(&action, RoundLayout::Verdicts), encode(&action, RoundLayout::Full));
    }

    #[test]
    fn a_copied_round_all_granted_crosses_as_its_count() {
        let round = |content: &str, cfg: RunnerConfig, layout: RoundLayout| {
            let mut m = machine(cfg, START, &["a", "b"]);
            m.poll(false).unwrap();
            model(&mut m, content, 1.0, 1.0);
            let mut action = m.poll(false).unwrap();
            while !matches!(action, Action::ToolRound { .. }) {
                drop(action);
                action = m.poll(false).unwrap();
            }
            encode(&action, layout)
        };
        let two = r#"[{"type":"text","text":"t"},{"type":"tool_use","id":"1","name":"a","input":{}},{"type":"tool_use","id":"2","name":"b","input":{"k":1}}]"#;
        let code = ActionKind::ToolRound as u32;
        assert_eq!(round(two, RunnerConfig::default(), RoundLayout::Verdicts), Wire::Number(code | 2 << KIND_BITS));
        // The full layout always writes its calls.
        assert!(matches!(round(two, RunnerConfig::default(), RoundLayout::Full), Wire::Json(_)));
        // A call denied, or one with a signature: the verdicts and signatures as text.
        let denied = two.replace(r#""name":"b""#, r#""name":"c""#);
        assert_eq!(
            round(&denied, RunnerConfig::default(), RoundLayout::Verdicts),
            Wire::Json("[10,null,true,null,false,null]".into())
        );
        let signed = two.replace(r#""input":{"k":1}"#, r#""input":{"k":1},"signature":"s""#);
        assert_eq!(
            round(&signed, RunnerConfig::default(), RoundLayout::Verdicts),
            Wire::Json("[10,null,true,null,true,\"s\"]".into())
        );
        // A trailing warning (a loop the configuration answers with one) goes with the round.
        let cfg = looping(LoopAction::Fixed("warn".into()));
        let Wire::Json(text) = round(two, cfg, RoundLayout::Verdicts) else { panic!("a warned round is text") };
        let fields: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(fields, json!([10, W_TOOL, true, null, true, null]));
    }

    #[test]
    fn loop_detected_with_policy_and_loop_stop_results() {
        let cfg = looping(LoopAction::Callback);
        let mut m = machine(cfg, START, &["a"]);
        m.poll(false).unwrap();
        model(&mut m, r#"[{"type":"tool_use","id":"7","name":"a","input":{}}]"#, 1.0, 1.0);
        assert_eq!(round_trip(&mut m), ActionKind::LoopDetected);
        let Pending::LoopAction(policy) = m.pending() else { panic!("not waiting for the policy") };
        policy.answer("terminate");
        let action = m.poll(false).unwrap();
        assert_eq!(encode(&action, RoundLayout::Full), Wire::Json(format!("[11,\"{LOOP_STOPPED_RESULT}\",\"7\"]")));
        drop(action);
        assert_eq!(round_trip(&mut m), ActionKind::Done);
    }

    #[test]
    fn budget_and_inject_warning() {
        let mut cfg = RunnerConfig::default();
        cfg.max_token_budget = Some(1.0);
        let mut m = machine(cfg, START, &[]);
        m.poll(false).unwrap();
        model(&mut m, r#"[{"type":"text","text":"t"}]"#, 0.5, 2.0);
        assert_eq!(round_trip(&mut m), ActionKind::Text);
        assert_eq!(round_trip(&mut m), ActionKind::BudgetExceeded);
        assert_eq!(round_trip(&mut m), ActionKind::Done);

        let cfg = looping(LoopAction::Fixed("warn".into()));
        let mut m = machine(cfg, START, &[]);
        m.poll(false).unwrap();
        model(&mut m, r#"[{"type":"text","text":"same"}]"#, 1.0, 1.0);
        assert_eq!(round_trip(&mut m), ActionKind::Text);
        assert_eq!(round_trip(&mut m), ActionKind::LoopDetected);
        assert_eq!(round_trip(&mut m), ActionKind::InjectWarning);
        assert_eq!(round_trip(&mut m), ActionKind::CallModel);
    }

    #[test]
    fn plans_compression_and_summaries() {
        let hist = r#"[{"role":"user","content":[{"type":"text","text":"q"}]},{"role":"assistant","content":[{"type":"text","text":"1"}]},{"role":"user","content":[{"type":"text","text":"2"}]},{"role":"assistant","content":[{"type":"text","text":"3"}]},{"role":"user","content":[{"type":"text","text":"4"}]}]"#;
        let mut cfg = RunnerConfig::default();
        cfg.strategy = Some(Strategy::SlidingWindow { max_turns: 1.0 });
        let mut m = machine(cfg, hist, &[]);
        assert_eq!(round_trip(&mut m), ActionKind::ApplyPlan);

        let mut cfg = RunnerConfig::default();
        cfg.strategy = Some(Strategy::Custom);
        let mut m = machine(cfg, hist, &[]);
        assert_eq!(round_trip(&mut m), ActionKind::CustomCompress);

        let mut cfg = RunnerConfig::default();
        cfg.strategy = Some(Strategy::Summarize { max_tokens: 1.0 });
        let mut m = machine(cfg, hist, &[]);
        assert_eq!(round_trip(&mut m), ActionKind::Summarize);
        let Pending::Summary(call) = m.pending() else { panic!("not waiting for the summary") };
        call.answer(Some(r#"{"content":[{"type":"text","text":"sum"}]}"#)).unwrap();
        assert_eq!(round_trip(&mut m), ActionKind::ApplyPlan);
        assert_eq!(round_trip(&mut m), ActionKind::CallModel);
    }

    #[test]
    fn rejections_and_driver_bugs() {
        let mut m = machine(RunnerConfig::default(), START, &[]);
        let Action::CallModel(turn) = m.poll(false).unwrap() else { panic!() };
        let e = turn.answer(ModelAnswer::Json("null")).unwrap_err();
        let wire: Value = serde_json::from_str(&encode_rejected(&e).unwrap()).unwrap();
        assert_eq!(
            wire,
            json!([REJECTED, "LLM adapter returned a malformed response: expected an object with a \"content\" array"])
        );
        let bug = m.pending().refuse(Awaiting::LoopAction);
        assert_eq!(encode_rejected(&bug), None);
    }

    /// The decoder of `lib/wire.js` for the blocks of a reply, as JSON values.
    fn decode_blocks(p: &[&str]) -> Vec<Value> {
        let field = |s: &str| -> Value {
            if s.starts_with('"') {
                serde_json::from_str(s).unwrap()
            } else {
                s.into()
            }
        };
        let mut out = Vec::new();
        let mut i = 0;
        while i < p.len() {
            match p[i] {
                "t" => {
                    out.push(json!({ "type": "text", "text": field(p[i + 1]) }));
                    i += 2;
                }
                "u" | "s" => {
                    let mut b = json!({
                        "type": "tool_use", "id": field(p[i + 1]), "name": field(p[i + 2]),
                        "input": serde_json::from_str::<Value>(p[i + 3]).unwrap(),
                    });
                    if p[i] == "s" {
                        b["signature"] = field(p[i + 4]);
                        i += 1;
                    }
                    out.push(b);
                    i += 4;
                }
                "j" => {
                    out.push(serde_json::from_str(p[i + 1]).unwrap());
                    i += 2;
                }
                other => panic!("unknown block tag {other}"),
            }
        }
        out
    }

    /// Every kind of block, and strings that need the escape.
    fn all_blocks() -> Vec<Block> {
        let raw = |s: &str| serde_json::value::RawValue::from_string(s.into()).unwrap();
        vec![
            Block::text("plain"),
            Block::text("a\u{1}b"),
            Block::text("\"quoted\""),
            Block::text(""),
            Block::ToolUse { id: "c\u{1}".into(), name: "f".into(), input: raw(r#"{"k":"\u0001"}"#), signature: None },
            Block::ToolUse { id: "c2".into(), name: "g".into(), input: raw("{}"), signature: Some("sig".into()) },
            Block::Reasoning { text: "why".into(), signature: Some("s".into()), redacted_data: None, provenance: None },
            Block::Text { text: None },
        ]
    }

    /// What `JSON.parse(JSON.stringify(content))` gives.
    fn as_json(content: &[Block]) -> Value {
        serde_json::to_value(content).unwrap()
    }

    #[test]
    fn model_replies_carry_the_next_action_and_every_block() {
        let content = all_blocks();
        let usage = Usage { input_tokens: 3.0, output_tokens: 0.5 };
        let reply = ModelReply::new(usage, &content).with_next(Wire::Json(r#"[5,"t\u0001"]"#.into()));
        let p: Vec<&str> = reply.split(SEP).collect();
        assert_eq!(serde_json::from_str::<Value>(p[0]).unwrap(), json!([5, "t\u{1}"]));
        assert_eq!((p[1], p[2]), ("3", "0.5"));
        assert_eq!(Value::Array(decode_blocks(&p[3..])), as_json(&content));

        let reply = ModelReply::new(Usage { input_tokens: 1.0, output_tokens: 2.0 }, &[]).with_next(Wire::Number(36));
        assert_eq!(reply, "36\u{1}1\u{1}2");
    }

    #[test]
    fn chat_replies_carry_the_response() {
        let content = all_blocks();
        let reply = chat_reply("x\u{1}", "m", "\"stop", Usage { input_tokens: 3.0, output_tokens: 12.0 }, &content);
        let p: Vec<&str> = reply.split(SEP).collect();
        assert_eq!((p[0], p[1], p[3]), ("3", "12", "m"));
        assert_eq!(p[2], "\"x\\u0001\"");
        assert_eq!(p[4], r#""\"stop""#);
        assert_eq!(Value::Array(decode_blocks(&p[5..])), as_json(&content));
    }
}
