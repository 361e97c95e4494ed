//! Futures driven by Node's own event loop (libuv), on the JS thread.
//!
//! The LLM I/O thread costs two thread wake-ups per call (JS thread → I/O thread → JS thread):
//! a call with no history took 87 µs of CPU that way and takes ≈45 µs this way on the 2-core
//! VM (bench/README.md, W5 floor). Here a
//! request's socket is watched by the JS thread's loop itself (`uv_poll`), timers are
//! `uv_timer`s, and the futures run in a small executor on that thread: a response wakes
//! the thread that waits for it, and nothing else.
//!
//! Only the main thread uses this (`available`); worker threads keep the I/O thread. Every
//! handle is unreferenced; a pending request keeps Node alive through a referenced `uv_async`
//! handle while any promise is unsettled. Promises are settled from the loop's callbacks
//! inside a napi callback scope, so their reactions run right after, as for Node's own I/O.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::io;
use std::net::TcpStream;
use std::os::fd::AsRawFd;
use std::os::raw::{c_int, c_void};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread::{self, ThreadId};
use std::time::Duration;

use napi::sys;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

#[repr(C)]
pub struct UvLoop {
    _opaque: [u8; 0],
}

type PollCb = unsafe extern "C" fn(*mut c_void, c_int, c_int);
type HandleCb = unsafe extern "C" fn(*mut c_void);

// Resolved against the node binary when the addon is loaded.
extern "C" {
    fn uv_default_loop() -> *mut UvLoop;
    fn uv_handle_size(kind: c_int) -> usize;
    fn uv_poll_init(l: *mut UvLoop, h: *mut c_void, fd: c_int) -> c_int;
    fn uv_poll_start(h: *mut c_void, events: c_int, cb: PollCb) -> c_int;
    fn uv_poll_stop(h: *mut c_void) -> c_int;
    fn uv_timer_init(l: *mut UvLoop, h: *mut c_void) -> c_int;
    fn uv_timer_start(h: *mut c_void, cb: HandleCb, timeout: u64, repeat: u64) -> c_int;
    fn uv_timer_stop(h: *mut c_void) -> c_int;
    fn uv_async_init(l: *mut UvLoop, h: *mut c_void, cb: HandleCb) -> c_int;
    fn uv_async_send(h: *mut c_void) -> c_int;
    fn uv_close(h: *mut c_void, cb: HandleCb);
    fn uv_ref(h: *mut c_void);
    fn uv_unref(h: *mut c_void);
}

// uv_handle_type and uv_poll_event values (uv.h).
const UV_ASYNC: c_int = 1;
const UV_POLL: c_int = 8;
const UV_TIMER: c_int = 13;
const UV_READABLE: c_int = 1;
const UV_WRITABLE: c_int = 2;

/// A handle's memory (`uv_handle_size` bytes); the close callback frees it.
fn alloc_handle(kind: c_int) -> *mut c_void {
    unsafe { libc::calloc(1, uv_handle_size(kind)) }
}

/// `handle->data` is the first field of every handle.
unsafe fn set_data(h: *mut c_void, data: *mut c_void) {
    *(h as *mut *mut c_void) = data;
}

unsafe fn data(h: *mut c_void) -> *mut c_void {
    *(h as *mut *mut c_void)
}

unsafe extern "C" fn free_handle(h: *mut c_void) {
    libc::free(h);
}

unsafe fn close(h: *mut c_void) {
    set_data(h, std::ptr::null_mut());
    uv_close(h, free_handle);
}

// ---------------------------------------------------------------------------------------
// Executor

type Task = Pin<Box<dyn Future<Output = ()>>>;

struct Exec {
    thread: ThreadId,
    js: Js,
    /// Unsettled promises; while there are any, the async handle keeps the loop alive.
    pending: Cell<usize>,
    tasks: RefCell<Vec<Option<(Task, Waker)>>>,
    free: RefCell<Vec<usize>>,
    ready: RefCell<VecDeque<usize>>,
    draining: Cell<bool>,
    remote: Arc<Remote>,
}

/// Wakes from other threads (a connect finished on the I/O thread): queued, then the loop is
/// woken through a `uv_async` handle.
struct Remote {
    queue: Mutex<Vec<usize>>,
    handle: usize,
}

struct TaskWaker {
    id: usize,
    thread: ThreadId,
    remote: Arc<Remote>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref()
    }
    fn wake_by_ref(self: &Arc<Self>) {
        if thread::current().id() == self.thread {
            let handled = EXEC
                .try_with(|e| match e.get() {
                    Some(Some(ex)) => {
                        ex.ready.borrow_mut().push_back(self.id);
                        if !ex.draining.get() {
                            unsafe { uv_async_send(self.remote.handle as *mut c_void) };
                        }
                        true
                    }
                    _ => false,
                })
                .unwrap_or(false);
            if handled {
                return;
            }
        }
        self.remote.queue.lock().unwrap_or_else(|e| e.into_inner()).push(self.id);
        unsafe { uv_async_send(self.remote.handle as *mut c_void) };
    }
}

thread_local! {
    /// Leaked on purpose: only the main thread has one, and dropping its tasks while the
    /// process exits would wake wakers whose thread-locals are already gone.
    static EXEC: std::cell::OnceCell<Option<&'static Exec>> = const { std::cell::OnceCell::new() };
}

/// What settling promises from a loop callback needs: the env and an async context.
struct Js {
    env: sys::napi_env,
    resource: sys::napi_ref,
    context: sys::napi_async_context,
}

impl Js {
    /// Called inside a napi call (the first request).
    unsafe fn new(env: sys::napi_env) -> Option<Js> {
        let ok = |s: sys::napi_status| s == sys::Status::napi_ok;
        let mut resource = std::ptr::null_mut();
        let mut name = std::ptr::null_mut();
        let mut rref = std::ptr::null_mut();
        let mut context = std::ptr::null_mut();
        let label = "oma-kernel:llm";
        let good = ok(sys::napi_create_object(env, &mut resource))
            && ok(sys::napi_create_string_utf8(env, label.as_ptr().cast(), label.len() as isize, &mut name))
            && ok(sys::napi_create_reference(env, resource, 1, &mut rref))
            && ok(sys::napi_async_init(env, resource, name, &mut context))
            && ok(sys::napi_add_env_cleanup_hook(env, Some(env_gone), std::ptr::null_mut()));
        good.then_some(Js { env, resource: rref, context })
    }
}

thread_local! {
    /// Set when Node tears the env down: from then on nothing here touches JS.
    static ENV_GONE: Cell<bool> = const { Cell::new(false) };
}

unsafe extern "C" fn env_gone(_arg: *mut c_void) {
    ENV_GONE.with(|g| g.set(true));
}

/// Runs `f` in a handle scope and a callback scope: promise reactions and `nextTick`s run
/// when it closes, as after any of Node's own I/O callbacks.
fn in_js_scope(f: impl FnOnce()) {
    let js = EXEC.with(|e| match e.get() {
        Some(Some(ex)) => Some((ex.js.env, ex.js.resource, ex.js.context)),
        _ => None,
    });
    let Some((env, resource, context)) = js else { return f() };
    if ENV_GONE.with(Cell::get) {
        return;
    }
    unsafe {
        let mut hs = std::ptr::null_mut();
        sys::napi_open_handle_scope(env, &mut hs);
        let mut obj = std::ptr::null_mut();
        sys::napi_get_reference_value(env, resource, &mut obj);
        let mut cs = std::ptr::null_mut();
        let opened = sys::napi_open_callback_scope(env, obj, context, &mut cs) == sys::Status::napi_ok;
        f();
        if opened {
            sys::napi_close_callback_scope(env, cs);
        }
        sys::napi_close_handle_scope(env, hs);
    }
}

/// A promise for the value of a local future (see `settle`).
pub struct Deferred(sys::napi_deferred);

/// A new promise; `Deferred` settles it.
pub fn promise(env: sys::napi_env) -> Option<(Deferred, sys::napi_value)> {
    let mut d = std::ptr::null_mut();
    let mut p = std::ptr::null_mut();
    if unsafe { sys::napi_create_promise(env, &mut d, &mut p) } != sys::Status::napi_ok {
        return None;
    }
    EXEC.with(|e| {
        if let Some(Some(ex)) = e.get() {
            if ex.pending.replace(ex.pending.get() + 1) == 0 {
                unsafe { uv_ref(ex.remote.handle as *mut c_void) };
            }
        }
    });
    Some((Deferred(d), p))
}

impl Deferred {
    /// Resolves with `Ok`'s string or rejects with an Error whose message is `Err`'s. Runs on
    /// the loop thread inside a handle scope (a napi call or `in_js_scope`).
    pub fn settle(self, outcome: Result<String, String>) {
        EXEC.with(|e| {
            let Some(Some(ex)) = e.get() else { return };
            if ENV_GONE.with(Cell::get) {
                return;
            }
            let env = ex.js.env;
            unsafe {
                let (text, ok) = match &outcome {
                    Ok(s) => (s, true),
                    Err(s) => (s, false),
                };
                let mut v = std::ptr::null_mut();
                sys::napi_create_string_utf8(env, text.as_ptr().cast(), text.len() as isize, &mut v);
                if ok {
                    sys::napi_resolve_deferred(env, self.0, v);
                } else {
                    let mut err = std::ptr::null_mut();
                    sys::napi_create_error(env, std::ptr::null_mut(), v, &mut err);
                    sys::napi_reject_deferred(env, self.0, err);
                }
            }
            let n = ex.pending.get() - 1;
            ex.pending.set(n);
            if n == 0 {
                unsafe { uv_unref(ex.remote.handle as *mut c_void) };
            }
        })
    }
}

/// `send` flags: no SIGPIPE from a peer that closed (Node ignores SIGPIPE anyway).
#[cfg(target_os = "linux")]
const SEND_FLAGS: c_int = libc::MSG_NOSIGNAL;
#[cfg(not(target_os = "linux"))]
const SEND_FLAGS: c_int = 0;

/// Whether this thread can run local futures: `env` runs on Node's main thread (its loop is
/// the default one). Call inside a napi call.
///
/// Linux only: elsewhere, and with the `portable` feature, plain-http requests take the I/O
/// thread as HTTPS ones do (same behaviour, two thread wake-ups more per call).
pub fn available(env: sys::napi_env) -> bool {
    if cfg!(any(not(target_os = "linux"), feature = "portable")) {
        return false;
    }
    EXEC.with(|e| {
        e.get_or_init(|| {
            let mut loop_ptr = std::ptr::null_mut();
            let status = unsafe { sys::napi_get_uv_event_loop(env, &mut loop_ptr) };
            if status != sys::Status::napi_ok
                || loop_ptr.is_null()
                || loop_ptr as *mut UvLoop != unsafe { uv_default_loop() }
            {
                return None;
            }
            let js = unsafe { Js::new(env) }?;
            let h = alloc_handle(UV_ASYNC);
            if h.is_null() || unsafe { uv_async_init(loop_ptr as *mut UvLoop, h, on_async) } != 0 {
                return None;
            }
            unsafe { uv_unref(h) };
            Some(&*Box::leak(Box::new(Exec {
                thread: thread::current().id(),
                js,
                pending: Cell::new(0),
                tasks: RefCell::new(Vec::new()),
                free: RefCell::new(Vec::new()),
                ready: RefCell::new(VecDeque::new()),
                draining: Cell::new(false),
                remote: Arc::new(Remote { queue: Mutex::new(Vec::new()), handle: h as usize }),
            })))
        })
        .is_some()
    })
}

unsafe extern "C" fn on_async(_h: *mut c_void) {
    in_js_scope(|| with_woken(|| {}));
}

/// Runs `wake` (which may wake tasks), then every task that is ready.
fn with_woken(wake: impl FnOnce()) {
    EXEC.with(|e| {
        let Some(Some(ex)) = e.get() else { return };
        let outer = ex.draining.replace(true);
        wake();
        if !outer {
            drain(ex);
            ex.draining.set(false);
        }
    })
}

fn drain(ex: &Exec) {
    loop {
        {
            let mut q = ex.remote.queue.lock().unwrap_or_else(|e| e.into_inner());
            ex.ready.borrow_mut().extend(q.drain(..));
        }
        let Some(id) = ex.ready.borrow_mut().pop_front() else { return };
        // Out of the slab while it runs: it may spawn tasks.
        let Some((mut task, waker)) = ex.tasks.borrow_mut().get_mut(id).and_then(Option::take) else { continue };
        let done = task.as_mut().poll(&mut Context::from_waker(&waker)).is_ready();
        if done {
            ex.free.borrow_mut().push(id);
        } else {
            ex.tasks.borrow_mut()[id] = Some((task, waker));
        }
    }
}

/// Runs `fut` on this thread's loop; it is polled at once, up to its first wait. Only call
/// where `available` said yes.
pub fn spawn_local(fut: impl Future<Output = ()> + 'static) {
    with_woken(|| {
        EXEC.with(|e| {
            let Some(Some(ex)) = e.get() else { return };
            let id = match ex.free.borrow_mut().pop() {
                Some(id) => id,
                None => {
                    ex.tasks.borrow_mut().push(None);
                    ex.tasks.borrow().len() - 1
                }
            };
            let waker = Waker::from(Arc::new(TaskWaker { id, thread: ex.thread, remote: ex.remote.clone() }));
            ex.tasks.borrow_mut()[id] = Some((Box::pin(fut), waker));
            ex.ready.borrow_mut().push_back(id);
        })
    });
}

fn default_loop() -> *mut UvLoop {
    unsafe { uv_default_loop() }
}

// ---------------------------------------------------------------------------------------
// Sockets

struct Interest {
    read: Option<Waker>,
    write: Option<Waker>,
    events: c_int,
    /// Events the socket may have (cleared when a read or write finds nothing to do, set by
    /// the poll): a client may try a read after every step, and each such try would otherwise be a
    /// `read` syscall answering EAGAIN (five per call, measured).
    ready: c_int,
    handle: *mut c_void,
}

/// A connected, non-blocking TCP socket watched by the loop.
pub struct UvTcp {
    sock: TcpStream,
    interest: Box<RefCell<Interest>>,
}

impl UvTcp {
    pub fn new(sock: TcpStream) -> io::Result<UvTcp> {
        sock.set_nonblocking(true)?;
        let h = alloc_handle(UV_POLL);
        if h.is_null() {
            return Err(io::Error::other("out of memory"));
        }
        if unsafe { uv_poll_init(default_loop(), h, sock.as_raw_fd()) } != 0 {
            unsafe { libc::free(h) };
            return Err(io::Error::other("uv_poll_init failed"));
        }
        unsafe { uv_unref(h) };
        let interest = Box::new(RefCell::new(Interest {
            read: None,
            write: None,
            events: 0,
            ready: UV_READABLE | UV_WRITABLE,
            handle: h,
        }));
        unsafe { set_data(h, &*interest as *const RefCell<Interest> as *mut c_void) };
        Ok(UvTcp { sock, interest })
    }

    /// For a pooled keep-alive connection: no sign that the server closed it or sent anything.
    /// Readability seen by the loop while idle means one of the two; checked with a peek.
    pub fn idle_and_open(&self) -> bool {
        if self.interest.borrow().ready & UV_READABLE == 0 {
            return true;
        }
        let mut b = 0u8;
        let n = unsafe {
            libc::recv(self.sock.as_raw_fd(), (&mut b as *mut u8).cast(), 1, libc::MSG_PEEK | libc::MSG_DONTWAIT)
        };
        if n < 0 && io::Error::last_os_error().kind() == io::ErrorKind::WouldBlock {
            self.interest.borrow_mut().ready &= !UV_READABLE;
            return true;
        }
        false
    }

    fn want(&self, ev: c_int, waker: &Waker) {
        let mut i = self.interest.borrow_mut();
        if ev == UV_READABLE {
            i.read = Some(waker.clone());
        } else {
            i.write = Some(waker.clone());
        }
        if i.events & ev == 0 {
            i.events |= ev;
            unsafe { uv_poll_start(i.handle, i.events, on_poll) };
        }
    }

    /// Runs `op` (a read or write) if the socket may be ready for it; `drained(n)` says whether
    /// a result of `n` bytes used up that readiness (a short read did).
    fn io(
        &self,
        ev: c_int,
        cx: &mut Context<'_>,
        mut op: impl FnMut() -> io::Result<usize>,
        drained: impl Fn(usize) -> bool,
    ) -> Poll<io::Result<usize>> {
        if self.interest.borrow().ready & ev == 0 {
            self.want(ev, cx.waker());
            return Poll::Pending;
        }
        loop {
            match op() {
                Ok(n) => {
                    if drained(n) {
                        self.interest.borrow_mut().ready &= !ev;
                    }
                    return Poll::Ready(Ok(n));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                    self.interest.borrow_mut().ready &= !ev;
                    self.want(ev, cx.waker());
                    return Poll::Pending;
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

unsafe extern "C" fn on_poll(h: *mut c_void, status: c_int, events: c_int) {
    let p = data(h) as *const RefCell<Interest>;
    if p.is_null() {
        return;
    }
    let (r, w) = {
        let mut i = (*p).borrow_mut();
        // An error wakes both sides: their next read or write reports it.
        let fired = if status < 0 { UV_READABLE | UV_WRITABLE } else { events };
        i.ready |= fired;
        let r = if fired & UV_READABLE != 0 { i.read.take() } else { None };
        let w = if fired & UV_WRITABLE != 0 { i.write.take() } else { None };
        // An interest stays registered while someone waits on it (a keep-alive connection's
        // reader always does): no epoll_ctl per response. Only an event nobody waited for is
        // unregistered (the poll is level-triggered, it would fire again).
        let mut unwanted = 0;
        if fired & UV_READABLE != 0 && r.is_none() {
            unwanted |= UV_READABLE;
        }
        if fired & UV_WRITABLE != 0 && w.is_none() {
            unwanted |= UV_WRITABLE;
        }
        if unwanted != 0 {
            i.events &= !unwanted;
            if i.events == 0 {
                uv_poll_stop(h);
            } else {
                uv_poll_start(h, i.events, on_poll);
            }
        }
        (r, w)
    };
    in_js_scope(|| {
        with_woken(|| {
            if let Some(r) = r {
                r.wake();
            }
            if let Some(w) = w {
                w.wake();
            }
        })
    });
}

impl Drop for UvTcp {
    fn drop(&mut self) {
        let h = self.interest.borrow().handle;
        unsafe {
            uv_poll_stop(h);
            close(h);
        }
    }
}

impl AsyncRead for UvTcp {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        let fd = this.sock.as_raw_fd();
        // Read into the uninitialised tail directly (no zeroing of the client's buffer).
        let dst = unsafe { buf.unfilled_mut() };
        let (ptr, len) = (dst.as_mut_ptr(), dst.len());
        let res = this.io(
            UV_READABLE,
            cx,
            || {
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
                unsafe { buf.assume_init(n) };
                buf.advance(n);
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => Poll::Pending,
        }
    }
}

impl AsyncWrite for UvTcp {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, data: &[u8]) -> Poll<io::Result<usize>> {
        let fd = self.sock.as_raw_fd();
        self.io(
            UV_WRITABLE,
            cx,
            || {
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
        let total: usize = bufs.iter().take(1024).map(|b| b.len()).sum();
        self.io(
            UV_WRITABLE,
            cx,
            || {
                let mut msg: libc::msghdr = unsafe { std::mem::zeroed() };
                msg.msg_iov = bufs.as_ptr() as *mut libc::iovec;
                msg.msg_iovlen = bufs.len().min(1024) as _;
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

// ---------------------------------------------------------------------------------------
// Timers

struct TimerState {
    fired: bool,
    waker: Option<Waker>,
}

/// Completes after `d` (millisecond resolution, like every libuv timer).
pub struct Sleep {
    handle: *mut c_void,
    state: Box<RefCell<TimerState>>,
}

thread_local! {
    /// Stopped, unreferenced timer handles for the next `Sleep`s: every request has a timeout
    /// timer, and a handle kept costs less than one initialised and closed per request.
    static IDLE_TIMERS: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

const MAX_IDLE_TIMERS: usize = 16;

impl Sleep {
    pub fn new(d: Duration) -> Sleep {
        let state = Box::new(RefCell::new(TimerState { fired: false, waker: None }));
        let h = match IDLE_TIMERS.with(|t| t.borrow_mut().pop()) {
            Some(h) => h as *mut c_void,
            None => {
                let h = alloc_handle(UV_TIMER);
                let ok = !h.is_null() && unsafe { uv_timer_init(default_loop(), h) } == 0;
                if !ok {
                    // No timer (out of memory): never fires; the request's own outcome still ends it.
                    if !h.is_null() {
                        unsafe { libc::free(h) };
                    }
                    return Sleep { handle: std::ptr::null_mut(), state };
                }
                unsafe { uv_unref(h) };
                h
            }
        };
        unsafe {
            set_data(h, &*state as *const RefCell<TimerState> as *mut c_void);
            let ms = d.as_nanos().div_ceil(1_000_000).min(u64::MAX as u128) as u64;
            uv_timer_start(h, on_timer, ms, 0);
        }
        Sleep { handle: h, state }
    }
}

unsafe extern "C" fn on_timer(h: *mut c_void) {
    let p = data(h) as *const RefCell<TimerState>;
    if p.is_null() {
        return;
    }
    let w = {
        let mut s = (*p).borrow_mut();
        s.fired = true;
        s.waker.take()
    };
    in_js_scope(|| {
        with_woken(|| {
            if let Some(w) = w {
                w.wake();
            }
        })
    });
}

impl Future for Sleep {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        let mut s = self.state.borrow_mut();
        if s.fired {
            Poll::Ready(())
        } else {
            s.waker = Some(cx.waker().clone());
            Poll::Pending
        }
    }
}

impl Drop for Sleep {
    fn drop(&mut self) {
        if !self.handle.is_null() {
            unsafe {
                uv_timer_stop(self.handle);
                set_data(self.handle, std::ptr::null_mut());
            }
            let kept = IDLE_TIMERS
                .try_with(|t| {
                    let mut t = t.borrow_mut();
                    (t.len() < MAX_IDLE_TIMERS).then(|| t.push(self.handle as usize)).is_some()
                })
                .unwrap_or(false);
            if !kept {
                unsafe { close(self.handle) };
            }
        }
    }
}
