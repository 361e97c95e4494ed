//! napi binding of the ToolExecutor machine (`oma_core::tool::executor`), driven by
//! `ToolExecutor.execute` in lib/tools.js.
//!
//! The JS driver keeps the machine's state itself (the step, and the error text at
//! `LimitError`) and walks its table (`executor` in lib/generated/boundary.js) while answers
//! carry no data: a Zod tool's call whose every check passes makes no native call. Any other answer goes through
//! [`executor_answer`], which resumes the machine at that step, feeds the answer and returns
//! the next step with the text the machine holds.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use oma_core::kernel::truncate::truncate_tool_output;
use oma_core::tool::builtin::input::{FieldValue, InputView, JsType, MAX_FIELDS, TOOLS};
use oma_core::tool::executor::{
    invalid_timeout_text, wire, Action, Answer, AnswerKind, BadResult, Decision, Issue, Reason, Step, ToolCall,
};

#[napi(object)]
pub struct ExecutorNext {
    pub step: u32,
    /// The error text at `LimitError` / `AbortAfterRefusal` / `ReturnError`; the cut `data` at
    /// `ReturnCut`.
    pub data: Option<String>,
    /// After a valid gate decision: its `metadata.toolCallGate` (`allow` / `deny` / `suspend`,
    /// and the reason the machine keeps).
    pub gate_action: Option<String>,
    pub gate_reason: Option<String>,
}

fn issues(flat: Option<Vec<String>>) -> Vec<Issue> {
    let mut out = Vec::new();
    let mut it = flat.unwrap_or_default().into_iter();
    while let (Some(path), Some(message)) = (it.next(), it.next()) {
        out.push(Issue { path, message });
    }
    out
}

fn misuse(what: String) -> Error {
    Error::new(Status::InvalidArg, format!("oma-kernel: {what}"))
}

/// The driver's answer at `step` for a call of the tool `name`. Arguments by answer:
/// `INPUT_INVALID` / `OUTPUT_INVALID`: `issues` as `[path, message, …]`; `INPUT_UNREADABLE`,
/// `INPUT_NOT_JSON`, `THREW`: `text` is the message; `BAD_RESULT`: `num` is one of
/// `badResults`, `text` the type received; `BUILTIN_INPUT`: `fields` is
/// `[tool id, input type, field type, field value, …]` (lib/builtin.js); `LIMIT`: `num` is the
/// limit and `text` the text being limited (the result's `data`, or the error text the call
/// holds at `LimitError`); `TIMED_OUT`: `num` is the call's timeout in ms; `DECISION`: `num` holds `decisionBits`, `text` the decision's
/// `action` when it is a string and `issues` `[reason]` when the reason is one.
#[allow(clippy::too_many_arguments)]
#[napi(catch_unwind)]
pub fn executor_answer(
    name: String,
    step: u32,
    kind: u32,
    text: Option<String>,
    issues_flat: Option<Vec<String>>,
    num: Option<f64>,
    fields: Option<Float64Array>,
) -> Result<ExecutorNext> {
    let step = Step::from_code(step).ok_or_else(|| misuse(format!("no executor step {step}")))?;
    let kind = AnswerKind::from_code(kind).ok_or_else(|| misuse(format!("no executor answer {kind}")))?;
    let text = text.unwrap_or_default();
    let mut buf = [FieldValue { ty: JsType::Undefined, num: 0.0 }; MAX_FIELDS];
    let answer = match kind {
        AnswerKind::Found => Answer::Found,
        AnswerKind::Missing => Answer::Missing,
        AnswerKind::NotAborted => Answer::NotAborted,
        AnswerKind::Aborted => Answer::Aborted,
        AnswerKind::InputValid => Answer::InputValid,
        AnswerKind::InputInvalid => Answer::InputInvalid(issues(issues_flat)),
        AnswerKind::InputUnreadable => Answer::InputUnreadable(text.clone()),
        AnswerKind::InputNotJson => Answer::InputNotJson(text.clone()),
        AnswerKind::BuiltinInput => {
            let flat = fields.as_deref().unwrap_or(&[]);
            let tool = flat.first().and_then(|&id| TOOLS.get(id as usize));
            let view = tool.and_then(|t| InputView::decode(t, &flat[1..], &mut buf));
            match (tool, view) {
                (Some(t), Some(v)) => Answer::BuiltinInput(t, v),
                _ => return Err(misuse("BUILTIN_INPUT needs [tool id, input type, fields…]".into())),
            }
        }
        AnswerKind::Returned => Answer::Returned { is_error: false },
        AnswerKind::ReturnedIsError => Answer::Returned { is_error: true },
        AnswerKind::BadResult => Answer::BadResult(match num {
            Some(0.0) => BadResult::Nullish(if text == "null" { "null" } else { "undefined" }),
            Some(1.0) => BadResult::NotObject(text.clone()),
            _ => BadResult::DataNotString(text.clone()),
        }),
        AnswerKind::Threw => Answer::Threw(text.clone()),
        AnswerKind::OutputValid => Answer::OutputValid,
        AnswerKind::OutputInvalid => Answer::OutputInvalid(issues(issues_flat)),
        AnswerKind::LimitFits => Answer::LimitFits,
        AnswerKind::Limit => Answer::Limit(num.unwrap_or(f64::NAN)),
        AnswerKind::Decision => {
            let bits = num.unwrap_or(0.0) as u32;
            let reason = issues_flat.as_ref().and_then(|r| r.first());
            Answer::Decision(Decision {
                object: bits & wire::DECISION_OBJECT != 0,
                action: if bits & wire::DECISION_ACTION_STRING != 0 { Some(text.as_str()) } else { None },
                reason: match (
                    bits & wire::DECISION_REASON_STRING != 0,
                    bits & wire::DECISION_REASON_OTHER != 0,
                    reason,
                ) {
                    (true, _, Some(r)) => Reason::Text(r.as_str()),
                    (_, true, _) => Reason::NotText,
                    _ => Reason::Absent,
                },
            })
        }
        AnswerKind::TimedOut => Answer::TimedOut(num.unwrap_or(f64::NAN)),
    };
    let held = if step == Step::LimitError { text.as_str() } else { "" };
    let mut call = ToolCall::resume(name, step, held);
    let cut = match call.answer(answer).map_err(|e| misuse(e.to_string()))? {
        Action::ReturnCut { max } => Some(max),
        _ => None,
    };
    let data = match (cut, call.step()) {
        (Some(max), _) => Some(truncate_tool_output(&text, max)),
        (None, Step::LimitError | Step::AbortAfterRefusal | Step::ReturnError) => Some(call.text().to_string()),
        (None, _) => None,
    };
    let (gate_action, gate_reason) = match call.verdict() {
        Some(v) => (Some(v.action.name().to_string()), v.reason.clone()),
        None => (None, None),
    };
    Ok(ExecutorNext { step: call.step() as u32, data, gate_action, gate_reason })
}

/// The text of a per-tool timeout setting that is not a number of milliseconds (the JS driver
/// checks the value and throws; this is called only then).
#[napi(catch_unwind)]
pub fn tool_timeout_invalid(setting: String, got: String) -> String {
    invalid_timeout_text(&setting, &got)
}
