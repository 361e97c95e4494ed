//! Binding for the executor's admission semaphore (one per `ToolExecutor`, lib/executor.js):
//! `semOpen`, `semAcquire` and `semRelease` are raw callbacks (`fast.rs`) over the functions
//! here; `semLeave` and `semStats` are plain exports.

use std::cell::RefCell;

use napi::bindgen_prelude::*;
use napi_derive::napi;

use oma_core::kernel::semaphore::{Release, Semaphore};

use super::slab::Slab;

thread_local! {
    static SEMAPHORES: RefCell<Slab<Semaphore>> = RefCell::new(Slab::default());
}

// A semaphore's native slot exists only while it has holders or waiters: the first acquire
// opens it and the release that leaves it idle frees it, so an executor needs no finalizer.
// (A semaphore dropped while a holder never releases keeps its slot: a few bytes.)

/// `semOpen` (`fast.rs`): a slot for a semaphore of limit `max`, with one slot acquired.
pub(super) fn sem_open_id(max: u32) -> u32 {
    SEMAPHORES.with(|s| {
        let mut sem = Semaphore::new(max.max(1) as usize);
        let _ = sem.acquire();
        s.borrow_mut().insert(sem)
    })
}

fn with_sem<R>(id: u32, f: impl FnOnce(&mut Semaphore) -> R) -> Result<R> {
    SEMAPHORES.with(|s| match s.borrow_mut().get_mut(id) {
        Some(sem) => Ok(f(sem)),
        None => Err(Error::from_reason("oma-kernel: this semaphore has already been released")),
    })
}

/// `semAcquire` (`fast.rs`): 0 = acquired now; 1 = park (at the end of the JS queue).
pub(super) fn sem_acquire_id(id: u32) -> std::result::Result<u32, String> {
    with_sem(id, |s| if s.acquire() { 0 } else { 1 }).map_err(|e| e.reason)
}

/// `semRelease` (`fast.rs`): 1 = handed to the longest waiter (the JS queue's head); 0 = slot
/// freed, others still hold; -1 = now idle, and the slot is closed.
pub(super) fn sem_release_id(id: u32) -> std::result::Result<i32, String> {
    SEMAPHORES.with(|s| {
        let mut slab = s.borrow_mut();
        let sem = slab.get_mut(id).ok_or("oma-kernel: this semaphore has already been released")?;
        Ok(match sem.release() {
            Release::HandedOver => 1,
            Release::Freed if sem.is_idle() => {
                slab.remove(id);
                -1
            }
            Release::Freed => 0,
        })
    })
}

/// `semLeave`: a parked call aborted before its turn leaves the queue (the JS side removed its
/// record); `false` when nobody was waiting.
#[napi(catch_unwind)]
pub fn sem_leave(id: u32) -> Result<bool> {
    with_sem(id, |s| s.leave())
}

/// `[limit, active, pending]`.
#[napi(catch_unwind)]
pub fn sem_stats(id: u32) -> Result<Vec<u32>> {
    with_sem(id, |s| vec![s.limit() as u32, s.active() as u32, s.pending() as u32])
}
