//! The binding's conversions that need no napi: how the raw calls' arguments are laid out
//! (`fast.rs` reads them through napi into [`RawArgs`]), the registry list's JSON and the tool
//! results' `isError` codes. Without napi types they are tested by plain `cargo test -p oma-kernel` (`convert/tests.rs`), no Node needed.

use oma_core::kernel::message::Usage;

/// The error of argument `i` that is not a `what` (`a number`, `a string`, …).
pub(super) fn not_a(i: usize, what: &str) -> String {
    format!("oma-kernel: argument {i} must be {what}")
}

/// A raw call's arguments as the decoders read them: napi values in `fast::Args`, a plain list
/// in the tests. A missing argument of a fixed-arity call reads as `undefined`.
pub(super) trait RawArgs {
    fn number(&self, i: usize) -> Result<f64, String>;
    fn u32(&self, i: usize) -> Result<u32, String>;
    fn bool(&self, i: usize) -> Result<bool, String>;
    fn is_nullish(&self, i: usize) -> bool;
    /// Calls `f` with string argument `i` (borrowed for the call: no copy is kept).
    fn with_str<R>(&self, i: usize, f: impl FnOnce(&str) -> R) -> Result<R, String>;

    /// `with_str` for an argument that may be `null` or `undefined` (then `f(None)`).
    fn with_opt_str<R>(&self, i: usize, f: impl FnOnce(Option<&str>) -> R) -> Result<R, String> {
        if self.is_nullish(i) {
            Ok(f(None))
        } else {
            self.with_str(i, |s| f(Some(s)))
        }
    }
}

/// One tool call's outcome as the raw calls carry it: `is_error` 0 false, 1 true, 2 not set
/// ([`is_error_of`]), a delegated run's usage when given, and the call's duration in
/// milliseconds (0 when not given).
#[derive(Debug, PartialEq)]
pub(super) struct Outcome {
    pub content: String,
    pub is_error: u32,
    pub usage: Option<Usage>,
    pub duration: f64,
}

/// `isError` as the raw calls code it: 0 false, 1 true, anything else not set.
pub(super) fn is_error_of(code: u32) -> Option<bool> {
    match code {
        0 => Some(false),
        1 => Some(true),
        _ => None,
    }
}

/// `runRespond(id, contentJson | null, inputTokens, outputTokens, copied?)` without the content
/// (read by the caller in place, it is the largest argument): the run's id, the usage and
/// `copied` (absent: `false`).
pub(super) fn model_answer(a: &impl RawArgs) -> Result<(u32, Usage, bool), String> {
    let id = a.u32(0)?;
    let usage = Usage { input_tokens: a.number(2)?, output_tokens: a.number(3)? };
    let copied = !a.is_nullish(4) && a.bool(4)?;
    Ok((id, usage, copied))
}

/// `runToolResult(id, index, content, isError, inputTokens?, outputTokens?, duration?)`: the
/// run's id, the call's index and its outcome.
pub(super) fn tool_result(a: &impl RawArgs) -> Result<(u32, u32, Outcome), String> {
    let (id, index, is_error) = (a.u32(0)?, a.u32(1)?, a.u32(3)?);
    let usage =
        if a.is_nullish(4) { None } else { Some(Usage { input_tokens: a.number(4)?, output_tokens: a.number(5)? }) };
    let duration = if a.is_nullish(6) { 0.0 } else { a.number(6)? };
    let content = a.with_str(2, str::to_string)?;
    Ok((id, index, Outcome { content, is_error, usage, duration }))
}

/// A registry's tools (name, runtimeAdded) in registration order, and its rail.
pub(super) type RegistryList = (Vec<(String, bool)>, Vec<String>);

/// A registry's tools as `ToolRegistry` sends them: `[[name, runtimeAdded], …]` in
/// registration order (the JS registry is the only copy; it keeps this text until it changes);
/// a registry with a rail (`new ToolRegistry({ disallow })`) sends `{"tools":[…],"disallow":[…]}`.
pub(super) fn registry_tools(tools_json: &str) -> Result<RegistryList, String> {
    #[derive(serde::Deserialize)]
    struct Railed {
        tools: Vec<(String, bool)>,
        disallow: Vec<String>,
    }
    let malformed = |e: serde_json::Error| format!("oma-kernel: malformed registry list: {e}");
    if tools_json.starts_with('{') {
        let r: Railed = serde_json::from_str(tools_json).map_err(malformed)?;
        return Ok((r.tools, r.disallow));
    }
    Ok((serde_json::from_str(tools_json).map_err(malformed)?, Vec::new()))
}

#[cfg(test)]
mod tests;
