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
