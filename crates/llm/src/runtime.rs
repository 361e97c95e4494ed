//! A dedicated single-threaded tokio runtime for LLM I/O.
//!
//! Measured (W5): on napi's multi-threaded runtime a request future and hyper's connection task
//! land on different workers, and the thread wake-ups between them, the JS thread and the
//! workers were half of a call's CPU. One thread that owns every request future and every
//! pooled connection removes those hops; JSON work per call is small next to the network, so
//! one thread is not a bottleneck.

use std::future::Future;
use std::sync::OnceLock;

use tokio::runtime::{Builder, Handle};
use tokio::task::JoinHandle;

static HANDLE: OnceLock<Handle> = OnceLock::new();

/// The runtime's handle; the thread starts on first use and lives for the process.
pub fn handle() -> &'static Handle {
    HANDLE.get_or_init(|| {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::Builder::new()
            .name("oma-llm-io".into())
            .spawn(move || {
                let rt = Builder::new_current_thread().enable_all().build().expect("tokio runtime for LLM I/O");
                tx.send(rt.handle().clone()).expect("runtime handle delivered");
                rt.block_on(std::future::pending::<()>());
            })
            .expect("LLM I/O thread");
        rx.recv().expect("LLM I/O runtime started")
    })
}

/// Runs `fut` on the LLM I/O thread.
pub fn spawn<F>(fut: F) -> JoinHandle<F::Output>
where
    F: Future + Send + 'static,
    F::Output: Send + 'static,
{
    handle().spawn(fut)
}
