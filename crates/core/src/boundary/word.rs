//! The word encoding (the first of the boundary's three): one number, the kind in its low bits,
//! the kind's fields in bit ranges above, declared once as data ([`Layout`]) next to the Rust
//! code that encodes it. The Rust side builds its masks from the same fields
//! ([`Field::mask`]), and [`crate::boundary`] renders from them the JS that reads and writes
//! the word (`lib/generated/boundary.js`) and its types (`boundary.d.ts`): a decoder returning
//! a discriminated union on the layout's tag, and one encoder per kind. JS never spells a bit.
//!
//! A decoded word is one object literal with every field of every kind, in one order (the
//! fields a kind does not have are `false`, `0` or `null`): a single V8 shape, so the driver's
//! reads of it stay monomorphic; the declared type of each kind names only its own fields.

use std::fmt::Write as _;

/// What a field holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    /// One bit: a JS boolean.
    Flag,
    /// An unsigned number.
    Int,
    /// A code, read as the name at its index (`None`: JS `null`).
    Names(&'static [Option<&'static str>]),
}

/// A bit range of a word.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Field {
    pub name: &'static str,
    pub shift: u32,
    pub width: u32,
    pub ty: FieldType,
}

impl Field {
    pub const fn flag(name: &'static str, bit: u32) -> Field {
        Field { name, shift: bit, width: 1, ty: FieldType::Flag }
    }
    pub const fn int(name: &'static str, shift: u32, width: u32) -> Field {
        Field { name, shift, width, ty: FieldType::Int }
    }
    pub const fn names(name: &'static str, shift: u32, width: u32, names: &'static [Option<&'static str>]) -> Field {
        Field { name, shift, width, ty: FieldType::Names(names) }
    }
    /// The field's bits in place.
    pub const fn mask(&self) -> u32 {
        ((1u32 << self.width) - 1) << self.shift
    }
}

/// One kind of a word: its code (in the layout's low bits), its own fields, and, for a kind
/// that answers another layout's kinds (an event answering a step), the names of those kinds:
/// the generated encoder's result is typed to be accepted only as an answer to them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Kind {
    pub name: &'static str,
    pub code: u32,
    pub fields: &'static [Field],
    pub answers: &'static [&'static str],
}

/// A word's layout.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    /// The decoded object's discriminant (`op`, `kind`, `entry`).
    pub tag: &'static str,
    /// The kind's code is in bits `0..kind_width`.
    pub kind_width: u32,
    /// Fields every kind has.
    pub common: &'static [Field],
    pub kinds: &'static [Kind],
    /// The decoder's error for a code no kind has (a template of `{code}`), or `None` for a
    /// layout JS only writes (no decoder is generated).
    pub unknown: Option<&'static str>,
    /// Whether JS writes this word (an encoder per kind is generated).
    pub encode: bool,
    /// For a layout whose kinds answer another's (`Kind::answers`): that layout's tag. An
    /// `answer(step, event)` is generated, typed to take only an event that answers the step's
    /// kind, and to return the one type the driver's reporting function takes.
    pub answering: Option<&'static str>,
}

/// The property of an answer's type that says which kinds it answers (a function type, so
/// that an answer to several kinds is accepted where one of them is expected: parameters are
/// contravariant).
pub const ANSWERS_KEY: &str = " answers";
/// The property of the type `answer` returns: an event checked against its step.
pub const ANSWER_KEY: &str = " answer";

impl Layout {
    pub const fn kind_mask(&self) -> u32 {
        (1u32 << self.kind_width) - 1
    }

    pub fn kind(&self, name: &str) -> &Kind {
        self.kinds.iter().find(|k| k.name == name).unwrap_or_else(|| panic!("no kind {name}"))
    }

    /// Every field, each name once, in the order of first appearance (common first).
    pub fn all_fields(&self) -> Vec<Field> {
        let mut out: Vec<Field> = Vec::new();
        for f in self.common.iter().chain(self.kinds.iter().flat_map(|k| k.fields.iter())) {
            if !out.iter().any(|g| g.name == f.name) {
                out.push(*f);
            }
        }
        out
    }

    /// Checks what the renderers rely on: codes fit and differ, a kind's fields do not overlap
    /// each other or the kind's bits.
    pub fn check(&self) {
        for (i, k) in self.kinds.iter().enumerate() {
            assert!(k.code <= self.kind_mask(), "{}: code {} beyond the kind bits", k.name, k.code);
            assert!(
                self.kinds[..i].iter().all(|o| o.code != k.code && o.name != k.name),
                "{}: code or name twice",
                k.name
            );
            let mut used = self.kind_mask();
            for f in self.common.iter().chain(k.fields) {
                assert!(f.shift + f.width <= 32, "{}: beyond 32 bits", f.name);
                assert_eq!(used & f.mask(), 0, "{}.{} overlaps", k.name, f.name);
                used |= f.mask();
            }
        }
    }
}

fn js_string(s: &str) -> String {
    let mut out = String::new();
    crate::json::push_json_string(&mut out, s);
    out
}

fn names_list(names: &[Option<&str>]) -> String {
    let items: Vec<String> = names.iter().map(|n| n.map_or("null".to_string(), js_string)).collect();
    format!("Object.freeze([{}])", items.join(", "))
}

/// A field's value read from `w` (JS).
fn read_js(f: &Field, names_var: &str) -> String {
    match f.ty {
        FieldType::Flag => format!("(w & {}) !== 0", f.mask()),
        FieldType::Int => format!("(w >>> {}) & {}", f.shift, (1u32 << f.width) - 1),
        FieldType::Names(_) => format!("{names_var}[(w >>> {}) & {}]", f.shift, (1u32 << f.width) - 1),
    }
}

/// A field's value when the kind does not have it.
fn absent_js(f: &Field) -> &'static str {
    match f.ty {
        FieldType::Flag => "false",
        FieldType::Int => "0",
        FieldType::Names(_) => "null",
    }
}

fn field_type(f: &Field) -> String {
    match f.ty {
        FieldType::Flag => "boolean".to_string(),
        FieldType::Int => "number".to_string(),
        FieldType::Names(names) => {
            let mut types: Vec<String> = Vec::new();
            for n in names {
                let t = n.map_or("null".to_string(), js_string);
                if !types.contains(&t) {
                    types.push(t);
                }
            }
            types.join(" | ")
        }
    }
}

fn names_var(f: &Field) -> String {
    format!("{}Names", f.name)
}

/// The layout as a JS value: `{ codes, decode?, encode? }` (one expression, for a section's item).
pub fn render_js(out: &mut String, l: &Layout, indent: usize) {
    l.check();
    let pad = "  ".repeat(indent + 1);
    let pad2 = "  ".repeat(indent + 2);
    let pad3 = "  ".repeat(indent + 3);
    let end = "  ".repeat(indent);
    let all = l.all_fields();
    out.push_str("(() => {\n");
    for f in &all {
        if let FieldType::Names(names) = f.ty {
            let _ = writeln!(out, "{pad}const {} = {}", names_var(f), names_list(names));
        }
    }
    let _ = writeln!(out, "{pad}return Object.freeze({{");
    let codes: Vec<String> = l.kinds.iter().map(|k| format!("{}: {}", k.name, k.code)).collect();
    let _ = writeln!(out, "{pad2}codes: Object.freeze({{ {} }}),", codes.join(", "));
    if let Some(unknown) = l.unknown {
        let _ = writeln!(out, "{pad2}decode: (w) => {{");
        let _ = writeln!(out, "{pad3}switch (w & {}) {{", l.kind_mask());
        for k in l.kinds {
            let mut members =
                vec![format!("{}: {}", l.tag, js_string(k.name)), format!("code: {}", k.code), "word: w".to_string()];
            for f in &all {
                let own = l.common.iter().chain(k.fields).find(|g| g.name == f.name);
                let v = own.map_or(absent_js(f).to_string(), |g| read_js(g, &names_var(f)));
                members.push(format!("{}: {v}", f.name));
            }
            let _ = writeln!(out, "{pad3}  case {}:", k.code);
            let _ = writeln!(out, "{pad3}    return {{ {} }}", members.join(", "));
        }
        let _ = writeln!(out, "{pad3}  default:");
        let mut text = String::new();
        for (i, part) in unknown.split("{code}").enumerate() {
            if i > 0 {
                let _ = write!(text, "${{w & {}}}", l.kind_mask());
            }
            for c in part.chars() {
                if matches!(c, '`' | '\\' | '$') {
                    text.push('\\');
                }
                text.push(c);
            }
        }
        let _ = writeln!(out, "{pad3}    throw new Error(`{text}`)");
        let _ = writeln!(out, "{pad3}}}");
        let _ = writeln!(out, "{pad2}}},");
    }
    if l.encode {
        assert!(
            l.kinds.iter().flat_map(|k| k.fields).chain(l.common).all(|f| !matches!(f.ty, FieldType::Names(_))),
            "an encoded layout's fields are flags and numbers"
        );
        let _ = writeln!(out, "{pad2}encode: Object.freeze({{");
        for k in l.kinds {
            let fields: Vec<&Field> = l.common.iter().chain(k.fields).collect();
            let params: Vec<&str> = fields.iter().map(|f| f.name).collect();
            let mut expr = k.code.to_string();
            for f in &fields {
                match f.ty {
                    FieldType::Flag => {
                        let _ = write!(expr, " | ({} ? {} : 0)", f.name, f.mask());
                    }
                    _ => {
                        let _ = write!(expr, " | (({} & {}) << {})", f.name, (1u32 << f.width) - 1, f.shift);
                    }
                }
            }
            let _ = writeln!(out, "{pad3}{}: ({}) => {expr},", k.name, params.join(", "));
        }
        let _ = writeln!(out, "{pad2}}}),");
    }
    if l.answering.is_some() {
        // Only its type does something: it pairs an event with the step it answers.
        let _ = writeln!(out, "{pad2}answer: (step, event) => event,");
    }
    let _ = write!(out, "{pad}}})\n{end}}})()");
}

/// The layout's TypeScript type (see [`render_js`]).
pub fn render_type(out: &mut String, l: &Layout, indent: usize) {
    let pad = "  ".repeat(indent + 1);
    let pad2 = "  ".repeat(indent + 2);
    let end = "  ".repeat(indent);
    out.push_str("{\n");
    let codes: Vec<String> = l.kinds.iter().map(|k| format!("readonly {}: {}", k.name, k.code)).collect();
    let _ = writeln!(out, "{pad}readonly codes: {{ {} }}", codes.join("; "));
    if l.unknown.is_some() {
        let _ = writeln!(out, "{pad}readonly decode: (word: number) =>");
        for k in l.kinds {
            let mut members = vec![
                format!("readonly {}: {}", l.tag, js_string(k.name)),
                format!("readonly code: {}", k.code),
                "readonly word: number".to_string(),
            ];
            for f in l.common.iter().chain(k.fields) {
                members.push(format!("readonly {}: {}", f.name, field_type(f)));
            }
            let _ = writeln!(out, "{pad2}| {{ {} }}", members.join("; "));
        }
    }
    if l.encode {
        let _ = writeln!(out, "{pad}readonly encode: {{");
        for k in l.kinds {
            let params: Vec<String> =
                l.common.iter().chain(k.fields).map(|f| format!("{}: {}", f.name, field_type(f))).collect();
            let result = if k.answers.is_empty() {
                "number".to_string()
            } else {
                let ops: Vec<String> = k.answers.iter().map(|a| js_string(a)).collect();
                format!("number & {{ readonly {}: (op: {}) => void }}", js_string(ANSWERS_KEY), ops.join(" | "))
            };
            let _ = writeln!(out, "{pad2}readonly {}: ({}) => {result}", k.name, params.join(", "));
        }
        let _ = writeln!(out, "{pad}}}");
    }
    if let Some(tag) = l.answering {
        let tag = js_string(tag);
        let _ = writeln!(
            out,
            "{pad}readonly answer: <S extends {{ readonly {tag}: string }}>(step: S, event: number & {{ readonly {}: (op: S[{tag}]) => void }}) => number & {{ readonly {}: true }}",
            js_string(ANSWERS_KEY),
            js_string(ANSWER_KEY)
        );
    }
    let _ = write!(out, "{end}}}");
}
