//! The JSON grammar, written once: a validating scanner that accepts exactly what
//! `JSON.parse` accepts, and the lexers for its tokens that the stricter readers (the canonical
//! object check, `Scan`) build on.

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
    let mut open = Open::default();
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
            b'"' => j = string_end(b, j, false)?,
            b't' => j = b[j..].starts_with(b"true").then_some(j + 4)?,
            b'f' => j = b[j..].starts_with(b"false").then_some(j + 5)?,
            b'n' => j = b[j..].starts_with(b"null").then_some(j + 4)?,
            b'-' | b'0'..=b'9' => j = number_end(b, j)?,
            _ => return None,
        }
        // A value ended at `j`: close the containers that end here, up to the next value.
        loop {
            let Some(object) = open.last() else { return Some(j) };
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

/// The containers open in `value`, innermost last (true: an object): the first 128 as bits,
/// so that the usual value (a tool's input, a message) costs no allocation; a Vec was one
/// allocation per skipped container, ≈ a fifth of skipping a small tool input.
#[derive(Default)]
struct Open {
    bits: u128,
    len: usize,
    deeper: Vec<bool>,
}

impl Open {
    fn len(&self) -> usize {
        self.len
    }

    fn push(&mut self, object: bool) {
        if self.len < 128 {
            let bit = 1u128 << self.len;
            self.bits = if object { self.bits | bit } else { self.bits & !bit };
        } else {
            self.deeper.push(object);
        }
        self.len += 1;
    }

    fn last(&self) -> Option<bool> {
        match self.len {
            0 => None,
            n if n <= 128 => Some(self.bits >> (n - 1) & 1 == 1),
            _ => self.deeper.last().copied(),
        }
    }

    fn pop(&mut self) {
        self.len -= 1;
        if self.len >= 128 {
            self.deeper.pop();
        }
    }
}

/// `"key" :` at `j` and the whitespace after it: where the member's value starts.
fn member_key(b: &[u8], j: usize) -> Option<usize> {
    if b.get(j) != Some(&b'"') {
        return None;
    }
    let j = skip_ws(b, string_end(b, j, false)?);
    if b.get(j) != Some(&b':') {
        return None;
    }
    Some(skip_ws(b, j + 1))
}

/// Where the string token at `i` (its opening `"`) ends. `canonical`: only the escapes
/// `JSON.stringify` writes itself (`\/` and `\u…` are what it never writes for the characters
/// it does not have to escape, so a text holding them is not its output).
pub(super) fn string_end(b: &[u8], i: usize, canonical: bool) -> Option<usize> {
    if b.get(i) != Some(&b'"') {
        return None;
    }
    let mut j = i + 1;
    loop {
        // Long runs of plain text a block at a time.
        j += plain_prefix(&b[j..]);
        match *b.get(j)? {
            b'"' => return Some(j + 1),
            b'\\' => match *b.get(j + 1)? {
                b'"' | b'\\' | b'b' | b'f' | b'n' | b'r' | b't' => j += 2,
                b'/' if !canonical => j += 2,
                b'u' if !canonical => {
                    if !b.get(j + 2..j + 6)?.iter().all(u8::is_ascii_hexdigit) {
                        return None;
                    }
                    j += 6;
                }
                _ => return None,
            },
            // A control byte.
            _ => return None,
        }
    }
}

/// Where the number token at `i` ends.
pub(super) fn number_end(b: &[u8], i: usize) -> Option<usize> {
    // The end of one or more digits at `j`.
    let digits = |j: usize| {
        let n = b.get(j..)?.iter().take_while(|c| c.is_ascii_digit()).count();
        (n > 0).then_some(j + n)
    };
    let mut j = i + (b.get(i) == Some(&b'-')) as usize;
    j = match b.get(j)? {
        b'0' => j + 1,
        b'1'..=b'9' => digits(j)?,
        _ => return None,
    };
    if b.get(j) == Some(&b'.') {
        j = digits(j + 1)?;
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        j += 1;
        if matches!(b.get(j), Some(b'+' | b'-')) {
            j += 1;
        }
        j = digits(j)?;
    }
    Some(j)
}

/// How many leading bytes of `b` JSON carries as they are (no `"`, `\\` or control byte).
#[inline]
#[allow(
    unsafe_code,
    reason = "SSE2, 16 bytes per step: part of Agent.run T=1's 95.4k → 89.6k instructions per call (7abd41d)"
)]
pub(super) fn plain_prefix(b: &[u8]) -> usize {
    let mut i = 0;
    #[cfg(target_arch = "x86_64")]
    {
        // SSE2 is part of x86_64: 16 bytes per step, ≈ 10 instructions.
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is always present on x86_64; loads are unaligned and within `b`.
        unsafe {
            let quote = _mm_set1_epi8(b'"' as i8);
            let backslash = _mm_set1_epi8(b'\\' as i8);
            let ctl = _mm_set1_epi8(0x1f);
            while i + 16 <= b.len() {
                let v = _mm_loadu_si128(b.as_ptr().add(i) as *const __m128i);
                // v <= 0x1f (unsigned) exactly when min(v, 0x1f) == v.
                let hit = _mm_or_si128(
                    _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, backslash)),
                    _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v),
                );
                let mask = _mm_movemask_epi8(hit);
                if mask != 0 {
                    return i + mask.trailing_zeros() as usize;
                }
                i += 16;
            }
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        i = plain_words(b);
    }
    while i < b.len() {
        let c = b[i];
        if c < 0x20 || c == b'"' || c == b'\\' {
            return i;
        }
        i += 1;
    }
    i
}

/// Whole 8-byte words at the start of `b` with nothing to escape, as one word each (the classic
/// "has a byte below / equal to" tests): the portable form of the x86_64 loop.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
fn plain_words(b: &[u8]) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let mut i = 0;
    while i + 8 <= b.len() {
        let x = u64::from_le_bytes(b[i..i + 8].try_into().expect("8 bytes"));
        let below = x.wrapping_sub(ONES * 0x20) & !x;
        let q = x ^ (ONES * b'"' as u64);
        let bs = x ^ (ONES * b'\\' as u64);
        let eq = (q.wrapping_sub(ONES) & !q) | (bs.wrapping_sub(ONES) & !bs);
        if (below | eq) & HIGH != 0 {
            break;
        }
        i += 8;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

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
                    j = skip_ws(b, string_end(b, j, false)?);
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
            b'"' => string_end(b, i, false),
            b't' => b[i..].starts_with(b"true").then_some(i + 4),
            b'f' => b[i..].starts_with(b"false").then_some(i + 5),
            b'n' => b[i..].starts_with(b"null").then_some(i + 4),
            b'-' | b'0'..=b'9' => number_end(b, i),
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
    fn numbers_are_what_serde_takes() {
        // Every string of up to 5 symbols over the number alphabet.
        const A: &[u8] = b"-0159.eE+";
        let mut s = Vec::new();
        fn all(s: &mut Vec<u8>, left: usize) {
            let text = std::str::from_utf8(s).unwrap();
            match serde_json::from_str::<serde_json::Value>(text) {
                // serde refuses what JS reads as Infinity; the grammar is JSON's.
                Err(e) if e.to_string().contains("out of range") => {}
                r => assert_eq!(is_valid_json(text), r.is_ok(), "{text}"),
            }
            if left > 0 {
                for &c in A {
                    s.push(c);
                    all(s, left - 1);
                    s.pop();
                }
            }
        }
        all(&mut s, 5);
    }

    #[test]
    fn any_nesting_is_scanned_without_recursion_and_the_depth_bound_holds() {
        // A million levels would overflow any thread's stack if each took a frame.
        let n = 1_000_000;
        let deep = format!("{}1{}", "[{\"k\":".repeat(n), "}]".repeat(n));
        assert!(is_valid_json(&deep));
        assert!(!is_valid_json(&deep[..deep.len() - 1]));
        assert!(!is_valid_json(&"[".repeat(n)));
        // Each level closes with its own bracket, below and past the 128 held as bits.
        for levels in [3, 127, 128, 129, 300] {
            let ok = format!("{}1{}", "[{\"k\":".repeat(levels), "}]".repeat(levels));
            assert!(is_valid_json(&ok), "{levels}");
            for at in [1, 2, levels, 2 * levels - 1, 2 * levels] {
                // The closer at `at` from the end takes the other kind.
                let mut b = ok.clone().into_bytes();
                let k = b.len() - at;
                b[k] = if b[k] == b']' { b'}' } else { b']' };
                assert!(!is_valid_json(std::str::from_utf8(&b).unwrap()), "{levels} {at}");
            }
        }
        // value_end: `None` past max_depth levels, as before.
        let b = b"[[1],2] tail";
        assert_eq!(value_end(b, 0, 2), Some(7));
        assert_eq!(value_end(b, 0, 1), None);
        assert_eq!(value_end(b"[[]]", 0, 1), Some(4));
        assert_eq!(value_end(b"{\"a\":{}}", 0, 1), Some(8));
        assert_eq!(value_end(b"{\"a\":{\"b\":0}}", 0, 1), None);
        assert_eq!(value_end(b"7", 0, 0), Some(1));
    }

    #[test]
    fn plain_words_stops_at_the_first_word_to_escape() {
        // The portable loop (used off x86_64) checked here on every target.
        for c in ['"', '\\', '\n', '\u{0}', '\u{1f}'] {
            for at in 0..40 {
                let s = format!("{}{c}{}", "a".repeat(at), "é~ ".repeat(10));
                assert_eq!(plain_words(s.as_bytes()), at / 8 * 8, "{c:?} at {at}");
            }
        }
        let plain = "\u{7f}\u{80} ~!#é😀".repeat(5);
        assert_eq!(plain_words(plain.as_bytes()), plain.len() / 8 * 8);
    }
}
