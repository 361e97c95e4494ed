//! Records: the boundary's second encoding (issue 31). A record is a positional array whose
//! first element is its kind's code (the kind's index in its [`Layout`]), then that kind's
//! fields in the order the layout declares them. A layout is declared once, as a `static`, next
//! to the Rust code that encodes it; [`Writer`] writes a record as JSON text and checks, in
//! debug builds (every `cargo test`), each field it is given against the declaration. The
//! generated module (`lib/generated/boundary.js`) holds one decoder per layout
//! ([`super::Value::Decoder`]): a `switch` on the code that returns one object literal per
//! kind, its keys in the declared order, so JS never reads a record by hand-written position.
//!
//! A field may itself be a record of another layout (decoded by that layout's decoder), or
//! JSON of its own (a message block, left as `JSON.parse` made it). An optional field is `null`
//! in the record and `undefined` once decoded (as a key the JSON object form left out read).

use std::fmt::Write as _;

use crate::json::{js_number, push_json_string};

/// A field's type.
#[derive(Debug, Clone, Copy)]
pub enum Ty {
    Str,
    /// A text of the given TypeScript type (a union of literals).
    Text(&'static str),
    Num,
    Bool,
    /// JSON of the given TypeScript type, decoded as it was parsed.
    Json(&'static str),
    /// A record of another layout, decoded by that layout's decoder.
    Record(&'static Layout),
}

/// One field of a kind.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub name: &'static str,
    pub ty: Ty,
    /// `null` in the record, `undefined` once decoded.
    pub optional: bool,
}

impl Field {
    pub const fn new(name: &'static str, ty: Ty) -> Field {
        Field { name, ty, optional: false }
    }

    pub const fn optional(name: &'static str, ty: Ty) -> Field {
        Field { name, ty, optional: true }
    }
}

/// One kind of a layout: its name (the decoded object's tag) and its fields.
#[derive(Debug, Clone, Copy)]
pub struct Kind {
    pub name: &'static str,
    pub fields: &'static [Field],
}

/// A record layout: the kinds, their codes being their indices.
#[derive(Debug)]
pub struct Layout {
    /// The generated section that holds the decoder (nested records call it there).
    pub section: &'static str,
    /// The decoder's name in that section.
    pub name: &'static str,
    /// The key that names the kind in the decoded object (`kind`, `type`), or `None` for a
    /// layout of one kind whose decoded object is its fields alone.
    pub tag: Option<&'static str>,
    pub kinds: &'static [Kind],
}

// A layout is one static: two are the same layout when they are the same object.
impl PartialEq for Layout {
    fn eq(&self, other: &Layout) -> bool {
        std::ptr::eq(self, other)
    }
}

/// The text of a record whose code its layout does not have (a driver bug).
pub const UNKNOWN_RECORD: &str = "oma-kernel: unknown {layout} record {code}";

impl Layout {
    /// The code of the kind named `name` (layouts are small; for tests and tables).
    pub fn code(&self, name: &str) -> usize {
        self.kinds.iter().position(|k| k.name == name).unwrap_or_else(|| panic!("no kind {name} in {}", self.name))
    }

    /// Starts the record of kind `code` in `out` (`[code`); the fields follow through the
    /// writer, which [`Writer::end`] closes.
    pub fn write<'o>(&'static self, out: &'o mut String, code: usize) -> Writer<'o> {
        debug_assert!(code < self.kinds.len(), "{} has no kind {code}", self.name);
        out.push('[');
        crate::json::push_uint(out, code as u64);
        Writer { out, kind: &self.kinds[code], at: 0 }
    }

    /// The record of kind `code` as JSON text.
    pub fn to_json(&'static self, code: usize, fields: impl FnOnce(Writer<'_>) -> Writer<'_>) -> String {
        let mut out = String::new();
        fields(self.write(&mut out, code)).end();
        out
    }
}

impl super::Section {
    /// Adds `layout`'s decoder under its name (a layout names the section that holds it, for
    /// the decoders of the layouts that nest it).
    pub fn decoder(self, doc: &'static str, layout: &'static Layout) -> super::Section {
        assert_eq!(self.name, layout.section, "the decoder of {} belongs in its own section", layout.name);
        self.item(layout.name, doc, super::Value::Decoder(layout))
    }

    /// Adds `layout`'s encoders under its name.
    pub fn encoders(self, doc: &'static str, layout: &'static Layout) -> super::Section {
        assert_eq!(self.name, layout.section, "the encoders of {} belong in its own section", layout.name);
        self.item(layout.name, doc, super::Value::Encoders(layout))
    }
}

/// Writes one record's fields, in the declared order (checked in debug builds).
pub struct Writer<'o> {
    out: &'o mut String,
    kind: &'static Kind,
    at: usize,
}

impl<'o> Writer<'o> {
    fn next(&mut self, ok: impl Fn(&Ty) -> bool, null: bool) {
        let f = self.kind.fields.get(self.at);
        debug_assert!(
            f.is_some_and(|f| if null { f.optional } else { ok(&f.ty) }),
            "record {} field {}: {:?} does not take this value",
            self.kind.name,
            self.at,
            f
        );
        self.at += 1;
        self.out.push(',');
    }

    pub fn str(mut self, s: &str) -> Self {
        self.next(|t| matches!(t, Ty::Str | Ty::Text(_)), false);
        push_json_string(self.out, s);
        self
    }

    /// A number as JS writes it (a non-finite one as `null`, as `JSON.stringify` does).
    pub fn num(mut self, x: f64) -> Self {
        self.next(|t| matches!(t, Ty::Num), false);
        if x.is_finite() {
            self.out.push_str(&js_number(x));
        } else {
            self.out.push_str("null");
        }
        self
    }

    /// An optional text field.
    pub fn opt_str(self, s: Option<&str>) -> Self {
        match s {
            Some(s) => self.str(s),
            None => self.none(),
        }
    }

    /// An optional number field.
    pub fn opt_num(self, x: Option<f64>) -> Self {
        match x {
            Some(x) => self.num(x),
            None => self.none(),
        }
    }

    pub fn bool(mut self, b: bool) -> Self {
        self.next(|t| matches!(t, Ty::Bool), false);
        self.out.push_str(if b { "true" } else { "false" });
        self
    }

    /// An optional field left out.
    pub fn none(mut self) -> Self {
        self.next(|_| false, true);
        self.out.push_str("null");
        self
    }

    /// A JSON field, written by `f`.
    pub fn json(mut self, f: impl FnOnce(&mut String)) -> Self {
        self.next(|t| matches!(t, Ty::Json(_)), false);
        f(self.out);
        self
    }

    /// A record field of `layout`, written by `f` (through `layout.write`).
    pub fn record(mut self, layout: &'static Layout, f: impl FnOnce(&mut String)) -> Self {
        self.next(|t| matches!(t, Ty::Record(l) if std::ptr::eq(*l, layout)), false);
        f(self.out);
        self
    }

    /// Closes the record (`]`).
    pub fn end(self) {
        debug_assert_eq!(self.at, self.kind.fields.len(), "record {} is missing fields", self.kind.name);
        self.out.push(']');
    }
}

/// The decoder of `layout` as a JS function (see the module docs).
pub(super) fn render_decoder(out: &mut String, layout: &Layout, indent: usize) {
    let pad = "  ".repeat(indent + 1);
    let end = "  ".repeat(indent);
    let _ = writeln!(out, "(r) => {{\n{pad}switch (r[0]) {{");
    for (code, kind) in layout.kinds.iter().enumerate() {
        let _ = write!(out, "{pad}  case {code}:\n{pad}    return {{ ");
        let mut first = true;
        if let Some(tag) = layout.tag {
            let _ = write!(out, "{tag}: {}", super::js_string(kind.name));
            first = false;
        }
        for (i, f) in kind.fields.iter().enumerate() {
            if !first {
                out.push_str(", ");
            }
            first = false;
            let _ = write!(out, "{}: ", f.name);
            let at = format!("r[{}]", i + 1);
            let read = match f.ty {
                Ty::Record(l) => format!("{}.{}({at})", l.section, l.name),
                _ => at,
            };
            if f.optional {
                let _ = write!(out, "{read} ?? undefined");
            } else {
                out.push_str(&read);
            }
        }
        out.push_str(" }\n");
    }
    let message = super::fill(UNKNOWN_RECORD, &[("layout", layout.name), ("code", "${r[0]}")]);
    let _ = write!(out, "{pad}}}\n{pad}throw new Error(`");
    out.push_str(&message.replace('`', "\\`"));
    let _ = write!(out, "`)\n{end}}}");
}

/// The encoders of `layout` as a JS object of functions, one per kind, named after it: the
/// function of the fields' values, in order, returns the record (for what JS sends to Rust).
pub(super) fn render_encoders(out: &mut String, layout: &Layout, indent: usize) {
    render_encoders_as(out, layout, indent, false)
}

/// The encoders' TypeScript type.
pub(super) fn render_encoders_type(out: &mut String, layout: &Layout, indent: usize) {
    render_encoders_as(out, layout, indent, true)
}

/// The encoders (`typed`: their type), one line per kind.
fn render_encoders_as(out: &mut String, layout: &Layout, indent: usize, typed: bool) {
    let pad = "  ".repeat(indent + 1);
    let end = "  ".repeat(indent);
    out.push_str(if typed { "{\n" } else { "Object.freeze({\n" });
    for (code, kind) in layout.kinds.iter().enumerate() {
        let (mut params, mut items) = (Vec::new(), String::new());
        for f in kind.fields {
            let t = field_type(f);
            params.push(if typed { format!("{}: {t}", f.name) } else { f.name.to_string() });
            let _ = write!(items, ", {}", if typed { t.as_str() } else { f.name });
        }
        let (readonly, comma) = if typed { ("readonly ", "") } else { ("", ",") };
        let _ = writeln!(
            out,
            "{pad}{readonly}{}: ({}) => [{code}{items}]{comma}",
            super::key(kind.name),
            params.join(", ")
        );
    }
    out.push_str(&end);
    out.push_str(if typed { "}" } else { "})" });
}

/// A field's TypeScript type as an encoder takes it (a nested record is one already made).
fn field_type(f: &Field) -> String {
    let t = match f.ty {
        Ty::Str => "string",
        Ty::Num => "number",
        Ty::Bool => "boolean",
        Ty::Json(t) | Ty::Text(t) => t,
        Ty::Record(_) => "unknown[]",
    };
    if f.optional {
        format!("{t} | null")
    } else {
        t.to_string()
    }
}

/// The decoded object's TypeScript type: a union discriminated on the tag.
fn render_decoded_type(out: &mut String, layout: &Layout) {
    for (code, kind) in layout.kinds.iter().enumerate() {
        if code > 0 {
            out.push_str(" | ");
        }
        out.push_str("{ ");
        let mut first = true;
        if let Some(tag) = layout.tag {
            let _ = write!(out, "readonly {tag}: {}", super::js_string(kind.name));
            first = false;
        }
        for f in kind.fields {
            if !first {
                out.push_str("; ");
            }
            first = false;
            let _ = write!(out, "readonly {}: ", f.name);
            match f.ty {
                Ty::Str => out.push_str("string"),
                Ty::Num => out.push_str("number"),
                Ty::Bool => out.push_str("boolean"),
                Ty::Json(t) | Ty::Text(t) => out.push_str(t),
                Ty::Record(l) => {
                    out.push('(');
                    render_decoded_type(out, l);
                    out.push(')');
                }
            }
            if f.optional {
                out.push_str(" | undefined");
            }
        }
        out.push_str(" }");
    }
}

/// The decoder's TypeScript type.
pub(super) fn render_decoder_type(out: &mut String, layout: &Layout) {
    out.push_str("(r: ReadonlyArray<unknown>) => ");
    render_decoded_type(out, layout);
}

#[cfg(test)]
mod tests {
    use super::*;

    static INNER: Layout = Layout {
        section: "t",
        name: "inner",
        tag: None,
        kinds: &[Kind { name: "only", fields: &[Field::new("n", Ty::Num)] }],
    };
    static OUTER: Layout = Layout {
        section: "t",
        name: "outer",
        tag: Some("type"),
        kinds: &[
            Kind { name: "a", fields: &[Field::new("s", Ty::Str), Field::optional("x", Ty::Num)] },
            Kind { name: "b", fields: &[Field::new("sub", Ty::Record(&INNER)), Field::new("j", Ty::Json("unknown"))] },
        ],
    };

    #[test]
    fn a_record_is_its_code_then_its_fields() {
        let a = OUTER.to_json(0, |w| w.str("q\"").none());
        assert_eq!(a, r#"[0,"q\"",null]"#);
        let b = OUTER.to_json(1, |w| {
            w.record(&INNER, |out| INNER.write(out, 0).num(1.5).end()).json(|out| out.push_str("{\"k\":[1]}"))
        });
        assert_eq!(b, r#"[1,[0,1.5],{"k":[1]}]"#);
    }

    #[test]
    #[should_panic(expected = "does not take this value")]
    fn a_field_of_the_wrong_type_is_caught() {
        OUTER.to_json(0, |w| w.num(1.0).none());
    }

    #[test]
    #[should_panic(expected = "missing fields")]
    fn a_missing_field_is_caught() {
        OUTER.to_json(0, |w| w.str(""));
    }

    #[test]
    fn the_decoder_switches_on_the_code_and_names_the_fields() {
        let mut js = String::new();
        render_decoder(&mut js, &OUTER, 1);
        assert!(js.contains("case 0:\n        return { type: \"a\", s: r[1], x: r[2] ?? undefined }"), "{js}");
        assert!(js.contains("return { type: \"b\", sub: t.inner(r[1]), j: r[2] }"), "{js}");
        assert!(js.contains("throw new Error(`oma-kernel: unknown outer record ${r[0]}`)"), "{js}");
        let mut enc = String::new();
        render_encoders(&mut enc, &OUTER, 0);
        assert_eq!(enc, "Object.freeze({\n  a: (s, x) => [0, s, x],\n  b: (sub, j) => [1, sub, j],\n})");
        let mut ts = String::new();
        render_decoder_type(&mut ts, &OUTER);
        assert_eq!(
            ts,
            "(r: ReadonlyArray<unknown>) => { readonly type: \"a\"; readonly s: string; readonly x: number | undefined } | { readonly type: \"b\"; readonly sub: ({ readonly n: number }); readonly j: unknown }"
        );
    }
}
