//! JS strings read into Rust in one pass, into a buffer the thread reuses (the raw callbacks'
//! string arguments, the tool results `LongText` carries).

use std::cell::RefCell;
use std::ptr;

use napi::sys;

thread_local! {
    /// Reused for string arguments (the content JSON of every response).
    static BUF: RefCell<Vec<u8>> = RefCell::new(vec![0; 4096]);
}

/// `f` on the UTF-8 text of the JS string `value`, read in one pass into a buffer reused by the
/// thread (napi's own conversion measures the length first, then fills a zeroed allocation);
/// `None` when `value` is not a string.
///
/// # Safety
/// `env` and `value` must be the current call's.
pub(crate) unsafe fn with_utf8<R>(env: sys::napi_env, value: sys::napi_value, f: impl FnOnce(&str) -> R) -> Option<R> {
    BUF.with(|cell| {
        let mut buf = cell.borrow_mut();
        let mut len = 0usize;
        // SAFETY: `env` and `value` are the current call's (this function's contract); napi
        // writes at most `buf.len()` bytes into `buf`, which the closure borrows mutably.
        let read = |buf: &mut Vec<u8>, len: &mut usize| unsafe {
            sys::napi_get_value_string_utf8(env, value, buf.as_mut_ptr().cast(), buf.len(), len)
        };
        if read(&mut buf, &mut len) != sys::Status::napi_ok {
            return None;
        }
        // napi copies whole characters only: a result this close to the end may be cut.
        if len + 4 >= buf.len() {
            let mut need = 0usize;
            // SAFETY: as for `read`; a null buffer asks for the length only.
            unsafe { sys::napi_get_value_string_utf8(env, value, ptr::null_mut(), 0, &mut need) };
            buf.resize(need + 1, 0);
            read(&mut buf, &mut len);
        }
        // SAFETY: napi wrote `len` bytes of UTF-8 (V8 replaces lone surrogates) and cuts only
        // between whole characters, so `buf[..len]` is valid UTF-8.
        let s = unsafe { std::str::from_utf8_unchecked(&buf[..len]) };
        let r = f(s);
        if buf.len() > 1 << 20 {
            // A huge response should not pin its buffer for the thread's lifetime.
            *buf = vec![0; 4096];
        }
        Some(r)
    })
}
