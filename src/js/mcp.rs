//! The MCP bridge's binding (`connectMCPTools`, oma-mcp): converts the config and results and
//! runs the connection on napi's tokio runtime. Decides nothing.

use std::sync::Arc;

use napi::bindgen_prelude::PromiseRaw;
use napi::{Env, Error, Result};
use napi_derive::napi;
use oma_mcp::{config, http, rules, session::Tool, stdio};
use serde_json::{json, Value};

/// A connected MCP server (`connectMCPTools`' client).
#[napi]
pub struct NativeMcpClient {
    client: Arc<stdio::Client>,
    tools: String,
}

/// A finished `tools/call`: the tool's text and whether it is an error.
// A napi object, not a record: copied into the tool result by name, as `NativeToolResult`.
#[napi(object)]
pub struct NativeMcpResult {
    pub data: String,
    pub is_error: bool,
}

fn tools_json(tools: &[Tool]) -> String {
    let list: Vec<Value> = tools
        .iter()
        .map(|t| json!({ "name": t.name, "rawName": t.raw_name, "description": t.description, "inputSchema": t.input_schema }))
        .collect();
    Value::Array(list).to_string()
}

/// Spawns the server, runs the handshake and lists its tools. Rejects with the original's
/// error (the child already ended).
#[napi(catch_unwind)]
pub fn mcp_connect(env: &Env, config_json: String) -> Result<PromiseRaw<'_, NativeMcpClient>> {
    let (transport, session) = config::parse(&config_json).map_err(Error::from_reason)?;
    env.spawn_future(async move {
        let connected = match transport {
            config::Transport::Stdio(spawn) => stdio::connect(spawn, session).await,
            config::Transport::Http(spec) => http::connect(spec, session).await,
        };
        let (client, tools) = connected.map_err(Error::from_reason)?;
        Ok(NativeMcpClient { client: Arc::new(client), tools: tools_json(&tools) })
    })
}

#[napi]
impl NativeMcpClient {
    /// `[{ name, rawName, description, inputSchema }]` as JSON.
    #[napi(getter)]
    pub fn tools_json(&self) -> String {
        self.tools.clone()
    }

    /// `tools/call`; `key` (unique per client) names the call for `cancel`. Never rejects.
    #[napi]
    pub fn call_tool<'e>(
        &self,
        env: &'e Env,
        key: u32,
        raw_name: String,
        arguments_json: String,
    ) -> Result<PromiseRaw<'e, NativeMcpResult>> {
        let client = self.client.clone();
        env.spawn_future(async move {
            let o = client.call(key as u64, raw_name, arguments_json).await;
            Ok(NativeMcpResult { data: o.text, is_error: o.is_error })
        })
    }

    /// The bearer token for the next requests (Streamable HTTP; `null` for none).
    #[napi]
    pub fn set_token(&self, token: Option<String>) {
        self.client.set_token(token);
    }

    /// Gives up on call `key`; `reason` is `String(signal.reason)`.
    #[napi]
    pub fn cancel(&self, key: u32, reason: String) {
        self.client.cancel(key as u64, reason);
    }

    /// SIGTERM to the server's process group now (the glue's `process.on('exit')`).
    #[napi]
    pub fn terminate_now(&self) {
        self.client.terminate_now();
    }

    /// Ends the server and its process tree.
    #[napi]
    pub fn disconnect<'e>(&self, env: &'e Env) -> Result<PromiseRaw<'e, ()>> {
        let client = self.client.clone();
        env.spawn_future(async move {
            client.disconnect().await;
            Ok(())
        })
    }
}

/// The failed-call text, for a call the glue does not send (its signal was already aborted).
#[napi(catch_unwind)]
pub fn mcp_call_failed(raw_name: String, message: String) -> String {
    rules::call_failed(&raw_name, &message)
}

/// The variables a server inherits from `process.env` by default (read by the glue at load).
#[napi(catch_unwind)]
pub fn mcp_default_env_vars() -> Vec<String> {
    stdio::DEFAULT_INHERITED_ENV_VARS.iter().map(|s| s.to_string()).collect()
}
