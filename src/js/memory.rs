//! Giving glibc's free heap memory back to the OS as runs end (issue 18).
//!
//! V8 compiles hot JavaScript (the shim's drivers among it) on background threads, and each of
//! those threads has its own glibc malloc arena that keeps the compiler's freed zone memory:
//! 4–11 MB of RSS in a process running agents one after another (bench/soak.js S2; gone with
//! `--no-concurrent-recompilation`). glibc gives an arena other than the main one back only from
//! its top, so that memory stays resident for the life of the process. `malloc_trim(0)` returns
//! the free pages of every arena (S2 after 100k runs: 74–81 MB → 66 MB, flat; bench/README.md).
//!
//! It runs when a run ends, at most once per [`TRIM_INTERVAL`], on a short-lived thread of its
//! own: the trim takes each arena's lock in turn, and the JS thread does not wait for it. Only
//! glibc has `malloc_trim`; musl returns free memory by itself and other platforms differ, so
//! elsewhere this does nothing.

#[cfg(all(target_os = "linux", target_env = "gnu"))]
use std::sync::atomic::{AtomicU64, Ordering};
#[cfg(all(target_os = "linux", target_env = "gnu"))]
use std::sync::OnceLock;
use std::time::Duration;
#[cfg(all(target_os = "linux", target_env = "gnu"))]
use std::time::Instant;

/// The shortest time between two trims: often enough to follow a burst of compilation, rare
/// enough that a process running thousands of runs a second pays for one thread a second.
pub const TRIM_INTERVAL: Duration = Duration::from_secs(1);

/// Called when a run's machine is freed (its `Done`, or its driver's release).
pub fn run_ended() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        static START: OnceLock<Instant> = OnceLock::new();
        // Milliseconds after START before which no trim starts; the first one waits a full
        // interval after the first run ends (loading the addon and the first runs allocate).
        static NEXT_MS: AtomicU64 = AtomicU64::new(TRIM_INTERVAL.as_millis() as u64);
        let now = START.get_or_init(Instant::now).elapsed().as_millis() as u64;
        let next = NEXT_MS.load(Ordering::Relaxed);
        if now < next {
            return;
        }
        // One trim per interval across every thread that runs agents (Node worker threads too).
        let later = now + TRIM_INTERVAL.as_millis() as u64;
        if NEXT_MS.compare_exchange(next, later, Ordering::Relaxed, Ordering::Relaxed).is_err() {
            return;
        }
        // A thread that cannot be made costs the trim only.
        let _ = std::thread::Builder::new().name("oma-trim".into()).stack_size(64 * 1024).spawn(|| {
            // SAFETY: malloc_trim takes no pointer and only releases memory malloc holds free;
            // glibc makes it safe to call from any thread at any time.
            unsafe { libc::malloc_trim(0) };
        });
    }
}
