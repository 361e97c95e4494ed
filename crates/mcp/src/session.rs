//! The MCP client session as a sans-IO machine: it is handed the lines the server wrote and
//! the current time, and is asked for the lines to write, the next deadline and the events
//! (connected with the tool list, connect failed, a call finished). No I/O, no clock, no
//! threads: the stdio transport (and its tests' scripted drivers) perform what it asks.
//!
//! The sequence of a connect, each step under its own `requestTimeoutMs` deadline:
//! `initialize` (protocol version, `clientInfo`, capabilities `{}`) → the server's version
//! checked → `notifications/initialized` → `tools/list` pages while `nextCursor` is a non-empty
//! string → the names normalised and checked for duplicates → [`Event::Ready`].
//!
//! Error texts are the TypeScript SDK's (`McpError`: `MCP error <code>: <message>`), so a
//! failed call reads as it did under open-multi-agent: a timeout is
//! `MCP error -32001: Request timed out`, an abort `MCP error -32001: <String(reason)>`, a lost
//! server `MCP error -32000: Connection closed`, an error response its code and message.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use oma_core::json::push_json_string;
use serde_json::Value;

use crate::rules;

/// The protocol version sent in `initialize` (the SDK's latest at the time of writing).
pub const PROTOCOL_VERSION: &str = "2025-11-25";
/// The versions a server may answer with (the SDK's `SUPPORTED_PROTOCOL_VERSIONS`).
pub const SUPPORTED_PROTOCOL_VERSIONS: [&str; 5] =
    ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2024-10-07"];

/// JSON-RPC / MCP error codes used in the texts.
pub const CONNECTION_CLOSED: i64 = -32000;
pub const REQUEST_TIMEOUT: i64 = -32001;
const METHOD_NOT_FOUND: i64 = -32601;

/// `McpError`'s message.
pub fn mcp_error(code: i64, message: &str) -> String {
    format!("MCP error {code}: {message}")
}

/// The session's settings (from `ConnectMCPToolsConfig`).
#[derive(Clone, Debug)]
pub struct Config {
    pub client_name: String,
    pub client_version: String,
    pub name_prefix: Option<String>,
    pub request_timeout: Duration,
}

/// One tool as the bridge hands it to JS.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    /// The framework name (normalised).
    pub name: String,
    /// The server's name, sent in `tools/call`.
    pub raw_name: String,
    pub description: String,
    /// The server's input schema (or `{ "type": "object" }`): the model's schema and the
    /// registry's validator.
    pub input_schema: Value,
}

/// What a finished call gives the tool.
#[derive(Clone, Debug, PartialEq)]
pub struct CallOutcome {
    pub text: String,
    pub is_error: bool,
}

#[derive(Debug, PartialEq)]
pub enum Event {
    Ready(Vec<Tool>),
    ConnectFailed(String),
    CallDone(u64, CallOutcome),
}

#[derive(Debug)]
enum Pending {
    Initialize,
    ListPage,
    /// A `tools/call` of the tool with this raw name.
    Call(String),
}

#[derive(Debug, PartialEq)]
enum Phase {
    Connecting,
    Ready,
    Closed,
}

pub struct Session {
    config: Config,
    phase: Phase,
    next_id: u64,
    /// In-flight requests with their deadlines: few at a time, scanned.
    pending: Vec<(u64, Pending, Instant)>,
    listed: Vec<Value>,
    out: VecDeque<String>,
    events: VecDeque<Event>,
}

impl Session {
    /// A session that starts with `initialize`.
    pub fn new(config: Config, now: Instant) -> Session {
        let mut s = Session {
            config,
            phase: Phase::Connecting,
            next_id: 0,
            pending: Vec::new(),
            listed: Vec::new(),
            out: VecDeque::new(),
            events: VecDeque::new(),
        };
        let mut params = String::from("{\"protocolVersion\":");
        push_json_string(&mut params, PROTOCOL_VERSION);
        params.push_str(",\"capabilities\":{},\"clientInfo\":{\"name\":");
        push_json_string(&mut params, &s.config.client_name);
        params.push_str(",\"version\":");
        push_json_string(&mut params, &s.config.client_version);
        params.push_str("}}");
        s.request("initialize", &params, Pending::Initialize, now);
        s
    }

    /// The next line to write (without its newline).
    pub fn poll_transmit(&mut self) -> Option<String> {
        self.out.pop_front()
    }

    pub fn poll_event(&mut self) -> Option<Event> {
        self.events.pop_front()
    }

    /// The earliest deadline of an in-flight request.
    pub fn poll_deadline(&self) -> Option<Instant> {
        self.pending.iter().map(|p| p.2).min()
    }

    pub fn is_closed(&self) -> bool {
        self.phase == Phase::Closed
    }

    /// Sends `tools/call` for `raw_name` with `arguments` (JSON text of the tool's input) and
    /// returns its id, the key of its [`Event::CallDone`] and of [`Session::cancel`]. On a closed
    /// session the call is done at once with the closed-connection error.
    pub fn call_tool(&mut self, raw_name: &str, arguments: &str, now: Instant) -> u64 {
        if self.phase != Phase::Ready {
            let id = self.next_id;
            self.next_id += 1;
            let text = rules::call_failed(raw_name, &mcp_error(CONNECTION_CLOSED, "Connection closed"));
            self.events.push_back(Event::CallDone(id, CallOutcome { text, is_error: true }));
            return id;
        }
        let mut params = String::from("{\"name\":");
        push_json_string(&mut params, raw_name);
        params.push_str(",\"arguments\":");
        params.push_str(arguments);
        params.push('}');
        self.request("tools/call", &params, Pending::Call(raw_name.to_string()), now)
    }

    /// The caller gave up on a call (its run was aborted): the server is told with
    /// `notifications/cancelled` and the call is done with the SDK's text for it. Unknown or
    /// finished ids are ignored.
    pub fn cancel(&mut self, id: u64, reason: &str) {
        let Some(i) = self.pending.iter().position(|p| p.0 == id) else { return };
        let (id, kind, _) = self.pending.swap_remove(i);
        self.send_cancelled(id, reason);
        self.fail(kind, id, mcp_error(REQUEST_TIMEOUT, reason));
    }

    /// The transport could not deliver request `id` or read its answer (an HTTP error status,
    /// a refused redirect): the request fails with `message`. Unknown ids are ignored.
    pub fn fail_request(&mut self, id: u64, message: &str) {
        let Some(i) = self.pending.iter().position(|p| p.0 == id) else { return };
        let (id, kind, _) = self.pending.swap_remove(i);
        self.fail(kind, id, message.to_string());
    }

    /// Expires the requests whose deadline has passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(i) = self.pending.iter().position(|p| p.2 <= now) {
            let (id, kind, _) = self.pending.swap_remove(i);
            self.send_cancelled(id, "McpError: MCP error -32001: Request timed out");
            self.fail(kind, id, mcp_error(REQUEST_TIMEOUT, "Request timed out"));
        }
    }

    /// The connection is gone (the server exited, its output could not be read, or the client
    /// disconnected): every in-flight request fails at once, later calls fail immediately.
    /// `detail`, when given, follows the SDK's text in parentheses.
    pub fn close(&mut self, detail: Option<&str>) {
        if self.phase == Phase::Closed {
            return;
        }
        let msg = match detail {
            Some(d) => mcp_error(CONNECTION_CLOSED, &format!("Connection closed ({d})")),
            None => mcp_error(CONNECTION_CLOSED, "Connection closed"),
        };
        let connecting = self.phase == Phase::Connecting;
        self.phase = Phase::Closed;
        self.out.clear();
        for (id, kind, _) in std::mem::take(&mut self.pending) {
            self.fail(kind, id, msg.clone());
        }
        if connecting && !self.events.iter().any(|e| matches!(e, Event::ConnectFailed(_) | Event::Ready(_))) {
            self.events.push_back(Event::ConnectFailed(msg));
        }
    }

    /// One line the server wrote. Lines that are not JSON-RPC messages are skipped (as the SDK
    /// does); requests the client does not serve are answered per the spec.
    pub fn handle_line(&mut self, line: &str, now: Instant) {
        if self.phase == Phase::Closed {
            return;
        }
        let line = line.strip_suffix('\r').unwrap_or(line);
        let Ok(Value::Object(mut msg)) = serde_json::from_str::<Value>(line) else { return };
        let method = msg.get("method").and_then(Value::as_str).map(str::to_string);
        match (method, msg.get("id").cloned()) {
            (Some(m), Some(id)) => self.serve(&m, &id),
            // Notifications (progress, logging, list_changed, cancelled): nothing to do for a
            // tools client that lists once.
            (Some(_), None) => {}
            (None, Some(Value::Number(n))) => {
                let Some(id) = n.as_u64() else { return };
                let Some(i) = self.pending.iter().position(|p| p.0 == id) else { return };
                let (_, kind, _) = self.pending.swap_remove(i);
                if let Some(err) = msg.get("error") {
                    let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
                    let text = err.get("message").and_then(Value::as_str).unwrap_or("");
                    self.fail(kind, id, mcp_error(code, text));
                    return;
                }
                let result = msg.remove("result").unwrap_or(Value::Null);
                self.succeed(kind, id, result, now);
            }
            _ => {}
        }
    }

    fn serve(&mut self, method: &str, id: &Value) {
        let id = oma_core::json::to_js_json(id);
        let line = if method == "ping" {
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}")
        } else {
            // roots, sampling, elicitation: not offered (capabilities `{}`).
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":{METHOD_NOT_FOUND},\"message\":\"Method not found\"}}}}")
        };
        self.out.push_back(line);
    }

    fn succeed(&mut self, kind: Pending, id: u64, result: Value, now: Instant) {
        match kind {
            Pending::Initialize => {
                let version = result.get("protocolVersion").and_then(Value::as_str);
                match version {
                    Some(v) if SUPPORTED_PROTOCOL_VERSIONS.contains(&v) => {}
                    _ => {
                        let shown = match result.get("protocolVersion") {
                            Some(Value::String(s)) => s.clone(),
                            Some(v) => oma_core::json::to_js_json(v),
                            None => "undefined".into(),
                        };
                        return self.connect_failed(format!("Server's protocol version is not supported: {shown}"));
                    }
                }
                self.out.push_back("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}".into());
                self.request("tools/list", "{}", Pending::ListPage, now);
            }
            Pending::ListPage => {
                if let Some(tools) = result.get("tools") {
                    match tools {
                        Value::Array(a) => self.listed.extend(a.iter().cloned()),
                        _ => {
                            return self.connect_failed(
                                "MCP server sent an invalid tools/list result: tools is not an array".into(),
                            )
                        }
                    }
                }
                match result.get("nextCursor").and_then(Value::as_str).filter(|c| !c.is_empty()) {
                    Some(cursor) => {
                        let mut params = String::from("{\"cursor\":");
                        push_json_string(&mut params, cursor);
                        params.push('}');
                        self.request("tools/list", &params, Pending::ListPage, now);
                    }
                    None => match self.build_tools() {
                        Ok(tools) => {
                            self.phase = Phase::Ready;
                            self.events.push_back(Event::Ready(tools));
                        }
                        Err(e) => self.connect_failed(e),
                    },
                }
            }
            Pending::Call(_) => {
                let is_error = result.get("isError") == Some(&Value::Bool(true));
                let text = rules::tool_result_text(&result);
                self.events.push_back(Event::CallDone(id, CallOutcome { text, is_error }));
            }
        }
    }

    fn build_tools(&mut self) -> Result<Vec<Tool>, String> {
        let listed = std::mem::take(&mut self.listed);
        let prefix = self.config.name_prefix.as_deref();
        let mut seen: Vec<(String, String)> = Vec::with_capacity(listed.len());
        let mut tools = Vec::with_capacity(listed.len());
        for (i, t) in listed.iter().enumerate() {
            let Some(obj) = t.as_object() else {
                return Err(format!("MCP server sent an invalid tools/list result: tool {i} is not an object"));
            };
            let Some(raw) = obj.get("name").and_then(Value::as_str) else {
                return Err(format!("MCP server sent an invalid tools/list result: tool {i} has no string name"));
            };
            let name = rules::normalize_tool_name(raw, prefix);
            if let Some((_, previous)) = seen.iter().find(|(n, _)| *n == name) {
                return Err(rules::duplicate_name_error(&name, previous, raw));
            }
            seen.push((name.clone(), raw.to_string()));
            let description = rules::description(raw, obj.get("description").and_then(Value::as_str));
            tools.push(Tool {
                name,
                raw_name: raw.to_string(),
                description,
                input_schema: rules::llm_input_schema(obj.get("inputSchema")),
            });
        }
        Ok(tools)
    }

    fn connect_failed(&mut self, message: String) {
        self.events.push_back(Event::ConnectFailed(message));
        self.phase = Phase::Closed;
        self.pending.clear();
        self.out.clear();
    }

    fn fail(&mut self, kind: Pending, id: u64, message: String) {
        match kind {
            Pending::Call(raw) => {
                let text = rules::call_failed(&raw, &message);
                self.events.push_back(Event::CallDone(id, CallOutcome { text, is_error: true }));
            }
            Pending::Initialize | Pending::ListPage => {
                if self.phase == Phase::Connecting {
                    self.connect_failed(message);
                }
            }
        }
    }

    fn send_cancelled(&mut self, id: u64, reason: &str) {
        if self.phase == Phase::Closed {
            return;
        }
        let mut line = format!(
            "{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{{\"requestId\":{id},\"reason\":"
        );
        push_json_string(&mut line, reason);
        line.push_str("}}");
        self.out.push_back(line);
    }

    fn request(&mut self, method: &str, params: &str, kind: Pending, now: Instant) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":");
        push_json_string(&mut line, method);
        line.push_str(",\"params\":");
        line.push_str(params);
        line.push('}');
        self.out.push_back(line);
        self.pending.push((id, kind, now + self.config.request_timeout));
        id
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn config(prefix: Option<&str>) -> Config {
        Config {
            client_name: rules::DEFAULT_CLIENT_NAME.into(),
            client_version: rules::DEFAULT_CLIENT_VERSION.into(),
            name_prefix: prefix.map(str::to_string),
            request_timeout: Duration::from_millis(1000),
        }
    }

    fn sent(s: &mut Session) -> Vec<Value> {
        std::iter::from_fn(|| s.poll_transmit()).map(|l| serde_json::from_str(&l).unwrap()).collect()
    }

    fn events(s: &mut Session) -> Vec<Event> {
        std::iter::from_fn(|| s.poll_event()).collect()
    }

    fn reply(s: &mut Session, id: u64, result: Value, now: Instant) {
        s.handle_line(&json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string(), now);
    }

    /// A session through initialize and one list page with `tools`.
    fn ready(tools: Value, t0: Instant) -> Session {
        let mut s = Session::new(config(None), t0);
        sent(&mut s);
        reply(
            &mut s,
            0,
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "serverInfo": {"name": "x", "version": "1"}}),
            t0,
        );
        sent(&mut s);
        reply(&mut s, 1, json!({"tools": tools}), t0);
        s
    }

    #[test]
    fn handshake_and_pagination() {
        let t0 = Instant::now();
        let mut s = Session::new(config(Some("fs")), t0);
        assert_eq!(
            sent(&mut s),
            vec![
                json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": {"name": "open-multi-agent", "version": "0.0.0"}}})
            ]
        );
        assert_eq!(s.poll_deadline(), Some(t0 + Duration::from_millis(1000)));
        // A server request before the answer: ping is answered, others refused.
        s.handle_line(r#"{"jsonrpc":"2.0","id":"p1","method":"ping"}"#, t0);
        s.handle_line(r#"{"jsonrpc":"2.0","id":9,"method":"roots/list"}"#, t0);
        s.handle_line("not json at all", t0);
        s.handle_line(r#"{"jsonrpc":"2.0","method":"notifications/message","params":{}}"#, t0);
        assert_eq!(
            sent(&mut s),
            vec![
                json!({"jsonrpc": "2.0", "id": "p1", "result": {}}),
                json!({"jsonrpc": "2.0", "id": 9, "error": {"code": -32601, "message": "Method not found"}})
            ]
        );
        let t1 = t0 + Duration::from_millis(500);
        reply(&mut s, 0, json!({"protocolVersion": "2024-11-05", "capabilities": {"tools": {}}}), t1);
        assert_eq!(
            sent(&mut s),
            vec![
                json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
                json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}})
            ]
        );
        // Each page has its own deadline.
        assert_eq!(s.poll_deadline(), Some(t1 + Duration::from_millis(1000)));
        reply(
            &mut s,
            1,
            json!({"tools": [{"name": "a/b", "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}}}], "nextCursor": "c2"}),
            t1,
        );
        assert_eq!(
            sent(&mut s),
            vec![json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": "c2"}})]
        );
        reply(
            &mut s,
            2,
            json!({"tools": [{"name": "c", "description": "see", "inputSchema": []}], "nextCursor": ""}),
            t1,
        );
        assert_eq!(
            events(&mut s),
            vec![Event::Ready(vec![
                Tool {
                    name: "fs_a_b".into(),
                    raw_name: "a/b".into(),
                    description: "MCP tool: a/b".into(),
                    input_schema: json!({"type": "object", "properties": {"p": {"type": "string"}}})
                },
                Tool {
                    name: "fs_c".into(),
                    raw_name: "c".into(),
                    description: "see".into(),
                    input_schema: json!({"type": "object"})
                },
            ])]
        );
        assert_eq!(s.poll_deadline(), None);
    }

    #[test]
    fn duplicates_and_bad_versions_fail_connect() {
        let t0 = Instant::now();
        let mut s = ready(json!([{"name": "a/b"}, {"name": "a_b"}]), t0);
        assert_eq!(
            events(&mut s),
            vec![Event::ConnectFailed(
                "Duplicate MCP tool name after normalization: \"a_b\" from \"a/b\" and \"a_b\".".into()
            )]
        );
        assert!(s.is_closed());

        let mut s = Session::new(config(None), t0);
        reply(&mut s, 0, json!({"protocolVersion": "1999-01-01"}), t0);
        assert_eq!(
            events(&mut s),
            vec![Event::ConnectFailed("Server's protocol version is not supported: 1999-01-01".into())]
        );

        let mut s = Session::new(config(None), t0);
        s.handle_line(r#"{"jsonrpc":"2.0","id":0,"error":{"code":-32602,"message":"bad params"}}"#, t0);
        assert_eq!(events(&mut s), vec![Event::ConnectFailed("MCP error -32602: bad params".into())]);
    }

    #[test]
    fn connect_timeout_and_close() {
        let t0 = Instant::now();
        let mut s = Session::new(config(None), t0);
        sent(&mut s);
        s.handle_timeout(t0 + Duration::from_millis(999));
        assert!(events(&mut s).is_empty());
        s.handle_timeout(t0 + Duration::from_millis(1000));
        assert_eq!(events(&mut s), vec![Event::ConnectFailed("MCP error -32001: Request timed out".into())]);

        let mut s = Session::new(config(None), t0);
        s.close(None);
        assert_eq!(events(&mut s), vec![Event::ConnectFailed("MCP error -32000: Connection closed".into())]);
    }

    #[test]
    fn calls_results_errors_cancel_timeout_close() {
        let t0 = Instant::now();
        let mut s = ready(json!([{"name": "echo"}]), t0);
        assert!(matches!(events(&mut s).as_slice(), [Event::Ready(_)]));
        let a = s.call_tool("echo", r#"{"x":1}"#, t0);
        assert_eq!(
            sent(&mut s),
            vec![
                json!({"jsonrpc": "2.0", "id": a, "method": "tools/call", "params": {"name": "echo", "arguments": {"x": 1}}})
            ]
        );
        reply(&mut s, a, json!({"content": [{"type": "text", "text": "hi"}], "isError": true}), t0);
        assert_eq!(events(&mut s), vec![Event::CallDone(a, CallOutcome { text: "hi".into(), is_error: true })]);

        let b = s.call_tool("echo", "{}", t0);
        s.handle_line(
            &format!(r#"{{"jsonrpc":"2.0","id":{b},"error":{{"code":-32602,"message":"Unknown tool"}}}}"#),
            t0,
        );
        assert_eq!(
            events(&mut s),
            vec![Event::CallDone(
                b,
                CallOutcome { text: "MCP tool \"echo\" failed: MCP error -32602: Unknown tool".into(), is_error: true }
            )]
        );

        let c = s.call_tool("echo", "{}", t0);
        sent(&mut s);
        s.cancel(c, "AbortError: This operation was aborted");
        assert_eq!(
            sent(&mut s),
            vec![
                json!({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": c, "reason": "AbortError: This operation was aborted"}})
            ]
        );
        assert_eq!(
            events(&mut s),
            vec![Event::CallDone(
                c,
                CallOutcome {
                    text: "MCP tool \"echo\" failed: MCP error -32001: AbortError: This operation was aborted".into(),
                    is_error: true
                }
            )]
        );
        // A late answer to the cancelled call is dropped.
        reply(&mut s, c, json!({"content": []}), t0);
        assert!(events(&mut s).is_empty());

        let d = s.call_tool("echo", "{}", t0);
        let t1 = t0 + Duration::from_millis(400);
        let e = s.call_tool("echo", "{}", t1);
        sent(&mut s);
        s.handle_timeout(t0 + Duration::from_millis(1000));
        assert_eq!(sent(&mut s).len(), 1);
        assert_eq!(
            events(&mut s),
            vec![Event::CallDone(
                d,
                CallOutcome {
                    text: "MCP tool \"echo\" failed: MCP error -32001: Request timed out".into(),
                    is_error: true
                }
            )]
        );
        assert_eq!(s.poll_deadline(), Some(t1 + Duration::from_millis(1000)));

        s.close(Some("the server exited"));
        assert_eq!(
            events(&mut s),
            vec![Event::CallDone(
                e,
                CallOutcome {
                    text: "MCP tool \"echo\" failed: MCP error -32000: Connection closed (the server exited)".into(),
                    is_error: true
                }
            )]
        );
        let f = s.call_tool("echo", "{}", t1);
        assert!(sent(&mut s).is_empty());
        assert_eq!(
            events(&mut s),
            vec![Event::CallDone(
                f,
                CallOutcome {
                    text: "MCP tool \"echo\" failed: MCP error -32000: Connection closed".into(),
                    is_error: true
                }
            )]
        );
    }
}
