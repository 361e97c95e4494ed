//! Binding for the kernel's stateless helpers the JS side calls: tool-output truncation, token
//! estimates, structured output (JSON extraction, schema validation), the loop detector, the
//! grant refusal text and trace redaction.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use oma_core::kernel::message::{parse_messages, Strictness};
use oma_core::kernel::{structured_output, tokens, truncate};

#[napi(catch_unwind)]
pub fn truncate_tool_output(data: String, max_chars: f64) -> String {
    truncate::truncate_tool_output(&data, max_chars.max(0.0) as usize)
}

// A napi object, not a record: two fields read by name (binding.d.ts types them).
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
        let schema: serde_json::Value =
            serde_json::from_str(&schema_json).map_err(|e| Error::from_reason(e.to_string()))?;
        let v =
            jsonschema::validator_for(&schema).map_err(|e| Error::from_reason(format!("Invalid JSON Schema: {e}")))?;
        Ok(JsonSchemaValidator { v })
    }

    /// `[path, message]` pairs (path segments joined by '.'); empty when valid.
    #[napi(catch_unwind)]
    pub fn validate(&self, input_json: String) -> Vec<Vec<String>> {
        // Half a surrogate pair (a JS string may hold one) reads as U+FFFD, as on every other
        // path: it is valid JS input, not a reason to refuse it.
        let fixed = oma_core::json::replace_lone_surrogates(&input_json);
        let input: serde_json::Value = match serde_json::from_str(fixed.as_deref().unwrap_or(&input_json)) {
            Ok(v) => v,
            // serde's parser stops at 128 levels (the validator recurses per level too).
            Err(e) if e.to_string().contains("recursion limit") => {
                return vec![vec![
                    String::new(),
                    "input is nested too deeply to validate (more than 128 levels)".into(),
                ]]
            }
            Err(_) => return vec![vec![String::new(), "input is not JSON-serialisable".into()]],
        };
        self.v
            .iter_errors(&input)
            .map(|e| {
                let path = e.instance_path().to_string();
                let path: Vec<String> =
                    path.split('/').skip(1).map(|s| s.replace("~1", "/").replace("~0", "~")).collect();
                vec![path.join("."), e.to_string()]
            })
            .collect()
    }
}

// ---------------------------------------------------------------------------------------
// LoopDetector (public class) and the gate's text

// A napi object, not a record: lib/loop.js copies its three fields by name into upstream's
// `LoopInfo` (binding.d.ts types them); a record would add a decode and remove no layout.
#[napi(object)]
pub struct LoopInfoOut {
    pub kind: String,
    pub repetitions: u32,
    pub detail: String,
}

fn info_js(i: &oma_core::kernel::loop_detector::LoopInfo) -> LoopInfoOut {
    LoopInfoOut { kind: i.kind.as_str().to_string(), repetitions: i.repetitions as u32, detail: i.detail.clone() }
}

#[napi]
pub struct LoopDetectorCore {
    d: oma_core::kernel::loop_detector::LoopDetector,
}

#[napi]
impl LoopDetectorCore {
    /// `match_json`: `JSON.stringify(config.match)` when it is defined (checked here, with the
    /// runner's configuration error).
    #[napi(constructor, catch_unwind)]
    pub fn new(max_repetitions: Option<f64>, window: Option<f64>, match_json: Option<String>) -> Result<Self> {
        let matching = match match_json {
            None => oma_core::kernel::loop_detector::Match::Exact,
            Some(text) => {
                let v: serde_json::Value = serde_json::from_str(&text).unwrap_or(serde_json::Value::Null);
                oma_core::kernel::config::loop_match(Some(&v)).map_err(Error::from_reason)?
            }
        };
        let d = oma_core::kernel::loop_detector::LoopDetector::new(max_repetitions, window).with_match(matching);
        Ok(LoopDetectorCore { d })
    }
    /// `inputs`: `JSON.stringify(block.input)` per block.
    #[napi(catch_unwind)]
    pub fn record_tool_calls(&mut self, names: Vec<String>, inputs: Vec<String>) -> Option<LoopInfoOut> {
        let calls: Vec<(&str, &str)> = names.iter().zip(inputs.iter()).map(|(n, i)| (n.as_str(), i.as_str())).collect();
        self.d.record_tool_calls(&calls).as_ref().map(info_js)
    }
    #[napi(catch_unwind)]
    pub fn record_text(&mut self, text: String) -> Option<LoopInfoOut> {
        self.d.record_text(&text).as_ref().map(info_js)
    }
}

#[napi(catch_unwind)]
pub fn not_granted_text(tool: String) -> String {
    oma_core::kernel::runner::not_granted(&tool)
}

// ---------------------------------------------------------------------------------------
// Trace redaction (§13), applied by the runner to tool_call traces

#[napi(catch_unwind)]
pub fn trace_redact_text(text: String) -> String {
    oma_core::redaction::redact_sensitive_text(&text)
}

/// `JSON.stringify(input)` in, redacted JSON out.
#[napi(catch_unwind)]
pub fn trace_redact_json(json: String) -> String {
    match serde_json::from_str::<serde_json::Value>(&json) {
        Ok(v) => oma_core::redaction::redact_sensitive_value(&v).to_string(),
        Err(_) => "null".into(),
    }
}
