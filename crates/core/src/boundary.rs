//! The boundary schema: everything `lib/` reads from the Rust side that is a constant of the
//! build (codes, tables, texts, defaults, field lists), declared once and rendered as
//! `lib/generated/boundary.js` (CommonJS, frozen) and `lib/generated/boundary.d.ts`.
//!
//! Each [`Section`] refers to the definitions that already exist next to the component that
//! owns them (never a second copy of a number or a text); this module only names them for JS.
//! oma-core declares its sections here ([`sections`]); the crates above it declare theirs
//! (`oma_llm::boundary`, `oma_mcp::boundary`) with the same types. The files are written and
//! checked by `crates/core/tests/boundary.rs` (its dev-dependencies see every crate):
//! `OMA_REGEN=1 cargo test -p oma-core --test boundary` writes them, a plain run fails when a
//! checked-in file differs. JS reads them once at load, so a value costs nothing per call.
//!
//! A text with a parameter is a [`Value::Template`]: the Rust text with `{name}` placeholders
//! becomes a JS arrow function of those names (a template literal: no parsing at run time).
//!
//! The binding's raw napi callbacks are declared in [`raw`], which renders `lib/native.d.ts`.
//!
//! Values that depend on the machine or the target at run time (a probe, the platform's list
//! of inherited variables) are not constants of the build and stay napi calls.

use std::fmt::Write as _;

pub mod raw;
pub mod record;
pub mod word;

use crate::kernel::message::shapes::{self, Shape};
use crate::kernel::runner::{self, wire, ActionKind};
use crate::kernel::{agent, grants, message, semaphore};
use crate::tool::builtin::input::{self, JsType, TOOLS};
use crate::tool::builtin::{self as builtin, bash, delegate, glob, grep, path_safety, walk};
use crate::tool::executor;

/// A value handed to JS.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    Null,
    Bool(bool),
    Int(i64),
    Str(String),
    List(Vec<Value>),
    /// An object, in declaration order.
    Map(Vec<(String, Value)>),
    /// A text with `{name}` placeholders: a JS function of the placeholders' names, in order
    /// of their first appearance, that returns the text with each filled in.
    Template(String),
    /// A field list as a JS function `(o) => object` that copies the fields of `o` that are
    /// not `undefined`, one named read each (each read site stays monomorphic: no loop over
    /// key names on the per-call path).
    PickDefined(Vec<String>),
    /// A field list as a JS function `(o, ...given) => object` that copies every field of `o`
    /// in order, except those named in `given`, whose values are the function's further
    /// arguments (one object literal: one shape, made at once).
    CopyAll {
        fields: Vec<String>,
        given: Vec<String>,
    },
    /// A message shape (`kernel::message::shapes`) as a JS function of its parameters that
    /// returns one object literal, its keys in the declared order.
    Builder(shapes::Builder),
    /// A record layout's decoder (see [`record`]).
    Decoder(&'static record::Layout),
    /// A record layout's encoders (see [`record`]).
    Encoders(&'static record::Layout),
    /// A word layout (`word::Layout`): its codes, decoder and encoders.
    Word(&'static word::Layout),
}

impl Value {
    /// A list of texts.
    pub fn strs<S: AsRef<str>>(items: impl IntoIterator<Item = S>) -> Value {
        Value::List(items.into_iter().map(|s| Value::Str(s.as_ref().to_string())).collect())
    }

    /// An object from `(name, value)` pairs.
    pub fn map<K: Into<String>, V: Into<Value>>(pairs: impl IntoIterator<Item = (K, V)>) -> Value {
        Value::Map(pairs.into_iter().map(|(k, v)| (k.into(), v.into())).collect())
    }

    /// A text with `{name}` placeholders (see [`Value::Template`]).
    pub fn template(text: &str) -> Value {
        Value::Template(text.to_string())
    }
}

impl From<bool> for Value {
    fn from(b: bool) -> Value {
        Value::Bool(b)
    }
}

macro_rules! int_value {
    ($($t:ty),*) => {$(
        impl From<$t> for Value {
            fn from(n: $t) -> Value {
                Value::Int(i64::try_from(n).expect("a boundary number fits in i64"))
            }
        }
    )*};
}
int_value!(u8, u16, u32, u64, i32, i64, usize);

impl From<&str> for Value {
    fn from(s: &str) -> Value {
        Value::Str(s.to_string())
    }
}

impl From<String> for Value {
    fn from(s: String) -> Value {
        Value::Str(s)
    }
}

impl<T: Into<Value>> From<Option<T>> for Value {
    fn from(v: Option<T>) -> Value {
        v.map_or(Value::Null, Into::into)
    }
}

/// One named value of a section, with what it is for (the d.ts comment).
#[derive(Clone, Debug)]
pub struct Item {
    pub name: String,
    pub doc: &'static str,
    pub value: Value,
}

/// A group of values, exported under `name`, with the Rust source that defines them.
#[derive(Clone, Debug)]
pub struct Section {
    pub name: &'static str,
    pub source: &'static str,
    pub doc: &'static str,
    pub items: Vec<Item>,
}

impl Section {
    pub fn new(name: &'static str, source: &'static str, doc: &'static str) -> Section {
        Section { name, source, doc, items: Vec::new() }
    }

    pub fn item(mut self, name: &str, doc: &'static str, value: impl Into<Value>) -> Section {
        self.items.push(Item { name: name.to_string(), doc, value: value.into() });
        self
    }
}

/// oma-core's sections.
pub fn sections() -> Vec<Section> {
    vec![
        wire_section(),
        runner_section(),
        history_section(),
        agent_section(),
        builtin_section(),
        executor_section(),
        confined_section(),
    ]
}

/// The confined shell's records (lib/confined-shell.js).
fn confined_section() -> Section {
    use crate::tool::builtin::confined;
    Section::new(
        "confined",
        "crates/core/src/tool/builtin/confined.rs",
        "The confined shell's records (lib/confined-shell.js).",
    )
    .encoders("The options as the kernel's check reads them (`DESCRIBED`), one encoder per kind.", &confined::DESCRIBED)
}

fn history_section() -> Section {
    let mut s = Section::new(
        "history",
        "crates/core/src/kernel/message.rs (shapes)",
        "The builders of every message and block the kernel adds to a conversation (lib/runner.js, lib/agent.js): the shapes the Rust writer writes.",
    );
    for (name, doc, builder) in shapes::ALL {
        s = s.item(name, doc, Value::Builder(builder));
    }
    s
}

fn wire_section() -> Section {
    Section::new(
        "wire",
        "crates/core/src/kernel/runner/wire.rs, kernel/grants.rs",
        "The runner's wire (lib/wire.js) and the grant constants index.js exports.",
    )
    .item(
        "ops",
        "Action kinds by name, as the machine numbers them.",
        Value::map(ActionKind::ALL.iter().map(|k| (k.name(), *k as u8))),
    )
    .item("kindBits", "The bits of a numeric action's kind.", wire::KIND_BITS)
    .item("rejected", "The code of a response the machine refused.", wire::REJECTED)
    .item(
        "toolPresets",
        "The tool presets (`TOOL_PRESETS`).",
        Value::map(grants::PRESETS.iter().map(|(name, tools)| (*name, Value::strs(tools.iter())))),
    )
    .item(
        "agentFrameworkDisallowed",
        "`AGENT_FRAMEWORK_DISALLOWED`.",
        Value::strs(grants::AGENT_FRAMEWORK_DISALLOWED.iter()),
    )
    .item(
        "unknownAction",
        "Driver bug: an action code the driver does not know.",
        Value::template(wire::driver_texts::UNKNOWN_ACTION),
    )
    .item(
        "unknownOperation",
        "Driver bug: an operation the driver does not perform.",
        wire::driver_texts::UNKNOWN_OPERATION,
    )
    .item(
        "roundMismatch",
        "Driver bug: a round of the verdicts layout without its answer.",
        wire::driver_texts::ROUND_MISMATCH,
    )
    .item(
        "unknownBlockTag",
        "Driver bug: a reply's block tag the driver does not know.",
        Value::template(wire::driver_texts::UNKNOWN_BLOCK_TAG),
    )
}

fn runner_section() -> Section {
    use message::validation_texts as v;
    use runner::texts as t;
    let validation_texts = Value::map([
        ("code", Value::from(v::INVALID_MESSAGE_CODE)),
        ("notAnArray", Value::template(v::NOT_AN_ARRAY)),
        ("messageNotAnObject", Value::template(v::MESSAGE_NOT_AN_OBJECT)),
        ("contentNotAnArray", Value::template(v::CONTENT_NOT_AN_ARRAY)),
        ("blockWithoutType", Value::template(v::BLOCK_WITHOUT_TYPE)),
    ]);
    Section::new(
        "runner",
        "crates/core/src/kernel/ (runner.rs, message.rs, mod.rs)",
        "The runner's defaults and the texts its JS driver writes (lib/runner.js, lib/errors.js, lib/llm.js, lib/deadline.js).",
    )
    .item("defaultMaxTurns", "`maxTurns` when unset.", runner::DEFAULT_MAX_TURNS as u32)
    .item("tokenBudgetExceededCode", "`TokenBudgetExceededError.code`.", t::TOKEN_BUDGET_EXCEEDED_CODE)
    .item("tokenBudgetExceeded", "`TokenBudgetExceededError`'s message.", Value::template(t::TOKEN_BUDGET_EXCEEDED))
    .item("malformedContent", "A response whose `content` JSON cannot write.", Value::template(t::MALFORMED_CONTENT))
    .item(
        "unserialisable",
        "Why `JSON.stringify` failed, in words (`malformedContent`'s `reason`).",
        Value::map([
            ("tooDeep", Value::from(t::UNSERIALISABLE_TOO_DEEP)),
            ("circular", t::UNSERIALISABLE_CIRCULAR.into()),
            ("bigint", t::UNSERIALISABLE_BIGINT.into()),
            ("threw", Value::template(t::UNSERIALISABLE_THREW)),
        ]),
    )
    .item("abortedWhile", "A run aborted while a user callback had not settled.", Value::template(t::ABORTED_WHILE))
    .item("resultUnreadable", "A tool result that cannot be read.", Value::template(t::RESULT_UNREADABLE))
    .item(
        "invalidResultNotObject",
        "A tool result that is not an object (the executor's text too).",
        Value::template(executor::texts::INVALID_RESULT_NOT_OBJECT),
    )
    .item("timeoutAbortReason", "The `TimeoutError` a deadline aborts its signal with.", crate::kernel::TIMEOUT_ABORT_REASON)
    .item("unconvertibleValue", "`safeString`'s text for a value that has none.", Value::template(crate::kernel::UNCONVERTIBLE_VALUE))
    .item("messageValidation", "`InvalidMessageError`'s code and `assertValidMessages`' texts (§15.1).", validation_texts)
}

fn agent_section() -> Section {
    Section::new("agent", "crates/core/src/kernel/agent.rs", "The Agent machine's packed step word (lib/agent.js).")
        .item("step", "The step word: its decoder, a union on `op`.", Value::Word(&agent::wire::STEP))
        .item(
            "event",
            "The events: an encoder per kind, typed as the answer to the steps that take it.",
            Value::Word(&agent::wire::EVENT),
        )
        .item("setup", "The setup: an encoder per entry.", Value::Word(&agent::wire::SETUP))
        .item(
            "eventSpan",
            "Every event is below it: `word * eventSpan + event` keys a step's answer.",
            agent::wire::EVENT_SPAN,
        )
        .item(
            "defaultRetries",
            "Structured-output retries when `outputSchemaRetries` is unset.",
            agent::DEFAULT_RETRIES,
        )
        .item(
            "statuses",
            "The lifecycle status names, by their code on the wire.",
            Value::strs(agent::Status::ALL.iter().map(|s| s.as_str())),
        )
        .item("defaultRole", "The runner's `agentRole` without a system prompt.", agent::texts::DEFAULT_ROLE)
        .item("rolePromptLength", "How much of the system prompt is the `agentRole`.", agent::texts::ROLE_PROMPT_LENGTH)
        .item(
            "messagesNotCloneable",
            "`messages` that are not structured-cloneable.",
            agent::texts::MESSAGES_NOT_CLONEABLE,
        )
        .item("promptNotString", "A `beforeRun` hook's `prompt` that is not a string.", agent::texts::PROMPT_NOT_STRING)
        .item(
            "driverTextOnTextlessPath",
            "Driver bug: a step with a text on a path without texts.",
            agent::texts::DRIVER_TEXT_ON_TEXTLESS_PATH,
        )
        .item(
            "driverExpectedAction",
            "Driver bug: a step the sequence does not perform.",
            Value::template(agent::texts::DRIVER_EXPECTED_ACTION),
        )
        .item(
            "driverUnknownAction",
            "Driver bug: an unknown action.",
            Value::template(agent::texts::DRIVER_UNKNOWN_ACTION),
        )
}

fn builtin_section() -> Section {
    let tools = TOOLS.iter().map(|t| {
        let fields = t.fields.iter().map(|f| {
            Value::map([
                ("name", Value::from(f.name)),
                ("type", f.ty.name().into()),
                ("description", f.description.into()),
                ("required", f.required.into()),
                ("int", f.int.into()),
                ("gte", f.gte.into()),
                ("gt", f.gt.into()),
                ("minLength", f.min_length.into()),
            ])
        });
        Value::map([
            ("name", Value::from(t.tool)),
            ("description", t.description.into()),
            ("fields", Value::List(fields.collect())),
        ])
    });
    Section::new(
        "builtin",
        "crates/core/src/tool/builtin/ (bash.rs, walk.rs, path_safety.rs, input.rs)",
        "The built-in tools' tables (lib/builtin.js, lib/shell.js, lib/confined-shell.js).",
    )
    .item("skipDirs", "The walkers' skipped directory names.", Value::strs(walk::SKIP_DIRS))
    .item("safeEnvAllowlist", "The environment variables bash may inherit.", Value::strs(bash::SAFE_ENV_ALLOWLIST))
    .item("defaultTimeoutMs", "bash's default timeout.", bash::DEFAULT_TIMEOUT_MS)
    .item("exitTimedOut", "A shell command's exit code when its deadline passed.", bash::EXIT_TIMED_OUT)
    .item("exitAborted", "A shell command's exit code when it was aborted.", bash::EXIT_ABORTED)
    .item("exitStartFailed", "A shell command's exit code when it could not start.", bash::EXIT_START_FAILED)
    .item(
        "shellStartCleanupFailed",
        "A shell executor's lease: the message when `start()` and then `dispose()` failed.",
        bash::START_CLEANUP_FAILED,
    )
    .item(
        "shellDisposeFailedUnreported",
        "The warning's prefix for a dispose failure no run result can carry.",
        bash::DISPOSE_FAILED_UNREPORTED,
    )
    .item(
        "defaultWorkspaceDirname",
        "The sandbox root's directory name under the process cwd when a context gives no `cwd`.",
        path_safety::DEFAULT_WORKSPACE_DIRNAME,
    )
    .item(
        "jsTypes",
        "Zod 3's type names in the order of the tags the input description uses.",
        Value::strs(JsType::ALL.iter().map(|t| t.name())),
    )
    .item("tools", "Each tool's description and input fields; a tool's index is its id.", Value::List(tools.collect()))
    .item("defaultMaxResults", "grep's `maxResults` when unset.", grep::DEFAULT_MAX_RESULTS)
    .item("defaultMaxFiles", "glob's `maxFiles` when unset.", glob::DEFAULT_MAX_FILES)
    .item("defaultMaxDelegationDepth", "`team.maxDelegationDepth` when unset.", delegate::DEFAULT_MAX_DEPTH)
    .item("failedInternally", "A built-in tool whose native call failed.", Value::template(builtin::FAILED_INTERNALLY))
    .item(
        "zodMissing",
        "The `inputSchema` getter without the peer dependency zod.",
        Value::template(input::ZOD_MISSING),
    )
    .item("zod4IntIssue", "The Zod 4 schema's issue text for a non-integer.", input::ZOD4_INT_ISSUE)
}

fn executor_section() -> Section {
    let names = |all: &mut dyn Iterator<Item = &'static str>| {
        Value::Map(all.enumerate().map(|(i, n)| (n.to_string(), Value::from(i))).collect())
    };
    let next = executor::Step::ALL.iter().flat_map(|&step| {
        executor::AnswerKind::ALL.iter().map(move |&kind| Value::from(executor::wire::next(step, kind)))
    });
    Section::new(
        "executor",
        "crates/core/src/tool/executor.rs, kernel/semaphore.rs",
        "The ToolExecutor machine's protocol as the JS driver walks it (lib/tools.js).",
    )
    .item("actions", "What each step asks for, by name.", names(&mut executor::ActionKind::ALL.iter().map(|k| k.name())))
    .item("answers", "The answers' codes by name.", names(&mut executor::AnswerKind::ALL.iter().map(|k| k.name())))
    .item(
        "badResults",
        "The sub-codes of a `BAD_RESULT` answer (its `num` argument).",
        names(&mut executor::wire::BAD_RESULT_KINDS.iter().copied()),
    )
    .item(
        "steps",
        "The steps' codes by name.",
        Value::map(executor::Step::ALL.iter().map(|s| (format!("{s:?}"), *s as u8))),
    )
    .item(
        "stepAction",
        "Each step's action.",
        Value::List(executor::Step::ALL.iter().map(|s| Value::from(s.action_kind() as u8)).collect()),
    )
    .item(
        "next",
        "`next[step * answers + answer]`: the next step for an answer without data, `decide` when the machine must see the answer, `invalid` when the step does not take it.",
        Value::List(next.collect()),
    )
    .item("decide", "The `next` entry of an answer the machine must see.", executor::wire::DECIDE)
    .item("invalid", "The `next` entry of an answer the step does not take.", executor::wire::INVALID)
    .item(
        "decisionBits",
        "The bits of a `DECISION` answer's `num`.",
        Value::map(executor::wire::DECISION_BITS.iter().copied()),
    )
    .item("defaultMaxConcurrency", "`maxConcurrency` when unset.", executor::DEFAULT_MAX_CONCURRENCY)
    .item(
        "abortedDuringExecution",
        "A call whose gate or tool was running when its signal fired.",
        Value::template(executor::texts::ABORTED_DURING_EXECUTION),
    )
    .item(
        "toolTimeoutSetting",
        "The setting name of a tool's own `timeoutMs`.",
        Value::template(executor::texts::TOOL_TIMEOUT_SETTING),
    )
    .item("semaphoreMaxBelowOne", "`new Semaphore(max)` with max < 1.", Value::template(semaphore::texts::MAX_BELOW_ONE))
    .item(
        "semaphoreMaxNotInteger",
        "`new Semaphore(max)` with a max that is no integer.",
        Value::template(semaphore::texts::MAX_NOT_INTEGER),
    )
}

/// A [`Value::Template`] text filled on the Rust side: each `{name}` replaced by its argument
/// (for the texts both sides produce; error paths only).
pub fn fill(template: &str, args: &[(&str, &str)]) -> String {
    let (texts, names) = template_parts(template);
    let mut out = String::with_capacity(template.len());
    for (i, text) in texts.iter().enumerate() {
        out.push_str(text);
        if let Some(n) = names.get(i) {
            let arg = args.iter().find(|(k, _)| k == n).unwrap_or_else(|| panic!("no argument for {{{n}}}"));
            out.push_str(arg.1);
        }
    }
    out
}

// ---------------------------------------------------------------------------------------------
// Rendering

/// How the files are made, for their headers and for the freshness test's failure.
pub const REGEN_COMMAND: &str = "OMA_REGEN=1 cargo test -p oma-core --test boundary";

fn header(sections: &[Section]) -> String {
    let mut sources: Vec<&str> = Vec::new();
    for s in sections {
        if !sources.contains(&s.source) {
            sources.push(s.source);
        }
    }
    let mut out = format!("// Generated by `{REGEN_COMMAND}` from crates/core/src/boundary.rs.\n// Do not edit.\n");
    out.push_str("// Sources:\n");
    for s in sources {
        let _ = writeln!(out, "//   {s}");
    }
    out
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$')
}

fn key(s: &str) -> String {
    if is_identifier(s) {
        s.to_string()
    } else {
        js_string(s)
    }
}

fn js_string(s: &str) -> String {
    let mut out = String::new();
    crate::json::push_json_string(&mut out, s);
    out
}

/// A template's parts: literal text and placeholder names, alternating (text first).
fn template_parts(t: &str) -> (Vec<&str>, Vec<&str>) {
    let (mut texts, mut names) = (Vec::new(), Vec::new());
    let mut rest = t;
    while let Some(open) = rest.find('{') {
        let close = rest[open..].find('}').map(|c| open + c).expect("a template's `{` is closed");
        let name = &rest[open + 1..close];
        assert!(is_identifier(name), "a template placeholder is a name: {{{name}}}");
        texts.push(&rest[..open]);
        names.push(name);
        rest = &rest[close + 1..];
    }
    texts.push(rest);
    (texts, names)
}

fn template_params(t: &str) -> Vec<&str> {
    let mut params = Vec::new();
    for n in template_parts(t).1 {
        if !params.contains(&n) {
            params.push(n);
        }
    }
    params
}

fn push_template_literal(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '`' | '\\' | '$' => {
                out.push('\\');
                out.push(c);
            }
            '\n' => out.push_str("\\n"),
            _ => out.push(c),
        }
    }
}

/// The file a walk renders: the JS module (each value, frozen) or its .d.ts (each value's
/// type). One walk ([`emit`]) serves both; where they differ, the two spellings stand side by
/// side (`t.of(js, dts)`).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Target {
    Js,
    Dts,
}

impl Target {
    /// This target's spelling of a part.
    fn of<'a>(self, js: &'a str, dts: &'a str) -> &'a str {
        match self {
            Target::Js => js,
            Target::Dts => dts,
        }
    }

    fn open_map(self) -> &'static str {
        self.of("Object.freeze({", "{")
    }

    fn close_map(self) -> &'static str {
        self.of("})", "}")
    }

    /// What comes before an object's key.
    fn key_prefix(self) -> &'static str {
        self.of("", "readonly ")
    }
}

/// A list longer than this is typed as an array of its elements' types, not a tuple.
const MAX_TUPLE: usize = 16;
/// A text longer than this is typed `string`, not its literal.
const MAX_LITERAL_TEXT: usize = 80;

/// Each item written by `f`, `sep` between them.
fn sep_by<I>(out: &mut String, items: impl IntoIterator<Item = I>, sep: &str, mut f: impl FnMut(&mut String, I)) {
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push_str(sep);
        }
        f(out, item);
    }
}

/// A multi-line object (a section, or a value that holds more than scalars): a field a line,
/// each after its doc comment if it has one.
fn emit_fields<'a>(
    out: &mut String,
    t: Target,
    fields: impl IntoIterator<Item = (Option<&'a str>, &'a str, &'a Value)>,
    indent: usize,
) {
    let pad = "  ".repeat(indent + 1);
    out.push_str(t.open_map());
    out.push('\n');
    for (doc, k, v) in fields {
        if let Some(doc) = doc {
            let _ = writeln!(out, "{pad}/** {doc} */");
        }
        let _ = write!(out, "{pad}{}{}: ", t.key_prefix(), key(k));
        emit(out, t, v, indent + 1);
        out.push_str(t.of(",\n", "\n"));
    }
    out.push_str(&"  ".repeat(indent));
    out.push_str(t.close_map());
}

/// One value: in JS the value, in the .d.ts its type.
fn emit(out: &mut String, t: Target, v: &Value, indent: usize) {
    match v {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Int(n) => match t {
            Target::Js => {
                let _ = write!(out, "{n}");
            }
            // Numbers are codes a driver keeps in variables and fields (a call's step, an
            // action's kind): typed `number`, so that a variable that starts at one code can
            // hold another.
            Target::Dts => out.push_str("number"),
        },
        Value::Str(s) if t == Target::Dts && (s.chars().count() > MAX_LITERAL_TEXT || s.contains('\n')) => {
            out.push_str("string")
        }
        Value::Str(s) => out.push_str(&js_string(s)),
        // A list of scalars on one line (typed as a tuple while it is short).
        Value::List(items) if items.iter().all(is_scalar) && (t == Target::Js || items.len() <= MAX_TUPLE) => {
            out.push_str(t.of("Object.freeze([", "readonly ["));
            sep_by(out, items, ", ", |out, item| emit(out, t, item, indent));
            out.push_str(t.of("])", "]"));
        }
        Value::List(items) if t == Target::Js => {
            out.push_str("Object.freeze([\n");
            for item in items {
                out.push_str(&"  ".repeat(indent + 1));
                emit(out, t, item, indent + 1);
                out.push_str(",\n");
            }
            let _ = write!(out, "{}])", "  ".repeat(indent));
        }
        // A long list, or one of records: an array of the union of its elements' types.
        Value::List(items) => {
            let mut types: Vec<String> = Vec::new();
            for item in items {
                let mut ty = String::new();
                match item {
                    Value::Int(_) => ty.push_str("number"),
                    Value::Str(_) => ty.push_str("string"),
                    _ => emit(&mut ty, t, item, indent),
                }
                if !types.contains(&ty) {
                    types.push(ty);
                }
            }
            let _ = match types.len() {
                0 => write!(out, "readonly never[]"),
                _ => write!(out, "ReadonlyArray<{}>", types.join(" | ")),
            };
        }
        // A record of scalars (a tool's input field, a table's row) on one line: the rows of a
        // table then read as rows, and a generated file does not repeat six-line runs of them.
        Value::Map(pairs) if pairs.iter().all(|(_, v)| is_scalar(v)) => {
            let space = if pairs.is_empty() { "" } else { " " };
            out.push_str(t.open_map());
            out.push_str(space);
            sep_by(out, pairs, t.of(", ", "; "), |out, (k, item)| {
                let _ = write!(out, "{}{}: ", t.key_prefix(), key(k));
                emit(out, t, item, indent);
            });
            out.push_str(space);
            out.push_str(t.close_map());
        }
        Value::Map(pairs) => emit_fields(out, t, pairs.iter().map(|(k, v)| (None, k.as_str(), v)), indent),
        Value::PickDefined(fields) | Value::CopyAll { fields, .. } => {
            let given = match v {
                Value::CopyAll { given, .. } => given.as_slice(),
                _ => &[],
            };
            assert!(given.iter().all(|g| fields.contains(g)), "a given field is one of the fields");
            assert!(fields.iter().all(|f| is_identifier(f)), "a field list holds names: {fields:?}");
            let params: Vec<(&str, &str)> =
                std::iter::once(("o", "object")).chain(given.iter().map(|g| (g.as_str(), "unknown"))).collect();
            arrow(out, t, &[], &params);
            field_list(out, t, fields, given, matches!(v, Value::PickDefined(_)), indent);
        }
        Value::Builder(b) => {
            arrow(out, t, b.generics, b.params);
            // In JS one literal: one V8 shape per builder.
            out.push_str(t.of("(", ""));
            emit_shape(out, t, &b.body, b.params);
            out.push_str(t.of(")", ""));
        }
        Value::Decoder(layout) => match t {
            Target::Js => record::render_decoder(out, layout, indent),
            Target::Dts => record::render_decoder_type(out, layout),
        },
        Value::Encoders(layout) => match t {
            Target::Js => record::render_encoders(out, layout, indent),
            Target::Dts => record::render_encoders_type(out, layout, indent),
        },
        Value::Word(l) => match t {
            Target::Js => word::render_js(out, l, indent),
            Target::Dts => word::render_type(out, l, indent),
        },
        Value::Template(text) => {
            let params: Vec<(&str, &str)> = template_params(text).into_iter().map(|p| (p, "unknown")).collect();
            arrow(out, t, &[], &params);
            if t == Target::Dts {
                out.push_str("string");
                return;
            }
            let (texts, names) = template_parts(text);
            out.push('`');
            for (i, part) in texts.iter().enumerate() {
                push_template_literal(out, part);
                if let Some(n) = names.get(i) {
                    let _ = write!(out, "${{{n}}}");
                }
            }
            out.push('`');
        }
    }
}

/// A function's head: its type parameters and its `(name, type)` parameters (in JS the names
/// alone), then the arrow.
fn arrow(out: &mut String, t: Target, generics: &[&str], params: &[(&str, &str)]) {
    if t == Target::Dts && !generics.is_empty() {
        let _ = write!(out, "<{}>", generics.join(", "));
    }
    out.push('(');
    sep_by(out, params, ", ", |out, (p, ty)| {
        out.push_str(p);
        if t == Target::Dts {
            let _ = write!(out, ": {ty}");
        }
    });
    out.push_str(") => ");
}

/// The body of a [`Value::PickDefined`] (`optional`: a field is copied when defined) or a
/// [`Value::CopyAll`] function.
fn field_list(out: &mut String, t: Target, fields: &[String], given: &[String], optional: bool, indent: usize) {
    let (pad, end) = ("  ".repeat(indent + 1), "  ".repeat(indent));
    let _ = match (t, optional) {
        (Target::Js, true) => writeln!(out, "{{\n{pad}const picked = {{}}\n{pad}let v"),
        (Target::Js, false) => writeln!(out, "({{"),
        (Target::Dts, _) => writeln!(out, "{{"),
    };
    for f in fields {
        let _ = match (t, optional) {
            (Target::Js, true) => writeln!(out, "{pad}if ((v = o.{f}) !== undefined) picked.{f} = v"),
            (Target::Js, false) if given.contains(f) => writeln!(out, "{pad}{f},"),
            (Target::Js, false) => writeln!(out, "{pad}{f}: o.{f},"),
            (Target::Dts, _) => writeln!(out, "{pad}{f}{}: unknown", if optional { "?" } else { "" }),
        };
    }
    let _ = match (t, optional) {
        (Target::Js, true) => write!(out, "{pad}return picked\n{end}}}"),
        (Target::Js, false) => write!(out, "{end}}})"),
        (Target::Dts, _) => write!(out, "{end}}}"),
    };
}

/// A message shape: in JS one object literal (a parameter by its name), in the .d.ts its type
/// (a parameter by its declared type).
fn emit_shape(out: &mut String, t: Target, shape: &Shape, params: &[(&str, &str)]) {
    match shape {
        Shape::Lit(s) => out.push_str(&js_string(s)),
        Shape::Arg(name) if t == Target::Js => {
            assert!(is_identifier(name), "a parameter is a name: {name}");
            out.push_str(name);
        }
        Shape::Arg(name) => {
            let (_, ty) = params.iter().find(|(p, _)| p == name).expect("an argument names a parameter");
            out.push_str(ty);
        }
        Shape::Object(members) => {
            out.push_str("{ ");
            sep_by(out, *members, t.of(", ", "; "), |out, (k, v)| match v {
                // (Shorthand: `text` for `text: text`.)
                Shape::Arg(name) if t == Target::Js && name == k => out.push_str(name),
                _ => {
                    let _ = write!(out, "{}: ", key(k));
                    emit_shape(out, t, v, params);
                }
            });
            out.push_str(" }");
        }
        Shape::Array(items) => {
            out.push_str(t.of("[", "Array<"));
            sep_by(out, *items, t.of(", ", " | "), |out, item| emit_shape(out, t, item, params));
            out.push_str(t.of("]", ">"));
        }
    }
}

fn is_scalar(v: &Value) -> bool {
    matches!(v, Value::Null | Value::Bool(_) | Value::Int(_) | Value::Str(_))
}

/// The sections: each a declared object of its items.
fn emit_sections(out: &mut String, t: Target, sections: &[Section]) {
    for s in sections {
        let _ = write!(
            out,
            "\n/** {} */\n{}{}{}",
            s.doc,
            t.of("const ", "export declare const "),
            s.name,
            t.of(" = ", ": ")
        );
        emit_fields(out, t, s.items.iter().map(|i| (Some(i.doc), i.name.as_str(), &i.value)), 0);
        out.push('\n');
    }
}

/// `lib/generated/boundary.js`.
pub fn render_js(sections: &[Section]) -> String {
    let mut out = String::from("'use strict'\n");
    out.push_str(&header(sections));
    emit_sections(&mut out, Target::Js, sections);
    let names: Vec<&str> = sections.iter().map(|s| s.name).collect();
    let _ = writeln!(out, "\nmodule.exports = Object.freeze({{ {} }})", names.join(", "));
    out
}

/// `lib/generated/boundary.d.ts`.
pub fn render_dts(sections: &[Section]) -> String {
    let mut out = header(sections);
    emit_sections(&mut out, Target::Dts, sections);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_becomes_a_function_of_its_placeholders() {
        let s =
            vec![Section::new("t", "here", "Test.").item("x", "A text.", Value::template("A `{a}` and {b}, {a} $5"))];
        let js = render_js(&s);
        assert!(js.contains("x: (a, b) => `A \\`${a}\\` and ${b}, ${a} \\$5`,"), "{js}");
        assert!(render_dts(&s).contains("readonly x: (a: unknown, b: unknown) => string"));
    }

    fn item<'a>(s: &'a Section, name: &str) -> &'a Value {
        &s.items.iter().find(|i| i.name == name).expect("an item of the section").value
    }

    #[test]
    fn the_wire_section_names_every_code_and_the_presets_in_order() {
        let s = wire_section();
        let Value::Map(ops) = item(&s, "ops") else { panic!("ops is a map") };
        assert_eq!(ops.len(), ActionKind::ALL.len());
        for k in ActionKind::ALL {
            assert!(ops.contains(&(k.name().to_string(), Value::from(k as u8))));
        }
        // `Object.keys(TOOL_PRESETS)` is public: the order of `grants::PRESETS`.
        let Value::Map(presets) = item(&s, "toolPresets") else { panic!("toolPresets is a map") };
        let names: Vec<&str> = presets.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["readonly", "readwrite", "full"]);
        assert_eq!(presets[0].1, Value::strs(["file_read", "grep", "glob"]));
        assert_eq!(item(&s, "kindBits"), &Value::from(wire::KIND_BITS));
    }

    #[test]
    fn the_executor_table_covers_every_step_and_answer() {
        let s = executor_section();
        let Value::List(next) = item(&s, "next") else { panic!("next is a list") };
        assert_eq!(next.len(), executor::Step::ALL.len() * executor::AnswerKind::ALL.len());
        assert!(next.iter().any(|v| *v == Value::from(executor::wire::DECIDE)));
    }

    #[test]
    fn field_lists_become_pickers_and_copiers() {
        let fields = vec!["a".to_string(), "b".to_string()];
        let s = vec![Section::new("t", "here", "Test.").item("pick", "P.", Value::PickDefined(fields.clone())).item(
            "copy",
            "C.",
            Value::CopyAll { fields, given: vec!["b".to_string()] },
        )];
        let js = render_js(&s);
        assert!(
            js.contains("if ((v = o.a) !== undefined) picked.a = v\n    if ((v = o.b) !== undefined) picked.b = v"),
            "{js}"
        );
        assert!(js.contains("copy: (o, b) => ({\n    a: o.a,\n    b,\n  }),"), "{js}");
        let dts = render_dts(&s);
        assert!(dts.contains("readonly pick: (o: object) => {\n    a?: unknown\n"), "{dts}");
        assert!(
            dts.contains("readonly copy: (o: object, b: unknown) => {\n    a: unknown\n    b: unknown\n  }"),
            "{dts}"
        );
    }

    #[test]
    fn values_are_frozen_and_texts_typed_as_literals() {
        let s = vec![Section::new("t", "here", "Test.")
            .item("n", "N.", 3u32)
            .item("l", "L.", Value::strs(["a", "b"]))
            .item("m", "M.", Value::map([("not-id", 1u32)]))];
        let js = render_js(&s);
        assert!(js.contains("n: 3,") && js.contains("l: Object.freeze([\"a\", \"b\"]),"), "{js}");
        assert!(
            js.contains("m: Object.freeze({ \"not-id\": 1 }),") && js.contains("module.exports = Object.freeze({ t })"),
            "{js}"
        );
        let dts = render_dts(&s);
        assert!(dts.contains("readonly n: number") && dts.contains("readonly l: readonly [\"a\", \"b\"]"), "{dts}");
        assert!(dts.contains("readonly m: { readonly \"not-id\": number }"), "{dts}");
    }
}
