//! `transport::Http` on the loop's thread: the small HTTP/1.1 client of `oma_llm::http1` over
//! [`Tcp`] (HTTPS: TLS over it, see `io.rs`), with a keep-alive pool per origin. Whether an
//! adapter may use it (no proxy in the way, no token exchange first) is
//! `oma_llm::Adapter::on_any_http`'s rule.
//!
//! Connections are opened on the I/O thread (name resolution and connect may block or take
//! long) and handed over; everything after that (the TLS handshake, writing requests, reading
//! responses, the keep-alive pool) happens on the loop's thread without a thread hop.

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::pin;
use std::rc::Rc;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use oma_llm::http1::{self, BodyReader, Conn, Head, HeadError};
use oma_llm::transport::{AttemptError, BodyError, Http, HttpRequest, HttpResponse};
use rustc_hash::FxHashMap;

use crate::exec::Exec;
use crate::io::Io;
use crate::reactor::Reactor;
use crate::tcp::Tcp;
use crate::timer::Sleep;

/// Idle connections kept per origin.
const MAX_IDLE: usize = 32;

/// Idle keep-alive connections by origin (`Target::key`).
type Pool<R> = RefCell<FxHashMap<String, Vec<Conn<Io<R>>>>>;

/// The request head of the last call but its content-length, with the headers, target and
/// method it was made for (held, so that the pointers it is known by cannot be reused by
/// others).
type LastHead = (Arc<Vec<(&'static str, String)>>, Rc<Target>, reqwest::Method, Vec<u8>);

/// The loop thread's HTTP stack.
pub struct LocalHttp<R: Reactor> {
    exec: Rc<Exec<R>>,
    pool: Rc<Pool<R>>,
    /// The last URL's parts: a run sends every call to the same one.
    last_url: RefCell<Option<(String, Rc<Target>)>>,
    last_head: RefCell<Option<LastHead>>,
    /// Attempts made (`requests`).
    attempts: Cell<u64>,
}

#[derive(Clone)]
struct Target {
    /// `https`: TLS to `host`.
    tls: bool,
    /// `host[:port]` as the Host header carries it.
    authority: String,
    host: String,
    port: u16,
    path: String,
    /// The pool's key for the origin (`scheme://host:port`).
    key: String,
}

impl<R: Reactor> LocalHttp<R> {
    pub fn new(exec: &Rc<Exec<R>>) -> LocalHttp<R> {
        LocalHttp {
            exec: Rc::clone(exec),
            pool: Rc::default(),
            last_url: RefCell::new(None),
            last_head: RefCell::new(None),
            attempts: Cell::new(0),
        }
    }

    /// Request attempts sent from this loop so far (redirect hops and retries each count):
    /// what shows that a call was served here and not on the I/O thread.
    pub fn requests(&self) -> u64 {
        self.attempts.get()
    }

    /// Idle keep-alive connections in the pool.
    pub fn idle_connections(&self) -> usize {
        self.pool.borrow().values().map(Vec::len).sum()
    }

    fn target(&self, url: &str) -> Result<Rc<Target>, AttemptError> {
        if let Some(t) = self.last_url.borrow().as_ref().filter(|(u, _)| u == url).map(|(_, t)| Rc::clone(t)) {
            return Ok(t);
        }
        let u = reqwest::Url::parse(url).map_err(|_| AttemptError::InvalidUrl)?;
        let tls = match u.scheme() {
            "http" => false,
            "https" => true,
            _ => return Err(AttemptError::InvalidUrl),
        };
        if !u.username().is_empty() || u.password().is_some() {
            return Err(AttemptError::InvalidUrl);
        }
        let host = u.host_str().ok_or(AttemptError::InvalidUrl)?.to_string();
        let authority = match u.port() {
            Some(p) => format!("{host}:{p}"),
            None => host.clone(),
        };
        let path = match u.query() {
            Some(q) => format!("{}?{q}", u.path()),
            None => u.path().to_string(),
        };
        let host = host.trim_start_matches('[').trim_end_matches(']').to_string();
        let port = u.port_or_known_default().ok_or(AttemptError::InvalidUrl)?;
        let key = format!("{}://{host}:{port}", u.scheme());
        let t = Rc::new(Target { tls, authority, key, host, port, path });
        *self.last_url.borrow_mut() = Some((url.to_string(), Rc::clone(&t)));
        Ok(t)
    }

    /// The request head: all but its content-length is the same for every call of a run, so
    /// the last one is kept.
    fn head_for(&self, req: &HttpRequest, t: &Rc<Target>) -> Result<Vec<u8>, AttemptError> {
        let mut l = self.last_head.borrow_mut();
        let hit = l
            .as_ref()
            .is_some_and(|(h, lt, m, _)| Arc::ptr_eq(h, &req.headers) && Rc::ptr_eq(lt, t) && *m == req.method);
        if !hit {
            // The head for a zero-length body, cut before its length.
            let mut head = http1::request_head(req.method.as_str(), &t.path, &t.authority, &req.headers, 0)
                .ok_or(AttemptError::InvalidUrl)?;
            head.truncate(head.len() - "0\r\n\r\n".len());
            *l = Some((req.headers.clone(), Rc::clone(t), req.method.clone(), head));
        }
        let prefix = &l.as_ref().expect("set above").3;
        let mut head = Vec::with_capacity(prefix.len() + 24);
        head.extend_from_slice(prefix);
        head.extend_from_slice(oma_core::json::decimal_digits(req.body.len() as u64, &mut [0; 20]));
        head.extend_from_slice(b"\r\n\r\n");
        Ok(head)
    }

    /// An idle connection that the loop has not seen closed. One the server closed unnoticed
    /// is found out by the exchange (`HeadError::Closed`) and replaced.
    fn take_idle(&self, key: &str) -> Option<Conn<Io<R>>> {
        let mut p = self.pool.borrow_mut();
        let idle = p.get_mut(key)?;
        while let Some(c) = idle.pop() {
            if c.io().idle_and_open() {
                return Some(c);
            }
        }
        None
    }

    /// Opens a connection on the I/O thread and continues it here (the TLS handshake too).
    /// A certificate the verifier refuses fails the attempt as a connection error, as on
    /// reqwest.
    async fn connect(&self, t: &Target) -> Result<Conn<Io<R>>, AttemptError> {
        // Checked before connecting: a name rustls cannot take is an invalid URL.
        let name = if t.tls {
            let n = rustls::pki_types::ServerName::try_from(t.host.clone()).map_err(|_| AttemptError::InvalidUrl)?;
            Some((n, oma_llm::transport::tls_config().map_err(|_| AttemptError::Connection)?))
        } else {
            None
        };
        let (host, port) = (t.host.clone(), t.port);
        let opened = oma_llm::runtime::spawn(async move {
            let s = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
            s.set_nodelay(true)?;
            s.into_std()
        });
        let sock = opened.await.map_err(|_| AttemptError::Connection)?.map_err(|_| AttemptError::Connection)?;
        let tcp = Tcp::new(&self.exec, sock).map_err(|_| AttemptError::Connection)?;
        Ok(Conn::new(match name {
            None => Io::Plain(tcp),
            // Boxed: the handshake's state (rustls's connection) would otherwise size every
            // request's future, plain-HTTP ones included, and be copied with it.
            Some((name, cfg)) => Io::tls(
                Box::pin(tokio_rustls::TlsConnector::from(cfg).connect(name, tcp))
                    .await
                    .map_err(|_| AttemptError::Connection)?,
            ),
        }))
    }
}

fn put_idle<R: Reactor>(pool: &Pool<R>, key: &str, c: Conn<Io<R>>) {
    c.io().went_idle();
    let mut p = pool.borrow_mut();
    let idle = match p.get_mut(key) {
        Some(v) => v,
        None => p.entry(key.to_string()).or_default(),
    };
    if idle.len() < MAX_IDLE {
        idle.push(c);
    }
}

pub struct LocalResponse<R: Reactor> {
    head: Head,
    target: Rc<Target>,
    /// The connection, back to `pool` once the body has been read (`None` after that).
    conn: Option<Conn<Io<R>>>,
    pool: Rc<Pool<R>>,
    /// Where a body read piece by piece (`chunk`) is.
    body: Option<BodyReader>,
}

enum Failed {
    /// A reused connection the server had closed: once more on a new one.
    Stale,
    Attempt(AttemptError),
}

impl<R: Reactor> LocalHttp<R> {
    async fn exchange(
        &self,
        mut conn: Conn<Io<R>>,
        target: Rc<Target>,
        head: &[u8],
        body: &[u8],
        reused: bool,
    ) -> Result<LocalResponse<R>, Failed> {
        let stale = |reused: bool| if reused { Failed::Stale } else { Failed::Attempt(AttemptError::Connection) };
        if conn.write_request(head, body).await.is_err() {
            return Err(stale(reused));
        }
        match conn.read_head().await {
            Ok(h) => Ok(LocalResponse { head: h, target, conn: Some(conn), pool: Rc::clone(&self.pool), body: None }),
            Err(HeadError::Closed) => Err(stale(reused)),
            Err(HeadError::Io(_)) => Err(Failed::Attempt(AttemptError::Connection)),
        }
    }
}

impl<R: Reactor> Http for LocalHttp<R> {
    type Response = LocalResponse<R>;

    async fn attempt(&self, req: &HttpRequest) -> Result<LocalResponse<R>, AttemptError> {
        self.attempts.set(self.attempts.get() + 1);
        let t = self.target(&req.url)?;
        let head = self.head_for(req, &t)?;
        if let Some(c) = self.take_idle(&t.key) {
            // The server closing an idle connection as the request goes out is what
            // reqwest's pool retries too: not an SDK-level retry.
            match self.exchange(c, Rc::clone(&t), &head, &req.body, true).await {
                Ok(r) => return Ok(r),
                Err(Failed::Stale) => {}
                Err(Failed::Attempt(e)) => return Err(e),
            }
        }
        let c = self.connect(&t).await?;
        self.exchange(c, t, &head, &req.body, false).await.map_err(|f| match f {
            Failed::Stale => AttemptError::Connection,
            Failed::Attempt(e) => e,
        })
    }

    async fn sleep(&self, d: Duration) {
        Sleep::new(&self.exec, d).await
    }
}

impl<R: Reactor> HttpResponse for LocalResponse<R> {
    fn status(&self) -> u16 {
        self.head.status
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.head.header(name)
    }

    async fn bytes(mut self, limit: usize) -> Result<Bytes, BodyError> {
        // A body already read piece by piece has nothing left.
        let (Some(mut conn), None) = (self.conn.take(), &self.body) else { return Ok(Bytes::new()) };
        let (body, reusable) = conn.read_body(&self.head, limit).await?;
        if reusable {
            put_idle(&self.pool, &self.target.key, conn);
        }
        Ok(body)
    }

    async fn chunk(&mut self) -> Result<Option<Bytes>, BodyError> {
        let Some(conn) = self.conn.as_mut() else { return Ok(None) };
        let body = self.body.get_or_insert_with(|| BodyReader::new(&self.head));
        let piece = conn.next_chunk(body).await?;
        if piece.is_none() {
            // The whole body read: the connection can carry the next request.
            if let Some(c) = self.conn.take().filter(|c| c.reusable_after(&self.head, body)) {
                put_idle(&self.pool, &self.target.key, c);
            }
        }
        Ok(piece)
    }
}

impl<R: Reactor> Drop for LocalResponse<R> {
    /// A stream is dropped once its last event is read (an OpenAI `data: [DONE]`), usually
    /// with the body's end (the last chunk's terminator) already received: then the body is
    /// finished here, from what has arrived, and the connection pooled instead of closed (a new
    /// connection per streamed call is a TLS handshake per call). Anything still to come, or more
    /// than a few pieces, and the connection closes as before.
    fn drop(&mut self) {
        let (Some(body), Some(conn)) = (self.body.as_mut(), self.conn.as_mut()) else { return };
        let mut cx = Context::from_waker(Waker::noop());
        let mut ended = false;
        for _ in 0..4 {
            match pin!(conn.next_chunk(body)).poll(&mut cx) {
                Poll::Ready(Ok(Some(_))) => {}
                Poll::Ready(Ok(None)) => {
                    ended = true;
                    break;
                }
                Poll::Ready(Err(_)) | Poll::Pending => return,
            }
        }
        if !ended {
            return;
        }
        if let Some(c) = self.conn.take().filter(|c| c.reusable_after(&self.head, body)) {
            put_idle(&self.pool, &self.target.key, c);
        }
    }
}
