//! Tools: the built-in tool set (CONTRACT §11–§12), in plain Rust.

pub mod builtin;
