//! The binding's raw napi callbacks (`src/js/fast.rs`: plain `napi_create_function`s, which
//! napi-rs's generated `binding.d.ts` cannot see), declared once: name, parameters, result,
//! with their TypeScript types. [`render_native_dts`] writes `lib/native.d.ts` from them; the
//! Jest suite `native-types` checks that the binding's functions are exactly those of
//! `binding.d.ts` and these, so a callback registered without a declaration (or a declaration
//! left behind) fails.

use std::fmt::Write as _;

/// A parameter: its name, its TypeScript type, and whether it may be left out.
#[derive(Clone, Copy, Debug)]
pub struct Param {
    pub name: &'static str,
    pub ty: &'static str,
    pub kind: ParamKind,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParamKind {
    Required,
    Optional,
    /// `...name: T[]`: the rest of the arguments.
    Rest,
}

const fn p(name: &'static str, ty: &'static str) -> Param {
    Param { name, ty, kind: ParamKind::Required }
}

const fn opt(name: &'static str, ty: &'static str) -> Param {
    Param { name, ty, kind: ParamKind::Optional }
}

/// One raw callback.
#[derive(Clone, Copy, Debug)]
pub struct RawCall {
    pub name: &'static str,
    pub doc: &'static str,
    pub params: &'static [Param],
    pub returns: &'static str,
}

/// A type the declarations share.
#[derive(Clone, Copy, Debug)]
pub struct TypeAlias {
    pub name: &'static str,
    pub doc: &'static str,
    pub ty: &'static str,
}

pub const TYPES: &[TypeAlias] = &[TypeAlias {
    name: "WireAction",
    doc: "An action of the runner machine as it crosses (crates/core/src/kernel/runner/wire.rs has the layouts; lib/wire.js decodes them): `CallModel` as a number (kind in bits 0–4, turn above), every other action, and a refused response (`[-1, message]`), as the text of a JSON array whose first element is the kind's code.",
    ty: "number | string",
}];

/// The callbacks, in the order `fast.rs` registers them.
pub const CALLS: &[RawCall] = &[
    RawCall {
        name: "runNext",
        doc: "The next action of run `id`; `aborted`: whether the run's signal has fired. `Done` frees the run.",
        params: &[p("id", "number"), p("aborted", "boolean")],
        returns: "WireAction",
    },
    RawCall {
        name: "runRespond",
        doc: "The model's answer to `CallModel`: `JSON.stringify(response.content)` (`null` when there is none) and the usage counts. Returns the next action, or the refusal of a malformed answer.",
        params: &[
            p("id", "number"),
            p("contentJson", "string | null"),
            p("inputTokens", "number"),
            p("outputTokens", "number"),
            opt("copied", "boolean"),
        ],
        returns: "WireAction",
    },
    RawCall {
        name: "runToolResult",
        doc: "Call `index`'s outcome in a `ToolRound`, answered as it settles. `isError`: 0 false, 1 true, 2 not set; the two numbers are a delegated run's `metadata.tokenUsage`, when it reported one (else `undefined`); `duration`: the call's milliseconds, which the machine records for `RunResult.toolCalls` (0 when not given).",
        params: &[
            p("id", "number"),
            p("index", "number"),
            p("content", "string"),
            p("isError", "0 | 1 | 2"),
            opt("inputTokens", "number"),
            opt("outputTokens", "number"),
            opt("duration", "number"),
        ],
        returns: "undefined",
    },
    RawCall {
        name: "runToolResults",
        doc: "The outcomes of all of a `ToolRound`'s calls, in index order, in one call: for each, `code` (`isError` as for `runToolResult`, plus 4 when a delegated run's two usage numbers follow the content), then `content`, then those numbers when flagged.",
        params: &[p("id", "number"), Param { name: "outcomes", ty: "Array<number | string>", kind: ParamKind::Rest }],
        returns: "undefined",
    },
    RawCall {
        name: "semOpen",
        doc: "A slot for an executor's semaphore of limit `max`, with one slot acquired; returns its id.",
        params: &[p("max", "number")],
        returns: "number",
    },
    RawCall {
        name: "semAcquire",
        doc: "0 = acquired now; otherwise the id of the waiter to park.",
        params: &[p("id", "number")],
        returns: "number",
    },
    RawCall {
        name: "semRelease",
        doc: "The waiter id that now holds the slot; 0 = slot freed, others still hold; -1 = idle, and the semaphore's slot is closed.",
        params: &[p("id", "number")],
        returns: "number",
    },
];

/// A doc comment at `indent`, wrapped at 100 columns.
fn push_doc(out: &mut String, doc: &str) {
    const WIDTH: usize = 100 - 3;
    let mut lines = vec![String::new()];
    for word in doc.split(' ') {
        let line = lines.last_mut().expect("one line at least");
        if !line.is_empty() && line.len() + 1 + word.len() > WIDTH {
            lines.push(word.to_string());
        } else {
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(word);
        }
    }
    if lines.len() == 1 {
        let _ = writeln!(out, "/** {} */", lines[0]);
        return;
    }
    out.push_str("/**\n");
    for l in lines {
        let _ = writeln!(out, " * {l}");
    }
    out.push_str(" */\n");
}

/// `lib/native.d.ts`.
pub fn render_native_dts() -> String {
    let mut out =
        format!("// Generated by `{}` from crates/core/src/boundary/raw.rs.\n// Do not edit.\n", super::REGEN_COMMAND);
    out.push_str(
        "// Types of the binding's raw napi callbacks (src/js/fast.rs), which napi's generated\n\
         // binding.d.ts cannot see. The `#[napi]` exports are typed there; between the two files every\n\
         // function of the binding is declared (__test__/native-types.test.ts checks it, so a call added\n\
         // on the Rust side without a declaration here fails CI).\n\n\
         // lib/native.js exports the generated binding itself, so its `#[napi]` exports are this\n\
         // module's too (what lets `tsc -p tsconfig.lib.json` check lib/'s calls into the addon).\n\
         export * from '../binding'\n",
    );
    for t in TYPES {
        out.push('\n');
        push_doc(&mut out, t.doc);
        let _ = writeln!(out, "export type {} = {}", t.name, t.ty);
    }
    for c in CALLS {
        out.push('\n');
        push_doc(&mut out, c.doc);
        let params: Vec<String> = c
            .params
            .iter()
            .map(|p| match p.kind {
                ParamKind::Required => format!("{}: {}", p.name, p.ty),
                ParamKind::Optional => format!("{}?: {}", p.name, p.ty),
                ParamKind::Rest => format!("...{}: {}", p.name, p.ty),
            })
            .collect();
        let _ = writeln!(out, "export declare function {}({}): {}", c.name, params.join(", "), c.returns);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_and_optional_parameters_come_last() {
        for (i, c) in CALLS.iter().enumerate() {
            assert!(CALLS[..i].iter().all(|d| d.name != c.name), "{} declared twice", c.name);
            let first_optional = c.params.iter().position(|p| p.kind != ParamKind::Required).unwrap_or(c.params.len());
            assert!(c.params[first_optional..].iter().all(|p| p.kind != ParamKind::Required), "{}", c.name);
            let rest = c.params.iter().position(|p| p.kind == ParamKind::Rest);
            assert!(rest.is_none_or(|r| r == c.params.len() - 1), "{}: a rest parameter is last", c.name);
        }
    }

    #[test]
    fn a_call_renders_as_a_declaration() {
        let dts = render_native_dts();
        assert!(dts.contains(
            "export declare function runRespond(id: number, contentJson: string | null, inputTokens: number, outputTokens: number, copied?: boolean): WireAction\n"
        ));
        assert!(dts.contains(
            "export declare function runToolResults(id: number, ...outcomes: Array<number | string>): undefined\n"
        ));
    }
}
