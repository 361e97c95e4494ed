//! A [`Reactor`] over poll(2) for the tests: the loop runs in [`run_until`] on the test's own
//! thread, reports as libuv does (level-triggered readiness of the events asked for, an error
//! stops the watch, one-shot timers, coalesced wake-ups), and counts what was opened and
//! closed.

use std::cell::RefCell;
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::{io_ready, timer_fired, Exec, Reactor, Remote, READABLE, WRITABLE};

struct WatchReg {
    fd: RawFd,
    events: u32,
    target: *const (),
}

/// Slots are never reused, so a slot names one watch or timer for the whole test.
#[derive(Default)]
pub struct State {
    watches: Vec<Option<WatchReg>>,
    /// `Some(None)`: open and stopped; `Some(Some(..))`: running.
    timers: Vec<Option<Option<(Instant, *const ())>>>,
    pub counts: Counts,
}

#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct Counts {
    pub watches_opened: usize,
    pub watches_closed: usize,
    pub timers_opened: usize,
    pub timers_closed: usize,
    /// Readiness reports delivered (`io_ready` calls).
    pub io_reports: usize,
    pub keep_alive: bool,
}

impl State {
    pub fn timers_running(&self) -> usize {
        self.timers.iter().flatten().filter(|t| t.is_some()).count()
    }
}

pub struct PollReactor {
    state: Rc<RefCell<State>>,
    pipe: Arc<WakePipe>,
}

/// The self-pipe that wakes `poll` from other threads. Both ends live as long as any
/// `PipeWaker`, so a wake after the loop ended writes into a pipe that still has a reader (no
/// SIGPIPE).
pub struct WakePipe {
    read: OwnedFd,
    write: OwnedFd,
    /// `Remote::wake` calls.
    pub wakes: AtomicUsize,
}

pub struct PipeWaker(pub Arc<WakePipe>);

impl Remote for PipeWaker {
    fn wake(&self) {
        self.0.wakes.fetch_add(1, Ordering::SeqCst);
        // SAFETY: writes one byte from a live local to a descriptor owned by the `WakePipe`,
        // which this `Arc` keeps open. A full pipe (EAGAIN) already has a wake-up pending.
        unsafe { libc::write(self.0.write.as_raw_fd(), [1u8].as_ptr().cast(), 1) };
    }
}

fn nonblocking_pipe() -> (OwnedFd, OwnedFd) {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` has room for the two descriptors `pipe` writes.
    assert_eq!(unsafe { libc::pipe(fds.as_mut_ptr()) }, 0, "pipe");
    for fd in fds {
        // SAFETY: `fd` was just returned by `pipe` and is open.
        unsafe { libc::fcntl(fd, libc::F_SETFL, libc::O_NONBLOCK) };
        // SAFETY: as above.
        unsafe { libc::fcntl(fd, libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    // SAFETY: both descriptors are open and owned by nobody else.
    unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) }
}

/// A loop executor over a new poll reactor, and its state (readable after the executor is
/// gone).
pub fn new_exec() -> (Rc<Exec<PollReactor>>, Rc<RefCell<State>>, Arc<WakePipe>) {
    let (read, write) = nonblocking_pipe();
    let pipe = Arc::new(WakePipe { read, write, wakes: AtomicUsize::new(0) });
    let state = Rc::new(RefCell::new(State::default()));
    let exec = Exec::new(PollReactor { state: state.clone(), pipe: pipe.clone() }, PipeWaker(pipe.clone()));
    (exec, state, pipe)
}

pub struct WatchId(usize);
pub struct TimerId(usize);

impl Reactor for PollReactor {
    type Watch = WatchId;
    type Timer = TimerId;
    type Remote = PipeWaker;

    fn watch(&self, fd: RawFd, target: *const ()) -> io::Result<WatchId> {
        let mut st = self.state.borrow_mut();
        st.watches.push(Some(WatchReg { fd, events: 0, target }));
        st.counts.watches_opened += 1;
        Ok(WatchId(st.watches.len() - 1))
    }

    fn set_interest(&self, w: &WatchId, events: u32) {
        self.state.borrow_mut().watches[w.0].as_mut().expect("set_interest on a closed watch").events = events;
    }

    fn close_watch(&self, w: WatchId) {
        let mut st = self.state.borrow_mut();
        assert!(st.watches[w.0].take().is_some(), "watch closed twice");
        st.counts.watches_closed += 1;
    }

    fn timer(&self) -> Option<TimerId> {
        let mut st = self.state.borrow_mut();
        st.timers.push(Some(None));
        st.counts.timers_opened += 1;
        Some(TimerId(st.timers.len() - 1))
    }

    fn start_timer(&self, t: &TimerId, ms: u64, target: *const ()) {
        let at = Instant::now() + Duration::from_millis(ms);
        *self.state.borrow_mut().timers[t.0].as_mut().expect("start of a closed timer") = Some((at, target));
    }

    fn stop_timer(&self, t: &TimerId) {
        *self.state.borrow_mut().timers[t.0].as_mut().expect("stop of a closed timer") = None;
    }

    fn close_timer(&self, t: TimerId) {
        let mut st = self.state.borrow_mut();
        let slot = st.timers[t.0].take().expect("timer closed twice");
        assert!(slot.is_none(), "a running timer closed");
        st.counts.timers_closed += 1;
    }

    fn keep_alive(&self, on: bool) {
        self.state.borrow_mut().counts.keep_alive = on;
    }

    fn in_callback(&self, f: impl FnOnce()) {
        // A callback runs with no borrow of the state held: tasks call back into the reactor.
        debug_assert!(self.state.try_borrow_mut().is_ok());
        f()
    }
}

/// Runs the loop until `fut` (spawned on `exec`) finishes; panics after 20 s.
pub fn run_until<T: 'static>(exec: &Rc<Exec<PollReactor>>, fut: impl Future<Output = T> + 'static) -> T {
    let out = Rc::new(RefCell::new(None));
    let o = out.clone();
    exec.spawn(async move { *o.borrow_mut() = Some(fut.await) });
    let give_up = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(v) = out.borrow_mut().take() {
            return v;
        }
        assert!(Instant::now() < give_up, "the loop did not finish the future within 20 s");
        turn(exec, give_up);
    }
}

fn poll_bits(events: u32) -> libc::c_short {
    let mut b = 0;
    if events & READABLE != 0 {
        b |= libc::POLLIN;
    }
    if events & WRITABLE != 0 {
        b |= libc::POLLOUT;
    }
    b
}

/// One iteration: waits for the first watch, timer or wake-up, then reports what is due.
fn turn(exec: &Exec<PollReactor>, give_up: Instant) {
    let r = exec.reactor();
    let now = Instant::now();
    let (mut fds, slots, timeout) = {
        let st = r.state.borrow();
        let next_timer = st.timers.iter().flatten().flatten().map(|(at, _)| *at).min();
        let until = next_timer.unwrap_or(give_up).min(give_up);
        let ms = until.saturating_duration_since(now).as_nanos().div_ceil(1_000_000);
        let mut fds = vec![libc::pollfd { fd: r.pipe.read.as_raw_fd(), events: libc::POLLIN, revents: 0 }];
        let mut slots = Vec::new();
        for (i, w) in st.watches.iter().enumerate() {
            if let Some(w) = w.as_ref().filter(|w| w.events != 0) {
                fds.push(libc::pollfd { fd: w.fd, events: poll_bits(w.events), revents: 0 });
                slots.push(i);
            }
        }
        (fds, slots, ms.min(i32::MAX as u128) as libc::c_int)
    };
    // SAFETY: `fds` is a live array of `fds.len()` pollfds, written by `poll` in place.
    let n = unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout) };
    assert!(n >= 0 || io::Error::last_os_error().kind() == io::ErrorKind::Interrupted, "poll failed");

    // Timers due, earliest first as libuv runs them, one report each (a report may start or
    // stop others).
    let now = Instant::now();
    loop {
        let due = {
            let mut st = r.state.borrow_mut();
            st.timers
                .iter_mut()
                .flatten()
                .filter(|t| t.is_some_and(|(at, _)| at <= now))
                .min_by_key(|t| t.map(|(at, _)| at))
                .and_then(Option::take)
        };
        let Some((_, target)) = due else { break };
        // SAFETY: the timer was running (started with `target`, not stopped since) and is
        // stopped now, as libuv's one-shot timers are before their callback; the state is not
        // borrowed and this is the loop's thread.
        unsafe { timer_fired::<PollReactor>(target) };
    }

    for (k, &slot) in slots.iter().enumerate() {
        let re = fds[k + 1].revents;
        if re == 0 {
            continue;
        }
        let report = {
            let mut st = r.state.borrow_mut();
            // Closed, or no longer interested, since the poll began: nothing to report.
            let Some(w) = st.watches[slot].as_mut().filter(|w| w.events != 0) else { continue };
            let error = re & (libc::POLLERR | libc::POLLNVAL) != 0;
            let mut ev = 0;
            if re & libc::POLLIN != 0 {
                ev |= READABLE;
            }
            if re & libc::POLLOUT != 0 {
                ev |= WRITABLE;
            }
            // A hang-up is reported as what is watched (libuv does the same).
            if re & libc::POLLHUP != 0 {
                ev |= w.events;
            }
            let ev = ev & w.events;
            if error {
                w.events = 0;
            }
            let target = w.target;
            if !error && ev == 0 {
                continue;
            }
            st.counts.io_reports += 1;
            (target, error, ev)
        };
        // SAFETY: the watch is open (checked above, nothing ran since), `target` is the one it
        // was opened with; the state is not borrowed and this is the loop's thread.
        unsafe { io_ready::<PollReactor>(report.0, report.1, report.2) };
    }

    if fds[0].revents != 0 {
        let mut buf = [0u8; 64];
        // SAFETY: reads into a live local buffer of its length from the pipe's own descriptor.
        while unsafe { libc::read(r.pipe.read.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) } > 0 {}
        exec.on_remote_wake();
    }
}
