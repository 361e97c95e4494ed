//! A connection to an origin as the HTTP client uses it: plain TCP, or TLS over it.
//!
//! TLS is rustls, which is sans-IO: tokio-rustls's stream adapter moves its records over
//! [`Tcp`], so a handshake and every record are read and written by the loop's thread, like
//! plain HTTP, with no thread hop. The configuration (roots, verifier, ALPN) is oma-llm's one
//! `transport::tls_config`, the one reqwest uses too.

use std::cell::Cell;
use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio_rustls::client::TlsStream;

use crate::reactor::Reactor;
use crate::tcp::Tcp;

/// How long an idle HTTPS connection is kept for reuse: reqwest's pool idle timeout (90 s), so
/// that a connection a middlebox dropped silently is not reused after longer than the stack
/// these requests took before. (Plain-HTTP connections had none on this stack, and have none.)
const TLS_IDLE_TIMEOUT: Duration = Duration::from_secs(90);

pub enum Io<R: Reactor> {
    Plain(Tcp<R>),
    /// Boxed: rustls's connection state is a few hundred bytes.
    Tls(Box<Tls<R>>),
}

pub struct Tls<R: Reactor> {
    stream: TlsStream<Tcp<R>>,
    /// When it went back to the pool (`went_idle`).
    idle_since: Cell<Option<Instant>>,
}

impl<R: Reactor> Io<R> {
    pub fn tls(stream: TlsStream<Tcp<R>>) -> Io<R> {
        Io::Tls(Box::new(Tls { stream, idle_since: Cell::new(None) }))
    }

    /// It goes back to the pool now.
    pub fn went_idle(&self) {
        if let Io::Tls(t) = self {
            t.idle_since.set(Some(Instant::now()));
        }
    }

    /// For a pooled keep-alive connection: no sign that the server closed it or sent anything
    /// (`Tcp::idle_and_open`; for TLS, any record, a close_notify included, counts as a sign),
    /// and for HTTPS idle for less than `TLS_IDLE_TIMEOUT`.
    pub fn idle_and_open(&self) -> bool {
        match self {
            Io::Plain(t) => t.idle_and_open(),
            Io::Tls(t) => {
                t.idle_since.get().is_none_or(|at| at.elapsed() < TLS_IDLE_TIMEOUT)
                    && t.stream.get_ref().0.idle_and_open()
            }
        }
    }
}

impl<R: Reactor> AsyncRead for Io<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(t) => Pin::new(t).poll_read(cx, buf),
            Io::Tls(t) => Pin::new(&mut t.stream).poll_read(cx, buf),
        }
    }
}

impl<R: Reactor> AsyncWrite for Io<R> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(t) => Pin::new(t).poll_write(cx, data),
            Io::Tls(t) => Pin::new(&mut t.stream).poll_write(cx, data),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Io::Plain(t) => Pin::new(t).poll_write_vectored(cx, bufs),
            Io::Tls(t) => Pin::new(&mut t.stream).poll_write_vectored(cx, bufs),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Io::Plain(t) => t.is_write_vectored(),
            Io::Tls(t) => t.stream.is_write_vectored(),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(t) => Pin::new(t).poll_flush(cx),
            Io::Tls(t) => Pin::new(&mut t.stream).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Io::Plain(t) => Pin::new(t).poll_shutdown(cx),
            Io::Tls(t) => Pin::new(&mut t.stream).poll_shutdown(cx),
        }
    }
}
