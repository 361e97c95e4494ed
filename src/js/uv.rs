//! The JS thread's transport on Node's own event loop: oma-uv's [`Reactor`] over libuv, and the
//! promises its futures settle.
//!
//! The executor, sockets, timers and the HTTP/HTTPS client are oma-uv's (crates/uv, tested there
//! over poll(2)); this module gives them Node's loop: `uv_poll` watches, `uv_timer`s and a
//! `uv_async` handle for wake-ups from other threads, all resolved against the node binary when
//! the addon loads.
//!
//! Only the main thread uses this (`available`); worker threads keep the I/O thread. It serves
//! `chat` and `stream()` to HTTP and HTTPS endpoints reached without a proxy. Every
//! handle is unreferenced; a pending request keeps Node alive through the referenced `uv_async`
//! handle while any promise is unsettled. Promises are settled from the loop's callbacks
//! inside a napi callback scope, so their reactions run right after, as for Node's own I/O.
//!
//! Handles: each is `uv_handle_size` bytes from `calloc`, owned by the watch, timer or async it
//! implements until `uv_close`, whose callback (`free_handle`) frees it; `handle->data` holds
//! oma-uv's target for the callbacks and is cleared when the target stops being valid.

#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks, clippy::missing_safety_doc)]

use std::cell::{Cell, OnceCell};
use std::future::Future;
use std::io;
use std::os::fd::RawFd;
use std::os::raw::{c_int, c_void};
use std::rc::Rc;

use napi::sys;
use oma_uv::{Exec, LocalHttp, Reactor, Remote};

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

// uv_handle_type values (uv.h). The poll events are oma-uv's READABLE and WRITABLE, which have
// libuv's values.
const UV_ASYNC: c_int = 1;
const UV_POLL: c_int = 8;
const UV_TIMER: c_int = 13;

/// A handle's memory (`uv_handle_size` bytes, zeroed, or null); `free_handle` frees it.
fn alloc_handle(kind: c_int) -> *mut c_void {
    // SAFETY: `uv_handle_size` only looks up the size of a valid handle type; `calloc` returns
    // null or that many zeroed bytes, aligned for any type.
    unsafe { libc::calloc(1, uv_handle_size(kind)) }
}

/// Sets `handle->data`.
///
/// # Safety
///
/// `h` is a handle from `alloc_handle` that is not freed, used on the loop's thread.
unsafe fn set_data(h: *mut c_void, data: *mut c_void) {
    // SAFETY: `data` is the first field of every libuv handle (UV_HANDLE_FIELDS), so it is at
    // `h`, which is live and aligned (caller's contract, `calloc`).
    unsafe { *(h as *mut *mut c_void) = data };
}

/// `handle->data`.
///
/// # Safety
///
/// As for `set_data`.
unsafe fn data(h: *mut c_void) -> *mut c_void {
    // SAFETY: as in `set_data`.
    unsafe { *(h as *mut *mut c_void) }
}

/// The close callback of every handle here.
///
/// # Safety
///
/// Called by libuv once per handle, when it is closed, with that handle.
unsafe extern "C" fn free_handle(h: *mut c_void) {
    // SAFETY: `h` came from `calloc` (`alloc_handle`), and libuv no longer uses it once the
    // close callback runs.
    unsafe { libc::free(h) };
}

/// Closes a handle: no callback of it runs from now on, and its memory is freed by libuv
/// later.
///
/// # Safety
///
/// `h` is an initialised handle that is not closed yet, on the loop's thread; the caller does
/// not use it again.
unsafe fn close(h: *mut c_void) {
    // SAFETY: the caller's contract; the callbacks check `data` for null, so a report already
    // queued for this loop iteration finds nothing.
    unsafe {
        set_data(h, std::ptr::null_mut());
        uv_close(h, free_handle);
    }
}

/// A `uv_poll_t` or `uv_timer_t` of the main thread's loop, open until its reactor closes it.
pub struct UvHandle(*mut c_void);

/// Wakes the loop from any thread through the `uv_async` handle.
pub struct UvAsync(*mut c_void);

// SAFETY: `uv_async_send` is libuv's one call that may be made from any thread, and the handle
// is never closed (the executor that owns it is leaked, see `available`), so the pointer stays
// valid on every thread for the life of the process.
unsafe impl Send for UvAsync {}
// SAFETY: as for `Send`: the only use is `uv_async_send`, which is thread-safe.
unsafe impl Sync for UvAsync {}

impl Remote for UvAsync {
    fn wake(&self) {
        // SAFETY: see the `Send` impl: an initialised async handle, never closed.
        unsafe { uv_async_send(self.0) };
    }
}

/// Node's main-thread loop as oma-uv's reactor. Every method runs on the main thread (oma-uv
/// calls them from the executor that lives there).
pub struct UvReactor {
    lp: *mut UvLoop,
    js: Js,
    /// The `uv_async` handle: `on_async` runs the tasks woken from other threads; referenced
    /// while work is held (`keep_alive`).
    wake: *mut c_void,
}

impl Reactor for UvReactor {
    type Watch = UvHandle;
    type Timer = UvHandle;
    type Remote = UvAsync;

    fn watch(&self, fd: RawFd, target: *const ()) -> io::Result<UvHandle> {
        let h = alloc_handle(UV_POLL);
        if h.is_null() {
            return Err(io::Error::other("out of memory"));
        }
        // SAFETY: `h` is zeroed memory of a poll handle's size, `self.lp` the main thread's
        // loop, and this runs on that thread; `fd` is the caller's open socket.
        if unsafe { uv_poll_init(self.lp, h, fd) } != 0 {
            // SAFETY: not initialised, so libuv does not know it: freed here, once.
            unsafe { libc::free(h) };
            return Err(io::Error::other("uv_poll_init failed"));
        }
        // SAFETY: `h` is an initialised handle, freshly made on the loop's thread; `target`
        // stays valid until `close_watch` (oma-uv's contract), which clears it first.
        unsafe {
            uv_unref(h);
            set_data(h, target as *mut c_void);
        }
        Ok(UvHandle(h))
    }

    fn set_interest(&self, w: &UvHandle, events: u32) {
        // SAFETY: `w` is an open poll handle (closing consumes it), on the loop's thread.
        unsafe {
            if events == 0 {
                uv_poll_stop(w.0);
            } else {
                uv_poll_start(w.0, events as c_int, on_poll);
            }
        }
    }

    fn close_watch(&self, w: UvHandle) {
        // SAFETY: `w` is an open poll handle, consumed here: it is stopped and closed once.
        unsafe {
            uv_poll_stop(w.0);
            close(w.0);
        }
    }

    fn timer(&self) -> Option<UvHandle> {
        let h = alloc_handle(UV_TIMER);
        if h.is_null() {
            return None;
        }
        // SAFETY: `h` is zeroed memory of a timer handle's size, `self.lp` the main thread's
        // loop, on that thread.
        if unsafe { uv_timer_init(self.lp, h) } != 0 {
            // SAFETY: not initialised, so libuv does not know it: freed here, once.
            unsafe { libc::free(h) };
            return None;
        }
        // SAFETY: an initialised handle on the loop's thread.
        unsafe { uv_unref(h) };
        Some(UvHandle(h))
    }

    fn start_timer(&self, t: &UvHandle, ms: u64, target: *const ()) {
        // SAFETY: `t` is an open timer handle on the loop's thread; `target` stays valid until
        // the timer fires or `stop_timer`, which clears it.
        unsafe {
            set_data(t.0, target as *mut c_void);
            uv_timer_start(t.0, on_timer, ms, 0);
        }
    }

    fn stop_timer(&self, t: &UvHandle) {
        // SAFETY: `t` is an open timer handle on the loop's thread.
        unsafe {
            uv_timer_stop(t.0);
            set_data(t.0, std::ptr::null_mut());
        }
    }

    fn close_timer(&self, t: UvHandle) {
        // SAFETY: `t` is an open, stopped timer handle, consumed here: closed once.
        unsafe { close(t.0) };
    }

    fn keep_alive(&self, on: bool) {
        // SAFETY: the async handle is initialised and never closed; the loop's thread.
        unsafe {
            if on {
                uv_ref(self.wake);
            } else {
                uv_unref(self.wake);
            }
        }
    }

    fn in_callback(&self, f: impl FnOnce()) {
        self.js.in_scope(f)
    }
}

/// A poll handle's callback.
///
/// # Safety
///
/// Called by libuv on the loop's thread, with a started poll handle of `UvReactor::watch`.
unsafe extern "C" fn on_poll(h: *mut c_void, status: c_int, events: c_int) {
    // SAFETY: libuv calls this on the loop's thread with the live poll handle it was started
    // for.
    let target = unsafe { data(h) };
    if target.is_null() {
        return;
    }
    // SAFETY: a non-null `data` is the target the watch was opened with, and the watch is open
    // (`close` clears it); this is a loop callback on the main thread, outside any call of
    // oma-uv into the reactor.
    unsafe { oma_uv::io_ready::<UvReactor>(target as *const (), status < 0, events as u32) };
}

/// A timer handle's callback.
///
/// # Safety
///
/// Called by libuv on the loop's thread, with a timer of `UvReactor::timer` that fired.
unsafe extern "C" fn on_timer(h: *mut c_void) {
    // SAFETY: libuv calls this on the loop's thread with the live timer handle that fired.
    let target = unsafe { data(h) };
    if target.is_null() {
        return;
    }
    // SAFETY: a non-null `data` is the target the timer was started with and it has not been
    // stopped since (`stop_timer` clears it); a loop callback on the main thread.
    unsafe { oma_uv::timer_fired::<UvReactor>(target as *const ()) };
}

/// The async handle's callback: the tasks woken from other threads run.
///
/// # Safety
///
/// Called by libuv on the loop's (main) thread; touches nothing but this thread's executor.
unsafe extern "C" fn on_async(_h: *mut c_void) {
    if let Some(l) = local() {
        l.exec.on_remote_wake();
    }
}

// ---------------------------------------------------------------------------------------
// napi: the scope of a loop callback, and promises

/// What settling promises from a loop callback needs: the env and an async context.
struct Js {
    env: sys::napi_env,
    resource: sys::napi_ref,
    context: sys::napi_async_context,
}

impl Js {
    /// Called inside a napi call (the first request), on the main thread.
    fn new(env: sys::napi_env) -> Option<Js> {
        let ok = |s: sys::napi_status| s == sys::Status::napi_ok;
        let mut resource = std::ptr::null_mut();
        let mut name = std::ptr::null_mut();
        let mut rref = std::ptr::null_mut();
        let mut context = std::ptr::null_mut();
        let label = "oma-kernel:llm";
        // SAFETY: `env` is the env of the napi call this runs in, on its thread; every out
        // pointer is a live local; `label` is valid UTF-8 of the given length. The reference
        // (count 1) keeps the resource object alive for the async context, for good: both live
        // as long as the leaked executor.
        let good = unsafe {
            ok(sys::napi_create_object(env, &mut resource))
                && ok(sys::napi_create_string_utf8(env, label.as_ptr().cast(), label.len() as isize, &mut name))
                && ok(sys::napi_create_reference(env, resource, 1, &mut rref))
                && ok(sys::napi_async_init(env, resource, name, &mut context))
                && ok(sys::napi_add_env_cleanup_hook(env, Some(env_gone), std::ptr::null_mut()))
        };
        good.then_some(Js { env, resource: rref, context })
    }

    /// Runs `f` in a handle scope and a callback scope: promise reactions and `nextTick`s run
    /// when it closes, as after any of Node's own I/O callbacks. Nothing runs once the env is
    /// being torn down.
    fn in_scope(&self, f: impl FnOnce()) {
        if ENV_GONE.with(Cell::get) {
            return;
        }
        // SAFETY: a loop callback on the main thread, whose env is alive (not torn down, checked
        // above); `resource` and `context` were made for it in `Js::new` and are never freed.
        // The scopes are closed in the reverse order of opening, after `f`.
        unsafe {
            let mut hs = std::ptr::null_mut();
            sys::napi_open_handle_scope(self.env, &mut hs);
            let mut obj = std::ptr::null_mut();
            sys::napi_get_reference_value(self.env, self.resource, &mut obj);
            let mut cs = std::ptr::null_mut();
            let opened = sys::napi_open_callback_scope(self.env, obj, self.context, &mut cs) == sys::Status::napi_ok;
            f();
            if opened {
                sys::napi_close_callback_scope(self.env, cs);
            }
            sys::napi_close_handle_scope(self.env, hs);
        }
    }
}

thread_local! {
    /// Set when Node tears the env down: from then on nothing here touches JS.
    static ENV_GONE: Cell<bool> = const { Cell::new(false) };
}

/// Node's cleanup hook of the env.
///
/// # Safety
///
/// Called by Node on the env's thread while it is torn down; only sets a flag.
unsafe extern "C" fn env_gone(_arg: *mut c_void) {
    ENV_GONE.with(|g| g.set(true));
}

/// The main thread's executor and HTTP client.
struct Local {
    exec: Rc<Exec<UvReactor>>,
    http: LocalHttp<UvReactor>,
}

thread_local! {
    /// Leaked on purpose: only the main thread has one, and dropping its tasks or closing its
    /// sockets while the process exits would wake wakers whose thread-locals are already gone
    /// and touch a loop that is already gone.
    static LOCAL: OnceCell<Option<&'static Local>> = const { OnceCell::new() };
}

fn local() -> Option<&'static Local> {
    LOCAL.with(|l| l.get().copied().flatten())
}

/// A promise for the value of a local future (see `settle`).
pub struct Deferred(sys::napi_deferred);

/// A new promise; `Deferred` settles it. Call inside a napi call.
pub fn promise(env: sys::napi_env) -> Option<(Deferred, sys::napi_value)> {
    let mut d = std::ptr::null_mut();
    let mut p = std::ptr::null_mut();
    // SAFETY: `env` is the current napi call's; the out pointers are live locals.
    if unsafe { sys::napi_create_promise(env, &mut d, &mut p) } != sys::Status::napi_ok {
        return None;
    }
    if let Some(l) = local() {
        l.exec.hold();
    }
    Some((Deferred(d), p))
}

impl Deferred {
    /// Resolves with `Ok`'s string or rejects with an Error whose message is `Err`'s. Runs on
    /// the loop thread inside a handle scope (a napi call or a loop callback's scope).
    pub fn settle(self, outcome: Result<String, String>) {
        let Some(l) = local() else { return };
        if ENV_GONE.with(Cell::get) {
            return;
        }
        let env = l.exec.reactor().js.env;
        let (text, ok) = match &outcome {
            Ok(s) => (s, true),
            Err(s) => (s, false),
        };
        // SAFETY: on the main thread inside a handle scope (this method's contract), with its
        // live env; `text` is valid UTF-8 of the given length; the deferred is settled once (it
        // is consumed with `self`).
        unsafe {
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
        l.exec.release();
    }
}

/// Whether this thread can run local futures: `env` runs on Node's main thread (its loop is
/// the default one). Call inside a napi call.
///
/// Linux only: elsewhere, and with the `portable` feature, every request takes the I/O thread
/// (same behaviour, two thread wake-ups more per call).
pub fn available(env: sys::napi_env) -> bool {
    if cfg!(any(not(target_os = "linux"), feature = "portable")) {
        return false;
    }
    LOCAL.with(|l| l.get_or_init(|| start(env)).is_some())
}

/// The executor on the main thread's loop, or `None` when `env` is not the main thread's.
fn start(env: sys::napi_env) -> Option<&'static Local> {
    let mut lp = std::ptr::null_mut();
    // SAFETY: `env` is the current napi call's; the out pointer is a live local.
    let status = unsafe { sys::napi_get_uv_event_loop(env, &mut lp) };
    let lp = lp as *mut UvLoop;
    // SAFETY: `uv_default_loop` only returns the process's default loop (made on first use).
    if status != sys::Status::napi_ok || lp.is_null() || lp != unsafe { uv_default_loop() } {
        return None;
    }
    let js = Js::new(env)?;
    let h = alloc_handle(UV_ASYNC);
    if h.is_null() {
        return None;
    }
    // SAFETY: `h` is zeroed memory of an async handle's size, `lp` this thread's loop.
    if unsafe { uv_async_init(lp, h, on_async) } != 0 {
        // SAFETY: not initialised, so libuv does not know it: freed here, once.
        unsafe { libc::free(h) };
        return None;
    }
    // SAFETY: an initialised handle on the loop's thread; unreferenced until work is held.
    unsafe { uv_unref(h) };
    let exec = Exec::new(UvReactor { lp, js, wake: h }, UvAsync(h));
    let http = LocalHttp::new(&exec);
    Some(Box::leak(Box::new(Local { exec, http })))
}

/// `LocalHttp::requests` of the main thread's client (0 when it has none).
pub fn local_requests() -> u64 {
    local().map_or(0, |l| l.http.requests())
}

/// Runs the future `task` makes with the main thread's HTTP client on this thread's loop; it is
/// polled at once, up to its first wait. Only call where `available` said yes.
pub fn spawn_local<F: Future<Output = ()> + 'static>(task: impl FnOnce(&'static LocalHttp<UvReactor>) -> F) {
    if let Some(l) = local() {
        l.exec.spawn_with(|| task(&l.http));
    }
}
