//! Binding for the runner machine and the kernel helpers. Every export is synchronous and
//! `catch_unwind`: a panic becomes a JS exception, never an abort. Errors the user can see
//! are returned as strings so the JS shim builds them in the caller's realm.

use std::sync::{Arc, Mutex};

use napi::bindgen_prelude::*;
use napi_derive::napi;

use crate::kernel::config::runner_config_from_json;
use crate::kernel::context::SummaryCache;
use crate::kernel::grants::resolve_tools;
use crate::kernel::message::{parse_messages, Strictness, Usage};
use crate::kernel::runner::{Machine, Op, RunnerConfig};
use crate::kernel::semaphore::{Acquire, Semaphore};
use crate::kernel::{structured_output, tokens, truncate};

#[napi]
pub struct RunnerCore {
    cfg: Option<Arc<RunnerConfig>>,
    cache: Arc<Mutex<Option<SummaryCache>>>,
}

#[napi(object)]
pub struct ResolvedTools {
    pub names: Vec<String>,
    pub warnings: Vec<String>,
}

#[napi]
impl RunnerCore {
    #[napi(constructor)]
    pub fn new() -> Self {
        RunnerCore { cfg: None, cache: Arc::new(Mutex::new(None)) }
    }

    /// Returns an error message for invalid options, `null` when accepted.
    #[napi(catch_unwind)]
    pub fn configure(&mut self, options_json: String) -> Option<String> {
        match runner_config_from_json(&options_json) {
            Ok(c) => {
                self.cfg = Some(Arc::new(c));
                None
            }
            Err(e) => Some(e),
        }
    }

    fn cfg(&self) -> Result<Arc<RunnerConfig>> {
        self.cfg.clone().ok_or_else(|| Error::from_reason("RunnerCore used before configure()"))
    }

    /// `names` / `runtime`: every registered tool in registration order and its runtime flag.
    #[napi(catch_unwind)]
    pub fn resolve_tools(&self, names: Vec<String>, runtime: Vec<bool>) -> Result<ResolvedTools> {
        let cfg = self.cfg()?;
        let tools: Vec<(&str, bool)> =
            names.iter().zip(runtime.iter().chain(std::iter::repeat(&false))).map(|(n, r)| (n.as_str(), *r)).collect();
        let r = resolve_tools(&cfg.grants, &tools);
        Ok(ResolvedTools { names: r.names, warnings: r.warnings })
    }

    /// Starts a run over `initial_json` (`JSON.stringify(initialMessages)`).
    #[napi(catch_unwind)]
    pub fn start(&self, initial_json: String, granted: Vec<String>, has_on_warning: bool) -> Result<RunMachine> {
        let cfg = self.cfg()?;
        let initial = parse_messages(&initial_json, Strictness::Lenient).map_err(Error::from_reason)?;
        Ok(RunMachine { m: Machine::new(cfg, self.cache.clone(), initial, granted, has_on_warning), summary_usage: Usage::default(), error: String::new() })
    }
}

#[napi]
pub struct RunMachine {
    m: Machine,
    summary_usage: Usage,
    error: String,
}

impl RunMachine {
    fn encode(&self, op: Op) -> u32 {
        let mut code = op as u32;
        if op == Op::ToolRound {
            if self.m.has_trailing_warning() {
                code |= 1 << 5;
            }
            for i in 0..self.m.tool_count().min(24) {
                if self.m.granted(i) {
                    code |= 1 << (6 + i);
                }
            }
        }
        code
    }
}

fn driver(e: String) -> Error {
    Error::from_reason(e)
}

#[napi]
impl RunMachine {
    /// The next operation, encoded to save crossings: bits 0–4 the `Op`; for `ToolRound`,
    /// bit 5 = a trailing warning text goes into the result message and bits 6–29 = the gate's
    /// verdict for blocks 0–23 (the driver asks `granted(i)` for further blocks).
    #[napi(catch_unwind)]
    pub fn next(&mut self, aborted: bool) -> Result<u32> {
        let op = self.m.next(aborted).map_err(driver)?;
        Ok(self.encode(op))
    }

    /// `on_response` followed by `next`: the op, or -1 when the response was malformed (the
    /// message is then in `error`).
    #[napi(catch_unwind)]
    pub fn respond(&mut self, response_json: Option<String>) -> Result<i32> {
        if let Err(e) = self.m.on_response(response_json.as_deref().unwrap_or("")) {
            self.error = e;
            return Ok(-1);
        }
        let op = self.m.next(false).map_err(driver)?;
        Ok(self.encode(op) as i32)
    }

    #[napi(getter)]
    pub fn error(&self) -> String {
        self.error.clone()
    }

    #[napi(catch_unwind)]
    pub fn take_plan(&mut self) -> String {
        self.m.take_plan()
    }

    #[napi(catch_unwind)]
    pub fn estimate_tokens(&self) -> f64 {
        self.m.estimate_tokens() as f64
    }

    /// Error message (for the user) or `null`.
    #[napi(catch_unwind)]
    pub fn set_conversation(&mut self, json: Option<String>) -> Option<String> {
        self.m.set_conversation(json.as_deref()).err()
    }

    #[napi(catch_unwind)]
    pub fn summary_input(&self) -> String {
        self.m.summary_input().to_string()
    }

    #[napi(catch_unwind)]
    pub fn on_summary(&mut self, response_json: Option<String>) -> Option<String> {
        match self.m.on_summary(response_json.as_deref().unwrap_or("")) {
            Ok(u) => {
                self.summary_usage = u;
                None
            }
            Err(e) => Some(e),
        }
    }

    /// Error message (malformed response) or `null`.
    #[napi(catch_unwind)]
    pub fn on_response(&mut self, response_json: Option<String>) -> Option<String> {
        self.m.on_response(response_json.as_deref().unwrap_or("")).err()
    }

    #[napi(catch_unwind)]
    pub fn set_loop_action(&mut self, action: String) -> Result<()> {
        self.m.set_loop_action(&action).map_err(driver)
    }

    #[napi(catch_unwind)]
    pub fn granted(&self, i: u32) -> bool {
        self.m.granted(i as usize)
    }

    #[napi(catch_unwind)]
    pub fn tool_result(
        &mut self,
        i: u32,
        content: String,
        is_error: Option<bool>,
        input_tokens: Option<f64>,
        output_tokens: Option<f64>,
    ) -> Result<()> {
        let usage = match (input_tokens, output_tokens) {
            (None, None) => None,
            (i, o) => Some(Usage { input_tokens: i.unwrap_or(0.0), output_tokens: o.unwrap_or(0.0) }),
        };
        self.m.tool_result(i as usize, content, is_error, usage).map_err(driver)
    }

    #[napi(getter)]
    pub fn has_trailing_warning(&self) -> bool {
        self.m.has_trailing_warning()
    }
    #[napi(getter)]
    pub fn turn_text(&self) -> String {
        self.m.turn_text().to_string()
    }
    #[napi(getter)]
    pub fn text_out(&self) -> String {
        self.m.text_out().to_string()
    }
    #[napi(getter)]
    pub fn loop_kind(&self) -> String {
        self.m.loop_info().map(|i| i.kind.as_str().to_string()).unwrap_or_default()
    }
    #[napi(getter)]
    pub fn loop_repetitions(&self) -> u32 {
        self.m.loop_info().map(|i| i.repetitions as u32).unwrap_or(0)
    }
    #[napi(getter)]
    pub fn loop_detail(&self) -> String {
        self.m.loop_info().map(|i| i.detail.clone()).unwrap_or_default()
    }
    #[napi(getter)]
    pub fn input_tokens(&self) -> f64 {
        self.m.usage().input_tokens
    }
    #[napi(getter)]
    pub fn output_tokens(&self) -> f64 {
        self.m.usage().output_tokens
    }
    #[napi(getter)]
    pub fn total_tokens(&self) -> f64 {
        self.m.usage().total()
    }
    #[napi(getter)]
    pub fn summary_input_tokens(&self) -> f64 {
        self.summary_usage.input_tokens
    }
    #[napi(getter)]
    pub fn summary_output_tokens(&self) -> f64 {
        self.summary_usage.output_tokens
    }
    #[napi(getter)]
    pub fn turns(&self) -> u32 {
        self.m.turns()
    }
    #[napi(getter)]
    pub fn output(&self) -> String {
        self.m.output().to_string()
    }
    /// Bit 0 budgetExceeded, bit 1 loopDetected, bit 2 aborted.
    #[napi(getter)]
    pub fn flags(&self) -> u32 {
        (self.m.budget_exceeded() as u32) | ((self.m.loop_detected() as u32) << 1) | ((self.m.aborted() as u32) << 2)
    }
}

// ---------------------------------------------------------------------------------------
// Executor admission (one per ToolExecutor)

#[napi]
pub struct SemaphoreCore {
    s: Semaphore,
}

#[napi]
impl SemaphoreCore {
    #[napi(constructor)]
    pub fn new(max: u32) -> Self {
        SemaphoreCore { s: Semaphore::new(max as usize) }
    }
    /// 0 = acquired now; otherwise the waiter id to park.
    #[napi(catch_unwind)]
    pub fn acquire(&mut self) -> u32 {
        match self.s.acquire() {
            Acquire::Now => 0,
            Acquire::Wait(id) => id.max(1),
        }
    }
    /// 0 = slot freed; otherwise the waiter id that now holds it.
    #[napi(catch_unwind)]
    pub fn release(&mut self) -> u32 {
        self.s.release().map(|id| id.max(1)).unwrap_or(0)
    }
    #[napi(getter)]
    pub fn limit(&self) -> u32 {
        self.s.limit() as u32
    }
    #[napi(getter)]
    pub fn active(&self) -> u32 {
        self.s.active() as u32
    }
    #[napi(getter)]
    pub fn pending(&self) -> u32 {
        self.s.pending() as u32
    }
}

// ---------------------------------------------------------------------------------------
// Helpers

#[napi(catch_unwind)]
pub fn truncate_tool_output(data: String, max_chars: f64) -> String {
    truncate::truncate_tool_output(&data, max_chars.max(0.0) as usize)
}

#[napi(object)]
pub struct Extracted {
    pub ok: bool,
    /// The JSON text to parse, or the error message.
    pub text: String,
}

#[napi(catch_unwind)]
pub fn extract_json_text(raw: String) -> Extracted {
    match structured_output::extract_json(&raw) {
        Ok(t) => Extracted { ok: true, text: t.to_string() },
        Err(e) => Extracted { ok: false, text: e },
    }
}

#[napi(catch_unwind)]
pub fn estimate_tokens_json(messages_json: String) -> f64 {
    parse_messages(&messages_json, Strictness::Lenient).map(|m| tokens::estimate_tokens(&m) as f64).unwrap_or(0.0)
}

// ---------------------------------------------------------------------------------------
// Plain JSON Schema input validation (Zod schemas are validated by Zod in JS)

#[napi]
pub struct JsonSchemaValidator {
    v: jsonschema::Validator,
}

#[napi]
impl JsonSchemaValidator {
    /// Compiles `schema_json`; throws with the compiler's message for an invalid schema.
    #[napi(constructor, catch_unwind)]
    pub fn new(schema_json: String) -> Result<Self> {
        let schema: serde_json::Value = serde_json::from_str(&schema_json).map_err(|e| Error::from_reason(e.to_string()))?;
        let v = jsonschema::validator_for(&schema).map_err(|e| Error::from_reason(format!("Invalid JSON Schema: {e}")))?;
        Ok(JsonSchemaValidator { v })
    }

    /// `[path, message]` pairs (path segments joined by '.'); empty when valid.
    #[napi(catch_unwind)]
    pub fn validate(&self, input_json: String) -> Vec<Vec<String>> {
        let input: serde_json::Value = match serde_json::from_str(&input_json) {
            Ok(v) => v,
            Err(_) => return vec![vec![String::new(), "input is not JSON-serialisable".into()]],
        };
        self.v
            .iter_errors(&input)
            .map(|e| {
                let path = e.instance_path().to_string();
                let path: Vec<String> = path.split('/').skip(1).map(|s| s.replace("~1", "/").replace("~0", "~")).collect();
                vec![path.join("."), e.to_string()]
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------
// LoopDetector (public class) and the gate's text

#[napi(object)]
pub struct LoopInfoJs {
    pub kind: String,
    pub repetitions: u32,
    pub detail: String,
}

fn info_js(i: crate::kernel::loop_detector::LoopInfo) -> LoopInfoJs {
    LoopInfoJs { kind: i.kind.as_str().to_string(), repetitions: i.repetitions as u32, detail: i.detail }
}

#[napi]
pub struct LoopDetectorCore {
    d: crate::kernel::loop_detector::LoopDetector,
}

#[napi]
impl LoopDetectorCore {
    #[napi(constructor)]
    pub fn new(max_repetitions: Option<f64>, window: Option<f64>) -> Self {
        LoopDetectorCore { d: crate::kernel::loop_detector::LoopDetector::new(max_repetitions, window) }
    }
    /// `inputs`: `JSON.stringify(block.input)` per block.
    #[napi(catch_unwind)]
    pub fn record_tool_calls(&mut self, names: Vec<String>, inputs: Vec<String>) -> Option<LoopInfoJs> {
        let calls: Vec<(&str, &str)> = names.iter().zip(inputs.iter()).map(|(n, i)| (n.as_str(), i.as_str())).collect();
        self.d.record_tool_calls(&calls).map(info_js)
    }
    #[napi(catch_unwind)]
    pub fn record_text(&mut self, text: String) -> Option<LoopInfoJs> {
        self.d.record_text(&text).map(info_js)
    }
}

#[napi(catch_unwind)]
pub fn not_granted_text(tool: String) -> String {
    crate::kernel::runner::not_granted(&tool)
}

#[napi(catch_unwind)]
pub fn loop_stopped_text() -> String {
    crate::kernel::runner::LOOP_STOPPED_RESULT.to_string()
}

// ---------------------------------------------------------------------------------------
// Trace redaction (§13), applied by the runner to tool_call traces

#[napi(catch_unwind)]
pub fn trace_redact_text(text: String) -> String {
    crate::redaction::redact_sensitive_text(&text)
}

/// `JSON.stringify(input)` in, redacted JSON out.
#[napi(catch_unwind)]
pub fn trace_redact_json(json: String) -> String {
    match serde_json::from_str::<serde_json::Value>(&json) {
        Ok(v) => crate::redaction::redact_sensitive_value(&v).to_string(),
        Err(_) => "null".into(),
    }
}


/// Checks runner options without keeping them (the Agent validates at construction).
#[napi(catch_unwind)]
pub fn validate_runner_options(options_json: String) -> Option<String> {
    runner_config_from_json(&options_json).err()
}
