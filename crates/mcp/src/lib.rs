//! oma-mcp: the native client of the MCP bridge (`connectMCPTools`, CONTRACT §17).
//!
//! ## Why a JSON-RPC client of our own, not `rmcp`
//!
//! What the bridge needs from MCP is small: the `initialize` handshake, `tools/list` with
//! pagination, `tools/call`, `notifications/cancelled`, answering `ping`, per-request deadlines.
//! `rmcp` (the official Rust SDK) covers the whole protocol (servers, prompts, resources,
//! sampling, tasks, OAuth) behind its own service/transport traits and futures stack, with
//! `schemars`, proc-macros and `futures` in its default build, and its session logic lives in
//! async tasks. That fits neither the lean dependency tree (cold builds on two cores) nor the
//! project's boundary: policy as sans-IO machines tested with scripted transcripts, transports
//! thin. So the protocol here is [`session::Session`], a plain-Rust machine (≈300 lines), and
//! the texts the user sees are the TypeScript SDK's, which open-multi-agent exposed. The only
//! new dependency feature is tokio's `process` (for the stdio transport); serde_json, tokio and
//! (for Streamable HTTP, through oma-llm: its client, SSE parser and redirect rule) reqwest were
//! already in the tree.
//!
//! ## Layout
//!
//! - [`config`]: `ConnectMCPToolsConfig` checked, with its defaults.
//! - [`rules`]: names, the duplicate error, descriptions, schemas, result-to-text, the texts.
//! - [`session`]: the JSON-RPC session machine (no I/O, no clock).
//! - [`stdio`]: the child process transport and the task that drives a session over it.
//! - [`http`]: the Streamable HTTP transport, driven by the same task.
//! - [`queue`]: the byte-bounded queues between the transports and the driver.
//! - `reaper` (Linux): the subreaper helper a stdio server runs under, so its whole tree ends.

pub mod boundary;
pub mod config;
pub mod http;
pub mod queue;
#[cfg(target_os = "linux")]
mod reaper;
pub mod rules;
pub mod session;
pub mod stdio;
