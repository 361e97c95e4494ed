//! The confined shell (`ConfinedShellExecutor`, issue 14): its options and their checks, the
//! private home and temp dir of each sandbox root, where a command runs, and the texts a user
//! sees. The operating system's part (Landlock, seccomp, rlimits) is oma-confine's; the spawn,
//! kill and capture are bash's (`bash::exec_bash_with`).
//!
//! The root a command is confined to is the agent's filesystem sandbox root (`sandboxRoot` in
//! the exec options, which bash sets from the tool context's `cwd`), never a path the model
//! chooses: the command runs there, and `cwd` may only name a directory inside it.

use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::Value;

use crate::boundary::record::{Field, Kind, Layout, Ty};

use super::bash::{self, BashInput, BashRaw, Exec, Leftovers};
use super::path_safety::{self, SandboxSpec};

pub use oma_confine::{landlock_abi, Limits, Network, Prepared, REQUIRED_LANDLOCK_ABI};

pub const OPTION_NAMES: [&str; 5] = ["network", "readPaths", "writePaths", "limits", "required"];
pub const LIMIT_NAMES: [&str; 5] = ["cpuSeconds", "addressSpaceBytes", "fileSizeBytes", "openFiles", "processes"];

/// Prepared policies kept per executor, one per sandbox root (agents sharing an executor may
/// have different roots); the oldest is dropped past this.
const CACHED_ROOTS: usize = 8;

/// The constructor's error class for a bad option.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorClass {
    Type,
    Range,
}

impl ErrorClass {
    pub fn name(self) -> &'static str {
        match self {
            ErrorClass::Type => "TypeError",
            ErrorClass::Range => "RangeError",
        }
    }
}

/// The checked options. Defaults: network denied, required, no resource limit (the command's
/// wall-clock timeout and the kill of its whole tree bound it already; a CPU or address-space
/// limit by default would break long builds and JIT runtimes that reserve large address
/// ranges, and the kernel does not apply a process limit to root).
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub network: Network,
    pub read_paths: Vec<String>,
    pub write_paths: Vec<String>,
    pub limits: Limits,
    pub required: bool,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            network: Network::Deny,
            read_paths: vec![],
            write_paths: vec![],
            limits: Limits::default(),
            required: true,
        }
    }
}

/// A JS value as `lib/confined-shell.js` describes it for the option check, through the
/// generated encoders: the record of its `typeof`-like kind (`null` and arrays are kinds of
/// their own) and the value where the check reads one (a number's is a string for NaN and
/// ±Infinity; an array's items and an object's values are described in turn), so `undefined`,
/// NaN, functions… keep their identity through JSON.
pub static DESCRIBED: Layout = Layout {
    section: "confined",
    name: "described",
    tag: Some("t"),
    kinds: &[
        Kind { name: "undefined", fields: &[] },
        Kind { name: "null", fields: &[] },
        Kind { name: "boolean", fields: &[Field::new("v", Ty::Bool)] },
        Kind { name: "number", fields: &[Field::new("v", Ty::Json("number | string"))] },
        Kind { name: "string", fields: &[Field::new("v", Ty::Str)] },
        Kind { name: "array", fields: &[Field::new("v", Ty::Json("unknown[][]"))] },
        Kind { name: "object", fields: &[Field::new("v", Ty::Json("Record<string, unknown[]>"))] },
        Kind { name: "function", fields: &[] },
        Kind { name: "symbol", fields: &[] },
        Kind { name: "bigint", fields: &[] },
    ],
};

/// A described value's kind (anything else reads as `undefined`).
fn tag(d: &Value) -> &'static str {
    d.get(0).and_then(Value::as_u64).and_then(|c| DESCRIBED.kinds.get(c as usize)).map_or("undefined", |k| k.name)
}

/// A described value's value.
fn val(d: &Value) -> Option<&Value> {
    d.get(1)
}

/// How a value is named in an error: a string quoted, a number as written, else its type.
fn got(d: &Value) -> String {
    match (tag(d), val(d)) {
        ("string", Some(v)) => v.to_string(),
        ("number", Some(Value::String(s))) => s.clone(),
        ("number", Some(v)) => js_number(v.as_f64().unwrap_or(f64::NAN)),
        ("boolean", Some(v)) => v.to_string(),
        ("array", _) => "an array".to_string(),
        ("object", _) => "an object".to_string(),
        (t, _) => t.to_string(),
    }
}

fn js_number(n: f64) -> String {
    crate::json::js_number(n)
}

type CheckError = (ErrorClass, String);

fn type_err(msg: String) -> CheckError {
    (ErrorClass::Type, msg)
}

fn paths(name: &str, d: &Value) -> Result<Vec<String>, CheckError> {
    match tag(d) {
        "undefined" => Ok(vec![]),
        "array" => {
            let items = val(d).and_then(Value::as_array).cloned().unwrap_or_default();
            let mut out = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let s = val(item).and_then(Value::as_str).filter(|_| tag(item) == "string");
                match s {
                    Some(p) if p.starts_with('/') && !p.contains('\0') => out.push(p.to_string()),
                    _ => {
                        return Err(type_err(format!(
                            "ConfinedShellExecutor option \"{name}[{i}]\" must be an absolute path (got {}).",
                            got(item)
                        )))
                    }
                }
            }
            Ok(out)
        }
        _ => Err(type_err(format!(
            "ConfinedShellExecutor option \"{name}\" must be an array of absolute paths (got {}).",
            got(d)
        ))),
    }
}

fn limits(d: &Value) -> Result<Limits, CheckError> {
    let mut out = Limits::default();
    match tag(d) {
        "undefined" => return Ok(out),
        "object" => {}
        _ => {
            return Err(type_err(format!(
                "ConfinedShellExecutor option \"limits\" must be an object (got {}).",
                got(d)
            )))
        }
    }
    let Some(fields) = val(d).and_then(Value::as_object) else { return Ok(out) };
    for (k, v) in fields {
        let slot = match k.as_str() {
            "cpuSeconds" => &mut out.cpu_seconds,
            "addressSpaceBytes" => &mut out.address_space_bytes,
            "fileSizeBytes" => &mut out.file_size_bytes,
            "openFiles" => &mut out.open_files,
            "processes" => &mut out.processes,
            _ => {
                return Err(type_err(format!(
                    "Unknown ConfinedShellExecutor limit \"{k}\" (known: {}).",
                    LIMIT_NAMES.join(", ")
                )))
            }
        };
        match tag(v) {
            "undefined" => continue,
            "number" => {}
            _ => {
                return Err(type_err(format!("ConfinedShellExecutor limit \"{k}\" must be a number (got {}).", got(v))))
            }
        }
        let n = val(v).and_then(Value::as_f64).unwrap_or(f64::NAN);
        if !((1.0..=9_007_199_254_740_991.0).contains(&n) && n.fract() == 0.0) {
            return Err((
                ErrorClass::Range,
                format!("ConfinedShellExecutor limit \"{k}\" must be a positive integer (got {}).", got(v)),
            ));
        }
        *slot = Some(n as u64);
    }
    Ok(out)
}

/// `new ConfinedShellExecutor(options)`'s checks, in the order of the fields.
pub fn check_options(d: &Value) -> Result<Options, CheckError> {
    let mut o = Options::default();
    match tag(d) {
        "undefined" => return Ok(o),
        "object" => {}
        _ => return Err(type_err(format!("ConfinedShellExecutor options must be an object (got {}).", got(d)))),
    }
    let Some(fields) = val(d).and_then(Value::as_object) else { return Ok(o) };
    if let Some(k) = fields.keys().find(|k| !OPTION_NAMES.contains(&k.as_str())) {
        return Err(type_err(format!(
            "Unknown ConfinedShellExecutor option \"{k}\" (known: {}).",
            OPTION_NAMES.join(", ")
        )));
    }
    let field = |name: &str| fields.get(name).cloned().unwrap_or(Value::Null);
    let network = field("network");
    match (tag(&network), val(&network).and_then(Value::as_str)) {
        ("undefined", _) => {}
        ("string", Some("deny")) => o.network = Network::Deny,
        ("string", Some("allow")) => o.network = Network::Allow,
        _ => {
            return Err(type_err(format!(
                "ConfinedShellExecutor option \"network\" must be 'deny' or 'allow' (got {}).",
                got(&network)
            )))
        }
    }
    o.read_paths = paths("readPaths", &field("readPaths"))?;
    o.write_paths = paths("writePaths", &field("writePaths"))?;
    o.limits = limits(&field("limits"))?;
    let required = field("required");
    match (tag(&required), val(&required).and_then(Value::as_bool)) {
        ("undefined", _) => {}
        ("boolean", Some(b)) => o.required = b,
        _ => {
            return Err(type_err(format!(
                "ConfinedShellExecutor option \"required\" must be a boolean (got {}).",
                got(&required)
            )))
        }
    }
    Ok(o)
}

/// The exec refusal when there is no sandbox root to confine to.
pub const NO_SANDBOX_ROOT: &str = "The confined shell needs the agent's filesystem sandbox: commands run in its root and may write only there. This call has no sandbox root (the agent has AgentConfig.cwd: null, or exec was called without ShellExecOptions.sandboxRoot); give the agent a cwd, or use another shell executor.";

/// The one-time warning of an executor with `required: false` on a host that cannot enforce
/// every part of its policy.
pub fn partial_warning(missing: &[String]) -> String {
    format!(
        "oma-kernel: ConfinedShellExecutor runs with partial confinement on this host (required: false): {}.",
        missing.join("; ")
    )
}

pub fn cpu_limit_text(seconds: u64) -> String {
    format!("Command exceeded its CPU time limit ({seconds} s).")
}

pub fn file_size_limit_text(bytes: u64) -> String {
    format!("Command exceeded its file size limit ({bytes} bytes).")
}

pub fn process_limit_text(n: u64) -> String {
    format!("Command reached its process limit ({n} processes): a fork failed.")
}

pub fn open_files_limit_text(n: u64) -> String {
    format!("Command reached its open files limit ({n}).")
}

pub fn address_space_limit_text(bytes: u64) -> String {
    format!("Command likely exceeded its address space limit ({bytes} bytes): an allocation failed.")
}

/// The note for a limit the command hit, from how it ended. The kernel ends a process at the
/// CPU and file-size limits with SIGXCPU / SIGXFSZ (bash reports a child's as 128 + signal);
/// the other limits make a call fail, which the program reports in its own words.
pub fn limit_note(limits: &Limits, e: &Exec) -> Option<String> {
    let code = e.raw.exit_code;
    // After a timeout or an abort the tree was killed: no signal or exit code is the command's,
    // but what it printed before still tells (a fork loop killed at its timeout).
    let ended = code != bash::EXIT_TIMED_OUT && code != bash::EXIT_ABORTED;
    let by = |sig: i32| ended && (e.signal == Some(sig) || code == 128 + sig);
    let err = &e.raw.stderr;
    // bash names a child's signal with strsignal's text, and goes on with the script.
    if let Some(s) = limits.cpu_seconds.filter(|_| by(libc::SIGXCPU) || err.contains("CPU time limit exceeded")) {
        return Some(cpu_limit_text(s));
    }
    if let Some(b) = limits.file_size_bytes.filter(|_| by(libc::SIGXFSZ) || err.contains("File size limit exceeded")) {
        return Some(file_size_limit_text(b));
    }
    if code == 0 {
        return None;
    }
    let lower = err.to_ascii_lowercase();
    let fork_failed = lower.contains("fork") && lower.contains("resource temporarily unavailable");
    if let Some(n) = limits.processes.filter(|_| fork_failed) {
        return Some(process_limit_text(n));
    }
    if let Some(n) = limits.open_files.filter(|_| err.contains("Too many open files")) {
        return Some(open_files_limit_text(n));
    }
    let alloc = ["cannot allocate memory", "out of memory", "memory exhausted", "memoryerror", "bad_alloc"]
        .iter()
        .any(|m| lower.contains(m));
    if let Some(b) =
        limits.address_space_bytes.filter(|_| alloc || by(libc::SIGSEGV) || by(libc::SIGABRT) || by(libc::SIGBUS))
    {
        return Some(address_space_limit_text(b));
    }
    None
}

/// The variables that point at the sandbox root's private dir (its home and temp dir).
pub const PRIVATE_DIR_VARS: [&str; 4] = ["HOME", "TMPDIR", "TMP", "TEMP"];

/// One `exec` of the confined shell.
pub struct ExecRequest {
    pub command: String,
    pub timeout_ms: u64,
    /// `ShellExecOptions.cwd`: a directory inside the sandbox root (relative: to the root).
    pub cwd: Option<String>,
    /// `ShellExecOptions.sandboxRoot` (relative: to the process cwd).
    pub sandbox_root: Option<String>,
    pub process_cwd: String,
    /// The host environment (the allowlist applies as for every bash).
    pub env: Vec<(String, String)>,
}

pub struct ExecResult {
    pub raw: BashRaw,
    /// Parts of the policy the kernel did not enforce (`required: false` only).
    pub missing: Vec<String>,
    pub landlock_abi: i32,
}

/// A started confined shell: its options, the directory holding the private dirs, and the
/// prepared policies.
///
/// Each sandbox root gets a private dir of its own (`HOME`, `TMPDIR`, `TMP`, `TEMP`), and a
/// command's Landlock rules grant only its own root's: agents sharing an executor but not a
/// root share nothing writable, so one cannot plant a `~/.gitconfig` (`core.fsmonitor`), a
/// shell profile or a cache entry that then runs in another's root.
pub struct ConfinedShell {
    options: Options,
    /// Holds the private dirs (0700, never granted itself); removed on dispose.
    temp_dir: PathBuf,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Private dir by sandbox root (the real path), made on the root's first command. Kept
    /// for the executor's life (a policy dropped from `prepared` finds its dir again).
    private: Vec<(String, PathBuf)>,
    prepared: Vec<Cached>,
}

/// A prepared policy and the identities of the root and its private dir when it was prepared:
/// Landlock's rules hold inodes, so a directory deleted and made again (a new one at the same
/// path) needs new ones.
struct Cached {
    root: String,
    id: (u64, u64),
    private_id: (u64, u64),
    prepared: Arc<Prepared>,
}

fn dir_id(path: &str) -> (u64, u64) {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata(path).map_or((0, 0), |m| (m.dev(), m.ino()))
}

fn new_temp_dir() -> std::io::Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    static SEQ: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    loop {
        let seq = SEQ.fetch_add(1, Ordering::Relaxed);
        let p = std::env::temp_dir().join(format!("oma-confined-{}-{seq}-{nanos:x}", std::process::id()));
        match std::fs::DirBuilder::new().mode(0o700).create(&p) {
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            r => return r.map(|_| p),
        }
    }
}

fn temp_dir_error(e: std::io::Error) -> String {
    format!("The confined shell could not create its temp dir: {e}.")
}

impl ConfinedShell {
    /// `start()`: refuses off Linux, creates the directory of the private dirs.
    pub fn start(options: Options) -> Result<ConfinedShell, String> {
        if !cfg!(target_os = "linux") {
            return Err(oma_confine::unsupported_text(std::env::consts::OS));
        }
        let temp_dir = new_temp_dir().map_err(temp_dir_error)?;
        Ok(ConfinedShell { options, temp_dir, state: Mutex::new(State::default()) })
    }

    /// The directory of the private dirs (each root's is a directory in it).
    pub fn temp_dir(&self) -> &std::path::Path {
        &self.temp_dir
    }

    /// The root's private dir, made on first use (and again if something removed it).
    fn private_dir(&self, state: &mut State, real_root: &str) -> Result<PathBuf, String> {
        use std::os::unix::fs::DirBuilderExt;
        let dir = match state.private.iter().find(|(r, _)| r == real_root) {
            Some((_, d)) => d.clone(),
            None => {
                let d = self.temp_dir.join(format!("root-{}", state.private.len()));
                state.private.push((real_root.to_string(), d.clone()));
                d
            }
        };
        match std::fs::DirBuilder::new().mode(0o700).create(&dir) {
            Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => Err(temp_dir_error(e)),
            _ => Ok(dir),
        }
    }

    /// The prepared policy and the private dir for a root.
    fn prepared_for(&self, real_root: &str) -> Result<(Arc<Prepared>, PathBuf), String> {
        let id = dir_id(real_root);
        let mut state = self.state.lock().unwrap_or_else(|e| e.into_inner());
        let private = self.private_dir(&mut state, real_root)?;
        let private_id = dir_id(&private.to_string_lossy());
        let cache = &mut state.prepared;
        if let Some(c) = cache.iter().find(|c| c.root == real_root && c.id == id && c.private_id == private_id) {
            return Ok((c.prepared.clone(), private));
        }
        cache.retain(|c| c.root != real_root);
        let policy = oma_confine::Policy {
            root: real_root.into(),
            temp_dir: private.clone(),
            read_paths: self.options.read_paths.iter().map(PathBuf::from).collect(),
            write_paths: self.options.write_paths.iter().map(PathBuf::from).collect(),
            network: self.options.network,
            limits: self.options.limits,
            required: self.options.required,
        };
        let p = Arc::new(oma_confine::prepare(&policy).map_err(|e| e.to_string())?);
        if cache.len() >= CACHED_ROOTS {
            cache.remove(0);
        }
        cache.push(Cached { root: real_root.to_string(), id, private_id, prepared: p.clone() });
        Ok((p, private))
    }

    /// Runs a command confined. `Err`: nothing ran (no sandbox root, a cwd outside it, a
    /// policy the kernel cannot enforce with `required`).
    pub fn exec(&self, req: ExecRequest, cancelled: &dyn Fn() -> bool) -> Result<ExecResult, String> {
        let Some(root) = &req.sandbox_root else { return Err(NO_SANDBOX_ROOT.to_string()) };
        let root = path_safety::resolve(&req.process_cwd, root);
        let cwd = match &req.cwd {
            Some(c) => path_safety::resolve(&root, c),
            None => root.clone(),
        };
        let spec = SandboxSpec { root: Some(root), process_cwd: req.process_cwd.clone() };
        let resolved = path_safety::resolve_path_within_cwd(&cwd, &spec, true)?;
        let (prepared, private) = self.prepared_for(&resolved.root)?;
        let tmp = private.to_string_lossy().into_owned();
        // HOME too: the real one is not readable under the policy (keys, tokens, shell
        // history), and tools that read or write there (git's global config, caches) fail on
        // an unreadable HOME where they accept a missing file.
        let mut env: Vec<(String, String)> =
            req.env.into_iter().filter(|(k, _)| !PRIVATE_DIR_VARS.contains(&k.as_str())).collect();
        for k in PRIVATE_DIR_VARS {
            env.push((k.to_string(), tmp.clone()));
        }
        let input = BashInput { command: req.command, timeout_ms: req.timeout_ms, cwd: Some(resolved.path), env };
        let mut e = bash::exec_bash_with(&input, Some(&prepared), Leftovers::End, cancelled);
        if let Some(note) = limit_note(&self.options.limits, &e) {
            let err = &mut e.raw.stderr;
            if !err.is_empty() && !err.ends_with('\n') {
                err.push('\n');
            }
            err.push_str(&note);
        }
        Ok(ExecResult { raw: e.raw, missing: prepared.not_enforced().to_vec(), landlock_abi: prepared.landlock_abi() })
    }

    /// `dispose()`: removes every private dir and what the commands left in them (no command
    /// runs any more: each one's leftovers ended with it, and the JS side ends the commands in
    /// flight first).
    pub fn dispose(&self) -> Result<(), String> {
        match std::fs::remove_dir_all(&self.temp_dir) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => {
                Err(format!("The confined shell could not remove its temp dir {}: {e}.", self.temp_dir.display()))
            }
        }
    }
}

#[cfg(test)]
mod tests;
