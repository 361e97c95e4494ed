//! The single-agent kernel in plain Rust: no napi types here, so everything is unit-tested
//! with `cargo test --no-default-features`.

pub mod json;
pub mod message;
