//! Giving glibc's free heap memory back to the OS while runs end (issue 18).
//!
//! V8 compiles hot JavaScript (the shim's drivers among it) on background threads, and each of
//! those threads has its own glibc malloc arena that keeps the compiler's freed zone memory:
//! 4–11 MB of RSS in a process running agents one after another (bench/soak.js S2; gone with
//! `--no-concurrent-recompilation`). glibc gives an arena other than the main one back only from
//! its top, so that memory stays resident for the life of the process. `malloc_trim(0)` returns
//! the free pages of every arena (S2 after 100k runs: 79–85 MB → 66–71 MB; bench/README.md).
//!
//! One thread of its own trims, so the JS thread never waits for the arenas' locks: it starts
//! when a run ends, trims a [`TRIM_INTERVAL`] later, again after each further interval in which
//! a run ended, and exits after an interval without one. So a process trims at most once per
//! interval, once more within an interval after its last run, and holds no thread while idle.
//! Only glibc has `malloc_trim`; musl returns free memory by itself and other platforms differ,
//! so elsewhere this does nothing.

use std::time::Duration;

/// How long the trimmer waits after a run ended: often enough to follow a burst of compilation,
/// rare enough that a process ending thousands of runs a second pays one trim a second.
pub const TRIM_INTERVAL: Duration = Duration::from_secs(1);

/// Called when a run's machine is freed (its `Done`, or its driver's release).
pub fn run_ended() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    trimmer::run_ended();
}

#[cfg(all(target_os = "linux", target_env = "gnu"))]
mod trimmer {
    use std::sync::atomic::{AtomicBool, Ordering};

    use super::TRIM_INTERVAL;

    /// A run ended since the trimmer last looked.
    static PENDING: AtomicBool = AtomicBool::new(false);
    /// The trimmer thread exists (one across every thread that runs agents, workers included).
    static ACTIVE: AtomicBool = AtomicBool::new(false);

    pub fn run_ended() {
        PENDING.store(true, Ordering::Release);
        if ACTIVE.swap(true, Ordering::AcqRel) {
            return;
        }
        let spawned =
            std::thread::Builder::new().name("oma-trim".into()).stack_size(64 * 1024).spawn(trim_while_runs_end);
        // A thread that cannot be made costs the trims only; a later run tries again.
        if spawned.is_err() {
            ACTIVE.store(false, Ordering::Release);
        }
    }

    fn trim_while_runs_end() {
        loop {
            std::thread::sleep(TRIM_INTERVAL);
            if !PENDING.swap(false, Ordering::AcqRel) {
                ACTIVE.store(false, Ordering::Release);
                // A run that ended between the swap and the store saw ACTIVE set and left its
                // trim to this thread: take it, unless a new trimmer already did.
                if PENDING.load(Ordering::Acquire) && !ACTIVE.swap(true, Ordering::AcqRel) {
                    continue;
                }
                return;
            }
            // SAFETY: malloc_trim takes no pointer and only releases memory malloc holds free;
            // glibc makes it safe to call from any thread at any time.
            unsafe { libc::malloc_trim(0) };
        }
    }
}
