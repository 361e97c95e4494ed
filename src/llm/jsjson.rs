//! JSON the way JavaScript writes it: `JSON.stringify(JSON.parse(text))` without a JS engine.
//!
//! Tool inputs that come back from a provider are stored as JSON text (`Box<RawValue>`); the
//! kernel compares and re-sends that text, so it must be the compact form with JS number
//! formatting (`1.0` → `1`, `1e21` → `1e+21`, `0.000001` stays fixed) that JS would produce.

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

/// `JSON.stringify(value)`.
pub fn to_js_json(v: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, v);
    out
}

/// `JSON.stringify(JSON.parse(text))`, or `None` when the text is not JSON.
pub fn normalize(text: &str) -> Option<String> {
    let v: Value = serde_json::from_str(text).ok()?;
    Some(to_js_json(&v))
}

/// A JS-formatted object as a raw value (for `ToolUse.input`).
pub fn raw_object(map: &Map<String, Value>) -> Box<RawValue> {
    let mut out = String::new();
    write_object(&mut out, map);
    RawValue::from_string(out).expect("serialised JSON is valid")
}

pub fn empty_object() -> Box<RawValue> {
    RawValue::from_string("{}".to_string()).expect("valid")
}

/// JS truthiness of a JSON value (`undefined` is represented by `None` at the call sites).
pub fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().map(|f| f != 0.0 && !f.is_nan()).unwrap_or(true),
        Value::String(s) => !s.is_empty(),
        Value::Array(_) | Value::Object(_) => true,
    }
}

fn write_value(out: &mut String, v: &Value) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => {
            if let Some(u) = n.as_u64() {
                if u <= (1u64 << 53) {
                    out.push_str(&u.to_string());
                    return;
                }
            } else if let Some(i) = n.as_i64() {
                if i >= -(1i64 << 53) {
                    out.push_str(&i.to_string());
                    return;
                }
            }
            out.push_str(&js_number(n.as_f64().unwrap_or(f64::NAN)));
        }
        Value::String(s) => out.push_str(&serde_json::to_string(s).expect("string serialises")),
        Value::Array(a) => {
            out.push('[');
            for (i, x) in a.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, x);
            }
            out.push(']');
        }
        Value::Object(m) => write_object(out, m),
    }
}

fn write_object(out: &mut String, m: &Map<String, Value>) {
    out.push('{');
    for (i, (k, x)) in m.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(k).expect("string serialises"));
        out.push(':');
        write_value(out, x);
    }
    out.push('}');
}

/// ECMAScript `Number::toString(x)` (radix 10). Rust's `{:e}` already yields the shortest
/// round-trip digits; only the layout differs.
pub fn js_number(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if x == 0.0 {
        return "0".into();
    }
    let sci = format!("{:e}", x.abs());
    let (mant, exp) = sci.split_once('e').expect("LowerExp has an exponent");
    let exp: i32 = exp.parse().expect("exponent is an integer");
    let digits: String = mant.chars().filter(|c| *c != '.').collect();
    let k = digits.len() as i32;
    let n = exp + 1;
    let mut s = String::new();
    if x < 0.0 {
        s.push('-');
    }
    if k <= n && n <= 21 {
        s.push_str(&digits);
        for _ in 0..(n - k) {
            s.push('0');
        }
    } else if 0 < n && n <= 21 {
        s.push_str(&digits[..n as usize]);
        s.push('.');
        s.push_str(&digits[n as usize..]);
    } else if -6 < n && n <= 0 {
        s.push_str("0.");
        for _ in 0..(-n) {
            s.push('0');
        }
        s.push_str(&digits);
    } else {
        let e = n - 1;
        s.push_str(&digits[..1]);
        if k > 1 {
            s.push('.');
            s.push_str(&digits[1..]);
        }
        s.push('e');
        s.push(if e >= 0 { '+' } else { '-' });
        s.push_str(&e.abs().to_string());
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_format_like_js() {
        let cases = [
            (1.0, "1"),
            (1.5, "1.5"),
            (-0.0, "0"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (0.000001, "0.000001"),
            (0.0000001, "1e-7"),
            (123.456, "123.456"),
            (-1.25e-10, "-1.25e-10"),
            (0.1 + 0.2, "0.30000000000000004"),
            (1.7976931348623157e308, "1.7976931348623157e+308"),
        ];
        for (x, want) in cases {
            assert_eq!(js_number(x), want, "{x}");
        }
    }

    #[test]
    fn string_escaping_matches_serde_and_js() {
        let samples = [
            String::new(),
            "plain ascii text that is long enough for the fast path".to_string(),
            "quote\" back\\slash \n\r\t\u{8}\u{c}\u{1}\u{1f} é ✓ 😀 \u{7f}".to_string(),
            format!("{}\"{}", "x".repeat(13), "y".repeat(9)),
            (0u8..=127).map(|c| c as char).collect::<String>().repeat(3),
        ];
        // Every position around the 32-byte chunks of the fast path, for each kind of character.
        let around = ['"', '\\', '\n', '\u{1}', '\u{1f}', 'é', '😀', ' '].iter().flat_map(|c| {
            (0..100).map(move |at| format!("{}{c}{}", "a".repeat(at), "b".repeat(100 - at)))
        });
        for s in samples.into_iter().chain(around) {
            // serde_json writes exactly what JSON.stringify writes for strings.
            assert_eq!(json_string(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
        }
        assert_eq!(json_string("\u{1}"), "\"\\u0001\"");
    }

    #[test]
    fn normalize_is_stringify_of_parse() {
        assert_eq!(normalize(r#"{ "b": 1.0, "a": [1e21, "x\u0041"], "b": 2 }"#).unwrap(), r#"{"b":2,"a":[1e+21,"xA"]}"#);
        assert_eq!(normalize("12345678901234567890").unwrap(), "12345678901234567000");
        assert!(normalize("{").is_none());
    }
}

/// A JS object literal under construction: keys keep the position of their first assignment,
/// later assignments overwrite the value (as `{ a, ...extra, b }` does), and a key assigned
/// `undefined` (`None`) is left out of the JSON like `JSON.stringify` does.
/// Keys are borrowed (literals, or an `extraBody`'s own keys): a request body assigns a dozen
/// of them, mostly `undefined`, on every call.
/// Values may be borrowed too (a run's cached message list).
pub struct JsObject<'k> {
    entries: Vec<(&'k str, Option<Cow<'k, str>>)>,
}

impl Default for JsObject<'_> {
    fn default() -> Self {
        JsObject { entries: Vec::with_capacity(16) }
    }
}

impl<'k> JsObject<'k> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Assigns raw JSON text (or `undefined`).
    pub fn set_raw(&mut self, key: &'k str, raw: Option<String>) {
        self.assign(key, raw.map(Cow::Owned));
    }

    /// `set_raw` with borrowed text.
    pub fn set_borrowed(&mut self, key: &'k str, raw: Option<&'k str>) {
        self.assign(key, raw.map(Cow::Borrowed));
    }

    fn assign(&mut self, key: &'k str, raw: Option<Cow<'k, str>>) {
        if let Some(e) = self.entries.iter_mut().find(|(k, _)| *k == key) {
            e.1 = raw;
        } else {
            self.entries.push((key, raw));
        }
    }

    pub fn set(&mut self, key: &'k str, v: Option<&Value>) {
        self.set_raw(key, v.map(to_js_json));
    }

    pub fn set_str(&mut self, key: &'k str, v: &str) {
        self.set_raw(key, Some(serde_json::to_string(v).expect("string serialises")));
    }

    /// `...obj`
    pub fn spread(&mut self, obj: &'k Map<String, Value>) {
        for (k, v) in obj {
            self.set(k, Some(v));
        }
    }

    pub fn get_raw(&self, key: &str) -> Option<&str> {
        self.entries.iter().find(|(k, _)| *k == key).and_then(|(_, v)| v.as_deref())
    }

    pub fn into_json(self) -> String {
        // Sized up front: request bodies carry the whole history in one entry.
        let size: usize = self.entries.iter().map(|(k, v)| v.as_ref().map_or(0, |v| k.len() + v.len() + 4)).sum();
        let mut out = String::with_capacity(size + 2);
        out.push('{');
        let mut first = true;
        for (k, v) in self.entries {
            if let Some(v) = v {
                if !first {
                    out.push(',');
                }
                first = false;
                push_json_string(&mut out, k);
                out.push(':');
                out.push_str(&v);
            }
        }
        out.push('}');
        out
    }
}

/// Appends `JSON.stringify(s)`.
pub fn push_json_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let b = s.as_bytes();
    let mut run = 0;
    let mut i = 0;
    while i < b.len() {
        // Tool results and histories are long runs of plain text: 32 bytes at a time while
        // none of them needs escaping (a branch-free test the compiler vectorises).
        if let Some(chunk) = b.get(i..i + 32) {
            if !chunk.iter().fold(false, |any, &c| any | (c < 0x20) | (c == b'"') | (c == b'\\')) {
                i += 32;
                continue;
            }
        }
        let c = b[i];
        let esc: Option<&str> = match c {
            b'"' => Some("\\\""),
            b'\\' => Some("\\\\"),
            b'\n' => Some("\\n"),
            b'\r' => Some("\\r"),
            b'\t' => Some("\\t"),
            0x08 => Some("\\b"),
            0x0c => Some("\\f"),
            0..=0x1f => Some(""),
            _ => None,
        };
        if let Some(e) = esc {
            out.push_str(&s[run..i]);
            if e.is_empty() {
                out.push_str(&format!("\\u{:04x}", c));
            } else {
                out.push_str(e);
            }
            run = i + 1;
        }
        i += 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_string(&mut out, s);
    out
}
