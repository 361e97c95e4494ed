//! `transport::Http` on the JS thread's own event loop (`uv.rs`): the small HTTP/1.1 client of
//! `llm::http1` over `UvTcp`, with a keep-alive pool per origin. Plain HTTP only (local model
//! servers); TLS endpoints keep the LLM I/O thread.
//!
//! Connections are opened on the I/O thread (name resolution and connect may block or take
//! long) and handed over; everything after that (writing requests, reading responses, the
//! keep-alive pool) happens on the JS thread without a thread hop.

use std::cell::RefCell;
use std::rc::Rc;
use std::time::Duration;

use bytes::Bytes;

use super::uv::{self, UvTcp};
use oma_llm::http1::{self, Conn, Head, HeadError};
use oma_llm::transport::{AttemptError, BodyError, Http, HttpRequest, HttpResponse};

/// Idle connections kept per origin.
const MAX_IDLE: usize = 32;

thread_local! {
    /// Leaked like the executor (`uv.rs`): closing sockets while the process exits would touch
    /// a loop that is already gone.
    static POOL: &'static RefCell<rustc_hash::FxHashMap<String, Vec<Conn<UvTcp>>>> = Box::leak(Box::default());
    /// The last URL's parts: a run sends every call to the same one.
    static LAST_URL: RefCell<Option<(String, Rc<Target>)>> = const { RefCell::new(None) };
}

#[derive(Clone)]
struct Target {
    /// `host[:port]` as the Host header carries it.
    authority: String,
    host: String,
    port: u16,
    path: String,
    /// The pool's key for the origin.
    key: String,
}

fn target(url: &str) -> Result<Rc<Target>, AttemptError> {
    if let Some(t) = LAST_URL.with(|l| l.borrow().as_ref().filter(|(u, _)| u == url).map(|(_, t)| Rc::clone(t))) {
        return Ok(t);
    }
    let u = reqwest::Url::parse(url).map_err(|_| AttemptError::InvalidUrl)?;
    if u.scheme() != "http" || !u.username().is_empty() || u.password().is_some() {
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
    let port = u.port().unwrap_or(80);
    let t = Rc::new(Target { authority, key: format!("{host}:{port}"), host, port, path });
    LAST_URL.with(|l| *l.borrow_mut() = Some((url.to_string(), Rc::clone(&t))));
    Ok(t)
}

/// The request head: all but its content-length is the same for every call of a run, so the
/// last one is kept (holding its headers and target, so that the pointers it is known by
/// cannot be reused by others).
fn head_for(req: &HttpRequest, t: &Rc<Target>) -> Result<Vec<u8>, AttemptError> {
    type Last = (std::sync::Arc<Vec<(&'static str, String)>>, Rc<Target>, reqwest::Method, Vec<u8>);
    thread_local! {
        static LAST_HEAD: RefCell<Option<Last>> = const { RefCell::new(None) };
    }
    LAST_HEAD.with(|l| {
        let mut l = l.borrow_mut();
        let hit = l.as_ref().is_some_and(|(h, lt, m, _)| {
            std::sync::Arc::ptr_eq(h, &req.headers) && Rc::ptr_eq(lt, t) && *m == req.method
        });
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
        push_decimal(&mut head, req.body.len());
        head.extend_from_slice(b"\r\n\r\n");
        Ok(head)
    })
}

fn push_decimal(out: &mut Vec<u8>, mut n: usize) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    out.extend_from_slice(&digits[i..]);
}

/// An idle connection that the loop has not seen closed. One the server closed unnoticed is
/// found out by the exchange (`HeadError::Closed`) and replaced.
fn take_idle(key: &str) -> Option<Conn<UvTcp>> {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let idle = p.get_mut(key)?;
        while let Some(c) = idle.pop() {
            if c.io().idle_and_open() {
                return Some(c);
            }
        }
        None
    })
}

fn put_idle(key: &str, c: Conn<UvTcp>) {
    POOL.with(|p| {
        let mut p = p.borrow_mut();
        let idle = match p.get_mut(key) {
            Some(v) => v,
            None => p.entry(key.to_string()).or_default(),
        };
        if idle.len() < MAX_IDLE {
            idle.push(c);
        }
    })
}

/// Opens a connection on the I/O thread and continues it here.
async fn connect(host: String, port: u16) -> Result<Conn<UvTcp>, AttemptError> {
    let opened = oma_llm::runtime::spawn(async move {
        let s = tokio::net::TcpStream::connect((host.as_str(), port)).await?;
        s.set_nodelay(true)?;
        s.into_std()
    });
    let sock = opened.await.map_err(|_| AttemptError::Connection)?.map_err(|_| AttemptError::Connection)?;
    Ok(Conn::new(UvTcp::new(sock).map_err(|_| AttemptError::Connection)?))
}

/// The JS thread's HTTP stack. Only used where `uv::available` holds.
pub struct LocalHttp;

pub struct LocalResponse {
    head: Head,
    /// The connection, back to the pool once the body has been read.
    conn: (Rc<Target>, Conn<UvTcp>),
}

enum Failed {
    /// A reused connection the server had closed: once more on a new one.
    Stale,
    Attempt(AttemptError),
}

async fn exchange(
    mut conn: Conn<UvTcp>,
    target: Rc<Target>,
    head: &[u8],
    body: &[u8],
    reused: bool,
) -> Result<LocalResponse, Failed> {
    let stale = |reused: bool| if reused { Failed::Stale } else { Failed::Attempt(AttemptError::Connection) };
    if conn.write_request(head, body).await.is_err() {
        return Err(stale(reused));
    }
    match conn.read_head().await {
        Ok(h) => Ok(LocalResponse { head: h, conn: (target, conn) }),
        Err(HeadError::Closed) => Err(stale(reused)),
        Err(HeadError::Io(_)) => Err(Failed::Attempt(AttemptError::Connection)),
    }
}

impl Http for LocalHttp {
    type Response = LocalResponse;

    async fn attempt(&self, req: &HttpRequest) -> Result<LocalResponse, AttemptError> {
        let t = target(&req.url)?;
        let head = head_for(req, &t)?;
        if let Some(c) = take_idle(&t.key) {
            // The server closing an idle connection as the request goes out is what
            // reqwest's pool retries too: not an SDK-level retry.
            match exchange(c, Rc::clone(&t), &head, &req.body, true).await {
                Ok(r) => return Ok(r),
                Err(Failed::Stale) => {}
                Err(Failed::Attempt(e)) => return Err(e),
            }
        }
        let c = connect(t.host.clone(), t.port).await?;
        exchange(c, t, &head, &req.body, false).await.map_err(|f| match f {
            Failed::Stale => AttemptError::Connection,
            Failed::Attempt(e) => e,
        })
    }

    async fn sleep(&self, d: Duration) {
        uv::Sleep::new(d).await
    }
}

impl HttpResponse for LocalResponse {
    fn status(&self) -> u16 {
        self.head.status
    }

    fn header(&self, name: &str) -> Option<&str> {
        self.head.header(name)
    }

    async fn bytes(self, limit: usize) -> Result<Bytes, BodyError> {
        let (target, mut conn) = self.conn;
        let (body, reusable) = conn.read_body(&self.head, limit).await?;
        if reusable {
            put_idle(&target.key, conn);
        }
        Ok(body)
    }
}
