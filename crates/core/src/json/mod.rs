//! The one JSON toolkit of the kernel and the adapters: JSON as JavaScript reads and writes it.
//!
//! - `grammar`: the JSON grammar (`JSON.parse`'s), as a validating scanner and token lexers;
//! - `js`: `JSON.stringify` semantics (key order, `Number::toString`, string escaping, lone
//!   surrogates) and the check that a text is already what `JSON.stringify` would write;
//! - `scan`: a small reader on that grammar for the shapes read on every call (messages,
//!   completions) without serde's visitors;
//! - `text`: the JS string semantics the contract is written in (UTF-16 lengths, `trim`, `\s`).

mod grammar;
mod js;
mod scan;
mod text;

pub use grammar::{is_valid_json, value_end};
pub use js::{
    decimal_digits, empty_object, is_js_canonical_object, js_number, json_string, normalize, push_json_string,
    push_uint, raw_object, replace_lone_surrogates, to_js_json, truthy, JsObject,
};
pub use scan::{Scan, Seen};
pub use text::{is_js_space, js_trim, js_trim_end, utf16_len, utf16_prefix, utf16_slice, utf16_to_byte};
