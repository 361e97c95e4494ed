//! Redaction of secrets in text and JSON data (CONTRACT §13), with the JS regex semantics of
//! the original: ASCII `\b`, the JS `\s` set, case-insensitivity limited to ASCII.
//!
//! Steps 4 and 5 of `redactSensitiveText` use a back-reference (`\1?`, `\4`). Their
//! backtracking is deterministic for these particular patterns (see `match_assignment`), so
//! they are hand-written scanners instead of a backtracking regex engine: linear per attempt
//! and exactly JS's leftmost-first, non-overlapping global replacement.

use std::sync::OnceLock;

use regex::Regex;
use serde_json::Value;

use crate::json::is_js_space;

pub const REDACTED: &str = "[redacted]";

/// JS `\s` as a Rust character class (JS's set differs from Unicode White_Space: it has
/// U+FEFF and lacks U+0085).
const JS_SPACE_CLASS: &str =
    r"[\t\n\x0B\x0C\r \x{A0}\x{1680}\x{2000}-\x{200A}\x{2028}\x{2029}\x{202F}\x{205F}\x{3000}\x{FEFF}]";

fn sensitive_name_re() -> &'static Regex {
    static RE: OnceLock<Regex> = OnceLock::new();
    // Matched against the ASCII-lowercased name: JS's non-`u` `i` flag folds ASCII only
    // (U+017F or U+212A never match `s`/`k`), which Rust's Unicode `(?i)` would.
    RE.get_or_init(|| {
        Regex::new(
            "api[_-]?key|secret|password|passwd|pwd|private[_-]?key|access[_-]?key|accesstoken|\
             refreshtoken|idtoken|githubtoken|authorization|auth[_-]?token|cookie|session|\
             credential|bearer|^token$|[_-]token$|^token[_-]",
        )
        .expect("static regex")
    })
}

/// §13.1: substring search, case-insensitive.
pub fn is_sensitive_name(name: &str) -> bool {
    sensitive_name_re().is_match(&name.to_ascii_lowercase())
}

struct TextRegexes {
    pem: Regex,
    authorization: Regex,
    bearer: Regex,
    literals: [Regex; 5],
}

fn text_regexes() -> &'static TextRegexes {
    static RE: OnceLock<TextRegexes> = OnceLock::new();
    RE.get_or_init(|| {
        let s = JS_SPACE_CLASS;
        // `(?-u:\b)`: JS `\b` is an ASCII word boundary.
        let b = r"(?-u:\b)";
        let re = |p: String| Regex::new(&p).expect("static regex");
        TextRegexes {
            pem: re(r"-----BEGIN [A-Z ]*PRIVATE KEY-----(?s:.)*?-----END [A-Z ]*PRIVATE KEY-----".to_string()),
            // "authorization" and "bearer" contain no letter with a non-ASCII case fold, so
            // Unicode `(?i)` equals JS's ASCII-only `i` here.
            authorization: re(format!(r"{b}((?i:authorization){s}*:{s}*)(?:(?i:bearer){s}+)?[^\n\r,;}}]+")),
            bearer: re(format!(r"{b}(?i:bearer){s}+[A-Za-z0-9._~+/=-]{{8,}}")),
            literals: [
                re(format!(r"{b}sk-[A-Za-z0-9_-]{{16,}}{b}")),
                re(format!(r"{b}gh[pousr]_[A-Za-z0-9_]{{20,}}{b}")),
                re(format!(r"{b}github_pat_[A-Za-z0-9_]{{20,}}{b}")),
                re(format!(r"{b}AKIA[0-9A-Z]{{16}}{b}")),
                re(format!(r"{b}xox[baprs]-[A-Za-z0-9-]{{10,}}{b}")),
            ],
        }
    })
}

fn is_key_start(c: u8) -> bool {
    c.is_ascii_alphabetic() || c == b'_'
}

fn is_key_char(c: u8) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-')
}

/// Index after the JS-`\s*` run starting at `i`.
fn skip_js_space(t: &str, mut i: usize) -> usize {
    while let Some(c) = t[i..].chars().next() {
        if !is_js_space(c) {
            break;
        }
        i += c.len_utf8();
    }
    i
}

/// Spans of one match of step 4 (`quoted`) or step 5 at `p`:
/// (g1_end, key_end, g3_end, value_start, value_end, match_end).
///
/// Why no backtracking is needed: the key is maximal (a shorter key is followed by a key
/// character, which neither `\1`, `\s` nor `[:=]` can match); `\1?` can only take the quote
/// (the other choice leaves a quote, which `\s*[:=]` cannot match); each `\s*` is followed by
/// something that cannot be whitespace; group 1 empty at a quote makes the key start at a
/// quote, which fails. So every attempt has at most one way to succeed.
///
/// On failure after the key was read, returns the key's end: an attempt starting inside the
/// same key (without a leading quote) would read the same key and fail the same way, which
/// lets the caller skip ahead and keeps long word runs linear instead of quadratic.
fn match_assignment(t: &str, p: usize, quoted: bool) -> Result<[usize; 6], Option<usize>> {
    let b = t.as_bytes();
    let q1 = matches!(b[p], b'"' | b'\'');
    let g1_end = if q1 { p + 1 } else { p };
    if g1_end >= b.len() || !is_key_start(b[g1_end]) {
        return Err(None);
    }
    let mut k = g1_end + 1;
    while k < b.len() && is_key_char(b[k]) {
        k += 1;
    }
    let key_end = k;
    let fail = Err(Some(key_end));
    let mut i = key_end;
    if q1 && i < b.len() && b[i] == b[p] {
        i += 1;
    }
    i = skip_js_space(t, i);
    if i >= b.len() || !matches!(b[i], b':' | b'=') {
        return fail;
    }
    i = skip_js_space(t, i + 1);
    let g3_end = i;
    if quoted {
        if i >= b.len() || !matches!(b[i], b'"' | b'\'') {
            return fail;
        }
        let quote = b[i];
        let vs = i + 1;
        let Some(len) = memchr::memchr(quote, &b[vs..]) else { return fail };
        let ve = vs + len;
        Ok([g1_end, key_end, g3_end, vs, ve, ve + 1])
    } else {
        let Some(c) = t[i..].chars().next() else { return fail };
        if matches!(c, '"' | '\'' | ',' | ';' | '}' | ']' | '\n' | '\r') || is_js_space(c) {
            return fail;
        }
        let rest = &b[i..];
        let len =
            rest.iter().position(|&c| matches!(c, b',' | b';' | b'}' | b']' | b'\n' | b'\r')).unwrap_or(rest.len());
        Ok([g1_end, key_end, g3_end, i, i + len, i + len])
    }
}

/// Global replacement for steps 4/5: leftmost-first, non-overlapping; a match left unchanged
/// still consumes its text.
fn redact_assignments(t: &str, quoted: bool) -> String {
    let b = t.as_bytes();
    let mut out = String::with_capacity(t.len());
    let mut copied = 0;
    let mut p = 0;
    while p < b.len() {
        // Attempts can only start at a quote or a key-start character (both ASCII), which
        // also keeps `p` on a char boundary.
        if !(is_key_start(b[p]) || b[p] == b'"' || b[p] == b'\'') {
            p += 1;
            continue;
        }
        let [g1_end, key_end, g3_end, vs, ve, end] = match match_assignment(t, p, quoted) {
            Ok(spans) => spans,
            Err(Some(key_end)) if is_key_start(b[p]) => {
                p = key_end;
                continue;
            }
            Err(_) => {
                p += 1;
                continue;
            }
        };
        let key = &t[g1_end..key_end];
        let redact = is_sensitive_name(key) && (quoted || !t[vs..ve].starts_with("[redacted"));
        if redact {
            out.push_str(&t[copied..p]);
            out.push_str(&t[p..g3_end]);
            if quoted {
                out.push_str(&t[g3_end..vs]);
                out.push_str(REDACTED);
                out.push_str(&t[ve..end]);
            } else {
                out.push_str(REDACTED);
            }
            copied = end;
        }
        p = end;
    }
    out.push_str(&t[copied..]);
    out
}

/// §13.2 `redactSensitiveText`.
pub fn redact_sensitive_text(text: &str) -> String {
    if text.is_empty() {
        return String::new();
    }
    let re = text_regexes();
    let t = re.pem.replace_all(text, REDACTED);
    let t = re.authorization.replace_all(&t, "${1}[redacted]");
    let t = re.bearer.replace_all(&t, "Bearer [redacted]");
    let t = redact_assignments(&t, true);
    let mut t = redact_assignments(&t, false);
    for lit in &re.literals {
        if let std::borrow::Cow::Owned(s) = lit.replace_all(&t, REDACTED) {
            t = s;
        }
    }
    t
}

/// What [`redact_tree`] sees of a value (CONTRACT §13.3, `redactSensitiveObject`).
pub enum Node<V> {
    /// A string: redacted as text.
    Text(String),
    /// An array: its elements, each redacted.
    List(Vec<V>),
    /// An object: its own enumerable entries; a sensitive key's value becomes `"[redacted]"`
    /// whatever it is, the others are redacted; the result is a plain object.
    Record(Vec<(String, V)>),
    /// Anything else (numbers, `null`, dates, functions, …): kept as it is.
    Keep(V),
}

/// A value representation [`redact_tree`] can walk and build: JSON data here, JS values in
/// the binding. Each method may fail (a JS getter throws); the walk stops with that error.
pub trait Tree {
    type Value;
    type Error;
    fn open(&mut self, value: Self::Value) -> Result<Node<Self::Value>, Self::Error>;
    fn text(&mut self, text: String) -> Result<Self::Value, Self::Error>;
    fn list(&mut self, items: Vec<Self::Value>) -> Result<Self::Value, Self::Error>;
    fn record(&mut self, entries: Vec<(String, Self::Value)>) -> Result<Self::Value, Self::Error>;
}

/// Why [`redact_tree`] stopped.
#[derive(Debug, PartialEq)]
pub enum WalkError<E> {
    /// The tree's own error.
    Tree(E),
    /// More than `max_depth` arrays and objects inside each other (or a cycle, which JS
    /// values can hold).
    TooDeep,
}

impl<E> From<E> for WalkError<E> {
    fn from(e: E) -> Self {
        WalkError::Tree(e)
    }
}

enum Frame<V> {
    List(Vec<V>, std::vec::IntoIter<V>),
    Record(Vec<(String, V)>, Option<String>, std::vec::IntoIter<(String, V)>),
}

/// The one redaction walk (§13.3): depth-first, without recursion, so depth is bounded by
/// `max_depth` rather than by the thread's stack.
pub fn redact_tree<T: Tree>(tree: &mut T, root: T::Value, max_depth: usize) -> Result<T::Value, WalkError<T::Error>> {
    let mut stack: Vec<Frame<T::Value>> = Vec::new();
    let mut next = root;
    loop {
        // Open `next`: either a finished value, or a frame whose first child is next.
        let mut done = match tree.open(next)? {
            Node::Text(s) => tree.text(redact_sensitive_text(&s))?,
            Node::Keep(v) => v,
            Node::List(items) => {
                if stack.len() >= max_depth {
                    return Err(WalkError::TooDeep);
                }
                stack.push(Frame::List(Vec::with_capacity(items.len()), items.into_iter()));
                match advance(tree, &mut stack)? {
                    Step::Open(v) => {
                        next = v;
                        continue;
                    }
                    Step::Done(v) => v,
                }
            }
            Node::Record(entries) => {
                if stack.len() >= max_depth {
                    return Err(WalkError::TooDeep);
                }
                stack.push(Frame::Record(Vec::with_capacity(entries.len()), None, entries.into_iter()));
                match advance(tree, &mut stack)? {
                    Step::Open(v) => {
                        next = v;
                        continue;
                    }
                    Step::Done(v) => v,
                }
            }
        };
        // Hand finished values up until a frame has another child to open.
        loop {
            match stack.last_mut() {
                None => return Ok(done),
                Some(Frame::List(out, _)) => out.push(done),
                Some(Frame::Record(out, key, _)) => out.push((key.take().unwrap_or_default(), done)),
            }
            match advance(tree, &mut stack)? {
                Step::Open(v) => {
                    next = v;
                    break;
                }
                Step::Done(v) => done = v,
            }
        }
    }
}

enum Step<V> {
    /// The top frame's next child, to open.
    Open(V),
    /// The top frame had no child left: it was popped and built into this value.
    Done(V),
}

/// The top frame's next child to open (sensitive keys are filled in on the way), or, when it
/// has none left, the frame popped and built.
fn advance<T: Tree>(tree: &mut T, stack: &mut Vec<Frame<T::Value>>) -> Result<Step<T::Value>, WalkError<T::Error>> {
    match stack.last_mut() {
        Some(Frame::List(_, rest)) => {
            if let Some(v) = rest.next() {
                return Ok(Step::Open(v));
            }
        }
        Some(Frame::Record(out, key, rest)) => {
            for (k, v) in rest.by_ref() {
                if is_sensitive_name(&k) {
                    out.push((k, tree.text(REDACTED.to_string())?));
                } else {
                    *key = Some(k);
                    return Ok(Step::Open(v));
                }
            }
        }
        None => unreachable!("advance() is called with a frame on the stack"),
    }
    Ok(Step::Done(match stack.pop() {
        Some(Frame::List(out, _)) => tree.list(out)?,
        Some(Frame::Record(out, _, _)) => tree.record(out)?,
        None => unreachable!(),
    }))
}

/// JSON data as a [`Tree`].
struct JsonTree;

impl Tree for JsonTree {
    type Value = Value;
    type Error = std::convert::Infallible;

    fn open(&mut self, value: Value) -> Result<Node<Value>, Self::Error> {
        Ok(match value {
            Value::String(s) => Node::Text(s),
            Value::Array(a) => Node::List(a),
            Value::Object(m) => Node::Record(m.into_iter().collect()),
            other => Node::Keep(other),
        })
    }
    fn text(&mut self, text: String) -> Result<Value, Self::Error> {
        Ok(Value::String(text))
    }
    fn list(&mut self, items: Vec<Value>) -> Result<Value, Self::Error> {
        Ok(Value::Array(items))
    }
    fn record(&mut self, entries: Vec<(String, Value)>) -> Result<Value, Self::Error> {
        Ok(Value::Object(entries.into_iter().collect()))
    }
}

/// §13.3 on JSON data (the runner's tool-call traces).
pub fn redact_sensitive_value(value: &Value) -> Value {
    match redact_tree(&mut JsonTree, value.clone(), usize::MAX) {
        Ok(v) => v,
        Err(WalkError::Tree(never)) => match never {},
        Err(WalkError::TooDeep) => unreachable!("no depth limit"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sensitive_names() {
        for n in [
            "OPENAI_API_KEY",
            "SESSION_ID",
            "credentials",
            "PWD",
            "my_token",
            "token",
            "TOKEN",
            "token_x",
            "apiKey",
            "x-api-key",
            "privateKey",
            "AUTHORIZATION",
            "cookie",
            "passwd",
            "githubToken",
            "auth-token",
            "ACCESS_KEY",
            "bearer",
        ] {
            assert!(is_sensitive_name(n), "{n}");
        }
        for n in ["tokens", "TOKENIZER", "name", "HOME", "PATH", "mytoken", "token-count2x", "ſecret", "KEY"] {
            // "token-count2x": `^token[_-]` matches → sensitive; checked separately below.
            if n == "token-count2x" {
                assert!(is_sensitive_name(n));
                continue;
            }
            assert!(!is_sensitive_name(n), "{n}");
        }
    }

    /// Each (text, its redaction) pair; a failure names the text.
    fn redacts(cases: &[(&str, &str)]) {
        for (text, want) in cases {
            assert_eq!(redact_sensitive_text(text), *want, "{text:?}");
        }
    }

    #[test]
    fn contract_examples() {
        redacts(&[
            ("Authorization: Bearer abcdefghijklmnop, other=1", "Authorization: [redacted], other=1"),
            ("password=\"my pass\" token=abc def; x=1", "password=\"[redacted]\" token=[redacted]; x=1"),
            ("{\"apiKey\": \"secret value\", \"name\": \"bob\"}", "{\"apiKey\": \"[redacted]\", \"name\": \"bob\"}"),
            ("", ""),
        ]);
    }

    #[test]
    fn pem_bearer_and_literals() {
        let pem = "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIB\nxyz\n-----END RSA PRIVATE KEY-----\nb";
        redacts(&[
            (pem, "a\n[redacted]\nb"),
            ("use bearer abcdefgh123 now", "use Bearer [redacted] now"),
            // Fewer than 8 token chars: untouched.
            ("Bearer abc", "Bearer abc"),
            (
                "k sk-abcdefghijklmnop1234 ghp_abcdefghijklmnopqrstuvwxyz AKIAABCDEFGHIJKLMNOP",
                "k [redacted] [redacted] [redacted]",
            ),
            ("xoxb-1234567890-abc", "[redacted]"),
            // ASCII \b: a non-ASCII letter before `sk-` is a boundary in JS.
            ("ésk-abcdefghijklmnop1234", "é[redacted]"),
            // No boundary inside a word.
            ("task-abcdefghijklmnop1234", "task-abcdefghijklmnop1234"),
        ]);
    }

    #[test]
    fn assignment_quirks() {
        redacts(&[
            // §20 #39: the non-sensitive key consumes the whole value.
            ("a=password=secret", "a=password=secret"),
            ("PWD=/home/x\nHOME=/h", "PWD=[redacted]\nHOME=/h"),
            // JS `\s*` after `=` crosses newlines.
            ("secret=\n  hunter2", "secret=\n  [redacted]"),
            // Quoted value spanning lines, single quotes, quoted key with matching quote.
            ("'api_key' : 'a\nb' x", "'api_key' : '[redacted]' x"),
            ("\"secret\"=\"v\"", "\"secret\"=\"[redacted]\""),
            // Unterminated quote: step 4 fails, step 5 refuses a value starting with a quote.
            ("password=\"abc", "password=\"abc"),
            // Key starting mid-word still matches (no \b in step 4/5).
            ("xpassword: hunter2", "xpassword: [redacted]"),
            // Already-redacted values are not redacted twice.
            ("Authorization: Basic abc", "Authorization: [redacted]"),
            // Non-ASCII around.
            ("ключ token=значение; ok", "ключ token=[redacted]; ok"),
            ("token =\u{A0}v", "token =\u{A0}[redacted]"),
            ("\"a\": \"x\", \"password\" = 'q'", "\"a\": \"x\", \"password\" = '[redacted]'"),
            ("secret=[redacted]x", "secret=[redacted]x"),
            ("x=\"a\" secret=\"b\"", "x=\"a\" secret=\"[redacted]\""),
            // Quoted start failing, then the unquoted start inside succeeding.
            ("\"password=x", "\"password=[redacted]"),
        ]);
    }

    #[test]
    fn long_word_runs_are_linear() {
        let t = "a".repeat(2_000_000);
        assert_eq!(redact_sensitive_text(&t), t);
    }

    #[test]
    fn values() {
        let v =
            json!({"apiKey": {"a": 1}, "list": ["password=x", 3, {"token": 5}], "n": null, "s": "Bearer abcdefghij"});
        assert_eq!(
            redact_sensitive_value(&v),
            json!({"apiKey": "[redacted]", "list": ["password=[redacted]", 3, {"token": "[redacted]"}], "n": null, "s": "Bearer [redacted]"})
        );
    }

    /// Nested one-element lists `depth` deep around a text, generated as the walk opens
    /// them: the walk must not recurse per level (a JS value can be this deep).
    struct Nested;

    #[derive(Debug, PartialEq)]
    enum N {
        Level(usize),
        Built(usize, String),
    }

    impl Tree for Nested {
        type Value = N;
        type Error = ();
        fn open(&mut self, v: N) -> Result<Node<N>, ()> {
            Ok(match v {
                N::Level(0) => Node::Text("password=x".into()),
                N::Level(n) => Node::List(vec![N::Level(n - 1)]),
                built => Node::Keep(built),
            })
        }
        fn text(&mut self, t: String) -> Result<N, ()> {
            Ok(N::Built(0, t))
        }
        fn list(&mut self, mut items: Vec<N>) -> Result<N, ()> {
            match items.pop() {
                Some(N::Built(d, t)) => Ok(N::Built(d + 1, t)),
                _ => Err(()),
            }
        }
        fn record(&mut self, _: Vec<(String, N)>) -> Result<N, ()> {
            Err(())
        }
    }

    #[test]
    fn walk_depth_is_bounded_by_its_limit_not_the_stack() {
        let out = small_stack(|| redact_tree(&mut Nested, N::Level(1_000_000), usize::MAX));
        assert_eq!(out, Ok(N::Built(1_000_000, "password=[redacted]".into())));
        assert_eq!(redact_tree(&mut Nested, N::Level(1001), 1000), Err(WalkError::TooDeep));
        assert!(redact_tree(&mut Nested, N::Level(1000), 1000).is_ok());
    }

    fn small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new().stack_size(128 * 1024).spawn(f).unwrap().join().unwrap()
    }

    #[test]
    fn walk_keeps_order_and_fills_sensitive_keys_without_opening_them() {
        let v = json!({"a": [], "token": [[["deep"]]], "b": {}, "c": ["x", {"secret": 1, "d": "Bearer abcdefghij"}]});
        assert_eq!(
            redact_tree(&mut JsonTree, v, 3).unwrap().to_string(),
            r#"{"a":[],"token":"[redacted]","b":{},"c":["x",{"secret":"[redacted]","d":"Bearer [redacted]"}]}"#
        );
    }
}
