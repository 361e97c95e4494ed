//! Loop detection (CONTRACT §6): two sliding windows, one of tool-call signatures and one of
//! normalised texts; a run of `max_repeats` equal tail entries is a loop.

use std::collections::VecDeque;

use serde_json::Value;

use super::json::{is_js_space, js_trim};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoopKind {
    ToolRepetition,
    TextRepetition,
}

impl LoopKind {
    pub fn as_str(self) -> &'static str {
        match self {
            LoopKind::ToolRepetition => "tool_repetition",
            LoopKind::TextRepetition => "text_repetition",
        }
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct LoopInfo {
    pub kind: LoopKind,
    pub repetitions: usize,
    pub detail: String,
}

pub struct LoopDetector {
    max_repeats: usize,
    window: usize,
    tools: VecDeque<String>,
    texts: VecDeque<String>,
}

impl LoopDetector {
    /// `max_repetitions` / `window` as given by the user (`None` = default 3 / 4).
    pub fn new(max_repetitions: Option<f64>, window: Option<f64>) -> LoopDetector {
        let max_repeats = max_repetitions.map(clamp_count).unwrap_or(3);
        let window = window.map(clamp_count).unwrap_or(4).max(max_repeats);
        LoopDetector { max_repeats, window, tools: VecDeque::new(), texts: VecDeque::new() }
    }

    /// `calls` = (name, input JSON text) per tool_use block, in block order.
    pub fn record_tool_calls<'a>(&mut self, calls: &[(&'a str, &'a str)]) -> Option<LoopInfo> {
        if calls.is_empty() {
            return None;
        }
        let sig = signature(calls);
        let c = push_and_count(&mut self.tools, sig, self.window);
        if c >= self.max_repeats {
            let names: Vec<&str> = calls.iter().map(|c| c.0).collect();
            return Some(LoopInfo {
                kind: LoopKind::ToolRepetition,
                repetitions: c,
                detail: format!(
                    "Tool call \"{}\" with identical arguments has repeated {} times consecutively. The agent appears to be stuck in a loop.",
                    names.join(", "),
                    c
                ),
            });
        }
        None
    }

    pub fn record_text(&mut self, text: &str) -> Option<LoopInfo> {
        let normalised = normalise_text(text);
        if normalised.is_empty() {
            return None;
        }
        let c = push_and_count(&mut self.texts, normalised, self.window);
        if c >= self.max_repeats {
            return Some(LoopInfo {
                kind: LoopKind::TextRepetition,
                repetitions: c,
                detail: format!(
                    "The agent has produced the same text response {c} times consecutively. It appears to be stuck in a loop."
                ),
            });
        }
        None
    }
}

fn clamp_count(v: f64) -> usize {
    // JS compares with >= against counts; a fractional threshold behaves like its ceiling.
    if v.is_nan() || v <= 0.0 {
        0
    } else {
        v.ceil().min(usize::MAX as f64) as usize
    }
}

fn push_and_count(buf: &mut VecDeque<String>, entry: String, window: usize) -> usize {
    buf.push_back(entry);
    while buf.len() > window {
        buf.pop_front();
    }
    let last = buf.back().unwrap();
    buf.iter().rev().take_while(|e| *e == last).count()
}

/// `text.trim()` with every run of JS whitespace collapsed to one space.
pub fn normalise_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut in_space = false;
    for c in js_trim(text).chars() {
        if is_js_space(c) {
            if !in_space {
                out.push(' ');
                in_space = true;
            }
        } else {
            out.push(c);
            in_space = false;
        }
    }
    out
}

/// Canonical form of a tool-call set: key order and call order do not matter, values do.
fn signature(calls: &[(&str, &str)]) -> String {
    let mut items: Vec<(String, String)> = calls
        .iter()
        .map(|(name, input)| {
            let canon = match serde_json::from_str::<Value>(input) {
                Ok(v) => canonical(&v),
                Err(_) => input.to_string(),
            };
            (name.to_string(), canon)
        })
        .collect();
    items.sort();
    let mut out = String::new();
    for (n, i) in items {
        out.push_str(&n.len().to_string());
        out.push(':');
        out.push_str(&n);
        out.push_str(&i);
        out.push('\u{0}');
    }
    out
}

fn canonical(v: &Value) -> String {
    let mut out = String::with_capacity(64);
    write_canonical(v, &mut out);
    out
}

fn write_canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(m) => {
            let mut keys: Vec<&String> = m.keys().collect();
            // Code-unit order, as JS sorts keys; ASCII keys compare the same bytewise.
            keys.sort_by(|a, b| if a.is_ascii() && b.is_ascii() { a.cmp(b) } else { a.encode_utf16().cmp(b.encode_utf16()) });
            out.push('{');
            for (i, k) in keys.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(k, out);
                out.push(':');
                write_canonical(&m[*k], out);
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(x, out);
            }
            out.push(']');
        }
        // 1 and 1.0 are the same JS number.
        Value::Number(n) => match n.as_f64() {
            Some(f) => {
                use std::fmt::Write;
                let _ = write!(out, "{f:?}");
            }
            None => out.push_str(&n.to_string()),
        },
        Value::String(s) => write_string(s, out),
        other => out.push_str(&other.to_string()),
    }
}

fn write_string(s: &str, out: &mut String) {
    // Any unambiguous encoding works: only equality of signatures matters.
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn detects_tool_repetition_with_defaults_and_caps_at_window() {
        let mut d = LoopDetector::new(None, None);
        let call = [("search", r#"{"q":"x","n":1}"#)];
        assert!(d.record_tool_calls(&call).is_none());
        assert!(d.record_tool_calls(&call).is_none());
        let info = d.record_tool_calls(&call).unwrap();
        assert_eq!(info.kind, LoopKind::ToolRepetition);
        assert_eq!(info.repetitions, 3);
        assert_eq!(
            info.detail,
            "Tool call \"search\" with identical arguments has repeated 3 times consecutively. The agent appears to be stuck in a loop."
        );
        assert_eq!(d.record_tool_calls(&call).unwrap().repetitions, 4);
        assert_eq!(d.record_tool_calls(&call).unwrap().repetitions, 4);
    }

    #[test]
    fn key_order_and_call_order_do_not_matter_but_values_do() {
        let mut d = LoopDetector::new(Some(2.0), None);
        assert!(d.record_tool_calls(&[("a", r#"{"x":1,"y":{"p":1,"q":2}}"#), ("b", "{}")]).is_none());
        let info = d.record_tool_calls(&[("b", "{}"), ("a", r#"{"y":{"q":2,"p":1},"x":1.0}"#)]).unwrap();
        assert_eq!(info.detail.split('"').nth(1), Some("b, a"));
        assert!(d.record_tool_calls(&[("b", "{}"), ("a", r#"{"x":2,"y":{"q":2,"p":1}}"#)]).is_none());
    }

    #[test]
    fn text_normalisation_and_reset_by_different_entry() {
        let mut d = LoopDetector::new(None, None);
        assert!(d.record_text("  hello \n\t world ").is_none());
        assert!(d.record_text("hello world").is_none());
        assert!(d.record_text("other").is_none());
        assert!(d.record_text("hello world").is_none());
        assert!(d.record_text("   ").is_none());
        assert!(d.record_text("hello   world").is_none());
        let info = d.record_text("hello world").unwrap();
        assert_eq!(info.repetitions, 3);
        assert_eq!(
            info.detail,
            "The agent has produced the same text response 3 times consecutively. It appears to be stuck in a loop."
        );
    }

    #[test]
    fn window_never_smaller_than_threshold() {
        let mut d = LoopDetector::new(Some(2.0), Some(10.0));
        let reps: Vec<usize> = (0..12).filter_map(|_| d.record_text("same")).map(|i| i.repetitions).collect();
        assert_eq!(reps, vec![2, 3, 4, 5, 6, 7, 8, 9, 10, 10, 10]);
        let mut d = LoopDetector::new(Some(5.0), Some(2.0));
        let reps: Vec<usize> = (0..6).filter_map(|_| d.record_text("same")).map(|i| i.repetitions).collect();
        assert_eq!(reps, vec![5, 5]);
    }
}
