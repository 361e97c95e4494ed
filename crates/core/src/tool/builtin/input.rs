//! The built-in tools' inputs (CONTRACT §11.2): each tool's fields as its LLM-visible JSON
//! Schema lists them (name, type, description, required), the checks the original's Zod
//! schemas made beyond the JSON types, and the check itself with Zod 3's issue texts.
//!
//! Both the executor (`tool::executor`, when it validates a built-in tool's input) and each
//! tool's own `execute` (tests call it directly with raw input) run [`check`]; the JS shim
//! builds the JSON Schema and the lazy Zod view of `inputSchema` from [`TOOLS`].
//!
//! The check reads a JS value through the driver's description of it ([`JsType`] per field,
//! and the number or the string length the constraints need), so values JSON cannot express
//! (`undefined`, `NaN`, functions, Maps, promises, …) keep Zod 3's `received` texts.

use super::super::executor::Issue;

/// A field's JSON type (`type` in the tool's JSON Schema; the Zod type in the original).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldType {
    String,
    Number,
    Boolean,
}

impl FieldType {
    pub fn name(self) -> &'static str {
        match self {
            FieldType::String => "string",
            FieldType::Number => "number",
            FieldType::Boolean => "boolean",
        }
    }

    fn js_type(self) -> JsType {
        match self {
            FieldType::String => JsType::String,
            FieldType::Number => JsType::Number,
            FieldType::Boolean => JsType::Boolean,
        }
    }
}

/// One property of a built-in tool's input, with the checks Zod made on it, applied in Zod's
/// order: `int`, then `gte` (inclusive minimum), then `gt` (exclusive minimum); `min_length`
/// for strings.
#[derive(Debug, PartialEq)]
pub struct Field {
    pub name: &'static str,
    pub ty: FieldType,
    pub description: &'static str,
    pub required: bool,
    pub int: bool,
    pub gte: Option<i32>,
    pub gt: Option<i32>,
    pub min_length: Option<u32>,
}

/// A built-in tool's input: its fields in schema (Zod shape) order, and the tool's description
/// (the `ToolDefinition.description` lib/builtin.js gives the model).
#[derive(Debug, PartialEq)]
pub struct ToolInput {
    pub tool: &'static str,
    pub description: &'static str,
    pub fields: &'static [Field],
}

const fn field(name: &'static str, ty: FieldType, description: &'static str, required: bool) -> Field {
    Field { name, ty, description, required, int: false, gte: None, gt: None, min_length: None }
}

/// A positive integer (`z.number().int().positive()`).
const fn count(name: &'static str, description: &'static str) -> Field {
    Field { int: true, gt: Some(0), ..field(name, FieldType::Number, description, false) }
}

/// A non-empty string (`z.string().min(1)`).
const fn non_empty(name: &'static str, description: &'static str) -> Field {
    Field { min_length: Some(1), ..field(name, FieldType::String, description, true) }
}

use FieldType::{Boolean, Number, String as Str};

/// The built-in tools' inputs; a tool's index here is its id across the binding.
pub const TOOLS: [ToolInput; 7] = [
    ToolInput {
        tool: "bash",
        description: "Execute a bash command and return its stdout and stderr. Use this for file system operations, running scripts, installing packages, and any task that requires shell access. The command runs in a non-interactive shell (bash -c). Long-running commands should use the timeout parameter.",
        fields: &[
            field("command", Str, "The bash command to execute.", true),
            field(
                "timeout",
                Number,
                "Timeout in milliseconds before the command is forcibly killed. Defaults to 30000 ms.",
                false,
            ),
            field("cwd", Str, "Working directory in which to run the command.", false),
        ],
    },
    ToolInput {
        tool: "file_read",
        description: "Read the contents of a file from disk. Returns the file contents with line numbers prefixed in the format \"N\\t<line>\". Use `offset` and `limit` to read large files in chunks without loading the entire file into the context window.",
        fields: &[
            field("path", Str, "Absolute path to the file to read.", true),
            Field {
                int: true,
                gte: Some(0),
                ..field(
                    "offset",
                    Number,
                    "1-based line number to start reading from. When omitted the file is read from the beginning.",
                    false,
                )
            },
            count(
                "limit",
                "Maximum number of lines to return. When omitted all lines from `offset` to the end of the file are returned.",
            ),
        ],
    },
    ToolInput {
        tool: "file_write",
        description: "Write content to a file, creating it (and any missing parent directories) if it does not already exist, or overwriting it if it does. Prefer this tool for creating new files; use file_edit for targeted in-place edits of existing files.",
        fields: &[
            field(
                "path",
                Str,
                "Absolute path to the file to write. The path must be absolute (starting with /).",
                true,
            ),
            field("content", Str, "The full content to write to the file.", true),
        ],
    },
    ToolInput {
        tool: "file_edit",
        description: "Edit a file by replacing a specific string with new content. The `old_string` must appear verbatim in the file. By default the tool errors if `old_string` appears more than once — use `replace_all: true` to replace every occurrence. Use file_write when you need to create a new file or rewrite it entirely.",
        fields: &[
            field("path", Str, "Absolute path to the file to edit.", true),
            field(
                "old_string",
                Str,
                "The exact string to find and replace. Must match character-for-character including whitespace and newlines.",
                true,
            ),
            field(
                "new_string",
                Str,
                "The replacement string that will be inserted in place of `old_string`.",
                true,
            ),
            field(
                "replace_all",
                Boolean,
                "When true, replace every occurrence of `old_string` instead of requiring it to be unique. Defaults to false.",
                false,
            ),
        ],
    },
    ToolInput {
        tool: "grep",
        description: "Search for a regular-expression pattern in one or more files. Returns matching lines with their file paths and 1-based line numbers. Use the `glob` parameter to restrict the search to specific file types (e.g. \"*.ts\"). To list matching file paths without reading contents, use the `glob` tool. Results are capped by `maxResults` to keep the response manageable.",
        fields: &[
            field("pattern", Str, "Regular expression pattern to search for in file contents.", true),
            field(
                "path",
                Str,
                "Absolute directory or file path to search in. Defaults to the tool working directory.",
                false,
            ),
            field(
                "glob",
                Str,
                "Glob pattern to filter which files are searched (e.g. \"*.ts\", \"**/*.json\"). Only used when `path` is a directory.",
                false,
            ),
            count("maxResults", "Maximum number of matching lines to return. Defaults to 100."),
        ],
    },
    ToolInput {
        tool: "glob",
        description: "List file paths under a directory that match an optional filename glob. Does not read file contents — use `grep` to search inside files. Skips common bulky directories (node_modules, .git, dist, etc.). Paths in the result are relative to the process working directory. Results are capped by `maxFiles`.",
        fields: &[
            field(
                "path",
                Str,
                "Absolute directory or file path to list. Defaults to the tool working directory.",
                false,
            ),
            field(
                "pattern",
                Str,
                "Filename glob (e.g. \"*.ts\", \"**/*.json\"). When omitted, every file under the directory is listed (subject to maxFiles and skipped dirs).",
                false,
            ),
            count("maxFiles", "Maximum number of file paths to return. Defaults to 500."),
        ],
    },
    ToolInput {
        tool: "delegate_to_agent",
        description: "Run a sub-task on another agent from this team and return that agent's final answer as the tool result. Use when you need a specialist teammate to produce output you will incorporate. The target agent runs in a fresh conversation for this prompt only.",
        fields: &[
            non_empty("target_agent", "Name of the team agent to run the sub-task."),
            non_empty("prompt", "Instructions / question for the target agent."),
        ],
    },
];

/// The most fields a built-in tool has (the size of the driver's description buffer).
pub const MAX_FIELDS: usize = 4;

/// Zod 3's `getParsedType`: what the driver says a JS value is, as the `received` of an
/// `invalid_type` issue names it. The discriminant is the tag the driver sends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum JsType {
    Undefined = 0,
    String,
    Number,
    Nan,
    Boolean,
    Function,
    Bigint,
    Symbol,
    Array,
    Null,
    Promise,
    Map,
    Set,
    Date,
    Object,
    Unknown,
}

impl JsType {
    pub const ALL: [JsType; 16] = [
        JsType::Undefined,
        JsType::String,
        JsType::Number,
        JsType::Nan,
        JsType::Boolean,
        JsType::Function,
        JsType::Bigint,
        JsType::Symbol,
        JsType::Array,
        JsType::Null,
        JsType::Promise,
        JsType::Map,
        JsType::Set,
        JsType::Date,
        JsType::Object,
        JsType::Unknown,
    ];

    pub fn name(self) -> &'static str {
        match self {
            JsType::Undefined => "undefined",
            JsType::String => "string",
            JsType::Number => "number",
            JsType::Nan => "nan",
            JsType::Boolean => "boolean",
            JsType::Function => "function",
            JsType::Bigint => "bigint",
            JsType::Symbol => "symbol",
            JsType::Array => "array",
            JsType::Null => "null",
            JsType::Promise => "promise",
            JsType::Map => "map",
            JsType::Set => "set",
            JsType::Date => "date",
            JsType::Object => "object",
            JsType::Unknown => "unknown",
        }
    }

    pub fn from_tag(tag: f64) -> Option<JsType> {
        JsType::ALL.iter().copied().find(|t| *t as u8 as f64 == tag)
    }
}

/// A field's value as the check reads it: its type and, for a number its value, for a
/// string its length in UTF-16 units (what Zod's `min` counts); unused otherwise.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FieldValue {
    pub ty: JsType,
    pub num: f64,
}

/// The driver's description of an input: the input's own type and, when it is an object,
/// one [`FieldValue`] per field of the tool, in [`ToolInput::fields`] order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct InputView<'a> {
    pub top: JsType,
    pub fields: &'a [FieldValue],
}

impl<'a> InputView<'a> {
    /// Reads the flat layout the JS driver writes: `[top, type₀, value₀, type₁, value₁, …]`.
    /// `None` when a tag is not a [`JsType`] or fields are missing for an object.
    pub fn decode(tool: &ToolInput, flat: &[f64], buf: &'a mut [FieldValue; MAX_FIELDS]) -> Option<InputView<'a>> {
        let top = JsType::from_tag(*flat.first()?)?;
        let n = if top == JsType::Object { tool.fields.len() } else { 0 };
        for (i, slot) in buf.iter_mut().enumerate().take(n) {
            let ty = JsType::from_tag(*flat.get(1 + 2 * i)?)?;
            *slot = FieldValue { ty, num: *flat.get(2 + 2 * i)? };
        }
        Some(InputView { top, fields: &buf[..n] })
    }
}

/// Zod 3's default message for an `invalid_type` issue.
fn invalid_type(expected: &str, received: JsType) -> String {
    if received == JsType::Undefined {
        "Required".to_string()
    } else {
        format!("Expected {expected}, received {}", received.name())
    }
}

/// The issues Zod 3 reports for the input against `z.object(shape)` of the tool's fields
/// (unknown keys are stripped, so never an issue), in Zod's order; `None` when it is valid.
pub fn check(tool: &ToolInput, input: &InputView) -> Option<Vec<Issue>> {
    if input.top != JsType::Object {
        return Some(vec![Issue::new("", invalid_type("object", input.top))]);
    }
    let mut issues = Vec::new();
    for (f, v) in tool.fields.iter().zip(input.fields) {
        let mut issue = |message: String| issues.push(Issue::new(f.name, message));
        if v.ty == JsType::Undefined {
            if f.required {
                issue(invalid_type(f.ty.name(), v.ty));
            }
            continue;
        }
        if v.ty != f.ty.js_type() {
            issue(invalid_type(f.ty.name(), v.ty));
            continue;
        }
        match f.ty {
            FieldType::Number => {
                let n = v.num;
                // Number.isInteger: finite and without a fraction.
                if f.int && !(n.is_finite() && n.fract() == 0.0) {
                    issue("Expected integer, received float".to_string());
                }
                if let Some(min) = f.gte.filter(|&m| n < m as f64) {
                    issue(format!("Number must be greater than or equal to {min}"));
                }
                if let Some(min) = f.gt.filter(|&m| n <= m as f64) {
                    issue(format!("Number must be greater than {min}"));
                }
            }
            FieldType::String => {
                if let Some(min) = f.min_length.filter(|&m| v.num < m as f64) {
                    issue(format!("String must contain at least {min} character(s)"));
                }
            }
            FieldType::Boolean => {}
        }
    }
    (!issues.is_empty()).then_some(issues)
}

/// A built-in tool by name.
pub fn tool(name: &str) -> Option<&'static ToolInput> {
    TOOLS.iter().find(|t| t.tool == name)
}

/// The error of the built-in tools' `inputSchema` getter when the peer dependency `zod` cannot
/// be loaded (`{why}`: the first line of the loader's error).
pub const ZOD_MISSING: &str = "@oma-kernel/core: the built-in tools' inputSchema is a Zod schema, built from the peer dependency \"zod\" (^3.25 || ^4), which could not be loaded: {why}. Install it with: npm install zod";
/// Zod 4's `.int()` also caps at 2^53; the Zod 4 schema checks `Number.isInteger` instead,
/// with Zod 3's issue text.
pub const ZOD4_INT_ISSUE: &str = "Invalid input: expected int, received number";

#[cfg(test)]
mod tests {
    use super::*;

    const T: fn(JsType) -> FieldValue = |ty| FieldValue { ty, num: 0.0 };

    fn num(n: f64) -> FieldValue {
        FieldValue { ty: JsType::Number, num: n }
    }

    fn string(len: usize) -> FieldValue {
        FieldValue { ty: JsType::String, num: len as f64 }
    }

    /// The descriptions that state a default say the default the glue applies (one number:
    /// the const; the description is a `const` text, so it spells it and this ties them).
    #[test]
    fn described_defaults_are_the_defaults() {
        use crate::tool::builtin::{bash, glob, grep};
        let described = |tool: &str, field: &str| {
            super::tool(tool).unwrap().fields.iter().find(|f| f.name == field).unwrap().description
        };
        assert!(described("grep", "maxResults").ends_with(&format!("Defaults to {}.", grep::DEFAULT_MAX_RESULTS)));
        assert!(described("glob", "maxFiles").ends_with(&format!("Defaults to {}.", glob::DEFAULT_MAX_FILES)));
        assert!(described("bash", "timeout").ends_with(&format!("Defaults to {} ms.", bash::DEFAULT_TIMEOUT_MS)));
    }

    fn texts(tool: &str, top: JsType, fields: &[FieldValue]) -> Option<Vec<String>> {
        let t = super::tool(tool).unwrap();
        check(t, &InputView { top, fields })
            .map(|v| v.into_iter().map(|i| format!("{}: {}", i.path, i.message)).collect())
    }

    #[test]
    fn valid_inputs_and_optional_fields() {
        let u = T(JsType::Undefined);
        assert_eq!(texts("file_read", JsType::Object, &[string(3), u, u]), None);
        assert_eq!(texts("file_read", JsType::Object, &[string(3), num(0.0), num(1.0)]), None);
        assert_eq!(texts("glob", JsType::Object, &[u, u, u]), None);
        assert_eq!(texts("file_edit", JsType::Object, &[string(1), string(0), string(0), T(JsType::Boolean)]), None);
    }

    #[test]
    fn the_input_itself_must_be_an_object() {
        for top in [JsType::Array, JsType::Null, JsType::String, JsType::Date, JsType::Map, JsType::Function] {
            assert_eq!(texts("glob", top, &[]), Some(vec![format!(": Expected object, received {}", top.name())]));
        }
        assert_eq!(texts("bash", JsType::Undefined, &[]), Some(vec![": Required".to_string()]));
    }

    #[test]
    fn zod_3_texts_in_schema_order() {
        let u = T(JsType::Undefined);
        assert_eq!(
            texts("file_read", JsType::Object, &[u, T(JsType::String), u]),
            Some(vec!["path: Required".into(), "offset: Expected number, received string".into()])
        );
        assert_eq!(
            texts("file_read", JsType::Object, &[string(1), num(1.5), num(-2.0)]),
            Some(vec![
                "offset: Expected integer, received float".into(),
                "limit: Number must be greater than 0".into()
            ])
        );
        // int and the bound both fail: both reported, int first.
        assert_eq!(
            texts("file_read", JsType::Object, &[string(1), num(-0.5), num(f64::NEG_INFINITY)]),
            Some(vec![
                "offset: Expected integer, received float".into(),
                "offset: Number must be greater than or equal to 0".into(),
                "limit: Expected integer, received float".into(),
                "limit: Number must be greater than 0".into(),
            ])
        );
        assert_eq!(
            texts("grep", JsType::Object, &[u, num(5.0), u, num(0.0)]),
            Some(vec![
                "pattern: Required".into(),
                "path: Expected string, received number".into(),
                "maxResults: Number must be greater than 0".into(),
            ])
        );
        assert_eq!(
            texts("delegate_to_agent", JsType::Object, &[string(0), T(JsType::Nan)]),
            Some(vec![
                "target_agent: String must contain at least 1 character(s)".into(),
                "prompt: Expected string, received nan".into(),
            ])
        );
        assert_eq!(
            texts("file_edit", JsType::Object, &[string(1), string(1), string(1), T(JsType::Promise)]),
            Some(vec!["replace_all: Expected boolean, received promise".into()])
        );
    }

    #[test]
    fn decode_reads_the_drivers_layout() {
        let t = tool("file_read").unwrap();
        let mut buf = [FieldValue { ty: JsType::Undefined, num: 0.0 }; MAX_FIELDS];
        let v = InputView::decode(t, &[14.0, 1.0, 3.0, 0.0, 0.0, 2.0, 1.5], &mut buf).unwrap();
        assert_eq!(v.top, JsType::Object);
        assert_eq!(v.fields, &[string(3), T(JsType::Undefined), num(1.5)]);
        let mut buf = [FieldValue { ty: JsType::Undefined, num: 0.0 }; MAX_FIELDS];
        assert_eq!(InputView::decode(t, &[8.0], &mut buf).unwrap().fields.len(), 0);
        let mut buf = [FieldValue { ty: JsType::Undefined, num: 0.0 }; MAX_FIELDS];
        assert!(InputView::decode(t, &[14.0, 1.0], &mut buf).is_none());
        let mut buf = [FieldValue { ty: JsType::Undefined, num: 0.0 }; MAX_FIELDS];
        assert!(InputView::decode(t, &[99.0], &mut buf).is_none());
        assert!(TOOLS.iter().all(|t| t.fields.len() <= MAX_FIELDS));
    }
}
