//! Tools: the registry's rules (§8.2), the executor of one tool call (§9.2) and the built-in
//! tool set (§11–§12), in plain Rust.

pub mod builtin;
pub mod executor;
pub mod registry;
