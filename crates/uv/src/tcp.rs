//! A connected TCP socket whose readiness the loop watches, as tokio's `AsyncRead` and
//! `AsyncWrite` (what oma-llm's HTTP/1.1 connection reads and writes).

use std::cell::RefCell;
use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::os::raw::c_int;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

use crate::exec::Exec;
use crate::reactor::{Reactor, READABLE, WRITABLE};

/// `send` flags: no SIGPIPE from a peer that closed (Node ignores SIGPIPE anyway; a test
/// process does not).
#[cfg(target_os = "linux")]
const SEND_FLAGS: c_int = libc::MSG_NOSIGNAL;
#[cfg(not(target_os = "linux"))]
const SEND_FLAGS: c_int = 0;

/// At most this many buffers go into one `sendmsg` (POSIX guarantees IOV_MAX ≥ 16; Linux and
/// macOS have 1024).
const MAX_IOV: usize = 1024;

struct Interest<R: Reactor> {
    read: Option<Waker>,
    write: Option<Waker>,
    /// Events the watch reports (`set_interest`).
    events: u32,
    /// Events the socket may have (cleared when a read or write finds nothing to do, set by
    /// the reactor): a client may try a read after every step, and each such try would otherwise be
    /// a `read` syscall answering EAGAIN (five per call, measured).
    ready: u32,
    /// `None` only while the socket is being set up.
    watch: Option<R::Watch>,
}

/// What a watch's reports reach (its target): boxed, so its address is stable while the
/// `Tcp` moves.
struct Source<R: Reactor> {
    exec: Rc<Exec<R>>,
    interest: RefCell<Interest<R>>,
}

/// A connected, non-blocking TCP socket watched by the loop.
pub struct Tcp<R: Reactor> {
    sock: TcpStream,
    source: Box<Source<R>>,
}

impl<R: Reactor> Tcp<R> {
    pub fn new(exec: &Rc<Exec<R>>, sock: TcpStream) -> io::Result<Tcp<R>> {
        sock.set_nonblocking(true)?;
        let source = Box::new(Source {
            exec: Rc::clone(exec),
            interest: RefCell::new(Interest {
                read: None,
                write: None,
                events: 0,
                ready: READABLE | WRITABLE,
                watch: None,
            }),
        });
        let target = &*source as *const Source<R> as *const ();
        let watch = exec.reactor().watch(sock.as_raw_fd(), target)?;
        source.interest.borrow_mut().watch = Some(watch);
        Ok(Tcp { sock, source })
    }

    /// For a pooled keep-alive connection: no sign that the server closed it or sent anything.
    /// Readability seen by the loop while idle means one of the two; checked with a peek.
    pub fn idle_and_open(&self) -> bool {
        if self.source.interest.borrow().ready & READABLE == 0 {
            return true;
        }
        let mut b = 0u8;
        // SAFETY: `b` is one writable byte that outlives the call, and the descriptor is this
        // socket's own (open as long as `self.sock`).
        let n = unsafe {
            libc::recv(self.sock.as_raw_fd(), (&mut b as *mut u8).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT)
        };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock {
            self.source.interest.borrow_mut().ready &= !READABLE;
            return true;
        }
        false
    }

    fn want(&self, ev: u32, waker: &Waker) {
        let mut i = self.source.interest.borrow_mut();
        if ev == READABLE {
            i.read = Some(waker.clone());
        } else {
            i.write = Some(waker.clone());
        }
        if i.events & ev == 0 {
            i.events |= ev;
            if let Some(w) = &i.watch {
                self.source.exec.reactor().set_interest(w, i.events);
            }
        }
    }

    /// Runs `op` (a read or write) if the socket may be ready for it; `drained(n)` says whether
    /// a result of `n` bytes used up that readiness (a short read did).
    fn io(
        &self,
        ev: u32,
        cx: &mut Context<'_>,
        mut op: impl FnMut() -> io::Result<usize>,
        drained: impl Fn(usize) -> bool,
    ) -> Poll<io::Result<usize>> {
        if self.source.interest.borrow().ready & ev == 0 {
            self.want(ev, cx.waker());
            return Poll::Pending;
        }
        loop {
            match op() {
                Ok(n) => {
                    if drained(n) {
                        self.source.interest.borrow_mut().ready &= !ev;
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.source.interest.borrow_mut().ready &= !ev;
                    self.want(ev, cx.waker());
                    return Poll::Pending;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

/// The reactor's report for a watch: `events` became ready, or (`error`) the watch failed and
/// the reactor stopped it. Wakes whoever waits for them.
///
/// # Safety
///
/// `target` is the target given to `R::watch` for a watch that is not closed yet, and this
/// runs on the loop's thread, not inside a call of this crate into the reactor (a reactor
/// reports from its loop's own callbacks).
pub unsafe fn io_ready<R: Reactor>(target: *const (), error: bool, events: u32) {
    // SAFETY: by the contract above `target` is the `Source` of a `Tcp` whose watch is open; a
    // `Tcp` closes its watch in `drop` before its box is freed, so the `Source` is alive. It is
    // not touched after the tasks run (below), which may drop the `Tcp`.
    let source = unsafe { &*(target as *const Source<R>) };
    // Kept past the `Source`: a woken task may drop the socket and with it the `Source`'s `Rc`.
    let exec = Rc::clone(&source.exec);
    let (r, w) = {
        let mut i = source.interest.borrow_mut();
        // An error wakes both sides: their next read or write reports it.
        let fired = if error { READABLE | WRITABLE } else { events };
        i.ready |= fired;
        let r = if fired & READABLE != 0 { i.read.take() } else { None };
        let w = if fired & WRITABLE != 0 { i.write.take() } else { None };
        if error {
            // The reactor stopped the watch (as libuv's uv_poll does on an error): the next
            // wait registers its interest again.
            i.events = 0;
        } else {
            // An interest stays registered while someone waits on it (a keep-alive
            // connection's reader always does): no epoll_ctl per response. Only an event
            // nobody waited for is unregistered (the poll is level-triggered, it would fire
            // again).
            let mut unwanted = 0;
            if fired & READABLE != 0 && r.is_none() {
                unwanted |= READABLE;
            }
            if fired & WRITABLE != 0 && w.is_none() {
                unwanted |= WRITABLE;
            }
            if unwanted != 0 {
                i.events &= !unwanted;
                if let Some(watch) = &i.watch {
                    exec.reactor().set_interest(watch, i.events);
                }
            }
        }
        (r, w)
    };
    exec.reactor().in_callback(|| {
        exec.run_woken(|| {
            if let Some(r) = r {
                r.wake();
            }
            if let Some(w) = w {
                w.wake();
            }
        })
    });
}

impl<R: Reactor> Drop for Tcp<R> {
    fn drop(&mut self) {
        // Before the descriptor closes (the field drops after this): no report can reach the
        // `Source` or a reused descriptor.
        if let Some(w) = self.source.interest.borrow_mut().watch.take() {
            self.source.exec.reactor().close_watch(w);
        }
    }
}

impl<R: Reactor> AsyncRead for Tcp<R> {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let fd = this.sock.as_raw_fd();
        // Read into the uninitialised tail directly (no zeroing of the client's buffer).
        // SAFETY: only `read(2)` writes into `dst` (initialised bytes are never de-initialised),
        // and only the bytes it reports are marked initialised below.
        let dst = unsafe { buf.unfilled_mut() };
        let (ptr, len) = (dst.as_mut_ptr(), dst.len());
        let res = this.io(
            READABLE,
            cx,
            || {
                // SAFETY: `ptr..ptr + len` is the unfilled part of `buf`, writable and borrowed
                // for this whole call; `fd` is this socket's, open while `this` lives.
                let n = unsafe { libc::read(fd, ptr.cast(), len) };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            },
            // A short read emptied the socket (0 = end of stream stays readable).
            |n| n > 0 && n < len,
        );
        match res {
            Poll::Ready(Ok(n)) => {
                // SAFETY: `read` wrote these `n` bytes (n ≤ len) at the start of the unfilled part.
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl<R: Reactor> AsyncWrite for Tcp<R> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let fd = self.sock.as_raw_fd();
        self.io(
            WRITABLE,
            cx,
            || {
                // SAFETY: `data` is a readable slice borrowed for the call; `fd` is this socket's.
                let n = unsafe { libc::send(fd, data.as_ptr().cast(), data.len(), SEND_FLAGS) };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            },
            |n| n < data.len(),
        )
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let fd = self.sock.as_raw_fd();
        let total: usize = bufs.iter().take(MAX_IOV).map(|b| b.len()).sum();
        self.io(
            WRITABLE,
            cx,
            || {
                // SAFETY: all-zero is a valid `msghdr` (null pointers, zero lengths).
                let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
                // `IoSlice` is ABI-compatible with `iovec` on Unix (documented by std); sendmsg
                // only reads through the pointer.
                msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
                msg.msg_iovlen = bufs.len().min(MAX_IOV) as _;
                // SAFETY: `msg` points to `msg_iovlen` valid `iovec`s of `bufs`, each a readable
                // slice borrowed for the call; `fd` is this socket's.
                let n = unsafe { libc::sendmsg(fd, &msg, SEND_FLAGS) };
                if n < 0 {
                    Err(io::Error::last_os_error())
                } else {
                    Ok(n as usize)
                }
            },
            |n| n < total,
        )
    }

    fn is_write_vectored(&self) -> bool {
        true
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.sock.shutdown(std::net::Shutdown::Write).or_else(|e| {
            if e.kind() == io::ErrorKind::NotConnected {
                Ok(())
            } else {
                Err(e)
            }
        }))
    }
}
