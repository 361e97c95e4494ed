//! Runner configuration read from the JSON the JS shim builds out of `RunnerOptions`, with
//! the checks that turn bad input into a clear error at construction.

use serde_json::{Map, Value};

use super::context::CompactConfig;
use super::grants::{preset_tools, GrantConfig, Opt};
use super::loop_detector::{invalid_match_text, Match};
use super::runner::{LoopAction, LoopConfig, RunnerConfig, Strategy};

/// A JS number as `String(n)` prints it (enough for error messages).
pub fn js_number(n: f64) -> String {
    if n.is_finite() && n.fract() == 0.0 && n.abs() < 1e21 {
        format!("{}", n as i64)
    } else if n.is_nan() {
        "NaN".into()
    } else if n.is_infinite() {
        if n > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        }
    } else {
        format!("{n}")
    }
}

/// A configuration value as an error message shows it (numbers as JS prints them).
pub(crate) fn describe(v: &Value) -> String {
    match v {
        Value::Number(n) => js_number(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => format!("\"{s}\""),
        other => other.to_string(),
    }
}

fn num(m: &Map<String, Value>, key: &str) -> Option<f64> {
    m.get(key).and_then(Value::as_f64)
}

fn opt_list(m: &Map<String, Value>, key: &str) -> Result<Opt<Vec<String>>, String> {
    match m.get(key) {
        None => Ok(Opt::Undefined),
        Some(Value::Null) | Some(Value::Bool(false)) => Ok(Opt::Falsy),
        Some(Value::String(s)) if s.is_empty() => Ok(Opt::Falsy),
        Some(Value::Array(items)) => Ok(Opt::Set(
            items.iter().map(|v| v.as_str().map(str::to_string).unwrap_or_else(|| v.to_string())).collect(),
        )),
        Some(other) => {
            Err(format!("Invalid configuration: {key} must be an array of tool names, got {}", describe(other)))
        }
    }
}

/// `loopDetection.match`: unset is `'exact'`; anything but the two names is an error (a new
/// option, so no JS-falsy leniency: `null` is refused too).
pub fn loop_match(v: Option<&Value>) -> Result<Match, String> {
    match v {
        None => Ok(Match::Exact),
        Some(Value::String(s)) => {
            Match::from_name(s).ok_or_else(|| invalid_match_text(&describe(&Value::String(s.clone()))))
        }
        Some(other) => Err(invalid_match_text(&describe(other))),
    }
}

pub fn runner_config_from_json(json: &str) -> Result<RunnerConfig, String> {
    let v: Value = serde_json::from_str(json).map_err(|e| format!("Invalid configuration: {e}"))?;
    let m = v.as_object().ok_or("Invalid configuration: options must be an object")?;
    let mut cfg = RunnerConfig::default();

    if let Some(mt) = m.get("maxTurns").filter(|v| !v.is_null()) {
        match mt.as_f64() {
            Some(n) if n >= 0.0 && n.fract() == 0.0 => cfg.max_turns = n,
            _ => {
                return Err(format!(
                    "Invalid configuration: maxTurns must be a non-negative integer, got {}",
                    describe(mt)
                ))
            }
        }
    }
    cfg.max_token_budget = num(m, "maxTokenBudget");
    cfg.agent_name = m.get("agentName").and_then(Value::as_str).map(str::to_string);

    cfg.grants = GrantConfig {
        tool_preset: match m.get("toolPreset") {
            None => Opt::Undefined,
            Some(Value::Null) => Opt::Falsy,
            Some(Value::String(s)) if s.is_empty() => Opt::Falsy,
            Some(Value::String(s)) if preset_tools(s).is_some() => Opt::Set(s.clone()),
            Some(other) => {
                return Err(format!(
                    "Invalid configuration: unknown toolPreset {}; expected \"readonly\", \"readwrite\" or \"full\"",
                    describe(other)
                ))
            }
        },
        allowed: opt_list(m, "allowedTools")?,
        disallowed: opt_list(m, "disallowedTools")?,
    };

    if let Some(Value::Object(ld)) = m.get("loopDetection") {
        let action = if m.get("loopCallback").and_then(Value::as_bool) == Some(true) {
            LoopAction::Callback
        } else {
            match ld.get("onLoopDetected") {
                None | Some(Value::Null) => LoopAction::Fixed("warn".into()),
                Some(Value::String(s)) => LoopAction::Fixed(s.clone()),
                Some(other) => LoopAction::Fixed(other.to_string()),
            }
        };
        cfg.loop_detection = Some(LoopConfig {
            max_repetitions: num(ld, "maxRepetitions"),
            window: num(ld, "loopDetectionWindow"),
            action,
            matching: loop_match(ld.get("match"))?,
        });
    }

    if let Some(Value::Object(cs)) = m.get("contextStrategy") {
        let n = |k: &str, d: f64| num(cs, k).unwrap_or(d);
        cfg.strategy = Some(match cs.get("type").and_then(Value::as_str) {
            Some("sliding-window") => Strategy::SlidingWindow { max_turns: n("maxTurns", f64::NAN) },
            Some("summarize") => Strategy::Summarize { max_tokens: n("maxTokens", f64::NAN) },
            Some("compact") => Strategy::Compact(CompactConfig {
                max_tokens: n("maxTokens", f64::NAN),
                preserve_recent_turns: n("preserveRecentTurns", 4.0),
                min_tool_result_chars: n("minToolResultChars", 200.0),
                min_text_block_chars: n("minTextBlockChars", 2000.0),
                text_block_excerpt_chars: n("textBlockExcerptChars", 200.0),
            }),
            // Anything else is treated as custom, as the original dispatches.
            _ => Strategy::Custom,
        });
    }

    cfg.compress_tool_results = match m.get("compressToolResults") {
        None | Some(Value::Null) | Some(Value::Bool(false)) => None,
        Some(Value::Object(o)) => Some(num(o, "minChars").unwrap_or(500.0)),
        Some(Value::Number(n)) if n.as_f64() == Some(0.0) => None,
        Some(Value::String(s)) if s.is_empty() => None,
        Some(_) => Some(500.0),
    };
    Ok(cfg)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_and_validation() {
        let c = runner_config_from_json("{}").unwrap();
        assert_eq!(c.max_turns, 10.0);
        assert!(c.loop_detection.is_none());
        assert_eq!(
            runner_config_from_json(r#"{"maxTurns":-1}"#).unwrap_err(),
            "Invalid configuration: maxTurns must be a non-negative integer, got -1"
        );
        assert_eq!(
            runner_config_from_json(r#"{"maxTurns":1.5}"#).unwrap_err(),
            "Invalid configuration: maxTurns must be a non-negative integer, got 1.5"
        );
        assert!(runner_config_from_json(r#"{"toolPreset":"admin"}"#)
            .unwrap_err()
            .contains("unknown toolPreset \"admin\""));
        assert_eq!(runner_config_from_json(r#"{"toolPreset":null}"#).unwrap().grants.tool_preset, Opt::Falsy);
    }

    #[test]
    fn strategies_and_loop_policy() {
        let c = runner_config_from_json(
            r#"{"loopDetection":{},"contextStrategy":{"type":"compact","maxTokens":5},"compressToolResults":{"minChars":9}}"#,
        )
        .unwrap();
        assert_eq!(c.loop_detection.unwrap().action, LoopAction::Fixed("warn".into()));
        assert!(matches!(c.strategy, Some(Strategy::Compact(ref k)) if k.preserve_recent_turns == 4.0));
        assert_eq!(c.compress_tool_results, Some(9.0));
        let c =
            runner_config_from_json(r#"{"loopDetection":{},"loopCallback":true,"compressToolResults":true}"#).unwrap();
        assert_eq!(c.loop_detection.unwrap().action, LoopAction::Callback);
        assert_eq!(c.compress_tool_results, Some(500.0));
        assert_eq!(js_number(3.0), "3");
    }

    #[test]
    fn loop_match_option() {
        let m = |json: &str| runner_config_from_json(json).map(|c| c.loop_detection.unwrap().matching);
        assert_eq!(m(r#"{"loopDetection":{}}"#), Ok(Match::Exact));
        assert_eq!(m(r#"{"loopDetection":{"match":"exact"}}"#), Ok(Match::Exact));
        assert_eq!(m(r#"{"loopDetection":{"match":"canonical"}}"#), Ok(Match::Canonical));
        for (json, got) in [
            (r#"{"loopDetection":{"match":"fuzzy"}}"#, "\"fuzzy\""),
            (r#"{"loopDetection":{"match":null}}"#, "null"),
            (r#"{"loopDetection":{"match":1}}"#, "1"),
            (r#"{"loopDetection":{"match":true}}"#, "true"),
        ] {
            assert_eq!(
                m(json).unwrap_err(),
                format!("Invalid configuration: loopDetection.match must be \"exact\" or \"canonical\", got {got}")
            );
        }
    }
}
