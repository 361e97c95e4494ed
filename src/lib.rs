//! oma-kernel: the napi binding of the single-agent kernel of open-multi-agent.
//!
//! The policy lives in the napi-free crates below this one: `oma_core` (the sans-IO kernel,
//! the built-in tools, redaction) and `oma_llm` (the native adapters). This crate converts
//! JS values, drives the machines for the JS shim in `lib/`, and runs the JS thread's transport
//! (`oma_uv`: executor, sockets, timers, HTTP and HTTPS client) on Node's libuv loop (`js::uv`).

// napi-derive registers the exports only outside `cfg(test)`: in the test build every export
// looks unused.
#![cfg_attr(test, allow(dead_code, unused_imports))]
// Each unsafe operation in an `unsafe fn` (napi's raw callbacks among them) is a block of its
// own with its SAFETY comment, as everywhere else.
#![deny(unsafe_op_in_unsafe_fn)]

mod js;
