//! oma-core: the policy of the single-agent kernel of open-multi-agent, in plain Rust.
//!
//! `kernel` holds the sans-IO state machines and the rules they apply (loop, grants, loop
//! detection, context strategies, …); `json` the one JSON toolkit (JSON as JavaScript reads and
//! writes it) the kernel and the adapters share; `tool` the built-in tools; `redaction` the trace
//! redaction; `protocol` the one protocol of the three machines. No napi types and no JS here:
//! the binding crate (the repository root) drives these machines, and everything is unit-tested
//! with plain `cargo test -p oma-core`.
//!
//! No `unsafe` either: the tools' system calls are oma-os's safe functions. The two exceptions
//! are the JSON scanner's hot paths, each allowed where it stands with its measured gain.
#![deny(unsafe_code)]

pub mod boundary;
pub mod json;
pub mod kernel;
pub mod protocol;
pub mod redaction;
pub mod tool;
