//! The raw calls' argument layouts and the other napi-free conversions, on plain values.

use oma_core::kernel::message::Usage;

use super::*;

/// A JS value as a raw call receives it.
#[derive(Clone, Copy)]
enum V {
    N(f64),
    S(&'static str),
    B(bool),
    Null,
}

/// A call's arguments: beyond the list, `undefined` (what napi fills in for a fixed arity).
struct Vals(Vec<V>);

impl RawArgs for Vals {
    fn number(&self, i: usize) -> Result<f64, String> {
        match self.0.get(i) {
            Some(V::N(n)) => Ok(*n),
            _ => Err(not_a(i, "a number")),
        }
    }
    fn u32(&self, i: usize) -> Result<u32, String> {
        // napi_get_value_uint32: a number converted as ToUint32 does for these (small, whole).
        self.number(i).map(|n| n as u32)
    }
    fn bool(&self, i: usize) -> Result<bool, String> {
        match self.0.get(i) {
            Some(V::B(b)) => Ok(*b),
            _ => Err(not_a(i, "a boolean")),
        }
    }
    fn is_nullish(&self, i: usize) -> bool {
        matches!(self.0.get(i), None | Some(V::Null))
    }
    fn with_str<R>(&self, i: usize, f: impl FnOnce(&str) -> R) -> Result<R, String> {
        match self.0.get(i) {
            Some(V::S(s)) => Ok(f(s)),
            _ => Err(not_a(i, "a string")),
        }
    }
}

use V::*;

fn usage(i: f64, o: f64) -> Option<Usage> {
    Some(Usage { input_tokens: i, output_tokens: o })
}

fn outcome(content: &str, is_error: u32, usage: Option<Usage>) -> Outcome {
    Outcome { content: content.into(), is_error, usage, duration: 0.0 }
}

#[test]
fn one_tool_result_with_optional_usage() {
    let a = Vals(vec![N(1.0), N(2.0), S("out"), N(1.0)]);
    assert_eq!(tool_result(&a).unwrap(), (1, 2, outcome("out", 1, None)));
    let a = Vals(vec![N(1.0), N(0.0), S(""), N(2.0), Null, Null]);
    assert_eq!(tool_result(&a).unwrap(), (1, 0, outcome("", 2, None)));
    let a = Vals(vec![N(1.0), N(3.0), S("x"), N(0.0), N(5.0), N(6.0)]);
    assert_eq!(tool_result(&a).unwrap(), (1, 3, outcome("x", 0, usage(5.0, 6.0))));
    // Usage announced by the first number needs the second.
    let a = Vals(vec![N(1.0), N(3.0), S("x"), N(0.0), N(5.0)]);
    assert_eq!(tool_result(&a).unwrap_err(), "oma-kernel: argument 5 must be a number");
    let a = Vals(vec![N(1.0), N(3.0), Null, N(0.0)]);
    assert_eq!(tool_result(&a).unwrap_err(), "oma-kernel: argument 2 must be a string");
    // The duration, after the usage (absent or not).
    let a = Vals(vec![N(1.0), N(3.0), S("x"), N(0.0), Null, Null, N(7.5)]);
    assert_eq!(tool_result(&a).unwrap(), (1, 3, Outcome { duration: 7.5, ..outcome("x", 0, None) }));
    let a = Vals(vec![N(1.0), N(3.0), S("x"), N(2.0), N(5.0), N(6.0), N(0.25)]);
    assert_eq!(tool_result(&a).unwrap(), (1, 3, Outcome { duration: 0.25, ..outcome("x", 2, usage(5.0, 6.0)) }));
    let a = Vals(vec![N(1.0), N(3.0), S("x"), N(0.0), Null, Null, S("7")]);
    assert_eq!(tool_result(&a).unwrap_err(), "oma-kernel: argument 6 must be a number");
}

#[test]
fn a_model_answer_head_and_its_optional_copied_flag() {
    let head = |v: Vec<V>| model_answer(&Vals(v));
    let u = Usage { input_tokens: 3.0, output_tokens: 4.0 };
    assert_eq!(head(vec![N(9.0), S("[]"), N(3.0), N(4.0)]).unwrap(), (9, u, false));
    assert_eq!(head(vec![N(9.0), Null, N(3.0), N(4.0), Null]).unwrap(), (9, u, false));
    assert_eq!(head(vec![N(9.0), Null, N(3.0), N(4.0), B(true)]).unwrap(), (9, u, true));
    assert_eq!(
        head(vec![N(9.0), Null, N(3.0), N(4.0), N(1.0)]).unwrap_err(),
        "oma-kernel: argument 4 must be a boolean"
    );
    assert_eq!(head(vec![N(9.0), Null, N(3.0)]).unwrap_err(), "oma-kernel: argument 3 must be a number");
    // The content: absent (`null`) or a string, borrowed for the call.
    let a = Vals(vec![N(9.0), Null]);
    assert_eq!(a.with_opt_str(1, |s| s.map(str::len)).unwrap(), None);
    let a = Vals(vec![N(9.0), S("[1]")]);
    assert_eq!(a.with_opt_str(1, |s| s.map(str::len)).unwrap(), Some(3));
    let a = Vals(vec![N(9.0), N(1.0)]);
    assert_eq!(a.with_opt_str(1, |s| s.map(str::len)).unwrap_err(), "oma-kernel: argument 1 must be a string");
}

#[test]
fn is_error_codes() {
    assert_eq!([0, 1, 2, 3].map(is_error_of), [Some(false), Some(true), None, None]);
}

#[test]
fn registry_lists_plain_and_railed() {
    assert_eq!(
        registry_tools(r#"[["a",false],["b",true]]"#).unwrap(),
        (vec![("a".to_string(), false), ("b".to_string(), true)], vec![])
    );
    assert_eq!(
        registry_tools(r#"{"tools":[["a",false]],"disallow":["bash"]}"#).unwrap(),
        (vec![("a".to_string(), false)], vec!["bash".to_string()])
    );
    assert_eq!(registry_tools("[]").unwrap(), (vec![], vec![]));
    for bad in [r#"[["a"]]"#, r#"{"tools":[]}"#, "nope", r#"[["a",1]]"#] {
        assert!(registry_tools(bad).unwrap_err().starts_with("oma-kernel: malformed registry list: "), "{bad}");
    }
}
