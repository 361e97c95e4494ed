//! JavaScript string semantics the contract is written in: UTF-16 lengths and slices,
//! `String.prototype.trim`, the regex `\s` set, and a validating JSON scanner that accepts
//! exactly what `JSON.parse` accepts.

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

/// `str.length` in JS: UTF-16 code units.
pub fn utf16_len(s: &str) -> usize {
    // ASCII fast path: most tool output is ASCII.
    if s.is_ascii() {
        return s.len();
    }
    s.chars().map(char::len_utf16).sum()
}

/// Byte offset of UTF-16 index `idx` (clamped). A surrogate pair split in the middle rounds
/// down to the start of the character (Rust strings cannot hold half a pair).
pub fn utf16_to_byte(s: &str, idx: usize) -> usize {
    if s.is_ascii() {
        return idx.min(s.len());
    }
    let mut units = 0;
    for (b, c) in s.char_indices() {
        let w = c.len_utf16();
        if units + w > idx {
            return b;
        }
        units += w;
    }
    s.len()
}

/// `s.slice(start, end)` with UTF-16 indices (clamped).
pub fn utf16_slice(s: &str, start: usize, end: usize) -> &str {
    let a = utf16_to_byte(s, start);
    let b = utf16_to_byte(s, end.max(start));
    &s[a..b]
}

/// First `n` UTF-16 units of `s`.
pub fn utf16_prefix(s: &str, n: usize) -> &str {
    &s[..utf16_to_byte(s, n)]
}

/// Characters in JS's `\s` class and stripped by `trim()`.
pub fn is_js_space(c: char) -> bool {
    matches!(
        c,
        '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200A}' | '\u{2028}' | '\u{2029}' | '\u{202F}' | '\u{205F}' | '\u{3000}' | '\u{FEFF}'
    )
}

pub fn js_trim(s: &str) -> &str {
    s.trim_matches(is_js_space)
}

pub fn js_trim_end(s: &str) -> &str {
    s.trim_end_matches(is_js_space)
}

/// True iff `JSON.parse(s)` would succeed (RFC 8259 grammar, any top-level value, JS
/// whitespace rules: only space, tab, CR, LF around tokens; lone surrogate escapes allowed).
pub fn is_valid_json(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = skip_ws(b, 0);
    // No depth bound: the scan is iterative, and JSON.parse has none either.
    match value(b, i, 0, usize::MAX) {
        Some(end) => {
            i = skip_ws(b, end);
            i == b.len()
        }
        None => false,
    }
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// Where the JSON value at `i` (no whitespace before it) ends, checked as `is_valid_json`
/// checks, `None` past `max_depth` levels of nesting.
pub fn value_end(b: &[u8], i: usize, max_depth: usize) -> Option<usize> {
    value(b, i, 0, max_depth)
}

fn value(b: &[u8], i: usize, depth: usize, limit: usize) -> Option<usize> {
    // Iterative, with one byte per open container (true: an object), so that no nesting can
    // exhaust the thread's stack (a model's output of ten thousand `[` killed the process in a
    // worker thread when this recursed). `limit` still bounds the depth a caller accepts.
    let mut open: Vec<bool> = Vec::new();
    let mut j = i;
    loop {
        // A value starts at `j`.
        if depth + open.len() > limit || j >= b.len() {
            return None;
        }
        match b[j] {
            b'{' => {
                j = skip_ws(b, j + 1);
                if b.get(j) == Some(&b'}') {
                    j += 1;
                } else {
                    j = member_key(b, j)?;
                    open.push(true);
                    continue;
                }
            }
            b'[' => {
                j = skip_ws(b, j + 1);
                if b.get(j) == Some(&b']') {
                    j += 1;
                } else {
                    open.push(false);
                    continue;
                }
            }
            b'"' => j = string(b, j)?,
            b't' => j = b[j..].starts_with(b"true").then_some(j + 4)?,
            b'f' => j = b[j..].starts_with(b"false").then_some(j + 5)?,
            b'n' => j = b[j..].starts_with(b"null").then_some(j + 4)?,
            b'-' | b'0'..=b'9' => j = number(b, j)?,
            _ => return None,
        }
        // A value ended at `j`: close the containers that end here, up to the next value.
        loop {
            let Some(&object) = open.last() else { return Some(j) };
            j = skip_ws(b, j);
            match b.get(j) {
                Some(b',') => {
                    j = skip_ws(b, j + 1);
                    if object {
                        j = member_key(b, j)?;
                    }
                    break;
                }
                Some(b'}') if object => {
                    open.pop();
                    j += 1;
                }
                Some(b']') if !object => {
                    open.pop();
                    j += 1;
                }
                _ => return None,
            }
        }
    }
}

/// `"key" :` at `j` and the whitespace after it: where the member's value starts.
fn member_key(b: &[u8], j: usize) -> Option<usize> {
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let j = skip_ws(b, string(b, j)?);
    if b.get(j) != Some(&b':') {
        return None;
    }
    Some(skip_ws(b, j + 1))
}

fn string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'"' => return Some(j + 1),
            b'\\' => match b.get(j + 1)? {
                b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
                b'u' => {
                    let hex = b.get(j + 2..j + 6)?;
                    if !hex.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    j += 6;
                }
                _ => return None,
            },
            0x00..=0x1F => return None,
            _ => j += 1,
        }
    }
    None
}

fn number(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i;
    if b[j] == b'-' {
        j += 1;
    }
    match b.get(j)? {
        b'0' => j += 1,
        b'1'..=b'9' => {
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
        }
        _ => return None,
    }
    if b.get(j) == Some(&b'.') {
        j += 1;
        let s = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j == s {
            return None;
        }
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        j += 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        let s = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        if j == s {
            return None;
        }
    }
    Some(j)
}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn utf16_helpers() {
        assert_eq!(utf16_len("héllo"), 5);
        assert_eq!(utf16_len("😀"), 2);
        assert_eq!(utf16_slice("a😀b", 0, 3), "a😀");
        assert_eq!(utf16_slice("a😀b", 3, 4), "b");
        assert_eq!(utf16_prefix("abc", 10), "abc");
    }

    #[test]
    fn trim_matches_js() {
        assert_eq!(js_trim("\u{FEFF}\u{A0} x \n"), "x");
        assert_eq!(js_trim_end(" x \u{2028}"), " x");
    }

    #[test]
    fn json_validity_matches_json_parse() {
        for ok in ["1", "-0.5e+3", "\"s\\u00e9\"", "[]", "{}", " {\"a\": [1, {\"b\": null}]} ", "true", "\"\\ud800\""] {
            assert!(is_valid_json(ok), "{ok}");
        }
        for bad in ["", "01", "1.", "[1,]", "{\"a\":1,}", "'x'", "{a:1}", "nul", "\"\t\"", "1 2", "\u{A0}1"] {
            assert!(!is_valid_json(bad), "{bad}");
        }
        for bad in [
            "[1 2]",
            "{\"a\" 1}",
            "{\"a\":1 \"b\":2}",
            "[}",
            "{]",
            "{\"a\":[1}",
            "[{\"a\":1]]",
            "{,}",
            "[,1]",
            "{\"a\":}",
            "[1]]",
        ] {
            assert!(!is_valid_json(bad), "{bad}");
        }
        for ok in ["[[],{},[{}],{\"a\":{\"b\":[]}}]", "{\"a\" : [ 1 , 2 ] , \"b\" : { } }"] {
            assert!(is_valid_json(ok), "{ok}");
        }
    }

    /// The recursive scanner this module had before, kept as the reference for the iterative one.
    fn reference(b: &[u8], i: usize, depth: usize, limit: usize) -> Option<usize> {
        if depth > limit || i >= b.len() {
            return None;
        }
        match b[i] {
            b'{' => {
                let mut j = skip_ws(b, i + 1);
                if j < b.len() && b[j] == b'}' {
                    return Some(j + 1);
                }
                loop {
                    if j >= b.len() || b[j] != b'"' {
                        return None;
                    }
                    j = skip_ws(b, string(b, j)?);
                    if j >= b.len() || b[j] != b':' {
                        return None;
                    }
                    j = skip_ws(b, reference(b, skip_ws(b, j + 1), depth + 1, limit)?);
                    match b.get(j) {
                        Some(b',') => j = skip_ws(b, j + 1),
                        Some(b'}') => return Some(j + 1),
                        _ => return None,
                    }
                }
            }
            b'[' => {
                let mut j = skip_ws(b, i + 1);
                if j < b.len() && b[j] == b']' {
                    return Some(j + 1);
                }
                loop {
                    j = skip_ws(b, reference(b, j, depth + 1, limit)?);
                    match b.get(j) {
                        Some(b',') => j = skip_ws(b, j + 1),
                        Some(b']') => return Some(j + 1),
                        _ => return None,
                    }
                }
            }
            b'"' => string(b, i),
            b't' => b[i..].starts_with(b"true").then_some(i + 4),
            b'f' => b[i..].starts_with(b"false").then_some(i + 5),
            b'n' => b[i..].starts_with(b"null").then_some(i + 4),
            b'-' | b'0'..=b'9' => number(b, i),
            _ => None,
        }
    }

    #[test]
    fn the_iterative_scan_agrees_with_the_recursive_one() {
        // Every string up to 7 symbols over the structural alphabet, and random longer ones.
        const A: &[&[u8]] = &[b"[", b"]", b"{", b"}", b",", b":", b"\"k\"", b"1", b" ", b"null", b"\"", b"-"];
        let check = |s: &[u8]| {
            for limit in [0, 1, 2, 3, usize::MAX] {
                assert_eq!(
                    value(s, 0, 0, limit),
                    reference(s, 0, 0, limit),
                    "{:?} limit {limit}",
                    String::from_utf8_lossy(s)
                );
            }
        };
        let mut buf = Vec::new();
        fn all(buf: &mut Vec<u8>, left: usize, check: &dyn Fn(&[u8])) {
            check(buf);
            if left == 0 {
                return;
            }
            for t in A {
                let n = buf.len();
                buf.extend_from_slice(t);
                all(buf, left - 1, check);
                buf.truncate(n);
            }
        }
        all(&mut buf, 5, &check);
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        for _ in 0..100_000 {
            buf.clear();
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let len = (x % 24) as usize;
            let mut y = x;
            for _ in 0..len {
                y = y.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                buf.extend_from_slice(A[((y >> 33) % A.len() as u64) as usize]);
            }
            check(&buf);
        }
    }

    #[test]
    fn any_nesting_is_scanned_without_recursion_and_the_depth_bound_holds() {
        // A million levels would overflow any thread's stack if each took a frame.
        let n = 1_000_000;
        let deep = format!("{}1{}", "[{\"k\":".repeat(n), "}]".repeat(n));
        assert!(is_valid_json(&deep));
        assert!(!is_valid_json(&deep[..deep.len() - 1]));
        assert!(!is_valid_json(&"[".repeat(n)));
        // value_end: `None` past max_depth levels, as before.
        let b = b"[[1],2] tail";
        assert_eq!(value_end(b, 0, 2), Some(7));
        assert_eq!(value_end(b, 0, 1), None);
        assert_eq!(value_end(b"[[]]", 0, 1), Some(4));
        assert_eq!(value_end(b"{\"a\":{}}", 0, 1), Some(8));
        assert_eq!(value_end(b"{\"a\":{\"b\":0}}", 0, 1), None);
        assert_eq!(value_end(b"7", 0, 0), Some(1));
    }
}
