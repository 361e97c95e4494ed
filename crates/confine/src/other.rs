//! Other platforms: nothing can be prepared (`prepare` refuses with `Error::Unsupported`), so no
//! `Prepared` value ever exists; the type is kept so callers compile unchanged.

use std::os::fd::RawFd;

use crate::ApplyError;

pub enum Prepared {}

impl Prepared {
    pub fn ruleset_fd(&self) -> Option<RawFd> {
        match *self {}
    }

    pub fn not_enforced(&self) -> &[String] {
        match *self {}
    }

    pub fn landlock_abi(&self) -> i32 {
        match *self {}
    }
}

pub fn landlock_abi() -> i32 {
    0
}

/// # Safety
///
/// Never callable: no `Prepared` exists on this platform.
pub unsafe fn apply_in_child(p: &Prepared, _ruleset_fd: Option<RawFd>) -> Result<(), ApplyError> {
    match *p {}
}
