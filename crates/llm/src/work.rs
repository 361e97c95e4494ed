//! The test-only meter behind the tests that pin a parser's cost as linear (the HTTP/1.1 head
//! and line reads, the text tool-call scan): the code under test adds what it looks at
//! (`#[cfg(test)] work::count`), a test reads what one call added. Per thread, so tests running
//! in parallel do not see each other's work.
use std::cell::Cell;

thread_local! {
    /// Units of work done in this thread since the last `reset`: bytes looked at, steps of a scan.
    static WORK: Cell<usize> = const { Cell::new(0) };
}

/// Adds `n` units to this thread's meter.
pub(crate) fn count(n: usize) {
    WORK.with(|w| w.set(w.get() + n));
}

/// Sets this thread's meter to zero.
pub(crate) fn reset() {
    WORK.with(|w| w.set(0));
}

/// The units counted in this thread since the last `reset`.
pub(crate) fn done() -> usize {
    WORK.with(|w| w.get())
}
