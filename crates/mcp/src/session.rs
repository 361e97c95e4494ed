//! The MCP client session as a sans-IO machine: it is handed the lines the server wrote and
//! the current time, and is asked for the lines to write, the next deadline and the events
//! (connected with the tool list, connect failed, a call finished). No I/O, no clock, no
//! threads: the stdio transport (and its tests' scripted drivers) perform what it asks.
//!
//! The sequence of a connect: `initialize` (protocol version, `clientInfo`, capabilities `{}`)
//! under its `requestTimeoutMs` deadline → the server's version checked →
//! `notifications/initialized` → `tools/list` pages while `nextCursor` is a non-empty string,
//! all pages under one `requestTimeoutMs` deadline and within [`rules::MAX_LIST_PAGES`],
//! [`rules::MAX_TOOLS`] and [`rules::MAX_LIST_BYTES`] → the names normalised and checked for
//! duplicates → [`Event::Ready`].
//!
//! **Bounded queues:** what the session queues is bounded by what it was handed: each server
//! line adds at most one line to write (an answer) and one event; each request ends once (one
//! cancellation, one [`Transmit::End`], one event). The transport must stop handing it lines
//! while it cannot write what the session has to say (back-pressure), and it drains the events
//! after each step.
//!
//! **Deep messages:** a message nested deeper than serde_json reads
//! ([`rules::MAX_JSON_DEPTH`]) is read level by level for what the client needs (its id, and
//! the fields of the answer it uses), so the request it answers fails with a clear error (a
//! tool's schema names the tool) rather than waiting for its deadline. One whose id cannot be
//! read is noted, and a later timeout says so.
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
    /// How the texts name the server (the command, or the URL without query).
    pub server: String,
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

/// What the session asks the transport to send.
#[derive(Clone, Debug, PartialEq)]
pub enum Transmit {
    /// A line (without its newline).
    Line(String),
    /// Request `id` is over (answered, timed out, cancelled or failed): a transport that keeps
    /// a stream or a task per request (Streamable HTTP) ends it. Comes after the request's line.
    End(u64),
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
    /// Pages and bytes of `tools/list` read so far, and the listing's one deadline.
    list_pages: usize,
    list_bytes: usize,
    list_deadline: Option<Instant>,
    /// Why a message whose request could not be told was unreadable (a later timeout says so).
    unreadable: Option<String>,
    out: VecDeque<Transmit>,
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
            list_pages: 0,
            list_bytes: 0,
            list_deadline: None,
            unreadable: None,
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

    /// The next line to write, or request to end, in order.
    pub fn poll_transmit(&mut self) -> Option<Transmit> {
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
        self.end(id);
        self.fail(kind, id, mcp_error(REQUEST_TIMEOUT, reason));
    }

    /// The transport could not deliver request `id` or read its answer (an HTTP error status,
    /// a refused redirect): the request fails with `message`. Unknown ids are ignored.
    pub fn fail_request(&mut self, id: u64, message: &str) {
        let Some(i) = self.pending.iter().position(|p| p.0 == id) else { return };
        let (id, kind, _) = self.pending.swap_remove(i);
        self.end(id);
        self.fail(kind, id, message.to_string());
    }

    /// Expires the requests whose deadline has passed.
    pub fn handle_timeout(&mut self, now: Instant) {
        while let Some(i) = self.pending.iter().position(|p| p.2 <= now) {
            let (id, kind, _) = self.pending.swap_remove(i);
            self.send_cancelled(id, "McpError: MCP error -32001: Request timed out");
            self.end(id);
            let message = match &self.unreadable {
                Some(why) => format!("Request timed out ({why})"),
                None => "Request timed out".to_string(),
            };
            self.fail(kind, id, mcp_error(REQUEST_TIMEOUT, &message));
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
        let mut msg = match serde_json::from_str::<Value>(line) {
            Ok(Value::Object(m)) => m,
            Err(e) if is_too_deep(&e) => return self.handle_deep(line, now),
            // Not JSON, or not an object: skipped as the SDK skips it.
            _ => return,
        };
        let method = msg.get("method").and_then(Value::as_str).map(str::to_string);
        match (method, msg.get("id").cloned()) {
            (Some(m), Some(id)) => self.serve(&m, &id),
            // Notifications (progress, logging, list_changed, cancelled): nothing to do for a
            // tools client that lists once.
            (Some(_), None) => {}
            (None, Some(Value::Null)) => {
                if let Some(err) = msg.get("error") {
                    let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
                    let text = err.get("message").and_then(Value::as_str).unwrap_or("");
                    self.unreadable = Some(rules::error_for_no_request(&mcp_error(code, text)));
                }
            }
            (None, Some(id)) => {
                // An answer to no request in flight (a late one, after a timeout or a cancel):
                // nothing waits for it.
                let Some((id, kind)) = self.take_answered(&id) else { return };
                if let Some(err) = msg.get("error") {
                    let code = err.get("code").and_then(Value::as_i64).unwrap_or(0);
                    let text = err.get("message").and_then(Value::as_str).unwrap_or("");
                    self.fail(kind, id, mcp_error(code, text));
                    return;
                }
                let result = msg.remove("result").unwrap_or(Value::Null);
                self.succeed(kind, id, result, line.len(), now);
            }
            (None, None) => {}
        }
    }

    /// A line nested deeper than serde_json reads: its envelope read level by level (a
    /// `RawValue` skips what is below without recursing), then the answer's fields the client
    /// uses; whatever of those is still too deep fails the request it answers, naming it.
    fn handle_deep(&mut self, line: &str, now: Instant) {
        let Some(top) = raw_fields(line) else {
            // Not even the envelope reads (an array nested too deeply, a deep id): no request
            // can be told. Noted for the timeout the request then runs into.
            self.unreadable = Some(rules::unreadable_message());
            return;
        };
        let method = top.get("method").and_then(|m| serde_json::from_str::<String>(m.get()).ok());
        let id = top.get("id").and_then(|r| serde_json::from_str::<Value>(r.get()).ok());
        match (method, id) {
            // A request's params are never read (ping is answered, the rest refused) and a
            // notification's neither: the depth changes nothing.
            (Some(m), Some(id)) => self.serve(&m, &id),
            (Some(_), None) => {}
            (None, Some(id)) => {
                let Some((id, kind)) = self.take_answered(&id) else { return };
                if let Some(err) = top.get("error") {
                    // The code and message only: `data` may be the deep part.
                    let fields = raw_fields(err.get());
                    let field = |k: &str| fields.as_ref().and_then(|f| f.get(k)).map(|r| r.get());
                    let code = field("code").and_then(|c| serde_json::from_str::<i64>(c).ok()).unwrap_or(0);
                    let text = field("message").and_then(|c| serde_json::from_str::<String>(c).ok());
                    return self.fail(kind, id, mcp_error(code, text.as_deref().unwrap_or("")));
                }
                let result = top.get("result").map(|r| r.get()).unwrap_or("null");
                match self.shallow_result(&kind, result) {
                    Ok(result) => self.succeed(kind, id, result, line.len(), now),
                    Err(message) => self.fail(kind, id, message),
                }
            }
            _ => self.unreadable = Some(rules::unreadable_message()),
        }
    }

    /// The fields of a deep answer that `kind` uses, as a value `succeed` takes; the error names
    /// what is too deep (for a tool list, the tool).
    fn shallow_result(&self, kind: &Pending, result: &str) -> Result<Value, String> {
        let Some(fields) = raw_fields(result) else { return Err(rules::message_too_deep("result")) };
        let read = |k: &str| fields.get(k).map(|r| serde_json::from_str::<Value>(r.get()));
        let mut out = serde_json::Map::new();
        match kind {
            Pending::Initialize => {
                // Only the version is read from an `initialize` answer.
                if let Some(Ok(v)) = read("protocolVersion") {
                    out.insert("protocolVersion".into(), v);
                }
            }
            Pending::ListPage => {
                if let Some(Ok(v)) = read("nextCursor") {
                    out.insert("nextCursor".into(), v);
                }
                if let Some(raw) = fields.get("tools") {
                    let Ok(tools) = serde_json::from_str::<Vec<&serde_json::value::RawValue>>(raw.get()) else {
                        return Err(rules::message_too_deep("tools/list result"));
                    };
                    let mut list = Vec::with_capacity(tools.len());
                    for (i, t) in tools.iter().enumerate() {
                        match serde_json::from_str::<Value>(t.get()) {
                            Ok(v) => list.push(v),
                            Err(_) => {
                                let name = raw_fields(t.get())
                                    .and_then(|f| {
                                        f.get("name").and_then(|n| serde_json::from_str::<String>(n.get()).ok())
                                    })
                                    .unwrap_or_else(|| format!("#{i}"));
                                return Err(rules::tool_too_deep(&self.config.server, &name));
                            }
                        }
                    }
                    out.insert("tools".into(), Value::Array(list));
                }
            }
            Pending::Call(_) => {
                // The text is made from all of these; one too deep makes the answer unreadable.
                for k in ["toolResult", "content", "structuredContent", "isError"] {
                    match read(k) {
                        Some(Ok(v)) => {
                            out.insert(k.into(), v);
                        }
                        Some(Err(_)) => return Err(rules::message_too_deep(&format!("answer's {k}"))),
                        None => {}
                    }
                }
            }
        }
        Ok(Value::Object(out))
    }

    fn serve(&mut self, method: &str, id: &Value) {
        let id = oma_core::json::to_js_json(id);
        let line = if method == "ping" {
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{}}}}")
        } else {
            // roots, sampling, elicitation: not offered (capabilities `{}`).
            format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"error\":{{\"code\":{METHOD_NOT_FOUND},\"message\":\"Method not found\"}}}}")
        };
        self.out.push_back(Transmit::Line(line));
    }

    /// `bytes`: the length of the line the result came in (counted against the listing's limit).
    fn succeed(&mut self, kind: Pending, id: u64, result: Value, bytes: usize, now: Instant) {
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
                self.out
                    .push_back(Transmit::Line("{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}".into()));
                // One deadline for the whole listing, whatever its pages.
                self.list_deadline = Some(now + self.config.request_timeout);
                self.request("tools/list", "{}", Pending::ListPage, now);
            }
            Pending::ListPage => {
                let mut result = result;
                self.list_pages += 1;
                self.list_bytes = self.list_bytes.saturating_add(bytes);
                if self.list_bytes > rules::MAX_LIST_BYTES {
                    let what = format!("{} bytes", rules::MAX_LIST_BYTES);
                    return self.connect_failed(rules::list_too_long(&self.config.server, &what));
                }
                if let Some(tools) = result.get_mut("tools") {
                    match tools {
                        Value::Array(a) => {
                            if self.listed.len() + a.len() > rules::MAX_TOOLS {
                                let what = format!("{} tools", rules::MAX_TOOLS);
                                return self.connect_failed(rules::list_too_long(&self.config.server, &what));
                            }
                            self.listed.append(a)
                        }
                        _ => {
                            return self.connect_failed(
                                "MCP server sent an invalid tools/list result: tools is not an array".into(),
                            )
                        }
                    }
                }
                match result.get("nextCursor").and_then(Value::as_str).filter(|c| !c.is_empty()) {
                    Some(_) if self.list_pages >= rules::MAX_LIST_PAGES => {
                        let what = format!("{} pages", rules::MAX_LIST_PAGES);
                        self.connect_failed(rules::list_too_long(&self.config.server, &what))
                    }
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
        self.out.push_back(Transmit::Line(line));
    }

    /// Request `id` is over: the transport may end what it keeps for it.
    /// The request in flight that `id` answers, taken off the list (and its wait ended);
    /// `None` when nothing waits for it.
    fn take_answered(&mut self, id: &Value) -> Option<(u64, Pending)> {
        let id = answer_id(id)?;
        let i = self.pending.iter().position(|p| p.0 == id)?;
        let (_, kind, _) = self.pending.swap_remove(i);
        self.end(id);
        Some((id, kind))
    }

    fn end(&mut self, id: u64) {
        if self.phase != Phase::Closed {
            self.out.push_back(Transmit::End(id));
        }
    }

    fn request(&mut self, method: &str, params: &str, kind: Pending, now: Instant) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        let mut line = format!("{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":");
        push_json_string(&mut line, method);
        line.push_str(",\"params\":");
        line.push_str(params);
        line.push('}');
        self.out.push_back(Transmit::Line(line));
        let deadline = match (&kind, self.list_deadline) {
            (Pending::ListPage, Some(d)) => d,
            _ => now + self.config.request_timeout,
        };
        self.pending.push((id, kind, deadline));
        id
    }
}

/// The request an answer's id names: a number, or a string of digits (the SDK matches answers
/// by `Number(id)`, so a server that echoes ids as strings works with it).
fn answer_id(id: &Value) -> Option<u64> {
    match id {
        Value::Number(n) => n.as_u64(),
        Value::String(s) if !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit()) => s.parse().ok(),
        _ => None,
    }
}

/// Whether serde_json gave up on a line for its nesting (the line is JSON, too deep to read).
fn is_too_deep(e: &serde_json::Error) -> bool {
    e.is_syntax() && e.to_string().starts_with("recursion limit exceeded")
}

/// The top-level fields of a JSON object, each left unread (`None` when `json` is not an
/// object). Reads any depth without recursing: serde_json skips a `RawValue` iteratively.
fn raw_fields(json: &str) -> Option<std::collections::HashMap<String, &serde_json::value::RawValue>> {
    serde_json::from_str(json).ok()
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
            server: "srv".into(),
        }
    }

    /// The lines the session wrote (the ends of requests are checked by `ended`).
    fn sent(s: &mut Session) -> Vec<Value> {
        transmits(s)
            .into_iter()
            .filter_map(|t| match t {
                Transmit::Line(l) => Some(serde_json::from_str(&l).unwrap()),
                Transmit::End(_) => None,
            })
            .collect()
    }

    fn transmits(s: &mut Session) -> Vec<Transmit> {
        std::iter::from_fn(|| s.poll_transmit()).collect()
    }

    fn events(s: &mut Session) -> Vec<Event> {
        std::iter::from_fn(|| s.poll_event()).collect()
    }

    /// The one event a finished call `id` gives.
    fn call_done(id: u64, text: &str, is_error: bool) -> Vec<Event> {
        vec![Event::CallDone(id, CallOutcome { text: text.into(), is_error })]
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
        // The listing has one deadline, whatever its pages.
        assert_eq!(s.poll_deadline(), Some(t1 + Duration::from_millis(1000)));
        let t2 = t1 + Duration::from_millis(700);
        reply(
            &mut s,
            1,
            json!({"tools": [{"name": "a/b", "inputSchema": {"type": "object", "properties": {"p": {"type": "string"}}}}], "nextCursor": "c2"}),
            t2,
        );
        assert_eq!(
            transmits(&mut s),
            vec![
                Transmit::End(1),
                Transmit::Line(r#"{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"c2"}}"#.into())
            ]
        );
        assert_eq!(s.poll_deadline(), Some(t1 + Duration::from_millis(1000)));
        reply(
            &mut s,
            2,
            json!({"tools": [{"name": "c", "description": "see", "inputSchema": []}], "nextCursor": ""}),
            t2,
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
        assert_eq!(events(&mut s), call_done(a, "hi", true));

        let b = s.call_tool("echo", "{}", t0);
        s.handle_line(
            &format!(r#"{{"jsonrpc":"2.0","id":{b},"error":{{"code":-32602,"message":"Unknown tool"}}}}"#),
            t0,
        );
        assert_eq!(events(&mut s), call_done(b, "MCP tool \"echo\" failed: MCP error -32602: Unknown tool", true));

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
            call_done(c, "MCP tool \"echo\" failed: MCP error -32001: AbortError: This operation was aborted", true)
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
        assert_eq!(events(&mut s), call_done(d, "MCP tool \"echo\" failed: MCP error -32001: Request timed out", true));
        assert_eq!(s.poll_deadline(), Some(t1 + Duration::from_millis(1000)));

        s.close(Some("the server exited"));
        assert_eq!(
            events(&mut s),
            call_done(e, "MCP tool \"echo\" failed: MCP error -32000: Connection closed (the server exited)", true)
        );
        let f = s.call_tool("echo", "{}", t1);
        assert!(sent(&mut s).is_empty());
        assert_eq!(events(&mut s), call_done(f, "MCP tool \"echo\" failed: MCP error -32000: Connection closed", true));
    }

    /// A session through `initialize`, waiting for the first `tools/list` page (id 1).
    fn listing(t0: Instant) -> Session {
        let mut s = Session::new(config(None), t0);
        reply(&mut s, 0, json!({"protocolVersion": "2025-06-18"}), t0);
        transmits(&mut s);
        s
    }

    fn deep(levels: usize) -> String {
        format!("{}1{}", "{\"a\":".repeat(levels), "}".repeat(levels))
    }

    #[test]
    fn endless_pagination_stops_at_the_page_limit() {
        let t0 = Instant::now();
        let mut s = listing(t0);
        for id in 1..=rules::MAX_LIST_PAGES as u64 {
            assert!(events(&mut s).is_empty(), "page {id}");
            reply(&mut s, id, json!({"tools": [], "nextCursor": format!("c{id}")}), t0);
        }
        assert_eq!(
            events(&mut s),
            vec![Event::ConnectFailed(
                "MCP server \"srv\" listed more than 1000 pages in tools/list (the limit for one server)".into()
            )]
        );
        assert!(s.is_closed());
        assert!(sent(&mut s).is_empty(), "no further page is asked for");
    }

    #[test]
    fn the_tool_and_byte_limits() {
        let t0 = Instant::now();
        let mut s = listing(t0);
        let page: Vec<Value> = (0..rules::MAX_TOOLS / 2).map(|i| json!({"name": format!("t{i}")})).collect();
        reply(&mut s, 1, json!({"tools": page, "nextCursor": "more"}), t0);
        reply(&mut s, 2, json!({"tools": page, "nextCursor": "more"}), t0);
        assert!(events(&mut s).is_empty(), "exactly the limit is fine");
        reply(&mut s, 3, json!({"tools": [{"name": "one-more"}]}), t0);
        assert_eq!(
            events(&mut s),
            vec![Event::ConnectFailed(
                "MCP server \"srv\" listed more than 10000 tools in tools/list (the limit for one server)".into()
            )]
        );

        let mut s = listing(t0);
        let description = "d".repeat(rules::MAX_LIST_BYTES / 4);
        for id in 1..=4 {
            reply(
                &mut s,
                id,
                json!({"tools": [{"name": format!("t{id}"), "description": description}], "nextCursor": "n"}),
                t0,
            );
        }
        assert_eq!(
            events(&mut s),
            vec![Event::ConnectFailed(
                "MCP server \"srv\" listed more than 33554432 bytes in tools/list (the limit for one server)".into()
            )]
        );
    }

    #[test]
    fn one_deadline_for_the_whole_listing() {
        let t0 = Instant::now();
        let mut s = listing(t0);
        let step = Duration::from_millis(300);
        for id in 1..=3 {
            let now = t0 + step * id as u32;
            s.handle_timeout(now);
            reply(&mut s, id, json!({"tools": [], "nextCursor": "again"}), now);
        }
        assert!(events(&mut s).is_empty());
        // Page 4 was asked for at 900 ms; the listing started at 0: it ends at 1000 ms, not 1900.
        assert_eq!(s.poll_deadline(), Some(t0 + Duration::from_millis(1000)));
        s.handle_timeout(t0 + Duration::from_millis(1000));
        assert_eq!(events(&mut s), vec![Event::ConnectFailed("MCP error -32001: Request timed out".into())]);
    }

    #[test]
    fn deep_messages_fail_their_request_with_a_clear_error() {
        let t0 = Instant::now();
        // A tool whose schema is 150 levels deep: the connect fails naming it, at once.
        let mut s = listing(t0);
        let line = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{{"tools":[{{"name":"ok"}},{{"name":"deep","inputSchema":{}}}]}}}}"#,
            deep(150)
        );
        s.handle_line(&line, t0);
        assert_eq!(
            events(&mut s),
            vec![Event::ConnectFailed(
                "MCP server \"srv\" listed tool \"deep\" with an inputSchema nested too deeply to read (a message may nest at most 128 levels)".into()
            )]
        );
        // Deep where the client reads nothing (a result's _meta, an error's data, a request's
        // params): the message is used as usual.
        let mut s = listing(t0);
        let line = format!(r#"{{"jsonrpc":"2.0","id":1,"result":{{"_meta":{},"tools":[{{"name":"t"}}]}}}}"#, deep(200));
        s.handle_line(&line, t0);
        assert!(matches!(events(&mut s).as_slice(), [Event::Ready(t)] if t.len() == 1));
        s.handle_line(&format!(r#"{{"jsonrpc":"2.0","id":7,"method":"ping","params":{}}}"#, deep(200)), t0);
        assert_eq!(sent(&mut s), vec![json!({"jsonrpc": "2.0", "id": 7, "result": {}})]);
        let a = s.call_tool("t", "{}", t0);
        s.handle_line(
            &format!(r#"{{"jsonrpc":"2.0","id":{a},"error":{{"code":-32603,"message":"boom","data":{}}}}}"#, deep(200)),
            t0,
        );
        assert_eq!(events(&mut s), call_done(a, "MCP tool \"t\" failed: MCP error -32603: boom", true));
        // A call whose answer is too deep where the text is made from.
        let b = s.call_tool("t", "{}", t0);
        s.handle_line(&format!(r#"{{"jsonrpc":"2.0","id":{b},"result":{{"content":[{}]}}}}"#, deep(200)), t0);
        assert_eq!(
            events(&mut s),
            call_done(b, "MCP tool \"t\" failed: the server's answer's content is nested too deeply to read (a message may nest at most 128 levels)", true)
        );
        // No request can be told (the whole message is a deep array): the next timeout says why.
        let c = s.call_tool("t", "{}", t0);
        s.handle_line(&format!("[{}]", deep(200)), t0);
        assert!(events(&mut s).is_empty());
        s.handle_timeout(t0 + Duration::from_secs(1));
        assert_eq!(
            events(&mut s),
            call_done(c, "MCP tool \"t\" failed: MCP error -32001: Request timed out (the server sent a message nested more than 128 levels deep, which could not be read)", true)
        );
    }

    #[test]
    fn every_request_ends_once_after_its_line() {
        let t0 = Instant::now();
        let mut s = ready(json!([{"name": "t"}]), t0);
        events(&mut s);
        transmits(&mut s);
        let a = s.call_tool("t", "{}", t0);
        let b = s.call_tool("t", "{}", t0);
        let c = s.call_tool("t", "{}", t0);
        s.cancel(b, "stop");
        reply(&mut s, a, json!({"content": []}), t0);
        s.handle_timeout(t0 + Duration::from_secs(1));
        let ends: Vec<Transmit> = transmits(&mut s).into_iter().filter(|t| matches!(t, Transmit::End(_))).collect();
        assert_eq!(ends, vec![Transmit::End(b), Transmit::End(a), Transmit::End(c)]);
        // A late answer or a second cancel ends nothing again.
        reply(&mut s, b, json!({"content": []}), t0);
        s.cancel(c, "again");
        assert!(transmits(&mut s).is_empty());
    }

    #[test]
    fn string_ids_and_errors_for_no_request() {
        let t0 = Instant::now();
        let mut s = ready(json!([{"name": "t"}]), t0);
        events(&mut s);
        // The SDK matches answers by Number(id): "2" answers request 2.
        let a = s.call_tool("t", "{}", t0);
        s.handle_line(
            &format!(r#"{{"jsonrpc":"2.0","id":"{a}","result":{{"content":[{{"type":"text","text":"ok"}}]}}}}"#),
            t0,
        );
        assert_eq!(events(&mut s), call_done(a, "ok", false));
        // Not a number's digits: answers nothing.
        let b = s.call_tool("t", "{}", t0);
        s.handle_line(&format!(r#"{{"jsonrpc":"2.0","id":" {b}","result":{{}}}}"#), t0);
        assert!(events(&mut s).is_empty());
        // An error for no request (the server could not parse one): the timeout says so.
        s.handle_line(r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#, t0);
        assert!(events(&mut s).is_empty());
        s.handle_timeout(t0 + Duration::from_secs(1));
        assert_eq!(
            events(&mut s),
            call_done(b, "MCP tool \"t\" failed: MCP error -32001: Request timed out (the server sent an error for no request: MCP error -32700: Parse error)", true)
        );
    }
}
