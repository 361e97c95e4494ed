//! Structured-output helpers that are pure text work (CONTRACT §7.2): finding the JSON in a
//! model's answer. Parsing into a JS value and Zod validation stay in JS.

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
    fn empty_json_fence_falls_through_to_bare_fence() {
        // The ```json fence captures nothing; the bare fence then captures "json".
        assert_eq!(extract_json("```json``` {\"k\":1}").unwrap(), "{\"k\":1}");
    }
}
