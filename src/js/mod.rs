//! napi binding layer: thin wrappers that convert between JS values and the kernel.

pub mod agent;
pub mod builtin;
pub mod cancel;
pub mod confined;
mod convert;
pub mod executor;
pub mod fast;
pub mod helpers;
pub mod llm;
pub mod mcp;
pub mod memory;
pub mod registry;
pub mod runner;
pub mod semaphore;
mod slab;
pub mod text;
pub mod uv;

#[napi_derive::napi(catch_unwind)]
pub fn kernel_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The addon's own allocations go to mimalloc (V8's heap and Node's are not affected). With
/// glibc's malloc, W5's Agent.run at T=5 took ≈ 1.2 page faults per LLM call (growing and
/// freeing request-sized buffers at the top of the heap) and 45 instead of 35 µs of CPU per call
/// (medians of 13 paired samples, bench/HISTORY.md, session 6).
///
/// mimalloc v2, not v3 (the `v2` feature in Cargo.toml): v3 (as vendored by libmimalloc-sys
/// 0.1.49) records the first thread that allocates as its "main thread" and tears the static
/// main heap down when that thread exits, without forgetting the thread id. In Node the first
/// allocating thread is whichever thread loads the addon first, often a worker; when it exits
/// and a later worker's thread reuses its pthread id, that thread adopts the torn-down heap
/// (`tld == NULL`) and the process dies with SIGSEGV on its first allocation. v2 never frees
/// its main heap, so a later thread either owns a fresh heap or reuses the intact main one.
/// __test__/worker-lifecycle.test.ts pins the lifecycles (sequential workers, terminated
/// workers, Jest and Vitest thread pools).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
