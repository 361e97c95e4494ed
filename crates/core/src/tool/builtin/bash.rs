//! `bash` (CONTRACT §11.3), with a stronger kill: after a timeout or an abort no process
//! started by the command survives, including ones that called `setsid` or double-forked.
//!
//! Process layout (oma-os's `process`, where the system calls are): the tool starts
//! `bash -c command` under a small *helper* that marks itself a child subreaper and puts bash
//! in its own process group. Anything the command starts stays a descendant of the helper even
//! when its parent dies, because orphans are re-parented to the nearest subreaper. To kill, the
//! tool SIGKILLs the helper's descendants (found in `/proc`, signalled through pidfds) until
//! none is left; the helper then reaps everything, reports bash's wait status over a pipe and
//! exits.
//!
//! Subreapers, `/proc` and pidfds are Linux's. Elsewhere (and with the `portable` feature) the
//! helper leads a process group that bash and what it starts stay in, and the kill is a
//! `killpg` of that group: a descendant that leaves the group (`setsid`, `setpgid`) survives
//! it. Everything else (timeouts, exit codes, output limits, the prompt return) is the same.

use std::ffi::CString;
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::time::{Duration, Instant};

use crate::json::js_number;
use oma_confine::Prepared;
use oma_os::fs;
use oma_os::process::{self, kill_tree, may_have_descendants, pipe_cloexec, wait_child, Group, Record};

use crate::redaction::{is_sensitive_name, redact_sensitive_text};

/// Variables the shell may inherit (§11.3), before the sensitive-name filter.
pub const SAFE_ENV_ALLOWLIST: [&str; 11] =
    ["HOME", "LANG", "LC_ALL", "LOGNAME", "PATH", "SHELL", "TEMP", "TERM", "TMP", "TMPDIR", "USER"];

pub const DEFAULT_TIMEOUT_MS: u64 = 30_000;

/// The shell's exit codes for what ended a command from outside (upstream's ShellExecResult
/// contract, as `timeout(1)` and shells use them): the deadline passed, the call was aborted, the
/// command could not start.
pub const EXIT_TIMED_OUT: i32 = 124;
pub const EXIT_ABORTED: i32 = 130;
pub const EXIT_START_FAILED: i32 = 127;

/// The message of the `AggregateError` a run's shell executor lease rejects with when its
/// `start()` failed and the `dispose()` that followed failed too (upstream 1.16).
pub const START_CLEANUP_FAILED: &str = "Shell executor start failed and cleanup also failed.";

/// The process warning's prefix (the error's message follows) when a shell executor's `dispose()`
/// failed where no run result could carry it: a run that had already failed with its own error,
/// or a stream its consumer stopped reading.
pub const DISPOSE_FAILED_UNREPORTED: &str = "oma-kernel: a shell executor's dispose() failed after its run ended: ";

/// Output kept in memory per stream; the rest is read and dropped so the command is not
/// blocked on a full pipe.
pub const MAX_CAPTURE_BYTES: usize = 10 * 1024 * 1024;

/// How long to wait for the pipes to close after the kill (a process outside the tree
/// could hold a copy of them).
const DRAIN_GRACE: Duration = Duration::from_secs(2);

/// What becomes of the processes a command leaves behind when it ends normally (bash exited
/// and its output pipes closed: a background process still holding them keeps the command
/// running until it closes them or the timeout kills the tree).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Leftovers {
    /// They keep running: the `bash` tool and `LocalShellExecutor`, as upstream's spawn (a
    /// `nohup server > log 2>&1 &` outlives the command; timeouts and aborts still kill it).
    Keep,
    /// They are killed with the command's whole tree, `setsid`'d ones included: the confined
    /// shell, whose leftovers would otherwise stay confined but able to write the sandbox root
    /// after the command (and the executor) ended.
    End,
}

pub struct BashInput {
    pub command: String,
    /// Effective timer delay in ms (the JS side applies `?? 30000` and Node's setTimeout
    /// clamping).
    pub timeout_ms: u64,
    pub cwd: Option<String>,
    /// The host environment entries to consider (name, value).
    pub env: Vec<(String, String)>,
}

#[derive(Debug, PartialEq)]
pub struct BashOutcome {
    pub data: String,
    pub exit_code: i32,
}

/// A command's raw parts, before the layout: what a `ShellExecutor`'s `exec` resolves with
/// (upstream 1.16). `stderr` holds the spawn error's text when the command could not start
/// (exit code 127).
#[derive(Debug, PartialEq)]
pub struct BashRaw {
    pub stdout: String,
    pub stderr: String,
    pub exit_code: i32,
}

/// The environment handed to bash: allowlisted, not sensitive, defined.
pub fn safe_env(host: &[(String, String)]) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for name in SAFE_ENV_ALLOWLIST {
        if is_sensitive_name(name) {
            continue;
        }
        if let Some((_, v)) = host.iter().find(|(k, _)| k == name) {
            out.push((name.to_string(), v.clone()));
        }
    }
    out
}

/// §11.3 output layout, then redaction.
pub fn format_output(stdout: &str, stderr: &str, code: i32) -> String {
    layout(stdout, stderr, code == 0, &code.to_string())
}

/// The same layout for a `ShellExecutor`'s result, whose exit code is any JS number (written
/// as JS writes it, as upstream's template literal does).
pub fn format_exec_result(stdout: &str, stderr: &str, code: f64) -> String {
    layout(stdout, stderr, code == 0.0, &js_number(code))
}

/// The rule itself: `ok` is whether the exit code is 0, `code` its text.
fn layout(stdout: &str, stderr: &str, ok: bool, code: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    if !stdout.is_empty() {
        parts.push(stdout.to_string());
    }
    if !stderr.is_empty() {
        parts.push(if stdout.is_empty() { stderr.to_string() } else { format!("--- stderr ---\n{stderr}") });
    }
    let text = if parts.is_empty() {
        if ok {
            "(command completed with no output)".to_string()
        } else {
            format!("(command exited with code {code}, no output)")
        }
    } else {
        if !ok {
            parts.push(format!("\n(exit code: {code})"));
        }
        parts.join("\n")
    };
    redact_sensitive_text(&text)
}

/// A `ShellExecutor`'s `exec` resolved with something bash cannot lay out: `field` names the
/// member that is wrong (`None`: the value itself is not an object), `got` its JS type.
pub fn invalid_exec_result(field: Option<&str>, got: &str) -> String {
    match field {
        None => format!(
            "ShellExecutor.exec resolved with an invalid result: expected {{ stdout: string, stderr: string, exitCode: number }}, got {got}"
        ),
        Some(f) => {
            let want = if f == "exitCode" { "a number" } else { "a string" };
            format!("ShellExecutor.exec resolved with an invalid result: {f} must be {want}, got {got}")
        }
    }
}

fn errno_code(errno: i32) -> &'static str {
    match errno {
        libc::ENOENT => "ENOENT",
        libc::EACCES => "EACCES",
        libc::ENOTDIR => "ENOTDIR",
        libc::EPERM => "EPERM",
        libc::ENOEXEC => "ENOEXEC",
        libc::EAGAIN => "EAGAIN",
        libc::ENOMEM => "ENOMEM",
        libc::EINVAL => "EINVAL",
        libc::E2BIG => "E2BIG",
        libc::ELOOP => "ELOOP",
        libc::ENAMETOOLONG => "ENAMETOOLONG",
        libc::ENOSYS => "ENOSYS",
        libc::EMFILE => "EMFILE",
        _ => "EIO",
    }
}

/// Node's text for a spawn that failed (`spawn bash ENOENT`), exit code 127.
fn spawn_error(errno: i32) -> BashRaw {
    BashRaw { stdout: String::new(), stderr: format!("spawn bash {}", errno_code(errno)), exit_code: EXIT_START_FAILED }
}

/// `bash` looked up like libuv does: in the child's PATH, or `/usr/bin:/bin` without one.
fn find_bash(env: &[(String, String)]) -> Option<CString> {
    let path = env.iter().find(|(k, _)| k == "PATH").map_or("/usr/bin:/bin", |(_, v)| v.as_str());
    for dir in path.split(':') {
        let dir = if dir.is_empty() { "." } else { dir };
        let cand = format!("{dir}/bash");
        let Ok(c) = CString::new(cand) else { continue };
        if fs::is_executable(&c) {
            return Some(c);
        }
    }
    None
}

struct Capture {
    buf: Vec<u8>,
    dropped: bool,
    eof: bool,
}

impl Capture {
    fn new() -> Capture {
        Capture { buf: Vec::new(), dropped: false, eof: false }
    }

    fn push(&mut self, data: &[u8]) {
        let room = MAX_CAPTURE_BYTES.saturating_sub(self.buf.len());
        if data.len() > room {
            self.dropped = true;
        }
        self.buf.extend_from_slice(&data[..data.len().min(room)]);
    }

    fn text(&self) -> String {
        let mut s = String::from_utf8_lossy(&self.buf).into_owned();
        if self.dropped {
            s.push_str(&format!("\n[output truncated: more than {MAX_CAPTURE_BYTES} bytes]"));
        }
        s
    }
}

/// Runs the command and lays its output out (the `bash` tool's result).
pub fn run_bash(input: &BashInput, cancelled: &dyn Fn() -> bool) -> BashOutcome {
    let r = exec_bash(input, cancelled);
    BashOutcome { data: format_output(&r.stdout, &r.stderr, r.exit_code), exit_code: r.exit_code }
}

/// Runs the command and returns its raw parts (`LocalShellExecutor.exec`). `cancelled` is
/// polled (the abort signal); it returns promptly after a timeout or abort even if some
/// process outside the tree holds the pipes.
pub fn exec_bash(input: &BashInput, cancelled: &dyn Fn() -> bool) -> BashRaw {
    exec_bash_with(input, None, Leftovers::Keep, cancelled).raw
}

/// A command's raw parts and how bash ended, for the confined shell's notes.
pub struct Exec {
    pub raw: BashRaw,
    /// The signal that ended bash, when one did.
    pub signal: Option<i32>,
}

/// [`exec_bash`], optionally confined: `confine` is applied in bash's process after the
/// `chdir`, before `execve` (`oma_confine::apply_in_child`). `input.env` is used as given
/// after the allowlist (the confined shell adds its TMPDIR first). `leftovers`: what becomes
/// of the processes the command leaves when it ends normally.
pub fn exec_bash_with(
    input: &BashInput,
    confine: Option<&Prepared>,
    leftovers: Leftovers,
    cancelled: &dyn Fn() -> bool,
) -> Exec {
    let done = |raw| Exec { raw, signal: None };
    let env = safe_env(&input.env);
    let Some(bash) = find_bash(&env) else { return done(spawn_error(libc::ENOENT)) };
    let Ok(cmd) = CString::new(input.command.as_str()) else { return done(spawn_error(libc::EINVAL)) };
    let cwd = match &input.cwd {
        Some(c) => match CString::new(c.as_str()) {
            Ok(c) => Some(c),
            Err(_) => return done(spawn_error(libc::EINVAL)),
        },
        None => None,
    };
    let env_c: Vec<CString> = env.iter().filter_map(|(k, v)| CString::new(format!("{k}={v}")).ok()).collect();
    let argv = [CString::new("bash").expect("static"), CString::new("-c").expect("static"), cmd];

    let pipes = (|| -> std::io::Result<_> {
        let devnull = std::fs::File::open("/dev/null")?;
        Ok((OwnedFd::from(devnull), pipe_cloexec()?, pipe_cloexec()?, pipe_cloexec()?))
    })();
    let Ok((devnull, (out_r, out_w), (err_r, err_w), (status_r, status_w))) = pipes else {
        return done(spawn_error(libc::EMFILE));
    };
    let command = process::Command { program: &bash, argv: &argv, env: &env_c, cwd: cwd.as_deref() };
    let layout = process::Layout {
        stdio: [Some(devnull.as_fd()), Some(out_w.as_fd()), Some(err_w.as_fd())],
        records: status_w.as_fd(),
        exit: None,
        // With the subreaper, bash gets a group of its own; without it, bash stays in the
        // helper's group, which is what the kill targets.
        group: if process::KILL_TREE_REACHES_ESCAPED { Group::Command } else { Group::Helper },
        // The subreaper is what lets the kill reach the escaped (see `kill_tree`).
        subreaper: process::KILL_TREE_REACHES_ESCAPED,
        ignore_sigterm: false,
        confine,
    };
    let spawned = process::spawn_helper(&command, &layout);
    drop((devnull, out_w, err_w, status_w));
    let helper = match spawned {
        Ok(pid) => pid,
        Err(e) => return done(spawn_error(e)),
    };

    let start = Instant::now();
    let deadline = start + Duration::from_millis(input.timeout_ms);
    let mut out = Capture::new();
    let mut err = Capture::new();
    let mut status_buf: Vec<u8> = Vec::new();
    let mut status_eof = false;
    let mut exit_status: Option<i32> = None;
    let mut spawn_errno: Option<i32> = None;
    let mut confine_error: Option<i32> = None;
    let mut timed_out = false;
    let mut aborted = false;
    let mut killed_at: Option<Instant> = None;
    let mut chunk = vec![0u8; 64 * 1024];

    loop {
        // Done: bash exited (or failed to start) and both pipes are closed.
        if (exit_status.is_some() || spawn_errno.is_some() || confine_error.is_some() || status_eof)
            && out.eof
            && err.eof
        {
            break;
        }
        if killed_at.is_some_and(|t| t.elapsed() >= DRAIN_GRACE) {
            break;
        }
        if killed_at.is_none() {
            let now = Instant::now();
            if now >= deadline {
                timed_out = true;
            } else if cancelled() {
                aborted = true;
            }
            if timed_out || aborted {
                kill_tree(helper);
                killed_at = Some(Instant::now());
            }
        }
        let mut fds = [
            libc::pollfd { fd: if out.eof { -1 } else { out_r.as_raw_fd() }, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: if err.eof { -1 } else { err_r.as_raw_fd() }, events: libc::POLLIN, revents: 0 },
            libc::pollfd { fd: if status_eof { -1 } else { status_r.as_raw_fd() }, events: libc::POLLIN, revents: 0 },
        ];
        let wait = if killed_at.is_some() {
            25
        } else {
            deadline.saturating_duration_since(Instant::now()).as_millis().min(25) as i32
        };
        let n = process::poll(&mut fds, wait);
        if n <= 0 {
            continue;
        }
        for (i, cap, fd) in [(0usize, &mut out, out_r.as_fd()), (1, &mut err, err_r.as_fd())] {
            if fds[i].revents != 0 {
                match fs::read(fd, &mut chunk) {
                    Ok(0) => cap.eof = true,
                    Ok(r) => cap.push(&chunk[..r]),
                    Err(libc::EINTR) => {}
                    Err(_) => cap.eof = true,
                }
            }
        }
        if fds[2].revents != 0 {
            match fs::read(status_r.as_fd(), &mut chunk) {
                Ok(0) => status_eof = true,
                Ok(r) => {
                    status_buf.extend_from_slice(&chunk[..r]);
                    while let Some(rec) = Record::parse(&status_buf) {
                        match rec {
                            Record::StartFailed(v) => spawn_errno = spawn_errno.or(Some(v)),
                            Record::ConfineFailed(v) => confine_error = confine_error.or(Some(v)),
                            Record::Exited(v) => exit_status = Some(v),
                        }
                        status_buf.drain(..Record::LEN);
                    }
                }
                Err(libc::EINTR) => {}
                Err(_) => status_eof = true,
            }
        }
    }

    if killed_at.is_some() || spawn_errno.is_some() || confine_error.is_some() {
        // Everything is dead or dying; the helper exits once it has reaped it all. A helper
        // that lingers (cannot happen short of a stopped helper) is killed outright.
        kill_tree(helper);
        if !status_eof {
            process::signal(helper, libc::SIGKILL);
        }
        wait_child(helper);
    } else if leftovers == Leftovers::End {
        // Normal completion, leftovers end with the command: killed before the result is
        // returned, so none of them can act after it. Nothing escapes the helper (a subreaper:
        // orphans, setsid'd or double-forked ones too, stay its descendants). A process the
        // bounded kill could not finish (stuck in uninterruptible sleep, with its SIGKILL
        // pending) is killed again from the reaping thread until the tree is empty.
        let gone = !may_have_descendants(helper) || kill_tree(helper);
        std::thread::spawn(move || {
            if !gone {
                while !kill_tree(helper) {
                    std::thread::sleep(Duration::from_secs(1));
                }
            }
            wait_child(helper);
        });
    } else {
        // Normal completion: background processes the command left behind keep running,
        // as in the original; the helper reaps them and is reaped here in turn.
        std::thread::spawn(move || wait_child(helper));
    }

    if let Some(e) = spawn_errno {
        return done(spawn_error(e));
    }
    if let Some(e) = confine_error {
        return done(confine_failed(e));
    }
    let code = match exit_status {
        Some(st) if libc::WIFEXITED(st) => libc::WEXITSTATUS(st),
        _ if timed_out => EXIT_TIMED_OUT,
        _ if aborted => EXIT_ABORTED,
        _ => 1,
    };
    let signal = exit_status.filter(|st| libc::WIFSIGNALED(*st)).map(|st| libc::WTERMSIG(st));
    Exec { raw: BashRaw { stdout: out.text(), stderr: err.text(), exit_code: code }, signal }
}

/// bash's process could not be confined (a step of `apply_in_child` failed): a startup
/// failure, so 127 with the reason in stderr. The command never ran.
fn confine_failed(packed: i32) -> BashRaw {
    let stderr = match oma_confine::ApplyError::unpack(packed) {
        Some(e) => format!(
            "The confined shell could not confine the command: {} failed ({}).",
            e.step.name(),
            errno_code(e.errno)
        ),
        None => "The confined shell could not confine the command.".to_string(),
    };
    BashRaw { stdout: String::new(), stderr, exit_code: EXIT_START_FAILED }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn host_env() -> Vec<(String, String)> {
        std::env::vars().collect()
    }

    fn run(cmd: &str, timeout_ms: u64) -> BashOutcome {
        run_bash(&BashInput { command: cmd.into(), timeout_ms, cwd: None, env: host_env() }, &|| false)
    }

    #[test]
    fn layout() {
        assert_eq!(format_output("out\n", "err\n", 0), "out\n\n--- stderr ---\nerr\n");
        assert_eq!(format_output("", "err\n", 3), "err\n\n\n(exit code: 3)");
        assert_eq!(format_output("", "spawn bash ENOENT", 127), "spawn bash ENOENT\n\n(exit code: 127)");
        assert_eq!(format_output("", "", 124), "(command exited with code 124, no output)");
        assert_eq!(format_output("", "", 0), "(command completed with no output)");
    }

    #[test]
    fn an_executor_result_takes_the_same_layout() {
        for (out, err, code) in [("out\n", "err\n", 0), ("", "err\n", 3), ("", "", 124), ("", "", 0), ("x", "", 130)] {
            assert_eq!(format_exec_result(out, err, code as f64), format_output(out, err, code));
        }
        // Any JS number, written as JS writes it; -0 is 0.
        assert_eq!(format_exec_result("", "", 1.5), "(command exited with code 1.5, no output)");
        assert_eq!(format_exec_result("", "", f64::NAN), "(command exited with code NaN, no output)");
        assert_eq!(format_exec_result("", "", -0.0), "(command completed with no output)");
        // Redacted like the tool's own output.
        assert_eq!(
            format_exec_result("OPENAI_API_KEY=sk-abc\n", "", 0.0),
            format_output("OPENAI_API_KEY=sk-abc\n", "", 0)
        );
        assert!(!format_exec_result("OPENAI_API_KEY=sk-abcdefghijklmnop\n", "", 0.0).contains("sk-abcdefghijklmnop"));
    }

    #[test]
    fn invalid_results_name_what_is_wrong() {
        assert_eq!(
            invalid_exec_result(None, "null"),
            "ShellExecutor.exec resolved with an invalid result: expected { stdout: string, stderr: string, exitCode: number }, got null"
        );
        assert_eq!(
            invalid_exec_result(Some("stdout"), "undefined"),
            "ShellExecutor.exec resolved with an invalid result: stdout must be a string, got undefined"
        );
        assert_eq!(
            invalid_exec_result(Some("exitCode"), "string"),
            "ShellExecutor.exec resolved with an invalid result: exitCode must be a number, got string"
        );
    }

    #[test]
    fn raw_parts() {
        let raw = |cmd: &str, cwd: Option<&str>, timeout_ms: u64| {
            exec_bash(
                &BashInput { command: cmd.into(), timeout_ms, cwd: cwd.map(Into::into), env: host_env() },
                &|| false,
            )
        };
        assert_eq!(
            raw("printf out; printf err >&2; exit 3", None, 10_000),
            BashRaw { stdout: "out".into(), stderr: "err".into(), exit_code: 3 }
        );
        assert_eq!(
            raw("pwd", Some("/"), 10_000),
            BashRaw { stdout: "/\n".into(), stderr: String::new(), exit_code: 0 }
        );
        assert_eq!(
            raw("true", Some("/nonexistent/dir"), 10_000),
            BashRaw { stdout: String::new(), stderr: "spawn bash ENOENT".into(), exit_code: 127 }
        );
        // Output before the kill is kept; the code is the timeout's.
        assert_eq!(
            raw("printf early; sleep 5", None, 300),
            BashRaw { stdout: "early".into(), stderr: String::new(), exit_code: 124 }
        );
        // Not redacted: the layout (format_output) redacts, the raw parts are the command's.
        assert_eq!(raw("printf PWD=x", None, 10_000).stdout, "PWD=x");
        let aborted = exec_bash(
            &BashInput { command: "sleep 5".into(), timeout_ms: 10_000, cwd: None, env: host_env() },
            &|| true,
        );
        assert_eq!(aborted.exit_code, 130);
    }

    #[test]
    fn runs_and_reports() {
        let o = run("echo out; echo err >&2; exit 3", 10_000);
        assert_eq!(o, BashOutcome { data: "out\n\n--- stderr ---\nerr\n\n\n(exit code: 3)".into(), exit_code: 3 });
        let o = run("sleep 5", 200);
        assert_eq!(o.exit_code, 124);
        assert_eq!(o.data, "(command exited with code 124, no output)");
    }

    #[test]
    fn env_is_filtered() {
        let env = vec![
            ("PATH".to_string(), std::env::var("PATH").unwrap_or_default()),
            ("OPENAI_API_KEY".to_string(), "sk-x".to_string()),
            ("HOME".to_string(), "/home/x".to_string()),
        ];
        let o = run_bash(
            &BashInput { command: "env | sort".into(), timeout_ms: 10_000, cwd: Some("/".into()), env },
            &|| false,
        );
        assert!(o.data.contains("HOME=/home/x"), "{}", o.data);
        assert!(o.data.contains("PWD=[redacted]"), "{}", o.data);
        assert!(!o.data.contains("OPENAI"), "{}", o.data);
    }

    #[test]
    fn missing_cwd_is_a_spawn_error() {
        let o = run_bash(
            &BashInput {
                command: "true".into(),
                timeout_ms: 10_000,
                cwd: Some("/nonexistent/dir".into()),
                env: host_env(),
            },
            &|| false,
        );
        assert_eq!(o, BashOutcome { data: "spawn bash ENOENT\n\n(exit code: 127)".into(), exit_code: 127 });
    }

    #[test]
    fn a_timeout_kills_the_commands_children() {
        // Both kills (subreaper and process group) must take a background child down too.
        // The argument is a marker no other process has; `ps` exists on Linux and macOS.
        let marker = format!("sleep 7.{}", std::process::id());
        let o = run(&format!("{marker} & {marker}; wait"), 300);
        assert_eq!(o.exit_code, 124);
        let alive = || {
            let out = std::process::Command::new("ps").args(["-A", "-o", "args="]).output().unwrap();
            String::from_utf8_lossy(&out.stdout).lines().any(|l| l.trim() == marker)
        };
        let deadline = Instant::now() + Duration::from_secs(3);
        while alive() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(!alive(), "{marker} survived the timeout");
    }

    #[test]
    fn capture_is_bounded() {
        let o = run("head -c 12000000 /dev/zero | tr '\\0' a", 20_000);
        assert_eq!(o.exit_code, 0);
        assert!(o.data.len() < MAX_CAPTURE_BYTES + 100);
        assert!(o.data.ends_with(&format!("[output truncated: more than {MAX_CAPTURE_BYTES} bytes]")));
    }
}
