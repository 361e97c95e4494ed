//! The calls the driver makes on every turn, as plain napi callbacks. Their types are declared
//! by hand in `lib/native.d.ts` (napi's generated `binding.d.ts` does not know them); a Jest
//! test checks that every function of the binding is declared there.
//!
//! A `#[napi]` function pays for napi-rs's per-call machinery (a native-borrow scope on the
//! heap, its mutex and thread-local stack, a fresh `String` per string argument): measured
//! ≈ 105 ns for a call taking and returning a `u32`, against ≈ 30 ns for the bare callback.
//! At five calls per tool turn that was a tenth of the turn. These callbacks read their
//! arguments straight from napi (strings into one reused buffer) and call the same code as the
//! `#[napi]` exports in `runner.rs` (`runner::run_respond` → `Machine::pending`'s handle for
//! every answer); a panic still becomes a JS exception.

use std::ffi::CString;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::ptr;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;

use oma_core::kernel::runner::wire::Wire;

use super::convert::{self, not_a, Outcome, RawArgs};
use super::runner::{self, JsResponse};
use super::{semaphore, text};

type Cb = unsafe extern "C" fn(sys::napi_env, sys::napi_callback_info) -> sys::napi_value;

/// Adds the callbacks to the module's exports (napi-rs calls this at load, per env).
#[napi(module_exports)]
pub fn register_fast_calls(exports: Object, env: Env) -> Result<()> {
    let fns: [(&str, Cb); 6] = [
        ("semOpen", sem_open),
        ("semAcquire", sem_acquire),
        ("semRelease", sem_release),
        ("runNext", run_next),
        ("runRespond", run_respond),
        ("runToolResult", run_tool_result),
    ];
    for (name, cb) in fns {
        let mut f = ptr::null_mut();
        // SAFETY: `env` is the env napi-rs hands this load-time hook; `name` outlives the call,
        // which copies its `len` bytes; `cb` is a `Cb` with napi's callback signature, and no
        // data pointer is attached, so nothing has to outlive the function.
        let status = unsafe {
            sys::napi_create_function(
                env.raw(),
                name.as_ptr().cast(),
                name.len() as isize,
                Some(cb),
                ptr::null_mut(),
                &mut f,
            )
        };
        check(status, name)?;
        // SAFETY: `exports` is the module's object in `env`, `f` was created just above in it,
        // and the NUL-terminated name lives until the end of the statement.
        let status =
            unsafe { sys::napi_set_named_property(env.raw(), exports.raw(), CString::new(name).unwrap().as_ptr(), f) };
        check(status, name)?;
    }
    Ok(())
}

fn check(status: sys::napi_status, what: &str) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else {
        Err(Error::from_reason(format!("oma-kernel: could not register {what} (napi status {status})")))
    }
}

/// A callback's body's outcome: its value, or the error thrown as a JS exception.
type CallResult = std::result::Result<Ret, String>;

/// What a callback returns to JS, built after its Rust work is done.
enum Ret {
    U32(u32),
    I32(i32),
    Undefined,
    Str(String),
}

impl From<Wire> for Ret {
    fn from(w: Wire) -> Ret {
        match w {
            Wire::Number(n) => Ret::U32(n),
            Wire::Json(s) => Ret::Str(s),
        }
    }
}

/// Runs `body` with the call's arguments; errors and panics become JS exceptions.
///
/// # Safety
/// `env` and `info` are the ones napi passed to the running callback (as are, with `argv` read
/// from them, `run_body`'s).
unsafe fn call<const N: usize>(
    env: sys::napi_env,
    info: sys::napi_callback_info,
    body: impl FnOnce(&mut Args<'_>) -> CallResult,
) -> sys::napi_value {
    let mut argc = N;
    let mut argv = [ptr::null_mut(); N];
    // SAFETY: `env` and `info` are the running callback's (this function's contract); napi
    // writes at most `argc` (= N) values into `argv` and fills missing ones with `undefined`.
    let status =
        unsafe { sys::napi_get_cb_info(env, info, &mut argc, argv.as_mut_ptr(), ptr::null_mut(), ptr::null_mut()) };
    // SAFETY: `argv` was just read from this callback's `info`.
    unsafe { run_body(env, status, &argv, body) }
}

/// Runs `body` on the arguments read (`status`: how reading them went) and hands JS its result,
/// or throws its error.
unsafe fn run_body(
    env: sys::napi_env,
    status: sys::napi_status,
    argv: &[sys::napi_value],
    body: impl FnOnce(&mut Args<'_>) -> CallResult,
) -> sys::napi_value {
    let outcome = if status != sys::Status::napi_ok {
        Err("oma-kernel: could not read the call's arguments".to_string())
    } else {
        let mut args = Args { env, argv };
        match catch_unwind(AssertUnwindSafe(|| body(&mut args))) {
            Ok(r) => r,
            Err(p) => Err(format!("oma-kernel: internal error: {}", panic_text(&p))),
        }
    };
    let mut out = ptr::null_mut();
    // SAFETY: `env` is the running callback's (this function's contract) and `out` a live
    // local; `text` outlives the call, which copies its `len` bytes, and `c` is NUL-terminated.
    // A failed call leaves `out` null, which napi reads as `undefined`.
    unsafe {
        match outcome {
            Ok(Ret::U32(v)) => {
                sys::napi_create_uint32(env, v, &mut out);
            }
            Ok(Ret::I32(v)) => {
                sys::napi_create_int32(env, v, &mut out);
            }
            Ok(Ret::Undefined) => {
                sys::napi_get_undefined(env, &mut out);
            }
            Ok(Ret::Str(text)) => {
                sys::napi_create_string_utf8(env, text.as_ptr().cast(), text.len() as isize, &mut out);
            }
            Err(msg) => {
                let c = CString::new(msg.replace('\0', " ")).unwrap_or_default();
                sys::napi_throw_error(env, ptr::null(), c.as_ptr());
            }
        }
    }
    out
}

fn panic_text(p: &Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "panic".into())
}

struct Args<'a> {
    env: sys::napi_env,
    /// For a fixed-arity callback, missing arguments read as `undefined` (napi fills them).
    argv: &'a [sys::napi_value],
}

impl RawArgs for Args<'_> {
    fn number(&self, i: usize) -> std::result::Result<f64, String> {
        let mut v = 0.0;
        // SAFETY: `env` and `argv` are the current callback's (an `Args` lives for one call), `i`
        // is in bounds (indexing panics otherwise, caught by `run_body`), `v` a live local.
        match unsafe { sys::napi_get_value_double(self.env, self.argv[i], &mut v) } {
            sys::Status::napi_ok => Ok(v),
            _ => Err(not_a(i, "a number")),
        }
    }

    fn u32(&self, i: usize) -> std::result::Result<u32, String> {
        let mut v = 0;
        // SAFETY: `env` and `argv` are the current callback's (an `Args` lives for one call), `i`
        // is in bounds (indexing panics otherwise, caught by `run_body`), `v` a live local.
        match unsafe { sys::napi_get_value_uint32(self.env, self.argv[i], &mut v) } {
            sys::Status::napi_ok => Ok(v),
            _ => Err(not_a(i, "a number")),
        }
    }

    fn bool(&self, i: usize) -> std::result::Result<bool, String> {
        let mut v = false;
        // SAFETY: `env` and `argv` are the current callback's (an `Args` lives for one call), `i`
        // is in bounds (indexing panics otherwise, caught by `run_body`), `v` a live local.
        match unsafe { sys::napi_get_value_bool(self.env, self.argv[i], &mut v) } {
            sys::Status::napi_ok => Ok(v),
            _ => Err(not_a(i, "a boolean")),
        }
    }

    fn is_nullish(&self, i: usize) -> bool {
        let mut t = 0;
        // SAFETY: `env` and `argv` are the current callback's, `i` is in bounds (indexing panics
        // otherwise), `t` a live local.
        unsafe { sys::napi_typeof(self.env, self.argv[i], &mut t) };
        t == sys::ValueType::napi_null || t == sys::ValueType::napi_undefined
    }

    /// Copied once into the thread's buffer.
    fn with_str<R>(&self, i: usize, f: impl FnOnce(&str) -> R) -> std::result::Result<R, String> {
        // SAFETY: `env` and `argv[i]` are the current callback's, as `with_utf8` requires.
        unsafe { text::with_utf8(self.env, self.argv[i], f) }.ok_or_else(|| not_a(i, "a string"))
    }
}

/// `semAcquire(id)`: 0 = acquired now, 1 = park.
unsafe extern "C" fn sem_acquire(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let body = |a: &mut Args<'_>| -> CallResult { Ok(Ret::U32(semaphore::sem_acquire_id(a.u32(0)?)?)) };
    // SAFETY: napi calls this callback with its own `env` and `info`, as `call` requires.
    unsafe { call::<1>(env, info, body) }
}

/// `semOpen(max)`: a new slot with one holder (see `semaphore::sem_open_id`).
unsafe extern "C" fn sem_open(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let body = |a: &mut Args<'_>| -> CallResult { Ok(Ret::U32(semaphore::sem_open_id(a.u32(0)?))) };
    // SAFETY: napi calls this callback with its own `env` and `info`, as `call` requires.
    unsafe { call::<1>(env, info, body) }
}

/// `semRelease(id)`: 1 = handed to the longest waiter, 0 = slot freed, -1 = idle and closed.
unsafe extern "C" fn sem_release(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let body = |a: &mut Args<'_>| -> CallResult { Ok(Ret::I32(semaphore::sem_release_id(a.u32(0)?)?)) };
    // SAFETY: napi calls this callback with its own `env` and `info`, as `call` requires.
    unsafe { call::<1>(env, info, body) }
}

/// `runNext(id, aborted)`: the next action, encoded (`wire`).
unsafe extern "C" fn run_next(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let body = |a: &mut Args<'_>| -> CallResult { Ok(runner::run_next(a.u32(0)?, a.bool(1)?)?.into()) };
    // SAFETY: napi calls this callback with its own `env` and `info`, as `call` requires.
    unsafe { call::<2>(env, info, body) }
}

/// `runRespond(id, contentJson | null, inputTokens, outputTokens, copied?)`: the model's answer
/// (`copied`: the driver keeps a copy that `contentJson` writes exactly, see `wire`); returns the
/// next action, or a rejection (`wire`).
unsafe extern "C" fn run_respond(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let body = |a: &mut Args<'_>| -> CallResult {
        let (id, usage, copied) = convert::model_answer(a)?;
        let out = a.with_opt_str(1, |content_json| {
            runner::run_respond(id, JsResponse::Model { content_json, usage, copied })
        })??;
        Ok(out.map_or(Ret::Undefined, Ret::from))
    };
    // SAFETY: napi calls this callback with its own `env` and `info`, as `call` requires.
    unsafe { call::<5>(env, info, body) }
}

/// `runToolResult(id, index, content, isError 0 | 1 | 2, inputTokens?, outputTokens?,
/// duration?)`: one call's outcome, with a delegated run's usage when the two numbers are given,
/// and the call's duration (the machine records it for `RunResult.toolCalls`).
unsafe extern "C" fn run_tool_result(env: sys::napi_env, info: sys::napi_callback_info) -> sys::napi_value {
    let body = |a: &mut Args<'_>| -> CallResult {
        let (id, index, Outcome { content, is_error, usage, duration }) = convert::tool_result(a)?;
        runner::run_respond(id, JsResponse::ToolResult { index, content, is_error, usage, duration })?;
        Ok(Ret::Undefined)
    };
    // SAFETY: napi calls this callback with its own `env` and `info`, as `call` requires.
    unsafe { call::<7>(env, info, body) }
}
