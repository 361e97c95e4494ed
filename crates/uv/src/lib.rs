//! oma-uv: futures driven by an event loop on the thread that runs it, for the JS thread's
//! LLM calls (`chat` and `stream()`, over HTTP and HTTPS).
//!
//! The LLM I/O thread costs two thread wake-ups per call (JS thread → I/O thread → JS thread):
//! a call with no history took 87 µs of CPU that way and takes ≈45 µs this way on the 2-core
//! VM (bench/HISTORY.md, the W5 floor). Here a request's socket is watched by the JS thread's loop
//! itself, timers are the loop's, and the futures run in a small executor on that thread: a
//! response wakes the thread that waits for it, and nothing else.
//!
//! The loop is a [`Reactor`]: Node's libuv loop in the addon (`src/js/uv.rs`, which also
//! settles the promises), a poll(2) loop in this crate's tests. The code here is generic over
//! it, so the addon's build calls libuv directly (no dynamic dispatch), and the same code is
//! tested without Node.
//!
//! - [`Exec`]: the executor (tasks, wakers, wake-ups from other threads).
//! - [`Tcp`]: a connected socket as tokio's `AsyncRead`/`AsyncWrite`.
//! - [`Sleep`]: a timer as a future.
//! - [`LocalHttp`]: oma-llm's `transport::Http` over them (HTTP and HTTPS, TLS by rustls over
//!   the same sockets), with a keep-alive pool.

#![deny(unsafe_op_in_unsafe_fn)]

mod exec;
mod http;
mod io;
mod reactor;
mod tcp;
mod timer;

#[cfg(test)]
mod test_reactor;
#[cfg(test)]
mod tests;

pub use exec::Exec;
pub use http::{LocalHttp, LocalResponse};
pub use reactor::{Reactor, Remote, READABLE, WRITABLE};
pub use tcp::{io_ready, Tcp};
pub use timer::{timer_fired, Sleep};
