//! A minimal HTTP/1.1 client connection for the JS thread's HTTP stack (`oma_uv::LocalHttp`,
//! over TCP or TLS): one request at a time on a keep-alive connection, the request head
//! written with the body in one vectored write, the response head parsed with `httparse`, the
//! body framed by Content-Length, chunked transfer coding or the end of the connection, read
//! whole (`read_body`) or piece by piece as it arrives (`next_chunk`, for streams).
//!
//! Why not hyper: its client splits a request between the caller's task and a connection task
//! (a channel hop and a wake-up each way) and builds typed request headers; on a loopback call
//! that was a measurable share of the client's CPU. This is only what a local model server
//! needs: no pipelining, no upgrades, no `Expect: 100-continue`.

use std::future::poll_fn;
use std::io;
use std::io::IoSlice;
use std::pin::Pin;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use super::limits::MAX_HEAD_BYTES;
use super::transport::BodyError;

const MAX_HEADERS: usize = 100;
/// Bytes read at a time: a whole loopback response usually fits, so one `read` suffices.
const READ_CHUNK: usize = 64 * 1024;
/// Room reserved ahead of a long body at most: the buffer grows with what actually arrives,
/// not with what a Content-Length or chunk size announces.
const MAX_AHEAD: usize = 8 << 20;
/// A pooled connection does not keep a buffer larger than this from a large response.
const KEEP_BUF: usize = 256 * 1024;

/// The request head, or `None` when a header would break the framing (CR, LF or NUL in a name
/// or value: refused like an invalid header value in reqwest).
pub fn request_head(
    method: &str,
    path: &str,
    authority: &str,
    headers: &[(&str, String)],
    body_len: usize,
) -> Option<Vec<u8>> {
    let mut h = Vec::with_capacity(128 + headers.iter().map(|(k, v)| k.len() + v.len() + 4).sum::<usize>());
    let clean = |s: &str| !s.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0);
    if !clean(method) || !clean(path) || !clean(authority) || method.contains(' ') || path.contains(' ') {
        return None;
    }
    h.extend_from_slice(method.as_bytes());
    h.push(b' ');
    h.extend_from_slice(path.as_bytes());
    h.extend_from_slice(b" HTTP/1.1\r\nhost: ");
    h.extend_from_slice(authority.as_bytes());
    h.extend_from_slice(b"\r\n");
    let mut accept = false;
    for (k, v) in headers {
        if !clean(k) || !clean(v) || k.is_empty() || k.contains(':') {
            return None;
        }
        if k.eq_ignore_ascii_case("content-length") || k.eq_ignore_ascii_case("host") {
            continue;
        }
        accept |= k.eq_ignore_ascii_case("accept");
        h.extend_from_slice(k.as_bytes());
        h.extend_from_slice(b": ");
        h.extend_from_slice(v.as_bytes());
        h.extend_from_slice(b"\r\n");
    }
    // reqwest's default, so both stacks send the same headers.
    if !accept {
        h.extend_from_slice(b"accept: */*\r\n");
    }
    h.extend_from_slice(b"content-length: ");
    h.extend_from_slice(body_len.to_string().as_bytes());
    h.extend_from_slice(b"\r\n\r\n");
    Some(h)
}

/// How the response body is delimited (RFC 9112 §6.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Framing {
    Empty,
    Length(usize),
    Chunked,
    UntilClose,
}

#[derive(Debug)]
pub struct Head {
    pub status: u16,
    /// The header lines as received (`name: value\r\n` each), read on demand: a response's
    /// headers are only looked at on retries and errors, so none is copied out one by one.
    fields: Box<[u8]>,
    framing: Framing,
    keep_alive: bool,
}

impl Head {
    /// The header lines as (name, value) pairs, values without surrounding whitespace.
    fn fields(&self) -> impl Iterator<Item = (&[u8], &str)> {
        self.fields.split(|&b| b == b'\n').filter_map(|line| {
            let line = line.strip_suffix(b"\r").unwrap_or(line);
            let colon = line.iter().position(|&b| b == b':')?;
            let value = std::str::from_utf8(&line[colon + 1..]).ok()?;
            Some((&line[..colon], value.trim_matches([' ', '\t'])))
        })
    }

    /// Every value of header `name` (case-insensitive), in order.
    #[cfg(test)]
    pub fn header_values<'a>(&'a self, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
        self.fields().filter(move |(n, _)| n.eq_ignore_ascii_case(name.as_bytes())).map(|(_, v)| v)
    }

    /// The first value of header `name`.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.fields().find(|(n, _)| n.eq_ignore_ascii_case(name.as_bytes())).map(|(_, v)| v)
    }
}

/// Where a body read piece by piece (`Conn::next_chunk`) is.
pub struct BodyReader(Progress);

enum Progress {
    /// Bytes left of a Content-Length body.
    Length(usize),
    UntilClose,
    /// A chunk-size line is next.
    Size,
    /// Bytes left of the current chunk (0: its CRLF is next).
    Data(usize),
    Done,
}

impl BodyReader {
    pub fn new(head: &Head) -> BodyReader {
        BodyReader(match head.framing {
            Framing::Empty => Progress::Done,
            Framing::Length(n) => Progress::Length(n),
            Framing::Chunked => Progress::Size,
            Framing::UntilClose => Progress::UntilClose,
        })
    }
}

/// Why no response head arrived.
#[derive(Debug)]
pub enum HeadError {
    /// The connection ended (or was reset) before the first byte of a response: on a reused
    /// keep-alive connection, the server had closed it.
    Closed,
    Io(io::Error),
}

/// One client connection and the bytes read from it but not consumed yet.
pub struct Conn<S> {
    io: S,
    buf: Vec<u8>,
    pos: usize,
}

fn bad(msg: &str) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, msg.to_string())
}

impl<S: AsyncRead + AsyncWrite + Unpin> Conn<S> {
    pub fn new(io: S) -> Conn<S> {
        Conn { io, buf: Vec::new(), pos: 0 }
    }

    pub fn io(&self) -> &S {
        &self.io
    }

    /// Bytes received and not consumed (a clean keep-alive connection has none).
    fn pending(&self) -> &[u8] {
        &self.buf[self.pos..]
    }

    /// Writes `head` and `body` (vectored: the body is not copied).
    pub async fn write_request(&mut self, head: &[u8], body: &[u8]) -> io::Result<()> {
        let (mut h, mut b) = (head, body);
        while !h.is_empty() || !b.is_empty() {
            let slices = [IoSlice::new(h), IoSlice::new(b)];
            let n = poll_fn(|cx| Pin::new(&mut self.io).poll_write_vectored(cx, &slices)).await?;
            if n == 0 {
                return Err(io::ErrorKind::WriteZero.into());
            }
            let from_head = n.min(h.len());
            h = &h[from_head..];
            b = &b[n - from_head..];
        }
        // A TLS stream may hold the last records until flushed (a socket's flush is a no-op).
        poll_fn(|cx| Pin::new(&mut self.io).poll_flush(cx)).await
    }

    /// Reads more bytes into the buffer; `Ok(0)` at the end of the stream.
    async fn fill(&mut self, at_least: usize) -> io::Result<usize> {
        if self.pos > 0 && self.pos == self.buf.len() {
            self.buf.clear();
            self.pos = 0;
        }
        let want = at_least.clamp(READ_CHUNK, MAX_AHEAD);
        if self.buf.capacity() - self.buf.len() < want {
            if self.pos > 0 {
                self.buf.drain(..self.pos);
                self.pos = 0;
            }
            self.buf.reserve(want);
        }
        let n = poll_fn(|cx| {
            let spare = self.buf.spare_capacity_mut();
            let mut rb = ReadBuf::uninit(spare);
            match Pin::new(&mut self.io).poll_read(cx, &mut rb) {
                std::task::Poll::Ready(Ok(())) => std::task::Poll::Ready(Ok(rb.filled().len())),
                std::task::Poll::Ready(Err(e)) => std::task::Poll::Ready(Err(e)),
                std::task::Poll::Pending => std::task::Poll::Pending,
            }
        })
        .await?;
        // SAFETY: `poll_read` initialised the first `n` bytes of the spare capacity.
        unsafe { self.buf.set_len(self.buf.len() + n) };
        Ok(n)
    }

    /// The response head (interim 1xx responses skipped). Everything before the final head
    /// (interim responses, empty lines) counts towards `MAX_HEAD_BYTES` with it, so that a
    /// server sending 1xx responses or header lines without end is refused. The head is parsed
    /// again only when the bytes that arrived hold the blank line that would end it: a head
    /// trickled in byte by byte costs linear time, not a parse per byte.
    pub async fn read_head(&mut self) -> Result<Head, HeadError> {
        let mut any = !self.pending().is_empty();
        // Bytes consumed before the final head (interim responses, leading empty lines).
        let mut spent = 0usize;
        // `pending()` up to here holds no blank line that a parse has not seen.
        let mut searched: Option<usize> = None;
        loop {
            let ready = match searched {
                None => !self.pending().is_empty(),
                Some(from) => ends_head(self.pending(), from),
            };
            if ready {
                let mut slots = [httparse::EMPTY_HEADER; MAX_HEADERS];
                let mut r = httparse::Response::new(&mut slots);
                #[cfg(test)]
                crate::work::count(self.pending().len());
                match r.parse(self.pending()) {
                    Ok(httparse::Status::Complete(n)) => {
                        let status = r.code.unwrap_or(0);
                        let version = r.version.unwrap_or(1);
                        if (100..200).contains(&status) && status != 101 {
                            self.pos += n;
                            spent += n;
                            searched = None;
                            if spent > MAX_HEAD_BYTES {
                                return Err(HeadError::Io(bad("response head too large")));
                            }
                            continue;
                        }
                        let (framing, keep_alive) = framing(status, version, r.headers).map_err(HeadError::Io)?;
                        // From the first header line to the blank line (httparse has checked
                        // the names and values; `fields` only needs the lines).
                        let head = &self.pending()[..n];
                        let start = head.iter().position(|&b| b == b'\n').map_or(n, |i| i + 1);
                        let fields = head[start.min(n)..].into();
                        self.pos += n;
                        return Ok(Head { status, fields, framing, keep_alive });
                    }
                    Ok(httparse::Status::Partial) => {
                        // Empty lines before a status line are skipped (httparse does too):
                        // dropped here so that they never make a blank line to parse again at.
                        let lead = self.pending().iter().take_while(|&&b| b == b'\r' || b == b'\n').count();
                        self.pos += lead;
                        spent += lead;
                        searched = Some(self.pending().len());
                    }
                    Err(_) => return Err(HeadError::Io(bad("malformed response head"))),
                }
            } else if let Some(from) = searched.as_mut() {
                *from = self.pending().len();
            }
            if spent + self.pending().len() > MAX_HEAD_BYTES {
                return Err(HeadError::Io(bad("response head too large")));
            }
            match self.fill(0).await {
                Ok(0) if !any => return Err(HeadError::Closed),
                Ok(0) => return Err(HeadError::Io(io::ErrorKind::UnexpectedEof.into())),
                Ok(_) => any = true,
                Err(e) if !any && matches!(e.kind(), io::ErrorKind::ConnectionReset | io::ErrorKind::BrokenPipe) => {
                    return Err(HeadError::Closed)
                }
                Err(e) => return Err(HeadError::Io(e)),
            }
        }
    }

    /// The whole body, at most `limit` bytes, and whether the connection can carry another
    /// request. A larger body is `TooLarge` as soon as that is known: at once for a
    /// Content-Length or chunk size that says so, otherwise once more than `limit` arrived.
    pub async fn read_body(&mut self, head: &Head, limit: usize) -> Result<(Bytes, bool), BodyError> {
        let body = match head.framing {
            Framing::Empty => Bytes::new(),
            Framing::Length(n) if n > limit => return Err(BodyError::TooLarge),
            Framing::Length(n) => {
                while self.pending().len() < n {
                    if self.fill(n - self.pending().len()).await? == 0 {
                        return Err(BodyError::Connection);
                    }
                }
                let out = Bytes::copy_from_slice(&self.pending()[..n]);
                self.pos += n;
                out
            }
            Framing::Chunked => self.read_chunked(limit).await?,
            Framing::UntilClose => {
                while self.fill(0).await? > 0 {
                    if self.pending().len() > limit {
                        return Err(BodyError::TooLarge);
                    }
                }
                let out = Bytes::copy_from_slice(self.pending());
                self.pos = self.buf.len();
                out
            }
        };
        // Bytes beyond the response would be a reply to nothing we sent: not reused.
        let reusable = head.keep_alive && self.pending().is_empty();
        if reusable && self.buf.capacity() > KEEP_BUF {
            self.buf = Vec::new();
            self.pos = 0;
        }
        Ok((body, reusable))
    }

    /// The body's next piece as it arrives, `None` at its end (a stream's reader: the caller
    /// bounds the total). `body` is `BodyReader::new` of the response's head.
    pub async fn next_chunk(&mut self, body: &mut BodyReader) -> Result<Option<Bytes>, BodyError> {
        loop {
            match &mut body.0 {
                Progress::Done => return Ok(None),
                Progress::Length(0) => body.0 = Progress::Done,
                Progress::Length(n) => {
                    if self.pending().is_empty() && self.fill(0).await? == 0 {
                        return Err(BodyError::Connection);
                    }
                    let take = (*n).min(self.pending().len());
                    *n -= take;
                    return Ok(Some(self.take(take)));
                }
                Progress::UntilClose => {
                    if self.pending().is_empty() && self.fill(0).await? == 0 {
                        body.0 = Progress::Done;
                        continue;
                    }
                    return Ok(Some(self.take(self.pending().len())));
                }
                Progress::Size => {
                    let size = self.chunk_head().await?;
                    body.0 = if size == 0 { Progress::Done } else { Progress::Data(size) };
                }
                Progress::Data(0) => {
                    while self.pending().len() < 2 {
                        if self.fill(2 - self.pending().len()).await? == 0 {
                            return Err(BodyError::Connection);
                        }
                    }
                    if &self.pending()[..2] != b"\r\n" {
                        return Err(bad("chunk not terminated by CRLF").into());
                    }
                    self.pos += 2;
                    body.0 = Progress::Size;
                }
                Progress::Data(n) => {
                    if self.pending().is_empty() && self.fill(0).await? == 0 {
                        return Err(BodyError::Connection);
                    }
                    let take = (*n).min(self.pending().len());
                    *n -= take;
                    return Ok(Some(self.take(take)));
                }
            }
        }
    }

    /// Whether, its body read to the end by `next_chunk`, the connection can carry another
    /// request (as `read_body` answers).
    pub fn reusable_after(&self, head: &Head, body: &BodyReader) -> bool {
        matches!(body.0, Progress::Done) && head.keep_alive && self.pending().is_empty()
    }

    /// The next `n` pending bytes, consumed.
    fn take(&mut self, n: usize) -> Bytes {
        let out = Bytes::copy_from_slice(&self.pending()[..n]);
        self.pos += n;
        out
    }

    /// The length of the line at the read position, without its CRLF, which are consumed with
    /// it (the line is at `self.buf[self.pos - len - 2..self.pos - 2]` until the next read). A
    /// line is at most `max` bytes; each byte is searched once however slowly it arrives.
    async fn line(&mut self, max: usize) -> io::Result<usize> {
        let mut from = 0;
        loop {
            #[cfg(test)]
            crate::work::count(self.pending().len() - from);
            if let Some(i) = memchr::memmem::find(&self.pending()[from..], b"\r\n") {
                let len = from + i;
                self.pos += len + 2;
                return Ok(len);
            }
            // The last byte may be the CR of a CRLF split across reads.
            from = self.pending().len().saturating_sub(1);
            if from > max {
                return Err(bad("chunk line too long"));
            }
            if self.fill(0).await? == 0 {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
        }
    }

    /// The line `line` just consumed.
    fn last_line(&self, len: usize) -> &[u8] {
        &self.buf[self.pos - len - 2..self.pos - 2]
    }

    /// A chunk's size line: the chunk's size. For the last chunk (size 0) its trailer fields
    /// too, up to the empty line; all of them within one head's limit.
    async fn chunk_head(&mut self) -> io::Result<usize> {
        let len = self.line(MAX_HEAD_BYTES).await?;
        let size = chunk_size(self.last_line(len)).ok_or_else(|| bad("invalid chunk size"))?;
        if size == 0 {
            let mut budget = MAX_HEAD_BYTES;
            loop {
                let len = self.line(budget).await?;
                if len == 0 {
                    break;
                }
                budget = budget.checked_sub(len + 2).ok_or_else(|| bad("chunked trailer too large"))?;
            }
        }
        Ok(size)
    }

    async fn read_chunked(&mut self, limit: usize) -> Result<Bytes, BodyError> {
        let mut out = Vec::new();
        loop {
            let size = self.chunk_head().await?;
            if size == 0 {
                return Ok(Bytes::from(out));
            }
            if out.len().checked_add(size).is_none_or(|total| total > limit) {
                return Err(BodyError::TooLarge);
            }
            while self.pending().len() < size + 2 {
                if self.fill(size + 2 - self.pending().len()).await? == 0 {
                    return Err(BodyError::Connection);
                }
            }
            let p = self.pending();
            if &p[size..size + 2] != b"\r\n" {
                return Err(bad("chunk not terminated by CRLF").into());
            }
            out.extend_from_slice(&p[..size]);
            self.pos += size + 2;
        }
    }
}

/// Whether `p` holds, past `from` (less the bytes a terminator may span), a blank line: the
/// end of a head (CRLF CRLF, or LF LF as httparse also takes).
fn ends_head(p: &[u8], from: usize) -> bool {
    let start = from.saturating_sub(2);
    memchr::memchr_iter(b'\n', &p[start..]).any(|i| {
        let rest = &p[start + i + 1..];
        rest.first() == Some(&b'\n') || rest.starts_with(b"\r\n")
    })
}

/// A chunk-size line's size (`<hex>[;extensions]`), or `None` when it is not one (or so large
/// that the CRLF after the chunk would overflow).
fn chunk_size(line: &[u8]) -> Option<usize> {
    let line = String::from_utf8_lossy(line);
    let size = line.split(';').next().unwrap_or("").trim();
    usize::from_str_radix(size, 16).ok().filter(|n| n.checked_add(2).is_some())
}

/// The values of header `name` among the parsed ones.
/// Whether the comma-separated `value` lists `token` (any case).
fn lists(value: &[u8], token: &[u8]) -> bool {
    value.split(|&b| b == b',').any(|t| t.trim_ascii().eq_ignore_ascii_case(token))
}

/// The body's framing and whether the connection stays open, in one pass over the headers
/// (a response has a handful; each name is compared only against the one name of its length).
fn framing(status: u16, version: u8, headers: &[httparse::Header]) -> io::Result<(Framing, bool)> {
    let (mut close, mut keep) = (false, false);
    let mut encoding: Option<&[u8]> = None;
    // The content-length values in order, or the first fault among them.
    let mut length: Result<Option<usize>, &'static str> = Ok(None);
    for h in headers {
        let name = h.name.as_bytes();
        match name.len() {
            10 if name.eq_ignore_ascii_case(b"connection") => {
                close |= lists(h.value, b"close");
                keep |= lists(h.value, b"keep-alive");
            }
            17 if name.eq_ignore_ascii_case(b"transfer-encoding") => encoding = Some(h.value),
            14 if name.eq_ignore_ascii_case(b"content-length") => {
                if let Ok(known) = length {
                    length = content_length(h.value, known);
                }
            }
            _ => {}
        }
    }
    let keep_alive = if version >= 1 { !close } else { keep };
    if status == 204 || status == 304 || (100..200).contains(&status) {
        return Ok((Framing::Empty, keep_alive));
    }
    if let Some(te) = encoding {
        let last = te.rsplit(|&b| b == b',').next().unwrap_or_default().trim_ascii();
        return Ok(if last.eq_ignore_ascii_case(b"chunked") {
            (Framing::Chunked, keep_alive)
        } else {
            (Framing::UntilClose, false)
        });
    }
    Ok(match length.map_err(bad)? {
        Some(n) => (Framing::Length(n), keep_alive),
        None => (Framing::UntilClose, false),
    })
}

/// `known` and one more content-length value (a comma list whose parts must all agree).
fn content_length(value: &[u8], mut known: Option<usize>) -> Result<Option<usize>, &'static str> {
    for part in std::str::from_utf8(value).map_err(|_| "invalid content-length")?.split(',') {
        let n: usize = part.trim().parse().map_err(|_| "invalid content-length")?;
        if known.is_some_and(|l| l != n) {
            return Err("conflicting content-length");
        }
        known = Some(n);
    }
    Ok(known)
}

/// Test servers: reads one request (head, then a Content-Length body) from `s`; returns its
/// bytes and where the body starts.
#[cfg(test)]
pub(crate) fn read_request(s: &mut impl io::Read) -> (Vec<u8>, usize) {
    let mut req = Vec::new();
    let mut b = [0u8; 4096];
    loop {
        let n = s.read(&mut b).unwrap();
        req.extend_from_slice(&b[..n]);
        if let Some(i) = req.windows(4).position(|w| w == b"\r\n\r\n") {
            let head = String::from_utf8_lossy(&req[..i]).to_lowercase();
            let len: usize =
                head.lines().find_map(|l| l.strip_prefix("content-length: ")).map_or(0, |v| v.trim().parse().unwrap());
            while req.len() < i + 4 + len {
                let n = s.read(&mut b).unwrap();
                req.extend_from_slice(&b[..n]);
            }
            return (req, i + 4);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::MAX_RESPONSE_BYTES;
    use std::io::Write;
    use std::task::{Context, Poll};

    /// A connection that delivers `data` one byte per read (the slowest trickle), then ends,
    /// and swallows what is written.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
    }

    impl AsyncRead for Trickle {
        fn poll_read(mut self: Pin<&mut Self>, _cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
            if self.at < self.data.len() {
                buf.put_slice(&self.data[self.at..self.at + 1]);
                self.at += 1;
            }
            Poll::Ready(Ok(()))
        }
    }

    impl AsyncWrite for Trickle {
        fn poll_write(self: Pin<&mut Self>, _cx: &mut Context<'_>, b: &[u8]) -> Poll<io::Result<usize>> {
            Poll::Ready(Ok(b.len()))
        }
        fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
        fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
            Poll::Ready(Ok(()))
        }
    }

    /// Head and body of `reply` read one byte at a time, with `limit`; the bytes looked at.
    async fn trickled(reply: Vec<u8>, limit: usize) -> (Result<(Bytes, bool), String>, usize) {
        crate::work::reset();
        let mut c = Conn::new(Trickle { data: reply, at: 0 });
        let out = match c.read_head().await {
            Ok(h) => c.read_body(&h, limit).await.map_err(|e| format!("{e:?}")),
            Err(HeadError::Io(e)) => Err(e.to_string()),
            Err(HeadError::Closed) => Err("closed".into()),
        };
        (out, crate::work::done())
    }

    #[tokio::test]
    async fn slow_heads_and_chunk_lines_cost_linear_work() {
        // A 60 KB head and 60 KB of chunk extensions, a byte per read: each byte looked at a
        // few times, not once per read (that was 60k parses of up to 60 KB).
        let mut reply = b"HTTP/1.1 200 OK\r\n".to_vec();
        for i in 0..2000 {
            reply.extend_from_slice(format!("x-h{i:04}: {}\r\n", "v".repeat(20)).as_bytes());
        }
        reply.extend_from_slice(b"transfer-encoding: chunked\r\n\r\n");
        let head_len = reply.len();
        reply.extend_from_slice(format!("3;{}\r\nabc\r\n0\r\n\r\n", "e".repeat(60_000)).as_bytes());
        // Too many header fields for httparse: refused, but only after the blank line came.
        let (out, work) = trickled(reply.clone(), MAX_RESPONSE_BYTES).await;
        assert_eq!(out.unwrap_err(), "malformed response head");
        assert!(work <= 3 * head_len, "{work} for {head_len}");
        // The same with few fields and a long line: read, linearly.
        let mut reply =
            b"HTTP/1.1 100 Continue\r\n\r\n\r\nHTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nx-long: ".to_vec();
        reply.extend_from_slice("v".repeat(60_000).as_bytes());
        reply.extend_from_slice(format!("\r\n\r\n3;{}\r\nabc\r\n0\r\nt: 1\r\n\r\n", "e".repeat(60_000)).as_bytes());
        let (out, work) = trickled(reply.clone(), MAX_RESPONSE_BYTES).await;
        assert_eq!(&out.unwrap().0[..], b"abc");
        assert!(work <= 3 * reply.len(), "{work} for {}", reply.len());
    }

    #[tokio::test]
    async fn heads_trailers_and_bodies_are_bounded() {
        let cases: Vec<(Vec<u8>, usize, &str)> = vec![
            // Header lines without end.
            ([b"HTTP/1.1 200 OK\r\n".to_vec(), b"x: y\r\n".repeat(20_000)].concat(), 100, "response head too large"),
            // One header line without end.
            ([b"HTTP/1.1 200 OK\r\nx: ".to_vec(), vec![b'v'; 70_000]].concat(), 100, "response head too large"),
            // Interim responses without end.
            (b"HTTP/1.1 102 Processing\r\n\r\n".repeat(3000), 100, "response head too large"),
            // Empty lines without end before a status line.
            (b"\r\n".repeat(40_000), 100, "response head too large"),
            // Trailer fields without end.
            (
                [b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n0\r\n".to_vec(), b"t: 1\r\n".repeat(20_000)]
                    .concat(),
                100,
                "Connection",
            ),
            // A chunk-size line without end.
            (
                [b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n1;".to_vec(), vec![b'e'; 70_000]].concat(),
                100,
                "Connection",
            ),
            // Bodies over the limit: announced, chunked, close-delimited.
            (b"HTTP/1.1 200 OK\r\ncontent-length: 101\r\n\r\n".to_vec(), 100, "TooLarge"),
            (
                [
                    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec(),
                    b"20\r\n01234567890123456789012345678901\r\n".repeat(4),
                ]
                .concat(),
                100,
                "TooLarge",
            ),
            (
                [b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n".to_vec(), b"65\r\n".to_vec()].concat(),
                100,
                "TooLarge",
            ),
            ([b"HTTP/1.1 200 OK\r\n\r\n".to_vec(), vec![b'b'; 101]].concat(), 100, "TooLarge"),
        ];
        for (reply, limit, want) in cases {
            let shown = String::from_utf8_lossy(&reply[..40.min(reply.len())]).into_owned();
            let (out, _) = trickled(reply, limit).await;
            assert_eq!(out.unwrap_err(), want, "{shown:?}");
        }
        // At the limit: read.
        let (out, _) = trickled([b"HTTP/1.1 200 OK\r\n\r\n".to_vec(), vec![b'b'; 100]].concat(), 100).await;
        assert_eq!(out.unwrap().0.len(), 100);
        let (out, _) = trickled(
            b"HTTP/1.1 200 OK\r\ncontent-length: 100\r\n\r\n".iter().copied().chain(vec![b'b'; 100]).collect(),
            100,
        )
        .await;
        assert_eq!(out.unwrap().0.len(), 100);
    }

    /// A server thread that reads one request per entry of `replies` and answers with it,
    /// written in pieces of `split` bytes; returns the requests it read.
    fn server(replies: Vec<Vec<u8>>, split: usize) -> (u16, std::thread::JoinHandle<Vec<Vec<u8>>>) {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        let t = std::thread::spawn(move || {
            let (mut s, _) = l.accept().unwrap();
            s.set_nodelay(true).unwrap();
            let mut got = Vec::new();
            for r in replies {
                got.push(read_request(&mut s).0);
                for piece in r.chunks(split.max(1)) {
                    s.write_all(piece).unwrap();
                    s.flush().unwrap();
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
            }
            got
        });
        (port, t)
    }

    async fn conn(port: u16) -> Conn<tokio::net::TcpStream> {
        Conn::new(tokio::net::TcpStream::connect(("127.0.0.1", port)).await.unwrap())
    }

    async fn exchange(c: &mut Conn<tokio::net::TcpStream>, body: &str) -> (Head, Bytes, bool) {
        let head = request_head(
            "POST",
            "/v1/x?q=1",
            "127.0.0.1:1",
            &[("content-type", "application/json".into())],
            body.len(),
        )
        .unwrap();
        c.write_request(&head, body.as_bytes()).await.unwrap();
        let h = c.read_head().await.unwrap();
        let (b, reuse) = c.read_body(&h, crate::limits::MAX_RESPONSE_BYTES).await.unwrap();
        (h, b, reuse)
    }

    #[test]
    fn framing_rules() {
        let f = |status: u16, version: u8, hs: &[(&str, &str)]| {
            let headers: Vec<httparse::Header> =
                hs.iter().map(|(n, v)| httparse::Header { name: n, value: v.as_bytes() }).collect();
            framing(status, version, &headers).map_err(|e| e.to_string())
        };
        assert_eq!(
            f(200, 1, &[("Content-Length", "5"), ("Connection", "keep-alive")]).unwrap(),
            (Framing::Length(5), true)
        );
        assert_eq!(
            f(200, 1, &[("content-length", "5, 5"), ("content-length", "5"), ("connection", "Upgrade, Close")])
                .unwrap(),
            (Framing::Length(5), false)
        );
        assert_eq!(f(200, 0, &[("Content-Length", "5")]).unwrap(), (Framing::Length(5), false));
        assert_eq!(
            f(200, 0, &[("Content-Length", "5"), ("Connection", "Keep-Alive")]).unwrap(),
            (Framing::Length(5), true)
        );
        assert_eq!(f(200, 1, &[]).unwrap(), (Framing::UntilClose, false));
        // Transfer-Encoding wins over any content-length, even a broken one; its last coding decides.
        assert_eq!(
            f(200, 1, &[("Content-Length", "x"), ("Transfer-Encoding", "gzip, chunked")]).unwrap(),
            (Framing::Chunked, true)
        );
        assert_eq!(
            f(200, 1, &[("Transfer-Encoding", "chunked"), ("transfer-encoding", "gzip")]).unwrap(),
            (Framing::UntilClose, false)
        );
        assert_eq!(f(204, 1, &[("Content-Length", "x")]).unwrap(), (Framing::Empty, true));
        assert_eq!(
            f(200, 1, &[("Content-Length", "x"), ("Content-Length", "5, 6")]).unwrap_err(),
            "invalid content-length"
        );
        assert_eq!(
            f(200, 1, &[("Content-Length", "5, 6"), ("Content-Length", "x")]).unwrap_err(),
            "conflicting content-length"
        );
        assert_eq!(
            f(200, 1, &[("X-Content-Length", "1"), ("Content-Lengths", "2")]).unwrap(),
            (Framing::UntilClose, false)
        );
    }

    /// A chunked body (with a chunk extension and a trailer) of "abc0123456789abcdef", then two
    /// whole responses: no content, and a body that runs until the server closes.
    const CHUNKED_BODY: &[u8] = b"3;ext=1\r\nabc\r\n10\r\n0123456789abcdef\r\n0\r\ntrailer: x\r\n\r\n";
    const NO_CONTENT: &[u8] = b"HTTP/1.1 204 No Content\r\n\r\n";
    const UNTIL_CLOSE: &[u8] = b"HTTP/1.1 200 OK\r\nconnection: close\r\n\r\nuntil the end";

    #[tokio::test]
    async fn framings_on_one_keep_alive_connection() {
        let replies = vec![
            b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-A: 1\r\nX-A: 2\r\n\r\nhello"
                .to_vec(),
            [&b"HTTP/1.1 429 Too Many\r\nTransfer-Encoding: chunked\r\nretry-after: 0\r\n\r\n"[..], CHUNKED_BODY]
                .concat(),
            NO_CONTENT.to_vec(),
            UNTIL_CLOSE.to_vec(),
        ];
        let (port, t) = server(replies, 3);
        let mut c = conn(port).await;
        let (h, b, reuse) = exchange(&mut c, "{\"a\":1}").await;
        assert_eq!((h.status, &b[..], reuse), (200, &b"hello"[..], true));
        assert_eq!(h.header_values("x-a").collect::<Vec<_>>(), ["1", "2"]);
        let (h, b, reuse) = exchange(&mut c, "").await;
        assert_eq!((h.status, &b[..], reuse), (429, &b"abc0123456789abcdef"[..], true));
        assert_eq!(h.header("Retry-After"), Some("0"));
        let (h, b, reuse) = exchange(&mut c, "x").await;
        assert_eq!((h.status, b.len(), reuse), (204, 0, true));
        let (h, b, reuse) = exchange(&mut c, "y").await;
        assert_eq!((h.status, &b[..], reuse), (200, &b"until the end"[..], false));
        let reqs = t.join().unwrap();
        let first = String::from_utf8(reqs[0].clone()).unwrap();
        assert_eq!(first, "POST /v1/x?q=1 HTTP/1.1\r\nhost: 127.0.0.1:1\r\ncontent-type: application/json\r\naccept: */*\r\ncontent-length: 7\r\n\r\n{\"a\":1}");
    }

    #[tokio::test]
    async fn the_same_framings_read_piece_by_piece() {
        let replies = vec![
            b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello".to_vec(),
            [&b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"[..], CHUNKED_BODY].concat(),
            NO_CONTENT.to_vec(),
            UNTIL_CLOSE.to_vec(),
        ];
        // Two bytes at a time: pieces end anywhere, in sizes and CRLFs too.
        let (port, t) = server(replies, 2);
        let mut c = conn(port).await;
        async fn read(c: &mut Conn<tokio::net::TcpStream>, expect: &[u8], reusable: bool) {
            {
                c.write_request(b"GET / HTTP/1.1\r\nhost: x\r\ncontent-length: 0\r\n\r\n", b"").await.unwrap();
                let head = c.read_head().await.unwrap();
                let mut body = BodyReader::new(&head);
                let mut got = Vec::new();
                let mut pieces = 0;
                while let Some(p) = c.next_chunk(&mut body).await.unwrap() {
                    assert!(!p.is_empty());
                    got.extend_from_slice(&p);
                    pieces += 1;
                }
                assert_eq!(&got[..], expect);
                assert!(expect.is_empty() || pieces > 1, "{pieces} pieces");
                // At the end, again `None`; reusable as `read_body` would say.
                assert!(c.next_chunk(&mut body).await.unwrap().is_none());
                assert_eq!(c.reusable_after(&head, &body), reusable);
            }
        }
        read(&mut c, b"hello", true).await;
        read(&mut c, b"abc0123456789abcdef", true).await;
        read(&mut c, b"", true).await;
        read(&mut c, b"until the end", false).await;
        t.join().unwrap();
    }

    #[tokio::test]
    async fn a_closed_connection_and_broken_responses() {
        // Closed before any byte: `Closed` (the caller may retry on a new connection).
        let (port, t) = server(vec![Vec::new()], 1);
        let mut c = conn(port).await;
        let head = request_head("POST", "/", "h", &[], 0).unwrap();
        c.write_request(&head, b"").await.unwrap();
        t.join().unwrap();
        assert!(matches!(c.read_head().await, Err(HeadError::Closed)));
        // Cut inside the head, inside a body, a malformed head, a bad chunk size.
        for reply in [
            &b"HTTP/1.1 200 OK\r\nContent-Le"[..],
            &b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc"[..],
            &b"NOT HTTP\r\n\r\n"[..],
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"[..],
            &b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab"[..],
            // Announced sizes far beyond what arrives: no allocation of that size, an error.
            &b"HTTP/1.1 200 OK\r\nContent-Length: 999999999999999\r\n\r\nab"[..],
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nab"[..],
            &b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nfffffffffff\r\nab"[..],
        ] {
            let (port, t) = server(vec![reply.to_vec()], 64);
            let mut c = conn(port).await;
            c.write_request(&head, b"").await.unwrap();
            let failed = match c.read_head().await {
                Err(HeadError::Io(_)) => true,
                Err(HeadError::Closed) => false,
                Ok(h) => c.read_body(&h, crate::limits::MAX_RESPONSE_BYTES).await.is_err(),
            };
            t.join().unwrap();
            assert!(failed, "{}", String::from_utf8_lossy(reply));
        }
    }

    #[test]
    fn heads_refuse_header_injection() {
        assert!(request_head("POST", "/", "h", &[("authorization", "Bearer a\r\nx: y".into())], 0).is_none());
        assert!(request_head("POST", "/a b", "h", &[], 0).is_none());
        assert!(request_head("POST", "/", "h", &[("bad:name", "v".into())], 0).is_none());
        // A caller's own content-length or host never doubles ours.
        let h =
            request_head("GET", "/", "h", &[("Content-Length", "9".into()), ("accept", "application/json".into())], 2)
                .unwrap();
        assert_eq!(
            String::from_utf8(h).unwrap(),
            "GET / HTTP/1.1\r\nhost: h\r\naccept: application/json\r\ncontent-length: 2\r\n\r\n"
        );
    }
}
