//! JavaScript string semantics the contract is written in: UTF-16 lengths and slices,
//! `String.prototype.trim` and the regex `\s` set.

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

#[cfg(test)]
mod tests {
    use super::*;

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
}
