//! napi binding of the built-in tools and redaction. Blocking work (filesystem, processes)
//! runs on tokio's blocking pool, not libuv's, so a 30 s `bash` never starves Node's own fs
//! calls. `lib/builtin.js` turns these into `ToolDefinition` objects.

use napi::bindgen_prelude::*;
use napi_derive::napi;

use super::cancel::CancelHandle;
use oma_core::redaction;
use oma_core::tool::builtin::{
    bash, delegate, file_edit, file_read, file_write, glob, grep,
    path_safety::{self, SandboxSpec},
    ToolOutput,
};

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
    let host: Vec<(String, String)> = host_env
        .into_iter()
        .filter_map(|mut kv| {
            if kv.len() == 2 {
                let v = kv.pop()?;
                Some((kv.pop()?, v))
            } else {
                None
            }
        })
        .collect();
    blocking(env, move || {
        let input = bash::BashInput { command, timeout_ms: timeout_ms.max(1.0) as u64, cwd, env: host };
        let o = bash::run_bash(&input, &|| token.is_cancelled());
        NativeToolResult { is_error: o.exit_code != 0, data: o.data }
    })
}
