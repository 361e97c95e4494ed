//! FIFO admission for the executor (CONTRACT §10, with the §21 fixes: invalid limits are
//! rejected by the caller, an extra `release()` is a no-op). The kernel decides who holds a
//! slot; the waiters themselves (promise resolvers, parked calls) stay on the JS side, in a
//! queue in the order they parked, so the kernel only counts them: a release hands the slot
//! to the longest waiter, which is that queue's head.

pub struct Semaphore {
    max: usize,
    active: usize,
    waiting: usize,
}

/// What a release did with the slot.
#[derive(Debug, PartialEq, Eq)]
pub enum Release {
    /// Given to the longest waiter, which now holds it.
    HandedOver,
    /// Freed (or there was nothing to free: an extra release).
    Freed,
}

impl Semaphore {
    pub fn new(max: usize) -> Semaphore {
        Semaphore { max, active: 0, waiting: 0 }
    }
    pub fn limit(&self) -> usize {
        self.max
    }
    pub fn active(&self) -> usize {
        self.active
    }
    pub fn pending(&self) -> usize {
        self.waiting
    }
    /// No holder and no waiter: the state is just its limit again.
    pub fn is_idle(&self) -> bool {
        self.active == 0 && self.waiting == 0
    }

    /// `true`: a slot is taken now; `false`: the caller waits, behind every earlier waiter.
    pub fn acquire(&mut self) -> bool {
        if self.active < self.max {
            self.active += 1;
            return true;
        }
        self.waiting += 1;
        false
    }

    /// A waiter gave up before its turn (its call was aborted while it waited): it leaves the
    /// queue, so the slots it would have been handed go to those behind it. `false`: nobody
    /// was waiting (a driver bug, and a no-op like an extra release).
    pub fn leave(&mut self) -> bool {
        if self.waiting == 0 {
            return false;
        }
        self.waiting -= 1;
        true
    }

    pub fn release(&mut self) -> Release {
        if self.waiting > 0 {
            self.waiting -= 1;
            return Release::HandedOver;
        }
        self.active = self.active.saturating_sub(1);
        Release::Freed
    }
}

/// The texts of a `Semaphore(max)` the JS glue refuses (`lib/tools.js`).
pub mod texts {
    pub const MAX_BELOW_ONE: &str = "Semaphore max must be at least 1, got {max}";
    pub const MAX_NOT_INTEGER: &str = "Semaphore max must be an integer, got {max}";
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One slot, taken, and two callers waiting for it (each acquire answered as it must be).
    fn taken_with_two_waiting() -> Semaphore {
        let mut s = Semaphore::new(1);
        assert!(s.acquire());
        assert!(!s.acquire());
        assert!(!s.acquire());
        s
    }

    #[test]
    fn fifo_handoff_and_no_underflow() {
        let mut s = taken_with_two_waiting();
        assert_eq!(s.pending(), 2);
        assert_eq!(s.release(), Release::HandedOver);
        assert_eq!(s.active(), 1);
        assert_eq!(s.pending(), 1);
        assert_eq!(s.release(), Release::HandedOver);
        assert!(!s.is_idle());
        assert_eq!(s.release(), Release::Freed);
        assert_eq!(s.active(), 0);
        assert!(s.is_idle());
        assert_eq!(s.release(), Release::Freed);
        assert_eq!(s.active(), 0);
    }

    #[test]
    fn a_waiter_that_leaves_is_not_handed_a_slot() {
        let mut s = taken_with_two_waiting();
        assert!(s.leave());
        assert_eq!(s.pending(), 1);
        assert_eq!(s.release(), Release::HandedOver);
        assert!(!s.leave());
        assert_eq!(s.pending(), 0);
        assert_eq!(s.release(), Release::Freed);
        assert!(s.is_idle());
    }

    #[test]
    fn a_freed_slot_is_taken_before_anyone_waits() {
        let mut s = Semaphore::new(2);
        assert!(s.acquire());
        assert!(s.acquire());
        assert!(!s.acquire());
        assert_eq!(s.release(), Release::HandedOver);
        assert_eq!(s.release(), Release::Freed);
        assert_eq!((s.active(), s.pending()), (1, 0));
        assert!(s.acquire());
        assert!(!s.acquire());
        assert_eq!((s.active(), s.pending()), (2, 1));
    }
}
