//! CONTRACT §15.3: reasoning that the next provider cannot take natively may travel as a
//! `<thinking>…</thinking>` text excerpt (opt-in with `preserveReasoningAsText`).

use serde_json::Value;

use oma_core::json::{utf16_len, utf16_slice};

pub const DEFAULT_REASONING_FALLBACK_MAX_CHARS: f64 = 1200.0;
const MARKER: &str = "...[truncated]...";
const MARKER_LEN: usize = 17;

/// What the outbound converters need; `None` means "helper default" (1200).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MaxChars(pub Option<f64>);

/// `resolveReasoningOutboundMaxChars`: only meaningful when the fallback is on.
/// `compressReasoningText === false` → no limit; `undefined`/`true` → default; an object →
/// its `minChars` (possibly undefined). Non-numeric `minChars` behave like JS arithmetic would
/// (a non-number is treated as NaN → limit 1), except `undefined`/`null` which select the
/// default through `??`-like handling in the helper.
pub fn resolve_max_chars(compress: Option<&Value>) -> MaxChars {
    match compress {
        Some(Value::Bool(false)) => MaxChars(Some(f64::INFINITY)),
        Some(Value::Object(o)) => match o.get("minChars") {
            None | Some(Value::Null) => MaxChars(None),
            Some(Value::Number(n)) => MaxChars(Some(n.as_f64().unwrap_or(f64::NAN))),
            Some(_) => MaxChars(Some(f64::NAN)),
        },
        _ => MaxChars(None),
    }
}

/// `reasoningBlockToInlineText(block, { maxChars })`.
pub fn reasoning_to_inline_text(text: &str, redacted_data: Option<&str>, max: MaxChars) -> String {
    if matches!(redacted_data, Some(d) if !d.is_empty()) {
        return "<thinking>[redacted]</thinking>".to_string();
    }
    if text.is_empty() {
        return String::new();
    }
    let limit: Option<usize> = match max.0 {
        None => Some(DEFAULT_REASONING_FALLBACK_MAX_CHARS as usize),
        Some(v) if v == f64::INFINITY => None,
        Some(v) if !v.is_finite() => Some(1),
        Some(v) => Some((v.floor().max(1.0)) as usize),
    };
    let len = utf16_len(text);
    let excerpt = match limit {
        None => text.to_string(),
        Some(m) if len <= m => text.to_string(),
        Some(m) if MARKER_LEN >= m => utf16_slice(text, 0, m).to_string(),
        Some(m) => {
            let budget = m - MARKER_LEN;
            let head = (budget as f64 * 0.7).ceil() as usize;
            let tail = budget - head;
            format!("{}{}{}", utf16_slice(text, 0, head), MARKER, utf16_slice(text, len - tail, len))
        }
    };
    format!("<thinking>{excerpt}</thinking>")
}

/// How a reasoning block goes out to an adapter that can echo its own reasoning (§15.3).
pub enum Outbound<'a> {
    /// Own opaque redacted payload, echoed as is.
    Redacted(&'a str),
    /// Own signed reasoning, echoed natively.
    Signed { text: &'a str, signature: &'a str },
    /// The `<thinking>` text fallback.
    Inline(String),
    /// Nothing is sent.
    Skip,
}

/// The one decision every echoing adapter makes: native echo when the block is its own
/// (`provenance == name`) and carries what the provider needs, else the text fallback when
/// `preserveReasoningAsText` is on, else drop it. `redacted_echo`: the provider has a
/// redacted-reasoning form (Anthropic, Bedrock; not Gemini).
// The provider's choices and the block's fields, each a plain value: a struct for one call site
// would only rename them.
#[allow(clippy::too_many_arguments)]
pub fn outbound<'a>(
    text: &'a str,
    signature: Option<&'a str>,
    redacted_data: Option<&'a str>,
    provenance: Option<&str>,
    name: &str,
    redacted_echo: bool,
    preserve: bool,
    max: MaxChars,
) -> Outbound<'a> {
    let own = provenance == Some(name);
    if own && redacted_echo {
        if let Some(d) = redacted_data {
            return Outbound::Redacted(d);
        }
    }
    if own {
        if let Some(sig) = signature {
            return Outbound::Signed { text, signature: sig };
        }
    }
    if preserve {
        let inline = reasoning_to_inline_text(text, redacted_data, max);
        if !inline.is_empty() {
            return Outbound::Inline(inline);
        }
    }
    Outbound::Skip
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn truncates_head_and_tail() {
        let text: String = "a".repeat(70) + &"b".repeat(30);
        // max 50: budget 33, head ceil(23.1)=24, tail 9
        let out = reasoning_to_inline_text(&text, None, MaxChars(Some(50.0)));
        assert_eq!(out, format!("<thinking>{}...[truncated]...{}</thinking>", "a".repeat(24), "b".repeat(9)));
        assert_eq!(reasoning_to_inline_text("abcdef", None, MaxChars(Some(3.0))), "<thinking>abc</thinking>");
        assert_eq!(reasoning_to_inline_text("abcdef", None, MaxChars(Some(f64::NAN))), "<thinking>a</thinking>");
        assert_eq!(reasoning_to_inline_text("abc", Some("x"), MaxChars(None)), "<thinking>[redacted]</thinking>");
        assert_eq!(reasoning_to_inline_text("abc", Some(""), MaxChars(None)), "<thinking>abc</thinking>");
        assert_eq!(reasoning_to_inline_text("", None, MaxChars(None)), "");
        let long = "x".repeat(1300);
        assert_eq!(reasoning_to_inline_text(&long, None, MaxChars(Some(f64::INFINITY))).len(), 1300 + 21);
        assert_eq!(utf16_len(&reasoning_to_inline_text(&long, None, MaxChars(None))), 1200 + 21);
    }

    #[test]
    fn resolves_options() {
        assert_eq!(resolve_max_chars(None), MaxChars(None));
        assert_eq!(resolve_max_chars(Some(&json!(true))), MaxChars(None));
        assert_eq!(resolve_max_chars(Some(&json!(false))), MaxChars(Some(f64::INFINITY)));
        assert_eq!(resolve_max_chars(Some(&json!({"minChars": 40}))), MaxChars(Some(40.0)));
        assert_eq!(resolve_max_chars(Some(&json!({}))), MaxChars(None));
    }
}
