//! Tools: the executor of one tool call (CONTRACT §9.2) and the built-in tool set (§11–§12),
//! in plain Rust.

pub mod builtin;
pub mod executor;
