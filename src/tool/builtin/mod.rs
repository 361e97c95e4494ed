//! The built-in tools (CONTRACT §11–§12, §21) in plain Rust; the napi binding and the JS
//! `ToolDefinition` objects wrap these.

pub mod bash;
pub mod delegate;
pub mod file_edit;
pub mod file_read;
pub mod file_write;
pub mod glob;
pub mod grep;
pub mod path_safety;
pub mod walk;

/// A tool's `{ data, isError }`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub data: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(data: String) -> ToolOutput {
        ToolOutput { data, is_error: false }
    }

    pub fn error(data: String) -> ToolOutput {
        ToolOutput { data, is_error: true }
    }
}

/// `s` for plural counts, as the texts use it.
pub(crate) fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}
