//! Binding of the Agent machine (`oma_core::kernel::agent`) and of the structured-output texts.
//!
//! The machine travels to JS packed with each step in one number (`agent::wire`): no native
//! state per run, nothing to release, two crossings for a run without hooks or schema. A
//! driver error (an event the machine did not ask for) throws; it is a bug of `lib/agent.js`.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use oma_core::kernel::agent::{wire, AgentError, AgentRun, Step};
use oma_core::kernel::structured_output;

fn driver(e: AgentError) -> Error {
    Error::from_reason(e.to_string())
}

/// The step's word; a step that carries a text (the JSON to validate, or the retry's feedback)
/// crosses as a record, `[word, text]` (the word is the step's kind and fields,
/// `agent::wire::STEP`).
fn answer(run: &AgentRun, step: &Step) -> Result<Either<f64, (f64, String)>> {
    let (bits, text) = wire::step_code(step);
    let step_word = wire::pack(run, bits).ok_or_else(|| driver(AgentError::Malformed("setup")))?;
    Ok(match text {
        None => Either::A(step_word),
        Some(t) => Either::B((step_word, t.to_string())),
    })
}

/// Starts a run for `setup` (the wire's setup bits): its first step.
#[napi(catch_unwind)]
pub fn agent_start(setup: u32) -> Result<f64> {
    let (run, step) = AgentRun::start(wire::setup_from(setup).map_err(driver)?);
    match answer(&run, &step)? {
        Either::A(word) => Ok(word),
        Either::B(_) => Err(driver(AgentError::Malformed("first step"))),
    }
}

/// The machine's answer to `event` (the wire's event bits; `text`: the runner's output, or the
/// validation error's message), for the machine packed in `step`, the previous answer.
#[napi(catch_unwind)]
pub fn agent_step(step: f64, event: u32, text: Option<String>) -> Result<Either<f64, (f64, String)>> {
    let mut run = wire::unpack(step).map_err(driver)?;
    let event = wire::event_from(event, text.as_deref()).map_err(driver)?;
    let next = run.answer(event).map_err(driver)?;
    answer(&run, &next)
}

/// The retries `AgentConfig.outputSchemaRetries` asks for (checked), or the configuration error. Read once,
/// when the Agent is made with the option.
/// `text`: the value as JSON, else as `String(value)` (`NaN`, a function); the error is returned
/// as a string, for the driver to throw in the caller's realm.
#[napi(catch_unwind)]
pub fn agent_retries_setup(text: String) -> Either<u32, String> {
    use oma_core::kernel::agent::{invalid_retries_text, output_schema_retries};
    let checked = match serde_json::from_str::<serde_json::Value>(&text) {
        Ok(v) => output_schema_retries(&v),
        Err(_) => Err(invalid_retries_text(&text)),
    };
    match checked {
        Ok(n) => Either::A(u32::from(n)),
        Err(e) => Either::B(e),
    }
}

/// §7.1's instruction around `schema_json` (`JSON.stringify(jsonSchema, null, 2)`).
#[napi(catch_unwind)]
pub fn structured_instruction(schema_json: String) -> String {
    structured_output::instruction(&schema_json)
}

/// The system prompt of an Agent with an output schema (§4.1): `system_prompt` is the
/// configured one when it is a string.
#[napi(catch_unwind)]
pub fn structured_system_prompt(system_prompt: Option<String>, schema_json: String) -> String {
    structured_output::system_prompt_with(system_prompt.as_deref(), &structured_output::instruction(&schema_json))
}

/// §7.3's error message: `paths[i]` the i-th issue's path joined by dots (`null` when empty),
/// `messages[i]` its message.
#[napi(catch_unwind)]
pub fn output_validation_message(paths: Vec<Option<String>>, messages: Vec<String>) -> String {
    structured_output::validation_failed(paths.iter().map(|p| p.as_deref()).zip(messages.iter().map(String::as_str)))
}
