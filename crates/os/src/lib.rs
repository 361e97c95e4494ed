//! oma-os: the OS side of oma-kernel's built-in tools, where their `unsafe` lives.
//!
//! The tools' policy (which path may be opened, what a refusal says, when a command is killed)
//! is oma-core's, in safe Rust; the system calls it needs are here, each behind a safe function
//! whose comment says why the call is sound. oma-core's tool code holds no `unsafe` of its own.
//!
//! - [`fs`]: descriptor-relative file calls: `openat`, `openat2` beneath a root (Linux ≥ 5.6),
//!   `fstat`/`fstatat`, the steps of an atomic rewrite (`renameat`, `fchown`, `fsync`, …),
//!   bounded reads into a vector's spare capacity, and a directory's listing through its
//!   descriptor.
//! - [`process`]: the *reaping helper* a command (`bash`) or an MCP stdio server runs under,
//!   so that its whole tree can be ended, and the kill of that tree.
//!
//! Errors are errnos (`i32`): the callers map them to their own texts (Node's, for the tools).
//!
//! The `portable` feature selects the fallbacks other OSes get, on Linux too, so that they are
//! tested here (see each item).

#![deny(unsafe_op_in_unsafe_fn)]

pub mod fs;
pub mod process;

/// The calling thread's errno (`EIO` if there is none); allocation-free, so usable between
/// `fork` and `execve`.
pub fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

#[cfg(test)]
mod tests;
