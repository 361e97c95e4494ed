//! The single-agent kernel in plain Rust: no napi types here, so everything is unit-tested
//! with `cargo test --no-default-features`.

pub mod json;
pub mod message;
pub mod history;
pub mod context;
pub mod grants;
pub mod loop_detector;
pub mod semaphore;
pub mod structured_output;
pub mod tokens;
pub mod truncate;
pub mod runner;
pub mod config;
