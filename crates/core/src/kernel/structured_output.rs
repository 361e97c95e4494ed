//! Structured output (CONTRACT §7): its texts (the system-prompt instruction, the validation
//! error, the retry's feedback) and finding the JSON in a model's answer. Turning a schema into
//! JSON Schema, parsing into a JS value and Zod's validation stay in JS.

use crate::json::{is_js_space, is_valid_json, js_trim, utf16_prefix};

/// The first candidate substring of `raw` that `JSON.parse` accepts, tried in the contract's
/// order; otherwise the contract's error message.
pub fn extract_json(raw: &str) -> Result<&str, String> {
    let t = js_trim(raw);
    if is_valid_json(t) {
        return Ok(t);
    }
    for prefix in ["```json", "```"] {
        if let Some(cap) = first_fence(t, prefix) {
            if !cap.is_empty() {
                let c = js_trim(cap);
                if is_valid_json(c) {
                    return Ok(c);
                }
            }
        }
    }
    for (open, close) in [('{', '}'), ('[', ']')] {
        if let (Some(a), Some(b)) = (t.find(open), t.rfind(close)) {
            if b > a {
                let c = &t[a..=b];
                if is_valid_json(c) {
                    return Ok(c);
                }
            }
        }
    }
    Err(format!("Failed to extract JSON from output. Raw output begins with: \"{}\"", utf16_prefix(t, 100)))
}

/// The instruction appended to the system prompt (§7.1), around `schema_json`, the JSON Schema
/// as `JSON.stringify(schema, null, 2)` writes it. It starts with a newline.
pub fn instruction(schema_json: &str) -> String {
    [
        "",
        "## Output Format (REQUIRED)",
        "You MUST respond with ONLY valid JSON that conforms to the following JSON Schema.",
        "Do NOT include any text, markdown fences, or explanation outside the JSON object.",
        "Do NOT wrap the JSON in ```json code fences.",
        "",
        "```",
        schema_json,
        "```",
    ]
    .join("\n")
}

/// The system prompt of an Agent with an output schema (§4.1): `system_prompt` (when it is a
/// non-empty string), a newline and the instruction; else the instruction alone.
pub fn system_prompt_with(system_prompt: Option<&str>, instruction: &str) -> String {
    match system_prompt {
        Some(p) if !p.is_empty() => format!("{p}\n{instruction}"),
        _ => instruction.to_string(),
    }
}

/// The message of a failed validation (§7.3): one line per issue, `path` the issue's path
/// joined by dots (`None` for an empty path: `(root)`).
pub fn validation_failed<'a>(issues: impl IntoIterator<Item = (Option<&'a str>, &'a str)>) -> String {
    let mut out = String::from("Output validation failed:");
    for (path, message) in issues {
        out.push_str("\n  - ");
        out.push_str(path.unwrap_or("(root)"));
        out.push_str(": ");
        out.push_str(message);
    }
    out
}

/// The text of the user message that asks for another try (§4.5 step 2), for an output that
/// failed with `error`.
pub fn feedback_text(error: &str) -> String {
    format!(
        "Your previous response did not produce valid JSON matching the required schema.\n\nError: {error}\n\nPlease try again. Respond with ONLY valid JSON, no other text."
    )
}

/// First match of `<prefix>\s*([\s\S]*?)```` (leftmost start, lazy capture).
fn first_fence<'a>(t: &'a str, prefix: &str) -> Option<&'a str> {
    let mut from = 0;
    while let Some(pos) = t[from..].find(prefix) {
        let start = from + pos;
        let mut body = start + prefix.len();
        body += t[body..].len() - t[body..].trim_start_matches(is_js_space).len();
        if let Some(end) = t[body..].find("```") {
            return Some(&t[body..body + end]);
        }
        // The regex also tries later (even overlapping) starts.
        from = start + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tries_candidates_in_order() {
        assert_eq!(extract_json("  {\"a\":1} ").unwrap(), "{\"a\":1}");
        assert_eq!(extract_json("Here:\n```json\n{\"a\": 2}\n```\nbye").unwrap(), "{\"a\": 2}");
        assert_eq!(extract_json("x ```\n[1,2]\n``` y").unwrap(), "[1,2]");
        assert_eq!(extract_json("The answer is {\"b\": true} ok").unwrap(), "{\"b\": true}");
        assert_eq!(extract_json("list: [1, 2] end").unwrap(), "[1, 2]");
        assert_eq!(extract_json("\"just a string\"").unwrap(), "\"just a string\"");
        assert_eq!(extract_json("42").unwrap(), "42");
    }

    #[test]
    fn failure_message_quotes_first_100_chars() {
        let raw = format!("  {}", "z".repeat(150));
        assert_eq!(
            extract_json(&raw).unwrap_err(),
            format!("Failed to extract JSON from output. Raw output begins with: \"{}\"", "z".repeat(100))
        );
        assert!(extract_json("{ not json }").is_err());
    }

    #[test]
    fn texts() {
        assert_eq!(
            instruction("{}"),
            "\n## Output Format (REQUIRED)\nYou MUST respond with ONLY valid JSON that conforms to the following JSON Schema.\nDo NOT include any text, markdown fences, or explanation outside the JSON object.\nDo NOT wrap the JSON in ```json code fences.\n\n```\n{}\n```"
        );
        assert_eq!(system_prompt_with(Some("sys"), "\nI"), "sys\n\nI");
        assert_eq!(system_prompt_with(Some(""), "\nI"), "\nI");
        assert_eq!(system_prompt_with(None, "\nI"), "\nI");
        assert_eq!(
            validation_failed([(Some("a.0"), "Required"), (None, "Expected string, received number"), (Some(""), "x")]),
            "Output validation failed:\n  - a.0: Required\n  - (root): Expected string, received number\n  - : x"
        );
        assert_eq!(validation_failed([]), "Output validation failed:");
        assert_eq!(
            feedback_text("Output validation failed:\n  - a: Required").split('\n').collect::<Vec<_>>(),
            [
                "Your previous response did not produce valid JSON matching the required schema.",
                "",
                "Error: Output validation failed:",
                "  - a: Required",
                "",
                "Please try again. Respond with ONLY valid JSON, no other text.",
            ]
        );
    }

    #[test]
    fn empty_json_fence_falls_through_to_bare_fence() {
        // The ```json fence captures nothing; the bare fence then captures "json".
        assert_eq!(extract_json("```json``` {\"k\":1}").unwrap(), "{\"k\":1}");
    }
}
