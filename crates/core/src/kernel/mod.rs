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

/// The message of the `TimeoutError` a deadline aborts its signal with: the reason
/// `AbortSignal.timeout` gives, for an adapter that reads it (`lib/deadline.js`).
pub const TIMEOUT_ABORT_REASON: &str = "The operation was aborted due to timeout";

/// `safeString`'s text for a value whose conversion to text throws and that cannot even be
/// tagged (a revoked Proxy); `{type}` is its `typeof`.
pub const UNCONVERTIBLE_VALUE: &str = "[{type} that cannot be converted to text]";
