//! A small executor for futures on the loop's thread: tasks are polled from the loop's
//! callbacks (a socket or timer woke them) and when spawned, never from a thread of their own.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;
use std::future::Future;
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::task::{Context, Wake, Waker};

use crate::reactor::{Reactor, Remote};

type Task = Pin<Box<dyn Future<Output = ()>>>;

/// Runs futures on the thread of reactor `R`'s loop.
///
/// It lives as long as something that uses it (an `Rc` per socket, timer and HTTP client,
/// which a task may own: a task that never finishes keeps it alive). The addon's is never
/// dropped.
pub struct Exec<R: Reactor> {
    reactor: R,
    /// This executor's identity for its wakers (see `CURRENT`); never reused.
    id: u64,
    /// Unfinished work (`hold`); while there is any, the loop is kept alive.
    pending: Cell<usize>,
    tasks: RefCell<Vec<Option<(Task, Waker)>>>,
    free: RefCell<Vec<usize>>,
    ready: RefCell<VecDeque<usize>>,
    draining: Cell<bool>,
    shared: Arc<Shared<ExecRemote<R>>>,
    /// Stopped timers for the next `Sleep`s (see `timer.rs`).
    pub(crate) idle_timers: RefCell<Vec<R::Timer>>,
}

/// Wakes from other threads (a connect finished on the I/O thread): queued, then the loop is
/// woken through the reactor's `Remote`.
struct Shared<W> {
    queue: Mutex<Vec<usize>>,
    remote: W,
}

thread_local! {
    /// The executor of this thread's loop, by id and address; `(0, 0)`: none. A waker of that
    /// executor woken on this thread queues its task without the lock and without waking the
    /// loop while it is draining; any other goes through `Shared`.
    static CURRENT: Cell<(u64, usize)> = const { Cell::new((0, 0)) };
}

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

struct TaskWaker<W> {
    task: usize,
    exec: u64,
    shared: Arc<Shared<W>>,
}

impl<R: Reactor> Wake for TaskWaker<ExecRemote<R>> {
    fn wake(self: Arc<Self>) {
        self.wake_by_ref()
    }

    fn wake_by_ref(self: &Arc<Self>) {
        let (id, at) = CURRENT.try_with(Cell::get).unwrap_or((0, 0));
        if id == self.exec {
            // SAFETY: `CURRENT` holds the address of the executor with this id while it is
            // alive (set by `Exec::new`, cleared first thing in its `Drop`), on its own thread
            // (`CURRENT` is thread-local), and ids are never reused: `at` points to a live
            // `Exec<R>`, which is only ever used through shared references.
            let ex = unsafe { &*(at as *const Exec<R>) };
            ex.ready.borrow_mut().push_back(self.task);
            if !ex.draining.get() {
                self.shared.remote.0.wake();
            }
            return;
        }
        self.shared.queue.lock().unwrap_or_else(|e| e.into_inner()).push(self.task);
        self.shared.remote.0.wake();
    }
}

/// `R`'s remote waker, typed by `R` so that a `TaskWaker` knows which `Exec` its id names.
struct ExecRemote<R: Reactor>(R::Remote);

impl<R: Reactor> Exec<R> {
    /// The executor of this thread's loop (one per thread at a time); `remote` wakes `reactor`'s
    /// loop, which then calls `on_remote_wake`.
    pub fn new(reactor: R, remote: R::Remote) -> Rc<Exec<R>> {
        let ex = Rc::new(Exec {
            reactor,
            id: NEXT_ID.fetch_add(1, Ordering::Relaxed),
            pending: Cell::new(0),
            tasks: RefCell::new(Vec::new()),
            free: RefCell::new(Vec::new()),
            ready: RefCell::new(VecDeque::new()),
            draining: Cell::new(false),
            shared: Arc::new(Shared { queue: Mutex::new(Vec::new()), remote: ExecRemote(remote) }),
            idle_timers: RefCell::new(Vec::new()),
        });
        CURRENT.with(|c| {
            assert_eq!(c.get().0, 0, "one loop executor per thread");
            c.set((ex.id, Rc::as_ptr(&ex) as usize));
        });
        ex
    }

    pub fn reactor(&self) -> &R {
        &self.reactor
    }

    /// Runs `fut` on this loop; it is polled at once, up to its first wait.
    pub fn spawn(&self, fut: impl Future<Output = ()> + 'static) {
        self.spawn_task(Box::pin(fut));
    }

    /// `spawn` of the future `make` returns, written straight into its task's memory: a
    /// request's future is kilobytes, and one made first and boxed then is copied once more
    /// (W5: a few hundred instructions per LLM call).
    pub fn spawn_with<F: Future<Output = ()> + 'static>(&self, make: impl FnOnce() -> F) {
        let task: Box<F> = Box::write(Box::new_uninit(), make());
        self.spawn_task(Box::into_pin(task));
    }

    fn spawn_task(&self, fut: Task) {
        self.run_woken(|| {
            let task = match self.free.borrow_mut().pop() {
                Some(id) => id,
                None => {
                    let mut tasks = self.tasks.borrow_mut();
                    tasks.push(None);
                    tasks.len() - 1
                }
            };
            let waker =
                Waker::from(Arc::new(TaskWaker::<ExecRemote<R>> { task, exec: self.id, shared: self.shared.clone() }));
            self.tasks.borrow_mut()[task] = Some((fut, waker));
            self.ready.borrow_mut().push_back(task);
        });
    }

    /// Runs `wake` (which may wake tasks), then every task that is ready. Nested calls (a task
    /// that spawns, a callback inside a poll) leave the polling to the outermost one.
    pub fn run_woken(&self, wake: impl FnOnce()) {
        let outer = self.draining.replace(true);
        wake();
        if !outer {
            self.drain();
            self.draining.set(false);
        }
    }

    fn drain(&self) {
        loop {
            {
                let mut q = self.shared.queue.lock().unwrap_or_else(|e| e.into_inner());
                self.ready.borrow_mut().extend(q.drain(..));
            }
            let Some(id) = self.ready.borrow_mut().pop_front() else { return };
            // Out of the slab while it runs: it may spawn tasks.
            let Some((mut task, waker)) = self.tasks.borrow_mut().get_mut(id).and_then(Option::take) else {
                continue;
            };
            let done = task.as_mut().poll(&mut Context::from_waker(&waker)).is_ready();
            if done {
                self.free.borrow_mut().push(id);
            } else {
                self.tasks.borrow_mut()[id] = Some((task, waker));
            }
        }
    }

    /// The reactor's report of a wake-up from `Remote::wake`: runs the tasks woken from
    /// other threads.
    pub fn on_remote_wake(&self) {
        self.reactor.in_callback(|| self.run_woken(|| {}));
    }

    /// One more piece of unfinished work (an unsettled promise): the loop stays alive until
    /// as many `release`s.
    pub fn hold(&self) {
        if self.pending.replace(self.pending.get() + 1) == 0 {
            self.reactor.keep_alive(true);
        }
    }

    pub fn release(&self) {
        let n = self.pending.get().saturating_sub(1);
        self.pending.set(n);
        if n == 0 {
            self.reactor.keep_alive(false);
        }
    }

    /// Tasks spawned and not finished.
    pub fn live_tasks(&self) -> usize {
        self.tasks.borrow().iter().filter(|t| t.is_some()).count()
    }
}

impl<R: Reactor> Drop for Exec<R> {
    fn drop(&mut self) {
        // First: from here on this executor's wakers take the remote path.
        let _ = CURRENT.try_with(|c| {
            if c.get().0 == self.id {
                c.set((0, 0));
            }
        });
        // Unfinished tasks hold no `Rc` of this executor (it would not be dropped otherwise);
        // dropping them may wake others, which the queue absorbs.
        drop(self.tasks.take());
        for t in self.idle_timers.take() {
            self.reactor.close_timer(t);
        }
    }
}
