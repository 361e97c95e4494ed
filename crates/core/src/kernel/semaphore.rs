//! FIFO admission for the executor (CONTRACT §10, with the §21 fixes: invalid limits are
//! rejected by the caller, an extra `release()` is a no-op). Waiters are ids the JS side
//! maps to promise resolvers.

use std::collections::VecDeque;

pub struct Semaphore {
    max: usize,
    active: usize,
    waiters: VecDeque<u32>,
    next_id: u32,
}

pub enum Acquire {
    Now,
    Wait(u32),
}

impl Semaphore {
    pub fn new(max: usize) -> Semaphore {
        Semaphore { max, active: 0, waiters: VecDeque::new(), next_id: 0 }
    }
    pub fn limit(&self) -> usize {
        self.max
    }
    pub fn active(&self) -> usize {
        self.active
    }
    pub fn pending(&self) -> usize {
        self.waiters.len()
    }
    /// No holder and no waiter: the state is just its limit again.
    pub fn is_idle(&self) -> bool {
        self.active == 0 && self.waiters.is_empty()
    }

    pub fn acquire(&mut self) -> Acquire {
        if self.active < self.max {
            self.active += 1;
            return Acquire::Now;
        }
        // Ids stay within 1..=i32::MAX so that the binding can return them as JS int32s.
        self.next_id = if self.next_id >= i32::MAX as u32 { 1 } else { self.next_id + 1 };
        self.waiters.push_back(self.next_id);
        Acquire::Wait(self.next_id)
    }

    /// Returns the waiter that now holds the released slot, if any.
    pub fn release(&mut self) -> Option<u32> {
        if let Some(id) = self.waiters.pop_front() {
            return Some(id);
        }
        self.active = self.active.saturating_sub(1);
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fifo_handoff_and_no_underflow() {
        let mut s = Semaphore::new(1);
        assert!(matches!(s.acquire(), Acquire::Now));
        let a = match s.acquire() {
            Acquire::Wait(id) => id,
            _ => panic!(),
        };
        let b = match s.acquire() {
            Acquire::Wait(id) => id,
            _ => panic!(),
        };
        assert_eq!(s.pending(), 2);
        assert_eq!(s.release(), Some(a));
        assert_eq!(s.active(), 1);
        assert_eq!(s.release(), Some(b));
        assert!(!s.is_idle());
        assert_eq!(s.release(), None);
        assert_eq!(s.active(), 0);
        assert!(s.is_idle());
        assert_eq!(s.release(), None);
        assert_eq!(s.active(), 0);
    }

    #[test]
    fn waiter_ids_stay_positive_int32() {
        let mut s = Semaphore::new(1);
        s.next_id = i32::MAX as u32 - 1;
        assert!(matches!(s.acquire(), Acquire::Now));
        assert!(matches!(s.acquire(), Acquire::Wait(id) if id == i32::MAX as u32));
        assert!(matches!(s.acquire(), Acquire::Wait(1)));
    }
}
