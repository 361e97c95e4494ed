//! The single-agent kernel in plain Rust: the sans-IO machines (runner, agent) and the rules
//! they apply; no napi types here, so everything is unit-tested with `cargo test -p oma-core`.

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
