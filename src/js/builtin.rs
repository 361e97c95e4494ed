//! napi binding of the built-in tools and redaction. Blocking work (filesystem, processes)
//! runs on tokio's blocking pool, not libuv's, so a 30 s `bash` never starves Node's own fs
//! calls. `lib/builtin.js` turns these into `ToolDefinition` objects.

use std::ptr;

use napi::bindgen_prelude::*;
use napi::sys;
use napi_derive::napi;

use super::cancel::CancelHandle;
use oma_core::redaction::{self, Node, Tree, WalkError};
use oma_core::tool::builtin::input::{self, FieldValue, InputView, JsType, MAX_FIELDS, TOOLS};
use oma_core::tool::builtin::{
    bash, delegate, file_edit, file_read, file_write, glob, grep,
    path_safety::{self, SandboxSpec},
    ToolOutput,
};
use oma_core::tool::executor::invalid_input;

// A napi object, not a record: JS copies its two fields into the tool result it returns, by
// name (typed by napi's binding.d.ts); a record would add a decode and remove no layout.
#[napi(object)]
pub struct NativeToolResult {
    pub data: String,
    pub is_error: bool,
}

impl From<ToolOutput> for NativeToolResult {
    fn from(o: ToolOutput) -> Self {
        NativeToolResult { data: o.data, is_error: o.is_error }
    }
}

// A napi object, not a record (as `NativeToolResult`): read by name, once per checked path.
#[napi(object)]
pub struct NativeSafePath {
    pub ok: bool,
    pub path: Option<String>,
    pub root: Option<String>,
    pub error: Option<String>,
}

fn spec(root: Option<String>, process_cwd: String) -> SandboxSpec {
    SandboxSpec { root, process_cwd }
}

/// Runs `f` on the blocking pool; a panic becomes a rejection (never an abort of Node).
fn blocking<T, F>(env: &Env, f: F) -> Result<PromiseRaw<'_, T>>
where
    T: 'static + Send + ToNapiValue,
    F: 'static + Send + FnOnce() -> T,
{
    env.spawn_future(async move {
        tokio::task::spawn_blocking(f).await.map_err(|e| Error::from_reason(format!("native tool failed: {e}")))
    })
}

/// A built-in tool's own input check (its `execute` called directly): `fields` laid out as the
/// executor's `BUILTIN_INPUT` answer, `[tool id, input type, field type, field value, …]`
/// (lib/builtin.js). The error text, or `null` when the input is valid.
#[napi(catch_unwind)]
pub fn builtin_check_input(fields: Float64Array) -> Result<Option<String>> {
    let bad = || Error::from_reason("builtinCheckInput needs [tool id, input type, field type, field value, …]");
    let t = fields.first().and_then(|&id| TOOLS.get(id as usize)).ok_or_else(bad)?;
    let mut buf = [FieldValue { ty: JsType::Undefined, num: 0.0 }; MAX_FIELDS];
    let view = InputView::decode(t, &fields[1..], &mut buf).ok_or_else(bad)?;
    Ok(input::check(t, &view).map(|issues| invalid_input(t.tool, &issues)))
}

/// How deep `redactSensitiveObject` goes: the JS walk it replaces overflowed the stack a few
/// thousand levels down, and a cycle would never end.
const REDACT_MAX_DEPTH: usize = 10_000;

/// JS values as a redaction [`Tree`], read and built through napi. New arrays and objects
/// come from the caller's `make(isArray)`, so they belong to the caller's realm (a Jest or
/// `vm` context has its own `Object.prototype`; napi would create them in the main one).
struct JsTree {
    env: sys::napi_env,
    make: sys::napi_value,
}

/// A failed napi call: a JS exception is pending (a getter or Proxy trap threw) or the call
/// itself failed.
fn napi_ok(status: sys::napi_status) -> Result<()> {
    if status == sys::Status::napi_ok {
        Ok(())
    } else if status == sys::Status::napi_pending_exception {
        Err(Error::new(Status::PendingException, ""))
    } else {
        Err(Error::new(Status::from(status), "redactSensitiveObject: a napi call failed"))
    }
}

impl JsTree {
    fn make(&self, array: bool) -> Result<sys::napi_value> {
        let mut flag = ptr::null_mut();
        let mut this = ptr::null_mut();
        let mut out = ptr::null_mut();
        // SAFETY: `self.env` is the current call's env and `flag` a live local out-parameter.
        napi_ok(unsafe { sys::napi_get_boolean(self.env, array, &mut flag) })?;
        // SAFETY: `self.env` is the current call's env and `this` a live local out-parameter.
        napi_ok(unsafe { sys::napi_get_undefined(self.env, &mut this) })?;
        // SAFETY: `self.make` is a value of the call's env (napi calls it or fails with
        // napi_function_expected); `flag` and `this` were made just above, `out` is a local.
        napi_ok(unsafe { sys::napi_call_function(self.env, this, self.make, 1, &flag, &mut out) })?;
        Ok(out)
    }

    fn string(&self, v: sys::napi_value) -> Result<String> {
        let mut len = 0;
        // SAFETY: a null buffer asks for the length only.
        napi_ok(unsafe { sys::napi_get_value_string_utf8(self.env, v, ptr::null_mut(), 0, &mut len) })?;
        let mut buf = vec![0u8; len + 1];
        let mut written = 0;
        // SAFETY: `buf` holds `len` bytes and the terminating NUL napi writes.
        napi_ok(unsafe {
            sys::napi_get_value_string_utf8(self.env, v, buf.as_mut_ptr().cast(), len + 1, &mut written)
        })?;
        buf.truncate(written);
        // napi writes UTF-8 (a lone surrogate as U+FFFD).
        Ok(String::from_utf8(buf).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned()))
    }
}

impl Tree for JsTree {
    type Value = sys::napi_value;
    type Error = Error;

    // Every napi call below: `self.env` is the env of the current call and every value comes
    // from it, within the call's handle scope (a `JsTree` lives for one call only).
    fn open(&mut self, v: sys::napi_value) -> Result<Node<sys::napi_value>> {
        let mut t = 0;
        // SAFETY: `self.env` is the current call's env, `v` a value of it within the call's handle
        // scope, `t` a live local.
        napi_ok(unsafe { sys::napi_typeof(self.env, v, &mut t) })?;
        if t == sys::ValueType::napi_string {
            return Ok(Node::Text(self.string(v)?));
        }
        if t != sys::ValueType::napi_object {
            return Ok(Node::Keep(v));
        }
        let mut is = false;
        // SAFETY: as for `napi_typeof` above: the call's env, one of its values, a local out.
        napi_ok(unsafe { sys::napi_is_array(self.env, v, &mut is) })?;
        if is {
            let mut len = 0;
            // SAFETY: `v` is an array of the call's env (checked above); `len` a live local.
            napi_ok(unsafe { sys::napi_get_array_length(self.env, v, &mut len) })?;
            let mut items = Vec::with_capacity(len as usize);
            for i in 0..len {
                let mut item = ptr::null_mut();
                // SAFETY: `i < len` of the array `v` of the call's env; `item` a live local.
                napi_ok(unsafe { sys::napi_get_element(self.env, v, i, &mut item) })?;
                items.push(item);
            }
            return Ok(Node::List(items));
        }
        // SAFETY: the call's env, one of its values, a live local out-parameter.
        napi_ok(unsafe { sys::napi_is_date(self.env, v, &mut is) })?;
        if is {
            return Ok(Node::Keep(v));
        }
        // Object.entries: own, enumerable, string keys (integer keys as strings, first).
        let mut keys = ptr::null_mut();
        // SAFETY: the call's env and an object value of it (checked above); `keys` a live local.
        napi_ok(unsafe {
            sys::napi_get_all_property_names(
                self.env,
                v,
                sys::KeyCollectionMode::own_only,
                sys::KeyFilter::enumerable | sys::KeyFilter::skip_symbols,
                sys::KeyConversion::numbers_to_strings,
                &mut keys,
            )
        })?;
        let mut len = 0;
        // SAFETY: `keys` is the array napi just returned in the call's env; `len` a live local.
        napi_ok(unsafe { sys::napi_get_array_length(self.env, keys, &mut len) })?;
        let mut entries = Vec::with_capacity(len as usize);
        for i in 0..len {
            let mut key = ptr::null_mut();
            // SAFETY: `i < len` of the array `keys` of the call's env; `key` a live local.
            napi_ok(unsafe { sys::napi_get_element(self.env, keys, i, &mut key) })?;
            let mut value = ptr::null_mut();
            // SAFETY: `v` is an object and `key` one of its keys, both of the call's env.
            napi_ok(unsafe { sys::napi_get_property(self.env, v, key, &mut value) })?;
            entries.push((self.string(key)?, value));
        }
        Ok(Node::Record(entries))
    }

    fn text(&mut self, text: String) -> Result<sys::napi_value> {
        let mut out = ptr::null_mut();
        // SAFETY: `text` outlives the call, which copies exactly `text.len()` bytes of UTF-8.
        napi_ok(unsafe {
            sys::napi_create_string_utf8(self.env, text.as_ptr().cast(), text.len() as isize, &mut out)
        })?;
        Ok(out)
    }

    fn list(&mut self, items: Vec<sys::napi_value>) -> Result<sys::napi_value> {
        let out = self.make(true)?;
        for (i, item) in items.into_iter().enumerate() {
            // SAFETY: `out` is the array `make` just created and `item` a value, both of the call's env.
            napi_ok(unsafe { sys::napi_set_element(self.env, out, i as u32, item) })?;
        }
        Ok(out)
    }

    fn record(&mut self, entries: Vec<(String, sys::napi_value)>) -> Result<sys::napi_value> {
        let out = self.make(false)?;
        for (k, v) in entries {
            let key = self.text(k)?;
            // SAFETY: `out` is the object `make` just created; `key` and `v` are values of the call's env.
            napi_ok(unsafe { sys::napi_set_property(self.env, out, key, v) })?;
        }
        Ok(out)
    }
}

/// `redactSensitiveObject` (§13.3): the kernel's one redaction walk over a JS value; `make`
/// creates the result's arrays (`make(true)`) and plain objects (`make(false)`).
#[napi(catch_unwind, ts_args_type = "value: unknown, make: (isArray: boolean) => object", ts_return_type = "unknown")]
pub fn builtin_redact_object<'env>(
    env: &'env Env,
    value: Unknown<'env>,
    make: Function<'env>,
) -> Result<Unknown<'env>> {
    let mut tree = JsTree { env: env.raw(), make: make.raw() };
    match redaction::redact_tree(&mut tree, value.raw(), REDACT_MAX_DEPTH) {
        // SAFETY: a value made in this call's env.
        Ok(v) => Ok(unsafe { Unknown::from_raw_unchecked(env.raw(), v) }),
        Err(WalkError::Tree(e)) => Err(e),
        Err(WalkError::TooDeep) => {
            let msg = std::ffi::CString::new(format!(
                "redactSensitiveObject: the value is nested more than {REDACT_MAX_DEPTH} levels deep or holds a circular reference"
            ))
            .expect("no NUL");
            // SAFETY: a NUL-terminated message; the exception stays pending for napi-rs.
            unsafe { sys::napi_throw_range_error(env.raw(), ptr::null(), msg.as_ptr()) };
            Err(Error::new(Status::PendingException, ""))
        }
    }
}

#[napi(catch_unwind)]
pub fn builtin_is_sensitive_name(name: String) -> bool {
    redaction::is_sensitive_name(&name)
}

#[napi(catch_unwind)]
pub fn builtin_redact_text(text: String) -> String {
    redaction::redact_sensitive_text(&text)
}

/// Test hook: force the component-by-component resolver even where openat2 exists.
#[napi(catch_unwind)]
pub fn builtin_force_component_walk(on: bool) {
    path_safety::force_component_walk(on);
}

#[napi(catch_unwind)]
pub fn builtin_matches_glob(filename: String, glob: String) -> bool {
    glob::matches_glob(&filename, &glob)
}

// A napi export: its parameters are the JS call's arguments, one by one.
#[allow(clippy::too_many_arguments)]
#[napi(catch_unwind)]
pub fn builtin_check_delegation(
    has_runner: bool,
    caller: String,
    target: String,
    agents: Vec<String>,
    chain: Vec<String>,
    depth: f64,
    max_depth: f64,
    available_slots: Option<f64>,
) -> Option<String> {
    delegate::check_delegation(&delegate::DelegateCheck {
        has_runner,
        caller: &caller,
        target: &target,
        agents: &agents,
        chain: &chain,
        depth,
        max_depth,
        available_slots,
    })
}

#[napi(catch_unwind)]
pub fn builtin_resolve_path<'env>(
    env: &'env Env,
    input: String,
    root: Option<String>,
    process_cwd: String,
    ensure_root: bool,
) -> Result<PromiseRaw<'env, NativeSafePath>> {
    blocking(env, move || match path_safety::resolve_path_within_cwd(&input, &spec(root, process_cwd), ensure_root) {
        Ok(r) => NativeSafePath { ok: true, path: Some(r.path), root: Some(r.root), error: None },
        Err(e) => NativeSafePath { ok: false, path: None, root: None, error: Some(e) },
    })
}

#[napi(catch_unwind)]
pub fn builtin_collect_files<'env>(
    env: &'env Env,
    dir: String,
    glob: Option<String>,
    max_files: Option<f64>,
    cancel: &CancelHandle,
) -> Result<PromiseRaw<'env, Vec<String>>> {
    let token = cancel.token();
    // maxFiles compared with `>=` against a count: NaN never stops, ≤ 0 stops at once.
    let max = max_files.map(|m| {
        if m.is_nan() {
            usize::MAX
        } else if m <= 0.0 {
            0
        } else {
            m.ceil().min(usize::MAX as f64) as usize
        }
    });
    blocking(env, move || glob::collect_files(&dir, glob.as_deref(), &|| token.is_cancelled(), max))
}

#[napi(catch_unwind)]
pub fn builtin_file_read<'env>(
    env: &'env Env,
    path: String,
    offset: Option<f64>,
    limit: Option<f64>,
    root: Option<String>,
    process_cwd: String,
) -> Result<PromiseRaw<'env, NativeToolResult>> {
    blocking(env, move || {
        let input = file_read::FileReadInput { path, offset: offset.map(|o| o as u64), limit: limit.map(|l| l as u64) };
        file_read::file_read(&input, &spec(root, process_cwd)).into()
    })
}

#[napi(catch_unwind)]
pub fn builtin_file_write<'env>(
    env: &'env Env,
    path: String,
    content: String,
    root: Option<String>,
    process_cwd: String,
) -> Result<PromiseRaw<'env, NativeToolResult>> {
    blocking(env, move || file_write::file_write(&path, &content, &spec(root, process_cwd)).into())
}

#[napi(catch_unwind)]
pub fn builtin_file_edit<'env>(
    env: &'env Env,
    path: String,
    old_string: String,
    new_string: String,
    replace_all: bool,
    root: Option<String>,
    process_cwd: String,
) -> Result<PromiseRaw<'env, NativeToolResult>> {
    blocking(env, move || {
        let input = file_edit::FileEditInput { path, old_string, new_string, replace_all };
        file_edit::file_edit(&input, &spec(root, process_cwd)).into()
    })
}

#[napi(catch_unwind)]
pub fn builtin_glob<'env>(
    env: &'env Env,
    path: Option<String>,
    pattern: Option<String>,
    max_files: f64,
    root: Option<String>,
    process_cwd: String,
    cancel: &CancelHandle,
) -> Result<PromiseRaw<'env, NativeToolResult>> {
    let token = cancel.token();
    blocking(env, move || {
        let input = glob::GlobInput { path, pattern, max_files: max_files as usize };
        glob::glob_tool(&input, &spec(root, process_cwd), &|| token.is_cancelled()).into()
    })
}

// A napi export: its parameters are the JS call's arguments, one by one.
#[allow(clippy::too_many_arguments)]
#[napi(catch_unwind)]
pub fn builtin_grep<'env>(
    env: &'env Env,
    pattern: String,
    path: Option<String>,
    glob: Option<String>,
    max_results: f64,
    root: Option<String>,
    process_cwd: String,
    cancel: &CancelHandle,
) -> Result<PromiseRaw<'env, NativeToolResult>> {
    let token = cancel.token();
    blocking(env, move || {
        let input = grep::GrepInput { pattern, path, glob, max_results: max_results as usize };
        grep::grep_tool(&input, &spec(root, process_cwd), &|| token.is_cancelled()).into()
    })
}

/// `[name, value]` pairs of the host environment (the allowlisted names) as Rust pairs.
fn env_pairs(host_env: Vec<Vec<String>>) -> Vec<(String, String)> {
    host_env
        .into_iter()
        .filter_map(|mut kv| {
            if kv.len() == 2 {
                let v = kv.pop()?;
                Some((kv.pop()?, v))
            } else {
                None
            }
        })
        .collect()
}

/// A bash call's input as both entries (`builtinBash`, `builtinBashExec`) take it: the timer
/// delay at least 1 ms, `host_env` as `[name, value]` pairs.
fn bash_input(command: String, timeout_ms: f64, cwd: Option<String>, host_env: Vec<Vec<String>>) -> bash::BashInput {
    bash::BashInput { command, timeout_ms: timeout_ms.max(1.0) as u64, cwd, env: env_pairs(host_env) }
}

/// `env`: `[name, value]` pairs of the host environment (the allowlisted names).
#[napi(catch_unwind)]
pub fn builtin_bash<'env>(
    env: &'env Env,
    command: String,
    timeout_ms: f64,
    cwd: Option<String>,
    host_env: Vec<Vec<String>>,
    cancel: &CancelHandle,
) -> Result<PromiseRaw<'env, NativeToolResult>> {
    let token = cancel.token();
    let input = bash_input(command, timeout_ms, cwd, host_env);
    blocking(env, move || {
        let o = bash::run_bash(&input, &|| token.is_cancelled());
        NativeToolResult { is_error: o.exit_code != 0, data: o.data }
    })
}

/// What `LocalShellExecutor.exec` resolves with (upstream 1.16's `ShellExecResult`).
// A napi object, not a record: `LocalShellExecutor.exec` hands its three fields on by name.
#[napi(object)]
pub struct NativeShellResult {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: i32,
}

/// `builtinBash`'s spawn, kill and capture, returning the raw parts instead of the layout
/// (`LocalShellExecutor.exec`). Same arguments.
#[napi(catch_unwind)]
pub fn builtin_bash_exec<'env>(
    env: &'env Env,
    command: String,
    timeout_ms: f64,
    cwd: Option<String>,
    host_env: Vec<Vec<String>>,
    cancel: &CancelHandle,
) -> Result<PromiseRaw<'env, NativeShellResult>> {
    let token = cancel.token();
    let input = bash_input(command, timeout_ms, cwd, host_env);
    blocking(env, move || {
        let r = bash::exec_bash(&input, &|| token.is_cancelled());
        NativeShellResult { stdout: r.stdout, stderr: r.stderr, exit_code: r.exit_code }
    })
}

/// bash's output layout (then redaction) for a `ShellExecutor`'s result.
#[napi(catch_unwind)]
pub fn builtin_bash_format(stdout: String, stderr: String, exit_code: f64) -> String {
    bash::format_exec_result(&stdout, &stderr, exit_code)
}

/// The error for an `exec` result bash cannot lay out: `field` `null` when the value is not an
/// object, `got` the JS type found.
#[napi(catch_unwind)]
pub fn builtin_shell_invalid_result(field: Option<String>, got: String) -> String {
    bash::invalid_exec_result(field.as_deref(), &got)
}
