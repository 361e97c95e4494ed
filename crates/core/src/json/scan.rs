//! A small validating JSON reader for the response shapes read on every call (an OpenAI
//! completion): keys are matched as bytes and unread values are skipped without building
//! anything, where serde's derived visitors parse and compare every key and value.
//!
//! Every method returns `None` for what it does not take: invalid JSON, and also valid JSON
//! it leaves to serde_json (escaped keys, non-integer numbers, very deep nesting). Callers
//! then parse the same text with serde_json, so results and error texts stay serde's.

use std::borrow::Cow;

use serde_json::value::RawValue;

use super::grammar::{number_end, plain_prefix, value_end};

/// serde_json stops at 128 levels; deeper input goes to it for its error.
const MAX_DEPTH: u32 = 100;

pub struct Scan<'a> {
    s: &'a str,
    b: &'a [u8],
    i: usize,
    depth: u32,
}

impl<'a> Scan<'a> {
    pub fn new(s: &'a str) -> Scan<'a> {
        Scan { s, b: s.as_bytes(), i: 0, depth: 0 }
    }

    fn ws(&mut self) {
        while let Some(b' ' | b'\t' | b'\n' | b'\r') = self.b.get(self.i) {
            self.i += 1;
        }
    }

    /// The next byte after whitespace.
    pub fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.b.get(self.i).copied()
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    /// Only whitespace left.
    pub fn at_end(&mut self) -> bool {
        self.ws();
        self.i == self.b.len()
    }

    /// `null` (consumed) or not (nothing consumed).
    pub fn null(&mut self) -> bool {
        self.ws();
        if self.b[self.i..].starts_with(b"null") {
            self.i += 4;
            true
        } else {
            false
        }
    }

    fn literal(&mut self, word: &[u8]) -> Option<()> {
        self.ws();
        self.b[self.i..].starts_with(word).then(|| self.i += word.len())
    }

    /// An object, `member(self, key)` reading each value. Keys with escapes are left to serde.
    pub fn object(&mut self, mut member: impl FnMut(&mut Self, &'a str) -> Option<()>) -> Option<()> {
        self.list(b'{', b'}', |s| {
            let key = match s.string()? {
                Cow::Borrowed(k) => k,
                Cow::Owned(_) => return None,
            };
            if !s.eat(b':') {
                return None;
            }
            member(s, key)
        })
    }

    /// An object whose members `members` reads in a fixed order, each key matched as exact
    /// bytes (`exact`): a shape as `JSON.stringify` writes it, read without taking its keys one
    /// by one. `None`, with nothing consumed, when the object is not exactly that.
    pub fn exact_object<R>(&mut self, members: impl FnOnce(&mut Self) -> Option<R>) -> Option<R> {
        let (i, depth) = (self.i, self.depth);
        self.ws();
        let r = if self.exact(b"{").is_some() && self.enter().is_some() {
            members(self).and_then(|r| self.exact(b"}").map(|()| r))
        } else {
            None
        };
        self.depth = depth;
        if r.is_none() {
            self.i = i;
        }
        r
    }

    /// The bytes `lit` here (no whitespace before them), consumed; `None` when they are not.
    pub fn exact(&mut self, lit: &[u8]) -> Option<()> {
        self.b[self.i..].starts_with(lit).then(|| self.i += lit.len())
    }

    /// An array, `item(self)` reading each element.
    pub fn array(&mut self, item: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        self.list(b'[', b']', item)
    }

    /// `open`, comma-separated entries read by `entry`, `close`.
    fn list(&mut self, open: u8, close: u8, mut entry: impl FnMut(&mut Self) -> Option<()>) -> Option<()> {
        if !self.eat(open) {
            return None;
        }
        self.enter()?;
        if !self.eat(close) {
            loop {
                entry(self)?;
                if self.eat(b',') {
                    continue;
                }
                if self.eat(close) {
                    break;
                }
                return None;
            }
        }
        self.depth -= 1;
        Some(())
    }

    fn enter(&mut self) -> Option<()> {
        self.depth += 1;
        (self.depth <= MAX_DEPTH).then_some(())
    }

    /// A string, borrowed when it has no escapes.
    pub fn string(&mut self) -> Option<Cow<'a, str>> {
        if self.peek()? != b'"' {
            return None;
        }
        let start = self.i + 1;
        // The text up to the next `"`, `\\` or control byte, a block at a time.
        let mut j = start + plain_prefix(&self.b[start..]);
        match *self.b.get(j)? {
            b'"' => {
                self.i = j + 1;
                return Some(Cow::Borrowed(&self.s[start..j]));
            }
            b'\\' => {}
            _ => return None,
        }
        let mut out = String::with_capacity(j - start + 16);
        out.push_str(&self.s[start..j]);
        loop {
            match *self.b.get(j)? {
                b'"' => {
                    self.i = j + 1;
                    return Some(Cow::Owned(out));
                }
                b'\\' => {
                    let e = *self.b.get(j + 1)?;
                    j += 2;
                    let c = match e {
                        b'"' => '"',
                        b'\\' => '\\',
                        b'/' => '/',
                        b'b' => '\u{8}',
                        b'f' => '\u{c}',
                        b'n' => '\n',
                        b'r' => '\r',
                        b't' => '\t',
                        b'u' => {
                            let u = hex4(self.b.get(j..j + 4)?)?;
                            j += 4;
                            match u {
                                0xD800..=0xDBFF => {
                                    // Only a whole pair here; a lone half is serde's to judge.
                                    if self.b.get(j..j + 2)? != b"\\u" {
                                        return None;
                                    }
                                    let lo = hex4(self.b.get(j + 2..j + 6)?)?;
                                    if !(0xDC00..=0xDFFF).contains(&lo) {
                                        return None;
                                    }
                                    j += 6;
                                    char::from_u32(0x10000 + ((u - 0xD800) << 10) + (lo - 0xDC00))?
                                }
                                0xDC00..=0xDFFF => return None,
                                _ => char::from_u32(u)?,
                            }
                        }
                        _ => return None,
                    };
                    out.push(c);
                }
                c if c < 0x20 => return None,
                _ => {
                    let run = j;
                    j += plain_prefix(&self.b[j..]);
                    out.push_str(&self.s[run..j]);
                }
            }
        }
    }

    /// A number's text, checked against the JSON grammar.
    fn number(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.i;
        self.i = number_end(self.b, start)?;
        Some(&self.s[start..self.i])
    }

    /// A non-negative integer of at most 15 digits (exact as f64, read alike by serde as u64
    /// and as f64); other numbers are left to serde.
    pub fn small_uint(&mut self) -> Option<u64> {
        let n = self.number()?;
        if n.len() > 15 || !n.bytes().all(|c| c.is_ascii_digit()) {
            return None;
        }
        n.parse().ok()
    }

    /// Any value, checked and passed over; its text.
    pub fn skip_raw(&mut self) -> Option<&'a str> {
        self.ws();
        let start = self.i;
        self.skip()?;
        Some(&self.s[start..self.i])
    }

    /// Any value as an owned `RawValue`, checked once, by the kernel's grammar (as `skip` checks
    /// it). serde_json reading it as a `RawValue` cost ≈ 700 instructions for a small tool
    /// input (W1 16×10, issue 18), most of it in its generic skipping; the grammar takes the same
    /// texts (RFC 8259, a lone surrogate escape included) within the scan's depth limit, which is
    /// below serde_json's own.
    #[allow(
        unsafe_code,
        reason = "with the grammar check, W1 16×10: 21.0k → 20.3k instructions per tool call (bench/README.md, issue 18)"
    )]
    pub fn raw_value(&mut self) -> Option<Box<RawValue>> {
        let text = self.skip_raw()?;
        // SAFETY: `skip_raw` returned exactly one value that the grammar checked, from its first
        // token to its last: well-formed JSON without surrounding whitespace, which is all
        // `from_string_unchecked` asks (debug builds check it again).
        Some(unsafe { RawValue::from_string_unchecked(text.to_owned()) })
    }

    /// `true`, `false`, or `null` (`None`); anything else is not taken.
    pub fn opt_bool(&mut self) -> Option<Option<bool>> {
        match self.peek()? {
            b't' => self.literal(b"true").map(|()| Some(true)),
            b'f' => self.literal(b"false").map(|()| Some(false)),
            b'n' => self.literal(b"null").map(|()| None),
            _ => None,
        }
    }

    /// A string or `null` (`None`); anything else is not taken.
    pub fn opt_string(&mut self) -> Option<Option<Cow<'a, str>>> {
        if self.null() {
            Some(None)
        } else {
            self.string().map(Some)
        }
    }

    /// Any value, checked and passed over (by the kernel's JSON checker, which takes what
    /// serde_json's skipping takes: any escape that is well formed, a lone surrogate included).
    pub fn skip(&mut self) -> Option<()> {
        self.ws();
        // The value's own containers count from the next level.
        self.i = value_end(self.b, self.i, MAX_DEPTH.saturating_sub(self.depth + 1) as usize)?;
        Some(())
    }
}

/// Known fields met so far in one object: serde refuses a field given twice (a bit per field).
pub struct Seen(pub u16);

impl Seen {
    /// `None` when field `bit` was met before.
    pub fn once(&mut self, bit: u16) -> Option<()> {
        if self.0 & bit != 0 {
            return None;
        }
        self.0 |= bit;
        Some(())
    }
}

fn hex4(h: &[u8]) -> Option<u32> {
    let mut v = 0;
    for &c in h {
        v = v * 16 + (c as char).to_digit(16)?;
    }
    Some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn skip_all(s: &str) -> Option<()> {
        let mut sc = Scan::new(s);
        sc.skip()?;
        sc.at_end().then_some(())
    }

    #[test]
    fn takes_what_serde_takes() {
        let valid = [
            r#"{"a":[1,-0.5,2e10,1E-3,true,false,null,"x\"\\\/\b\f\n\r\t\u00e9\ud83d\ude00"],"b":{}}"#,
            " [ ] ",
            "0",
            r#""plain""#,
            "{ \"k\" :\n\t{ \"n\" : [ [ ] , { } ] } }",
        ];
        for v in valid {
            assert!(serde_json::from_str::<serde_json::Value>(v).is_ok(), "{v}");
            assert_eq!(skip_all(v), Some(()), "{v}");
        }
        let invalid = [
            "",
            "{",
            "[1,]",
            "{\"a\":1,}",
            "01",
            "1.",
            "-",
            "1e",
            ".5",
            "+1",
            "tru",
            "nul",
            "\"a",
            "\"\\x\"",
            "\"\\u12\"",
            "\"a\u{1}b\"",
            "{\"a\" 1}",
            "{1:2}",
            "[1 2]",
            "1 2",
            "{\"a\":1}}",
        ];
        for v in invalid {
            assert_eq!(skip_all(v), None, "{v}");
        }
        // Skipped strings take a lone surrogate escape, as serde's skipping does; read ones not.
        for v in ["\"\\ud800\"", "\"\\udc00\""] {
            assert_eq!(skip_all(v), Some(()), "{v}");
            assert_eq!(Scan::new(v).string(), None, "{v}");
        }
        let deep = format!("{}{}", "[".repeat(101), "]".repeat(101));
        assert_eq!(skip_all(&deep), None);
        let ok_depth = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert_eq!(skip_all(&ok_depth), Some(()));
    }

    #[test]
    fn strings_decode_like_serde() {
        for s in [r#""no escapes""#, r#""a\"b\\c\/d\n\u0041\u00e9\u4e2d\ud83d\ude00 end""#, r#""""#, r#""\\""#] {
            let mine = Scan::new(s).string().unwrap();
            assert_eq!(mine, serde_json::from_str::<String>(s).unwrap());
            assert_eq!(matches!(mine, Cow::Borrowed(_)), !s.contains('\\'));
        }
    }

    #[test]
    fn raw_values_end_where_the_scan_ends_them() {
        for v in [r#"{"a":0,"b":[1,{"c":"\u00e9\ud800"}]}"#, "[]", "12", r#""s""#, "null", " { } "] {
            let text = format!("{v},\"next\"");
            let mut s = Scan::new(&text);
            let raw = s.raw_value().expect(v);
            assert_eq!(raw.get(), v.trim());
            assert_eq!(s.peek(), Some(b','));
            let mut k = Scan::new(&text);
            assert_eq!(k.skip_raw(), Some(v.trim()));
        }
        // A value is read up to where it ends ("01": the number 0); what follows is the caller's.
        for v in ["{", "[1,]", "tru", r#""\x""#, "[01]"] {
            assert!(Scan::new(v).raw_value().is_none(), "{v}");
        }
        // Past the scan's depth limit: not taken, though serde alone would read it.
        for n in [99, 100, 101, 127] {
            let deep = format!("{}{}", "[".repeat(n), "]".repeat(n));
            let mut s = Scan::new(&deep);
            assert_eq!(s.raw_value().is_some(), Scan::new(&deep).skip_raw().is_some(), "{n}");
        }
    }

    #[test]
    fn raw_values_are_what_serde_json_takes_as_one() {
        // The grammar stands in for serde_json's check: the same texts taken, the same text kept.
        let cases = [
            r#"{"a":0,"b":[1,-0,1e400,1.5E+3,-2e-2]}"#,
            r#"{ "k" : "v" , "x" : [ ] }"#,
            r#""\ud800 lone \udc00 \/ \b\f\n\r\t \u00e9""#,
            "\"é ☃ 😀\"",
            "[true,false,null]",
            r#"{"":{}}"#,
            "1.",
            ".5",
            "-",
            "+1",
            "0x1",
            "01",
            "1e",
            "\"\u{1}\"",
            "\"\t\"",
            r#""\u12""#,
            r#""\a""#,
            "[1,]",
            r#"{"a":1,}"#,
            r#"{"a"}"#,
            "{1:2}",
            "[1 2]",
            "nul",
            "True",
            "\"open",
        ];
        for v in cases {
            let serde = serde_json::from_str::<Box<RawValue>>(v).ok().map(|r| r.get().to_string());
            let mut s = Scan::new(v);
            let mine = s.raw_value().filter(|_| s.at_end()).map(|r| r.get().to_string());
            assert_eq!(mine, serde, "{v}");
        }
    }

    #[test]
    fn exact_objects_consume_nothing_unless_they_match() {
        let read = |s: &mut Scan| {
            s.exact_object(|s| {
                s.exact(br#""k":"#)?;
                let v = s.string()?;
                Some(v.into_owned())
            })
        };
        let mut s = Scan::new(r#" {"k":"v"},1"#);
        assert_eq!(read(&mut s).as_deref(), Some("v"));
        assert_eq!(s.peek(), Some(b','));
        for miss in [r#"{"k":"v","x":1}"#, r#"{ "k":"v"}"#, r#"{"k":1}"#, r#"["k"]"#, r#"{"k":"v""#] {
            let mut s = Scan::new(miss);
            assert_eq!(read(&mut s), None, "{miss}");
            // Nothing consumed, and the depth is as it was: the general reader starts afresh.
            assert!(s.skip().is_some() || serde_json::from_str::<serde_json::Value>(miss).is_err(), "{miss}");
        }
    }

    #[test]
    fn small_uint_leaves_other_numbers_to_serde() {
        assert_eq!(Scan::new("123").small_uint(), Some(123));
        assert_eq!(Scan::new("0").small_uint(), Some(0));
        for n in ["-1", "1.0", "1e3", "1234567890123456"] {
            assert_eq!(Scan::new(n).small_uint(), None, "{n}");
        }
    }
}
