//! The Streamable HTTP transport (MCP 2025-03-26 and later): each message the session writes
//! is POSTed to the server's URL; an answer comes back as one JSON body or as a
//! `text/event-stream` of messages (parsed with oma-llm's SSE parser), and every message read is
//! handed to the same [`Session`](crate::session::Session) as over stdio.
//!
//! - **Session id:** `Mcp-Session-Id` from the `initialize` answer is sent on every later
//!   request, with `MCP-Protocol-Version`; a 404 on a request with a session id means the
//!   server dropped the session and ends the connection. `disconnect()` sends `DELETE`.
//! - **Headers:** the config's `headers` on every request; a bearer token
//!   (`Authorization: Bearer …`) set by the glue before connect and before each call.
//! - **Redirects:** as the LLM adapters (oma-llm's rule and texts): 307 and 308 to the same
//!   origin are followed (at most `MAX_REDIRECTS`), a redirect to another origin is the request's
//!   error, so neither headers nor token go anywhere but the configured origin. Other 3xx are
//!   errors.
//! - **Egress policy** (`egressPolicy`, upstream 1.16's, as for the adapters): the URL is
//!   checked before connecting and every request (each redirect hop and resumption) before it is
//!   sent; under a policy no redirect is followed.
//! - **Resumption:** an answer stream that drops after the server gave event ids is continued
//!   with `GET` and `Last-Event-ID` after the server's `retry:` wait (twice at most).
//! - **Order:** notifications and answers to the server are sent one after the other (the
//!   server sees `notifications/initialized` before the next request); requests run
//!   concurrently, each under the session's deadline.
//! - **Each request's connection ends with the request:** a request runs in a task of its own,
//!   aborted when the session says the request is over ([`Transmit::End`]: answered, timed out,
//!   cancelled), which drops its response and so closes its connection, whether the server was
//!   still streaming events or had not answered the POST at all. Notifications and answers to
//!   the server are POSTed in order, each under the request timeout.
//! - **Bounded:** what the streams deliver and what the session writes pass through the
//!   byte-bounded queues of [`crate::queue`]; a server that floods requests over its streams
//!   while refusing the answers' POSTs stalls its own streams.
//! - The connection pool and TLS are oma-llm's process-wide client.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use oma_llm::egress::{redirect_refused, Egress, EgressPolicy};
use oma_llm::limits::{cross_origin_redirect, too_many_redirects, MAX_REDIRECTS};
use oma_llm::sse::{SseEvent, SseParser};
use reqwest::header::{HeaderMap, HeaderName, HeaderValue, ACCEPT, AUTHORIZATION, CONTENT_TYPE, LOCATION};
use reqwest::{Method, StatusCode, Url};
use serde_json::Value;
use tokio::sync::{mpsc, oneshot};
use tokio::task::{AbortHandle, JoinSet};
use tokio::time::Instant;

use crate::queue;
use crate::session::{Config, Session, Tool, Transmit};
use crate::stdio::{drive, read_bytes, Client, Ending, Read, MAX_LINE_BYTES};

/// How to reach the server.
#[derive(Clone, Debug, Default)]
pub struct HttpSpec {
    pub url: String,
    pub headers: Vec<(String, String)>,
    pub token: Option<String>,
    /// The egress policy every request is checked against (`None`: no policy).
    pub egress: Option<EgressPolicy>,
}

/// The name an egress refusal gives the MCP client (`… denied framework-owned provider "mcp" …`).
pub const EGRESS_PROVIDER: &str = "mcp";

/// The most of an error body put into a message.
const MAX_ERROR_BODY: usize = 4096;
/// How long `DELETE` of the session may take at disconnect.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

/// The connection's state shared by the request tasks.
pub struct Shared {
    url: Url,
    headers: HeaderMap,
    token: Mutex<Option<String>>,
    session_id: Mutex<Option<String>>,
    protocol: Mutex<Option<String>>,
    client: reqwest::Client,
    egress: Option<Egress>,
}

fn lock<T: Clone>(m: &Mutex<T>) -> T {
    m.lock().unwrap_or_else(|e| e.into_inner()).clone()
}

impl Shared {
    fn new(spec: &HttpSpec) -> Result<Shared, String> {
        let url =
            Url::parse(&spec.url).map_err(|_| format!("connectMCPTools: url is not a valid URL: {}", spec.url))?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(format!("connectMCPTools: url must be http: or https:, got {}", spec.url));
        }
        let mut headers = HeaderMap::new();
        for (k, v) in &spec.headers {
            let name = HeaderName::from_bytes(k.as_bytes())
                .map_err(|_| format!("connectMCPTools: headers: invalid header name {k:?}"))?;
            let value =
                HeaderValue::from_str(v).map_err(|_| format!("connectMCPTools: headers: invalid value for {k:?}"))?;
            headers.append(name, value);
        }
        if let Some(t) = &spec.token {
            check_token(t)?;
        }
        let egress = spec.egress.clone().map(|policy| Egress { policy, provider: EGRESS_PROVIDER.to_string() });
        if let Some(e) = &egress {
            e.check(url.as_str()).map_err(|e| e.message)?;
        }
        let client = oma_llm::transport::client().map_err(|e| e.message)?;
        Ok(Shared {
            url,
            headers,
            token: Mutex::new(spec.token.clone()),
            session_id: Mutex::new(None),
            protocol: Mutex::new(None),
            client,
            egress,
        })
    }

    /// Under an egress policy, whether a request may go to `url` (checked before each request).
    fn allowed(&self, url: &Url) -> Result<(), String> {
        match &self.egress {
            Some(e) => e.check(url.as_str()).map_err(|e| e.message),
            None => Ok(()),
        }
    }

    pub(crate) fn set_token(&self, token: Option<String>) {
        *self.token.lock().unwrap_or_else(|e| e.into_inner()) = token.filter(|t| check_token(t).is_ok());
    }

    fn headers(&self, with_body: bool) -> HeaderMap {
        let mut h = self.headers.clone();
        h.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
        if with_body {
            h.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        }
        if let Some(t) = lock(&self.token) {
            if let Ok(v) = HeaderValue::from_str(&format!("Bearer {t}")) {
                h.insert(AUTHORIZATION, v);
            }
        }
        if let Some(id) = lock(&self.session_id).and_then(|s| HeaderValue::from_str(&s).ok()) {
            h.insert("mcp-session-id", id);
        }
        if let Some(p) = lock(&self.protocol).and_then(|s| HeaderValue::from_str(&s).ok()) {
            h.insert("mcp-protocol-version", p);
        }
        h
    }

    /// Sends `method` with the connection's headers, following same-origin 307/308 redirects.
    async fn send(&self, method: Method, body: Option<&str>) -> Result<reqwest::Response, String> {
        let mut url = self.url.clone();
        let mut hops = 0;
        loop {
            self.allowed(&url)?;
            let mut req = self.client.request(method.clone(), url.clone()).headers(self.headers(body.is_some()));
            if let Some(b) = body {
                req = req.body(b.to_string());
            }
            let resp = req.send().await.map_err(|_| "fetch failed".to_string())?;
            let status = resp.status().as_u16();
            if !matches!(status, 307 | 308) {
                return Ok(resp);
            }
            let Some(to) = resp.headers().get(LOCATION).and_then(|l| l.to_str().ok()).and_then(|l| url.join(l).ok())
            else {
                return Ok(resp);
            };
            // Under a policy no redirect is followed (the adapters' rule: an allowed origin
            // cannot forward the request, its headers and token elsewhere).
            if self.egress.is_some() {
                return Err(redirect_refused(status, &url, &to).message);
            }
            if to.origin() != url.origin() {
                return Err(cross_origin_redirect(status, &url, &to).message);
            }
            if hops >= MAX_REDIRECTS {
                return Err(too_many_redirects(status).message);
            }
            hops += 1;
            url = to;
        }
    }

    /// `GET` with `Last-Event-ID`: the continuation of a dropped stream.
    async fn resume(&self, last_event_id: &str) -> Result<reqwest::Response, String> {
        let mut h = self.headers(false);
        h.insert(ACCEPT, HeaderValue::from_static("text/event-stream"));
        if let Ok(v) = HeaderValue::from_str(last_event_id) {
            h.insert("last-event-id", v);
        }
        self.allowed(&self.url)?;
        self.client.get(self.url.clone()).headers(h).send().await.map_err(|_| "fetch failed".to_string())
    }

    /// `DELETE` of the session at disconnect (best effort: the server may not support it).
    pub(crate) async fn end_session(&self) {
        if lock(&self.session_id).is_some() {
            let _ = tokio::time::timeout(DELETE_TIMEOUT, self.send(Method::DELETE, None)).await;
        }
    }
}

fn check_token(t: &str) -> Result<(), String> {
    HeaderValue::from_str(&format!("Bearer {t}"))
        .map(|_| ())
        .map_err(|_| "connectMCPTools: the auth token is not a valid header value".to_string())
}

/// Connects over Streamable HTTP: the handshake and the tool list as over stdio.
pub async fn connect(spec: HttpSpec, config: Config) -> Result<(Client, Vec<Tool>), String> {
    let shared = Arc::new(Shared::new(&spec)?);
    let (line_tx, line_rx) = queue::channel::<Read>();
    let (write_tx, write_rx) = queue::channel::<Transmit>();
    tokio::spawn(post_lines(shared.clone(), write_rx, line_tx, config.request_timeout));
    let (tx, rx) = mpsc::unbounded_channel();
    let (ready_tx, ready_rx) = oneshot::channel();
    let session = Session::new(config, Instant::now().into_std());
    tokio::spawn(drive(session, Ending::Http(shared.clone()), line_rx, write_tx, rx, ready_tx));
    let ended = Arc::new(std::sync::atomic::AtomicBool::new(true));
    match ready_rx.await {
        Ok(Ok(tools)) => Ok((Client { tx, pid: None, ended, http: Some(shared) }, tools)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(crate::session::mcp_error(crate::session::CONNECTION_CLOSED, "Connection closed")),
    }
}

/// Sends what the session writes. A request runs in a task of its own until the session ends
/// it; everything ends (dropping, so aborting, the requests in flight) when the driver closes
/// the channel.
async fn post_lines(
    shared: Arc<Shared>,
    mut rx: queue::Receiver<Transmit>,
    tx: queue::Sender<Read>,
    timeout: Duration,
) {
    let mut inflight = JoinSet::new();
    // Request id → its task, until the request is over.
    let mut tasks: HashMap<u64, AbortHandle> = HashMap::new();
    loop {
        tokio::select! {
            item = rx.recv() => {
                let Some((t, permit)) = item else { return };
                let line = match t {
                    Transmit::Line(l) => l,
                    Transmit::End(id) => {
                        // Dropping the task drops its response: the stream and its connection end.
                        if let Some(task) = tasks.remove(&id) {
                            task.abort();
                        }
                        continue;
                    }
                };
                let msg: Value = serde_json::from_str(&line).unwrap_or(Value::Null);
                let request = msg.get("method").and(msg.get("id")).and_then(Value::as_u64);
                match request {
                    Some(id) => {
                        // The task holds the request's text; the queue's room is given back at
                        // once, since the requests in flight are the caller's (its calls).
                        drop(permit);
                        let task = inflight.spawn({
                            let (shared, tx) = (shared.clone(), tx.clone());
                            async move {
                                post_one(shared, line, msg, tx).await;
                                id
                            }
                        });
                        tasks.insert(id, task);
                    }
                    // A notification or an answer to the server: in order, each bounded by the
                    // request timeout (a server that never answers a POST cannot stall the rest),
                    // and holding its room meanwhile (back-pressure on the session).
                    None => {
                        let _ = tokio::time::timeout(timeout, post_one(shared.clone(), line, msg, tx.clone())).await;
                        drop(permit);
                    }
                }
            }
            Some(done) = inflight.join_next(), if !inflight.is_empty() => {
                if let Ok(id) = done {
                    tasks.remove(&id);
                }
            }
        }
    }
}

async fn post_one(shared: Arc<Shared>, line: String, msg: Value, tx: queue::Sender<Read>) {
    let id = msg.get("method").and(msg.get("id")).and_then(Value::as_u64);
    let initialize = msg.get("method").and_then(Value::as_str) == Some("initialize");
    let fail = |message: String| async {
        if let Some(id) = id {
            let r = Read::Fail(id, message);
            let n = read_bytes(&r);
            let _ = tx.send(r, n).await;
        }
    };
    let had_session = lock(&shared.session_id).is_some();
    let resp = match shared.send(Method::POST, Some(&line)).await {
        Ok(r) => r,
        Err(e) => return fail(e).await,
    };
    let status = resp.status();
    if initialize {
        if let Some(sid) = resp.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()) {
            *shared.session_id.lock().unwrap_or_else(|e| e.into_inner()) = Some(sid.to_string());
        }
    }
    if status == StatusCode::NOT_FOUND && had_session {
        let r = Read::End(Some("the server ended the session: HTTP 404".into()));
        let n = read_bytes(&r);
        let _ = tx.send(r, n).await;
        return;
    }
    if !status.is_success() {
        let text = String::from_utf8_lossy(&read_prefix(resp, MAX_ERROR_BODY).await).into_owned();
        return fail(format!("Streamable HTTP error: Error POSTing to endpoint: {text}")).await;
    }
    if status == StatusCode::ACCEPTED || id.is_none() {
        return;
    }
    let ct = resp.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or("").to_ascii_lowercase();
    if ct.starts_with("text/event-stream") {
        let answered = read_events(&shared, resp, id, initialize, &tx).await;
        if !answered {
            fail("Streamable HTTP error: the response stream ended before the answer".into()).await;
        }
    } else if ct.starts_with("application/json") {
        match read_bounded(resp, MAX_LINE_BYTES).await {
            Some(body) => {
                let text = String::from_utf8_lossy(&body).into_owned();
                for m in messages(&text) {
                    if initialize {
                        note_protocol(&shared, &m);
                    }
                    let n = m.len();
                    let _ = tx.send(Read::Line(m), n).await;
                }
            }
            None => {
                fail(format!("Streamable HTTP error: the answer is longer than {MAX_LINE_BYTES} bytes or was cut off"))
                    .await
            }
        }
    } else {
        fail(format!("Streamable HTTP error: Unexpected content type: {ct}")).await;
    }
}

/// A JSON body: one message or a batch.
fn messages(text: &str) -> Vec<String> {
    match serde_json::from_str::<Value>(text) {
        Ok(Value::Array(a)) => a.iter().map(Value::to_string).collect(),
        _ => vec![text.to_string()],
    }
}

/// The negotiated protocol version from the `initialize` answer, for the later requests' header.
fn note_protocol(shared: &Shared, message: &str) {
    if let Ok(v) = serde_json::from_str::<Value>(message) {
        if let Some(p) = v.get("result").and_then(|r| r.get("protocolVersion")).and_then(Value::as_str) {
            *shared.protocol.lock().unwrap_or_else(|e| e.into_inner()) = Some(p.to_string());
        }
    }
}

/// How many times a dropped answer stream is resumed (the SDK's default `maxRetries`).
const MAX_RESUMES: usize = 2;
/// The wait before resuming when the server gave no `retry:` (the SDK's initial delay).
const DEFAULT_RETRY_MS: u64 = 1000;

/// Feeds a response's events to the session; whether the answer to `id` was among them. A
/// stream that ends (or breaks) before the answer, after the server gave event ids, is resumed:
/// after its `retry:` wait, a `GET` with `Last-Event-ID` continues it (at most `MAX_RESUMES`
/// times; the request's own deadline still applies in the session).
async fn read_events(
    shared: &Shared,
    resp: reqwest::Response,
    id: Option<u64>,
    initialize: bool,
    tx: &queue::Sender<Read>,
) -> bool {
    let mut first = Some(resp);
    let (mut last, mut retry) = (None::<String>, None::<u64>);
    for _ in 0..=MAX_RESUMES {
        let resp = match first.take() {
            Some(r) => r,
            None => {
                let Some(l) = &last else { return false };
                tokio::time::sleep(Duration::from_millis(retry.unwrap_or(DEFAULT_RETRY_MS))).await;
                match shared.resume(l).await {
                    Ok(r) if r.status().is_success() => r,
                    _ => return false,
                }
            }
        };
        // Each stream has its own line state; the id and the wait carry over.
        let mut parser = SseParser::new();
        if read_stream(shared, &mut parser, resp, id, initialize, tx).await {
            return true;
        }
        last = parser.last_event_id().map(str::to_string).or(last);
        retry = parser.retry_ms().or(retry);
        if last.is_none() {
            return false;
        }
    }
    false
}

/// One stream's events; whether the answer was among them.
async fn read_stream(
    shared: &Shared,
    parser: &mut SseParser,
    mut resp: reqwest::Response,
    id: Option<u64>,
    initialize: bool,
    tx: &queue::Sender<Read>,
) -> bool {
    let mut events: Vec<SseEvent> = Vec::new();
    let mut answered = false;
    loop {
        let chunk = match resp.chunk().await {
            Ok(Some(c)) => c,
            Ok(None) | Err(_) => {
                let _ = parser.finish(&mut events);
                break;
            }
        };
        if parser.push(&chunk, &mut events).is_err() {
            break;
        }
        for ev in events.drain(..) {
            answered |= deliver(shared, ev, id, initialize, tx).await;
        }
        if answered {
            // The answer is in: nothing more is expected on this stream.
            return true;
        }
    }
    for ev in events.drain(..) {
        answered |= deliver(shared, ev, id, initialize, tx).await;
    }
    answered
}

async fn deliver(shared: &Shared, ev: SseEvent, id: Option<u64>, initialize: bool, tx: &queue::Sender<Read>) -> bool {
    if ev.data.is_empty() || ev.event.as_deref().is_some_and(|e| e != "message") {
        return false;
    }
    let is_answer = serde_json::from_str::<Value>(&ev.data)
        .ok()
        .is_some_and(|v| v.get("method").is_none() && v.get("id").and_then(Value::as_u64) == id && id.is_some());
    if is_answer && initialize {
        note_protocol(shared, &ev.data);
    }
    let n = ev.data.len();
    let _ = tx.send(Read::Line(ev.data), n).await;
    is_answer
}

async fn read_bounded(mut resp: reqwest::Response, limit: usize) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    while let Ok(Some(c)) = resp.chunk().await {
        if out.len() + c.len() > limit {
            return None;
        }
        out.extend_from_slice(&c);
    }
    Some(out)
}

/// At most `limit` bytes of a body (an error body, for its message).
async fn read_prefix(mut resp: reqwest::Response, limit: usize) -> Vec<u8> {
    let mut out = Vec::new();
    while let Ok(Some(c)) = resp.chunk().await {
        out.extend_from_slice(&c[..c.len().min(limit - out.len())]);
        if out.len() >= limit {
            break;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(url: &str, egress: Option<EgressPolicy>) -> HttpSpec {
        HttpSpec { url: url.into(), egress, ..HttpSpec::default() }
    }

    #[test]
    fn the_egress_policy_is_checked_before_connecting_and_on_each_url() {
        let allow = EgressPolicy::Allowlist(vec!["http://127.0.0.1:9".into()]);
        let err = Shared::new(&spec("http://127.0.0.1:8/mcp", Some(allow.clone()))).err().unwrap();
        assert_eq!(err, "Egress policy denied framework-owned provider \"mcp\" request to http://127.0.0.1:8.");
        let ok = Shared::new(&spec("http://127.0.0.1:9/mcp", Some(allow))).unwrap();
        assert!(ok.allowed(&Url::parse("http://127.0.0.1:9/other").unwrap()).is_ok());
        assert!(ok.allowed(&Url::parse("http://127.0.0.1:8/mcp").unwrap()).is_err());
        let offline = Shared::new(&spec("http://localhost:1/mcp", Some(EgressPolicy::Offline))).unwrap();
        assert!(offline.allowed(&Url::parse("http://10.0.0.1/mcp").unwrap()).is_err());
        // No policy: nothing is refused.
        let open = Shared::new(&spec("http://10.0.0.1/mcp", None)).unwrap();
        assert!(open.allowed(&Url::parse("http://10.0.0.2/mcp").unwrap()).is_ok());
    }
}
