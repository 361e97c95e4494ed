//! A future that completes after a while, on one of the loop's timers.

use std::cell::Cell;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use crate::exec::Exec;
use crate::reactor::Reactor;

/// Stopped timers kept for the next `Sleep`s: every request has a timeout timer, and a timer
/// kept costs less than one opened and closed per request.
const MAX_IDLE_TIMERS: usize = 16;

/// What a timer's report reaches (its target): boxed, so its address is stable while the
/// `Sleep` moves.
struct TimerState<R: Reactor> {
    exec: Rc<Exec<R>>,
    fired: Cell<bool>,
    waker: Cell<Option<Waker>>,
}

/// Completes after a duration (millisecond resolution, like every libuv timer).
pub struct Sleep<R: Reactor> {
    /// `None`: no timer could be had (out of memory); it never fires, and the request's own
    /// outcome still ends the wait.
    timer: Option<R::Timer>,
    state: Box<TimerState<R>>,
}

impl<R: Reactor> Sleep<R> {
    pub fn new(exec: &Rc<Exec<R>>, d: Duration) -> Sleep<R> {
        let state = Box::new(TimerState { exec: Rc::clone(exec), fired: Cell::new(false), waker: Cell::new(None) });
        let timer = exec.idle_timers.borrow_mut().pop().or_else(|| exec.reactor().timer());
        if let Some(t) = &timer {
            let ms = d.as_nanos().div_ceil(1_000_000).min(u64::MAX as u128) as u64;
            exec.reactor().start_timer(t, ms, &*state as *const TimerState<R> as *const ());
        }
        Sleep { timer, state }
    }
}

/// The reactor's report that a timer fired: wakes the `Sleep` it was started for.
///
/// # Safety
///
/// `target` is the target given to `R::start_timer` for a timer that has not been stopped
/// since, and this runs on the loop's thread, not inside a call of this crate into the reactor.
pub unsafe fn timer_fired<R: Reactor>(target: *const ()) {
    // SAFETY: by the contract above `target` is the `TimerState` of a `Sleep` whose timer runs;
    // a `Sleep` stops its timer in `drop` before its box is freed, so the state is alive. It is
    // not touched after the task runs (below), which may drop the `Sleep`.
    let s = unsafe { &*(target as *const TimerState<R>) };
    s.fired.set(true);
    let w = s.waker.take();
    // Kept past the state: the woken task may drop the `Sleep` and with it the state's `Rc`.
    let exec = Rc::clone(&s.exec);
    exec.reactor().in_callback(|| {
        exec.run_woken(|| {
            if let Some(w) = w {
                w.wake();
            }
        })
    });
}

impl<R: Reactor> Future for Sleep<R> {
    type Output = ();
    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.state.fired.get() {
            Poll::Ready(())
        } else {
            self.state.waker.set(Some(cx.waker().clone()));
            Poll::Pending
        }
    }
}

impl<R: Reactor> Drop for Sleep<R> {
    fn drop(&mut self) {
        let Some(t) = self.timer.take() else { return };
        let exec = &self.state.exec;
        // Before the state is freed (the field drops after this): no report can reach it.
        exec.reactor().stop_timer(&t);
        let mut idle = exec.idle_timers.borrow_mut();
        if idle.len() < MAX_IDLE_TIMERS {
            idle.push(t);
        } else {
            drop(idle);
            exec.reactor().close_timer(t);
        }
    }
}
