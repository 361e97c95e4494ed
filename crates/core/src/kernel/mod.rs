//! The single-agent kernel in plain Rust: no napi types here, so everything is unit-tested
//! with `cargo test --no-default-features`.

pub mod agent;
pub mod config;
pub mod context;
pub mod grants;
pub mod history;
pub mod loop_detector;
pub mod message;
pub mod runner;
pub mod semaphore;
pub mod structured_output;
pub mod tokens;
pub mod truncate;
