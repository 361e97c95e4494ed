//! JSON the way JavaScript writes it: `JSON.stringify(JSON.parse(text))` without a JS engine.
//!
//! Tool inputs that come back from a provider are stored as JSON text (`Box<RawValue>`); the
//! kernel compares and re-sends that text, so it must be the compact form with JS number
//! formatting (`1.0` → `1`, `1e21` → `1e+21`, `0.000001` stays fixed) that JS would produce.

use std::borrow::Cow;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::grammar::{number_end, plain_prefix, string_end};

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

/// Whether `text` is a JSON object written exactly as `JSON.stringify(JSON.parse(text))`
/// would write it, so it can be kept as it is. Only vouches for the usual shapes: no
/// whitespace, only the escapes JS writes itself, integer-like keys (which JS moves first) and
/// repeated keys absent, numbers of at most 15 digits without exponent; `false` otherwise.
pub fn is_js_canonical_object(text: &str) -> bool {
    let b = text.as_bytes();
    b.first() == Some(&b'{') && canonical_value(b, 0, 0) == Some(b.len())
}

/// The end of the canonical value at `i`.
fn canonical_value(b: &[u8], i: usize, depth: u32) -> Option<usize> {
    if depth > 64 {
        return None;
    }
    match *b.get(i)? {
        b'{' => {
            let mut i = i + 1;
            if b.get(i) == Some(&b'}') {
                return Some(i + 1);
            }
            // Keys seen in this object (canonical strings compare as written).
            let mut keys = [(0usize, 0usize); 16];
            let mut n = 0;
            loop {
                let end = string_end(b, i, true)?;
                let key = &b[i + 1..end - 1];
                if n == keys.len() || key.first().is_some_and(u8::is_ascii_digit) && key.iter().all(u8::is_ascii_digit)
                {
                    return None;
                }
                if keys[..n].iter().any(|&(s, e)| &b[s..e] == key) {
                    return None;
                }
                keys[n] = (i + 1, end - 1);
                n += 1;
                if b.get(end) != Some(&b':') {
                    return None;
                }
                i = canonical_value(b, end + 1, depth + 1)?;
                match *b.get(i)? {
                    b',' => i += 1,
                    b'}' => return Some(i + 1),
                    _ => return None,
                }
            }
        }
        b'[' => {
            let mut i = i + 1;
            if b.get(i) == Some(&b']') {
                return Some(i + 1);
            }
            loop {
                i = canonical_value(b, i, depth + 1)?;
                match *b.get(i)? {
                    b',' => i += 1,
                    b']' => return Some(i + 1),
                    _ => return None,
                }
            }
        }
        b'"' => string_end(b, i, true),
        b't' => b[i..].starts_with(b"true").then_some(i + 4),
        b'f' => b[i..].starts_with(b"false").then_some(i + 5),
        b'n' => b[i..].starts_with(b"null").then_some(i + 4),
        _ => canonical_number(b, i),
    }
}

/// The end of the number at `i` (the grammar's token) when JS writes it back the same way.
fn canonical_number(b: &[u8], i: usize) -> Option<usize> {
    let end = number_end(b, i)?;
    let t = &b[i..end];
    let neg = t[0] == b'-';
    let t = &t[neg as usize..];
    if t.iter().any(|&c| c == b'e' || c == b'E') {
        return None;
    }
    let (int, frac) = match t.iter().position(|&c| c == b'.') {
        Some(dot) => (&t[..dot], Some(&t[dot + 1..])),
        None => (t, None),
    };
    let zero = int == b"0";
    match frac {
        // A trailing zero goes; below 1e-6 JS switches to exponent form.
        Some(f) if f.ends_with(b"0") || zero && f.starts_with(b"000000") => return None,
        None if zero && neg => return None, // -0 is written 0
        _ => {}
    }
    // More digits than an f64 keeps exactly may come back rounded.
    if int.len() + frac.map_or(0, <[u8]>::len) > 15 {
        return None;
    }
    Some(end)
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
    let mut first = true;
    let mut member = |out: &mut String, k: &str, x: &Value| {
        if !first {
            out.push(',');
        }
        first = false;
        push_json_string(out, k);
        out.push(':');
        write_value(out, x);
    };
    if m.keys().any(|k| array_index(k).is_some()) {
        // JS objects list integer-like keys first, in numeric order, then the rest as inserted.
        let mut indexed: Vec<(u32, &String, &Value)> =
            m.iter().filter_map(|(k, x)| array_index(k).map(|i| (i, k, x))).collect();
        indexed.sort_unstable_by_key(|&(i, _, _)| i);
        for (_, k, x) in indexed {
            member(out, k, x);
        }
        for (k, x) in m.iter().filter(|(k, _)| array_index(k).is_none()) {
            member(out, k, x);
        }
    } else {
        for (k, x) in m {
            member(out, k, x);
        }
    }
    out.push('}');
}

/// The key as an array index (`0` … `2^32 − 2` written canonically), which JS orders first.
fn array_index(k: &str) -> Option<u32> {
    let b = k.as_bytes();
    if b.is_empty() || b.len() > 10 || !b.iter().all(u8::is_ascii_digit) || (b.len() > 1 && b[0] == b'0') {
        return None;
    }
    k.parse::<u64>().ok().filter(|&n| n < u32::MAX as u64).map(|n| n as u32)
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

/// `n`'s decimal digits, written at the end of `buf` (20 digits hold any u64), without
/// `core::fmt`: `write!` costs ≈ 270 instructions per number, and the wire and the loop
/// detector write one per action or call, oma-uv one per request head.
#[inline]
pub fn decimal_digits(mut n: u64, buf: &mut [u8; 20]) -> &[u8] {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    &buf[i..]
}

/// Appends `n` in decimal digits, without an intermediate string ([`decimal_digits`]).
pub fn push_uint(out: &mut String, n: u64) {
    for &d in decimal_digits(n, &mut [0; 20]) {
        out.push(d as char);
    }
}

/// Appends `JSON.stringify(s)`.
pub fn push_json_string(out: &mut String, s: &str) {
    out.reserve(s.len() + 2);
    out.push('"');
    let b = s.as_bytes();
    let mut run = 0;
    loop {
        // Tool results and histories are long runs of plain text: skip them a block at a time.
        let i = run + plain_prefix(&b[run..]);
        if i == b.len() {
            break;
        }
        out.push_str(&s[run..i]);
        let c = b[i];
        match c {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            _ => {
                const HEX: &[u8; 16] = b"0123456789abcdef";
                out.push_str("\\u00");
                out.push(HEX[(c >> 4) as usize] as char);
                out.push(HEX[(c & 15) as usize] as char);
            }
        }
        run = i + 1;
    }
    out.push_str(&s[run..]);
    out.push('"');
}

pub fn json_string(s: &str) -> String {
    let mut out = String::with_capacity(s.len() + 2);
    push_json_string(&mut out, s);
    out
}

/// `JSON.stringify` text with every `\uXXXX` escape of a lone surrogate (which a JS string may
/// hold and a Rust string may not) replaced by `\ufffd`, as napi does when it converts such a
/// string; `None` when there is none (`JSON.stringify` writes `\u` and lowercase hex, and
/// only control characters and lone surrogates as escapes, so most texts have no `\ud` at all).
pub fn replace_lone_surrogates(json: &str) -> Option<String> {
    if !json.contains("\\ud") {
        return None;
    }
    let b = json.as_bytes();
    let hex = |at: usize| -> Option<u16> {
        let h = b.get(at..at + 4)?;
        u16::from_str_radix(std::str::from_utf8(h).ok()?, 16).ok()
    };
    // A `\uXXXX` escape at `at` (`at` points at the backslash).
    let escape = |at: usize| -> Option<u16> {
        if b.get(at + 1) == Some(&b'u') {
            hex(at + 2)
        } else {
            None
        }
    };
    let mut out: Option<String> = None;
    let mut copied = 0;
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            i += 1;
            continue;
        }
        let Some(u) = escape(i) else {
            i += 2; // any other escape, `\\` included
            continue;
        };
        let lone = match u {
            0xD800..=0xDBFF => {
                if b.get(i + 6) == Some(&b'\\') && matches!(escape(i + 6), Some(0xDC00..=0xDFFF)) {
                    i += 12;
                    continue;
                }
                true
            }
            0xDC00..=0xDFFF => true,
            _ => false,
        };
        if lone {
            let o = out.get_or_insert_with(|| String::with_capacity(json.len()));
            o.push_str(&json[copied..i]);
            o.push_str("\\ufffd");
            copied = i + 6;
        }
        i += 6;
    }
    let mut o = out?;
    o.push_str(&json[copied..]);
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decimal_digits_of_any_u64() {
        for n in [0, 7, 10, 4096, 1_000_000_007, u64::MAX] {
            let mut out = String::from("x");
            push_uint(&mut out, n);
            assert_eq!(out, format!("x{n}"));
            assert_eq!(decimal_digits(n, &mut [0; 20]), n.to_string().as_bytes());
        }
    }

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
        let around = ['"', '\\', '\n', '\u{1}', '\u{1f}', 'é', '😀', ' ']
            .iter()
            .flat_map(|c| (0..100).map(move |at| format!("{}{c}{}", "a".repeat(at), "b".repeat(100 - at))));
        for s in samples.into_iter().chain(around) {
            // serde_json writes exactly what JSON.stringify writes for strings.
            assert_eq!(json_string(&s), serde_json::to_string(&s).unwrap(), "{s:?}");
        }
        assert_eq!(json_string("\u{1}"), "\"\\u0001\"");
    }

    #[test]
    fn canonical_objects_are_what_js_writes_back() {
        let kept = [
            r#"{}"#,
            r#"{"key":"k0"}"#,
            r#"{"a":[1,-2,0,0.5,-0.25,123456789012345,true,false,null,{},[]],"b":{"c":"x\"y\\z\n\t é 😀"}}"#,
            r#"{"x":0.000001,"y":1.5,"":""}"#,
        ];
        for k in kept {
            assert!(is_js_canonical_object(k), "{k}");
            assert_eq!(normalize(k).as_deref(), Some(k));
        }
        let declined = [
            r#"{ "a":1}"#,
            r#"{"a":1.0}"#,
            r#"{"a":1e3}"#,
            r#"{"a":-0}"#,
            r#"{"a":0.0000001}"#,
            r#"{"a":1234567890123456}"#,
            r#"{"a":"\/"}"#,
            r#"{"a":"\u0041"}"#,
            r#"{"1":1}"#,
            r#"{"a":1,"a":2}"#,
            r#"[1]"#,
            r#""x""#,
            r#"{"a":01}"#,
            r#"{"a":1,}"#,
            r#"{"a":tru}"#,
            r#"{"a":1} "#,
            r#"{"a":"x"#,
            "{\"a\":\"\u{1}\"}",
        ];
        for d in declined {
            assert!(!is_js_canonical_object(d), "{d}");
        }
        let wide = format!("{{{}}}", (0..17).map(|i| format!("\"k{i}\":{i}")).collect::<Vec<_>>().join(","));
        assert!(!is_js_canonical_object(&wide));
    }

    #[test]
    fn normalize_is_stringify_of_parse() {
        assert_eq!(
            normalize(r#"{ "b": 1.0, "a": [1e21, "x\u0041"], "b": 2 }"#).unwrap(),
            r#"{"b":2,"a":[1e+21,"xA"]}"#
        );
        // Integer-like keys first, in numeric order, as JS objects list them.
        assert_eq!(
            normalize(r#"{"b":1,"10":2,"2":3,"01":4,"4294967295":5,"4294967294":6,"-1":7,"a":{"1":0,"x":1,"0":2}}"#)
                .unwrap(),
            r#"{"2":3,"10":2,"4294967294":6,"b":1,"01":4,"4294967295":5,"-1":7,"a":{"0":2,"1":0,"x":1}}"#
        );
        assert_eq!(normalize("12345678901234567890").unwrap(), "12345678901234567000");
        assert!(normalize("{").is_none());
    }

    #[test]
    fn lone_surrogate_escapes_become_replacement_characters() {
        assert_eq!(replace_lone_surrogates(r#"["a\ud83d\ude00b"]"#), None);
        assert_eq!(replace_lone_surrogates(r#"["a\\ud800"]"#), None);
        assert_eq!(
            replace_lone_surrogates(r#"["x\ud800y","\udc00","\ud800\u0041"]"#).as_deref(),
            Some(r#"["x\ufffdy","\ufffd","\ufffd\u0041"]"#)
        );
        assert_eq!(replace_lone_surrogates(r#"["\ud83d\ude00\udbff"]"#).as_deref(), Some(r#"["\ud83d\ude00\ufffd"]"#));
        assert_eq!(replace_lone_surrogates("[\"é\\ud800\"]").as_deref(), Some("[\"é\\ufffd\"]"));
    }
}
