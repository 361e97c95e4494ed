//! oma-kernel: the single-agent execution kernel of open-multi-agent, in Rust.
//!
//! `kernel` (loop, grants, loop detection, context strategies, …), `tool` and `llm` are plain
//! Rust; `js` is the thin napi binding, compiled only with the default `node` feature.

pub mod kernel;
pub mod redaction;
pub mod tool;

#[cfg(feature = "llm")]
pub mod llm;

#[cfg(feature = "node")]
mod js;
