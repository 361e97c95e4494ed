//! What the executor, sockets and timers need from an event loop: watch a descriptor for
//! readiness, one-shot timers, a wake-up from another thread, and a scope around the work a
//! loop callback does. The addon implements it over Node's libuv loop (`src/js/uv.rs`); the
//! crate's tests over poll(2) (`test_reactor.rs`).
//!
//! Everything is generic over the reactor (static dispatch): the addon's calls compile to the
//! libuv calls they were before this trait existed.
//!
//! A reactor reports what happens by calling this crate's entry points from its callbacks:
//! [`crate::io_ready`] for a watch, [`crate::timer_fired`] for a timer, and
//! [`crate::Exec::on_remote_wake`] for a wake-up. The entry points are `unsafe`: their
//! contract (a target still open, the loop's thread) is the reactor's to keep.

use std::io;
use std::os::fd::RawFd;

/// A watch's readiness bits. The values are libuv's `UV_READABLE` and `UV_WRITABLE`, so the
/// addon's reactor passes libuv's events through unchanged.
pub const READABLE: u32 = 1;
pub const WRITABLE: u32 = 2;

/// An event loop running on one thread. Every method is called on that thread.
pub trait Reactor: 'static {
    /// A descriptor being watched (closed by [`Reactor::close_watch`]).
    type Watch;
    /// A one-shot timer (closed by [`Reactor::close_timer`]).
    type Timer;
    /// Wakes the loop from any thread.
    type Remote: Remote;

    /// Starts watching `fd`, with no interest yet. Its readiness is reported with
    /// `io_ready::<Self>(target, ..)` until it is closed; `target` stays valid until then.
    fn watch(&self, fd: RawFd, target: *const ()) -> io::Result<Self::Watch>;

    /// The events (`READABLE | WRITABLE` bits) reported from now on; 0 stops the reports. An
    /// error report stops them too (as libuv's `uv_poll` does), until the next call.
    fn set_interest(&self, w: &Self::Watch, events: u32);

    /// Stops and closes the watch: no report for it after this returns. The descriptor is
    /// the caller's (it closes it after this).
    fn close_watch(&self, w: Self::Watch);

    /// A new stopped timer; `None` when none can be had (out of memory).
    fn timer(&self) -> Option<Self::Timer>;

    /// (Re)starts the timer: `timer_fired::<Self>(target)` once, `ms` milliseconds from now,
    /// unless it is stopped first. `target` stays valid until the timer fires or is stopped.
    fn start_timer(&self, t: &Self::Timer, ms: u64, target: *const ());

    /// Stops the timer: no report until it is started again.
    fn stop_timer(&self, t: &Self::Timer);

    /// Closes a stopped timer.
    fn close_timer(&self, t: Self::Timer);

    /// Whether unfinished work keeps the loop (the process) alive: Node's loop would
    /// otherwise exit under a pending request, since every watch and timer here is
    /// unreferenced.
    fn keep_alive(&self, on: bool);

    /// Runs the work of one loop callback (waking and polling tasks). The addon opens a napi
    /// handle scope and callback scope around it, so promise reactions run when it returns, as
    /// after Node's own I/O callbacks; it may skip `f` when there is no JS to run it for any
    /// more (the environment is being torn down).
    fn in_callback(&self, f: impl FnOnce());
}

/// Wakes a loop from any thread; the loop then calls [`crate::Exec::on_remote_wake`]. Wake-ups
/// may be coalesced (several `wake`s, one report).
pub trait Remote: Send + Sync + 'static {
    fn wake(&self);
}
