//! `transport::Http` on the JS thread's own event loop (`uv.rs`): hyper's HTTP/1.1 client
//! over `UvTcp`, with a keep-alive pool per origin. Plain HTTP only (local model servers);
//! TLS endpoints keep the LLM I/O thread.
//!
//! Connections are opened on the I/O thread (name resolution and connect may block or take
//! long) and handed over; everything after that (writing requests, reading responses, the
//! keep-alive pool) happens on the JS thread without a thread hop.

use std::cell::RefCell;
use std::collections::HashMap;
use std::time::Duration;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::client::conn::http1::{self, SendRequest};
use hyper_util::rt::TokioIo;
use reqwest::header::HeaderMap;

use super::uv::{self, UvTcp};
use crate::llm::transport::{AttemptError, Http, HttpRequest, HttpResponse};

type Sender = SendRequest<Full<Bytes>>;

/// Idle connections kept per origin.
const MAX_IDLE: usize = 32;

thread_local! {
    /// Leaked like the executor (`uv.rs`): dropping connections while the process exits would
    /// wake tasks through thread-locals that are already gone.
    static POOL: &'static RefCell<HashMap<String, Vec<Sender>>> = Box::leak(Box::new(RefCell::new(HashMap::new())));
}

fn pop_idle(key: &str) -> Option<Sender> {
    POOL.with(|p| p.borrow_mut().get_mut(key)?.pop())
}

/// An idle connection that is still open. One whose response just ended may not have been
/// polled back to idle yet: waited for (a moment), not dropped.
async fn take_idle(key: &str) -> Option<Sender> {
    while let Some(mut s) = pop_idle(key) {
        if !s.is_closed() && s.ready().await.is_ok() {
            return Some(s);
        }
    }
    None
}

fn put_idle(key: String, s: Sender) {
    if s.is_closed() {
        return;
    }
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let idle = p.entry(key).or_default();
        if idle.len() < MAX_IDLE {
            idle.push(s);
        }
    })
}

/// Opens a connection on the I/O thread and continues it here.
async fn connect(host: String, port: u16) -> Result<Sender, AttemptError> {
    let opened = crate::llm::runtime::spawn(async move {
        let s = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
        s.set_nodelay(true)?;
        s.into_std()
    });
    let sock = opened.await.map_err(|_| AttemptError::Connection)?.map_err(|_| AttemptError::Connection)?;
    let io = UvTcp::new(sock).map_err(|_| AttemptError::Connection)?;
    let (sender, conn) = http1::handshake(TokioIo::new(io)).await.map_err(|_| AttemptError::Connection)?;
    uv::spawn_local(async move {
        let _ = conn.await;
    });
    Ok(sender)
}

/// The JS thread's HTTP stack. Only used where `uv::available` holds.
pub struct LocalHttp;

pub struct LocalResponse {
    status: u16,
    headers: HeaderMap,
    body: Incoming,
    /// The connection, back to the pool once the body has been read.
    conn: (String, Sender),
}

impl LocalResponse {
    fn new(resp: hyper::Response<Incoming>, conn: (String, Sender)) -> LocalResponse {
        let (parts, body) = resp.into_parts();
        LocalResponse { status: parts.status.as_u16(), headers: parts.headers, body, conn }
    }
}

impl Http for LocalHttp {
    type Response = LocalResponse;

    async fn attempt(&self, req: &HttpRequest) -> Result<LocalResponse, AttemptError> {
        let uri: hyper::Uri = req.url.parse().map_err(|_| AttemptError::InvalidUrl)?;
        if uri.scheme_str() != Some("http") {
            return Err(AttemptError::InvalidUrl);
        }
        let authority = uri.authority().ok_or(AttemptError::InvalidUrl)?.as_str().to_string();
        let host = uri.host().ok_or(AttemptError::InvalidUrl)?.trim_start_matches('[').trim_end_matches(']').to_string();
        let port = uri.port_u16().unwrap_or(80);
        let path = uri.path_and_query().map(|p| p.as_str()).unwrap_or("/");
        let build = || {
            let mut b = hyper::Request::builder().method(req.method.clone()).uri(path).header("host", authority.as_str());
            for (k, v) in &req.headers {
                b = b.header(*k, v.as_str());
            }
            // reqwest's default, kept so both stacks send the same headers.
            if !req.headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("accept")) {
                b = b.header("accept", "*/*");
            }
            b.body(Full::new(req.body.clone())).map_err(|_| AttemptError::InvalidUrl)
        };
        let key = format!("{host}:{port}");
        if let Some(mut s) = take_idle(&key).await {
            match s.send_request(build()?).await {
                Ok(resp) => return Ok(LocalResponse::new(resp, (key, s))),
                // The server closed the idle connection as the request went out: once more on
                // a new connection (what reqwest's pool does), not an SDK-level retry.
                Err(e) if e.is_canceled() || e.is_incomplete_message() => {}
                Err(_) => return Err(AttemptError::Connection),
            }
        }
        let mut s = connect(host, port).await?;
        match s.send_request(build()?).await {
            Ok(resp) => Ok(LocalResponse::new(resp, (key, s))),
            Err(_) => Err(AttemptError::Connection),
        }
    }

    async fn sleep(&self, d: Duration) {
        uv::Sleep::new(d).await
    }
}

impl HttpResponse for LocalResponse {
    fn status(&self) -> u16 {
        self.status
    }

    fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    async fn bytes(self) -> Result<Bytes, ()> {
        let body = self.body.collect().await.map_err(|_| ())?.to_bytes();
        let (key, conn) = self.conn;
        put_idle(key, conn);
        Ok(body)
    }
}
