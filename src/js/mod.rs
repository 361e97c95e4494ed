//! napi binding layer: thin wrappers that convert between JS values and the kernel.

pub mod builtin;
pub mod cancel;
pub mod core;
pub mod fast;
pub mod llm;
pub mod local_http;
pub mod uv;

#[napi_derive::napi(catch_unwind)]
pub fn kernel_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}

/// The addon's own allocations go to mimalloc (V8's heap and Node's are not affected). With
/// glibc's malloc, W5's Agent.run at T=5 took ≈ 1.2 page faults per LLM call (growing and
/// freeing request-sized buffers at the top of the heap) and 45 instead of 35 µs of CPU per call
/// (medians of 13 paired samples, bench/README.md, session 6).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
