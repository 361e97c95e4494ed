//! `bash` (CONTRACT §11.3), with a stronger kill: after a timeout or an abort no process
//! started by the command survives, including ones that called `setsid` or double-forked.
//!
//! Process layout: the tool forks a small *helper* (no exec) that marks itself a child
//! subreaper (`PR_SET_CHILD_SUBREAPER`, which is per process, so Node itself is untouched)
//! and forks `bash -c command` in its own process group. Anything the command starts stays a
//! descendant of the helper even when its parent dies, because orphans are re-parented to
//! the nearest subreaper. To kill, the tool scans `/proc` for the helper's descendants and
//! SIGKILLs them (through pidfds, so a recycled pid is never hit) until none is left; the
//! helper then reaps everything, reports bash's wait status over a pipe and exits.
//!
//! Between `fork` and `execve` only async-signal-safe calls are made (the parent is a
//! multi-threaded Node process): everything is allocated before the fork.
//!
//! Subreapers, `/proc` and pidfds are Linux's. Elsewhere (and with the `portable` feature) the
//! helper leads a process group that bash and what it starts stay in, and the kill is a
//! `killpg` of that group: a descendant that leaves the group (`setsid`, `setpgid`) survives
//! it. Everything else (timeouts, exit codes, output limits, the prompt return) is the same.

use std::ffi::CString;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::{Duration, Instant};

use crate::json::js_number;
use oma_confine::Prepared;

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
        // SAFETY: NUL-terminated path.
        if unsafe { libc::access(c.as_ptr(), libc::X_OK) } == 0 {
            return Some(c);
        }
    }
    None
}

#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn pipe_cloexec() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: valid out array of two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Without pipe2 the close-on-exec flag comes a moment later: a process that another thread
/// starts in that moment can inherit a copy of the pipe and hold its EOF back until it exits
/// (a timeout or an abort still returns after the drain grace).
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
fn pipe_cloexec() -> std::io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: valid out array of two descriptors.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors, owned from here on.
    let pair = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for fd in [&pair.0, &pair.1] {
        // SAFETY: live descriptor.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(pair)
}

/// errno, async-signal-safe (no allocation for an OS error).
fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Closes every descriptor from `low` up (between fork and exec).
unsafe fn close_fds_from(low: RawFd) {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    if libc::syscall(libc::SYS_close_range, low as u32, u32::MAX, 0u32) == 0 {
        return;
    }
    for fd in low..65536 {
        libc::close(fd);
    }
}

/// Closes the descriptors `low..high` (between fork and exec).
unsafe fn close_fds_between(low: RawFd, high: RawFd) {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    if high > low && libc::syscall(libc::SYS_close_range, low as u32, (high - 1) as u32, 0u32) == 0 {
        return;
    }
    for fd in low..high {
        libc::close(fd);
    }
}

/// Status records from the helper: `E` + errno (spawn failure) or `X` + wait status.
fn write_record(fd: RawFd, tag: u8, value: i32) {
    let v = value.to_ne_bytes();
    let rec = [tag, v[0], v[1], v[2], v[3]];
    // SAFETY: async-signal-safe write of a local buffer (≤ PIPE_BUF, so atomic).
    unsafe { libc::write(fd, rec.as_ptr().cast(), rec.len()) };
}

/// Signal dispositions back to default and an empty mask, as libuv does before exec (Node
/// ignores SIGPIPE, which an exec would otherwise inherit).
unsafe fn reset_signals() {
    for sig in 1..32 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
}

/// Runs in the forked helper; never returns. Takes its descriptors and limits as plain
/// arguments: between fork and exec it may not allocate, so no struct is built for them.
#[allow(clippy::too_many_arguments)]
unsafe fn helper_main(
    devnull: RawFd,
    out_w: RawFd,
    err_w: RawFd,
    status_w: RawFd,
    bash: &CString,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    cwd: Option<&CString>,
    confine: Option<&Prepared>,
) -> ! {
    reset_signals();
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    // The group the kill targets (the parent sets it too, so neither order races).
    #[cfg(any(not(target_os = "linux"), feature = "portable"))]
    libc::setpgid(0, 0);
    // Only stdio and the status pipe may survive in the helper: it never execs, so the
    // descriptors it inherited from Node (other commands' pipes among them) would
    // otherwise stay open as long as it lives and delay their EOF.
    // Move the four descriptors above the target numbers first, so that placing them on
    // 0..3 cannot clobber one another.
    let hi = |fd: RawFd| libc::fcntl(fd, libc::F_DUPFD, 10);
    let (a, b, c, s) = (hi(devnull), hi(out_w), hi(err_w), hi(status_w));
    // The confinement's Landlock ruleset stays where `hi` put it (10 or above), open for bash's
    // child and close-on-exec there, so the command never holds it (with it, a command could
    // add rules to the ruleset later commands are confined by). Not on a fixed low number:
    // libuv's fork handler closes and reopens its signal-lock pipe in every forked child, on the
    // numbers it had in the parent (4 and 5 in a plain Node), which would close it.
    let ruleset = confine.and_then(|p| p.ruleset_fd()).map_or(-1, hi);
    if a < 0 || b < 0 || c < 0 || s < 0 || (confine.is_some_and(|p| p.ruleset_fd().is_some()) && ruleset < 0) {
        libc::_exit(126);
    }
    libc::dup2(a, 0);
    libc::dup2(b, 1);
    libc::dup2(c, 2);
    libc::dup2(s, 3);
    let status_fd = 3;
    if ruleset >= 0 {
        libc::fcntl(ruleset, libc::F_SETFD, libc::FD_CLOEXEC);
        close_fds_between(4, ruleset);
        close_fds_from(ruleset + 1);
    } else {
        close_fds_from(4);
    }
    libc::fcntl(status_fd, libc::F_SETFD, libc::FD_CLOEXEC);
    let child = libc::fork();
    if child == 0 {
        // With the subreaper, bash gets a group of its own; without it, bash stays in the
        // helper's group, which is what the kill targets.
        #[cfg(all(target_os = "linux", not(feature = "portable")))]
        libc::setpgid(0, 0);
        if let Some(dir) = cwd {
            if libc::chdir(dir.as_ptr()) != 0 {
                write_record(status_fd, b'E', errno());
                libc::_exit(127);
            }
        }
        // Only bash and what it starts are confined. The helper stays outside the domain: it
        // runs no user code, and being outside is what keeps the command from signalling or
        // tracing its reaper (Landlock's scopes), so the kill-tree guarantee holds.
        if let Some(p) = confine {
            let fd = if ruleset >= 0 { Some(ruleset) } else { None };
            if let Err(e) = oma_confine::apply_in_child(p, fd) {
                write_record(status_fd, b'C', e.pack());
                libc::_exit(127);
            }
        }
        libc::execve(bash.as_ptr(), argv.as_ptr(), envp.as_ptr());
        write_record(status_fd, b'E', errno());
        libc::_exit(127);
    }
    if child < 0 {
        write_record(status_fd, b'E', errno());
        libc::_exit(127);
    }
    // The helper keeps no copy of the command's pipes.
    libc::close(0);
    libc::close(1);
    libc::close(2);
    loop {
        let mut st: libc::c_int = 0;
        let pid = libc::waitpid(-1, &mut st, 0);
        if pid == child {
            write_record(status_fd, b'X', st);
        } else if pid < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            libc::_exit(0); // ECHILD: every descendant is gone
        }
    }
}

/// `(pid, ppid, state)` of every process, from /proc.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn process_table() -> Vec<(i32, i32, u8)> {
    let mut out = Vec::new();
    let Ok(rd) = std::fs::read_dir("/proc") else { return out };
    for e in rd.flatten() {
        let name = e.file_name();
        let Some(pid) = name.to_str().and_then(|s| s.parse::<i32>().ok()) else { continue };
        if let Some((ppid, state)) = stat_of(pid) {
            out.push((pid, ppid, state));
        }
    }
    out
}

#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn stat_of(pid: i32) -> Option<(i32, u8)> {
    let s = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name may contain spaces and parentheses: parse after the last ')'.
    let rest = &s[s.rfind(')')? + 2..];
    let mut it = rest.split(' ');
    let state = it.next()?.bytes().next()?;
    let ppid = it.next()?.parse().ok()?;
    Some((ppid, state))
}

/// Live (non-zombie) descendants of `root`.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn descendants(root: i32) -> (Vec<i32>, std::collections::HashSet<i32>) {
    let table = process_table();
    let mut tree = std::collections::HashSet::new();
    tree.insert(root);
    // Parent links can point to later entries: iterate to a fixed point.
    loop {
        let before = tree.len();
        for &(pid, ppid, _) in &table {
            if tree.contains(&ppid) {
                tree.insert(pid);
            }
        }
        if tree.len() == before {
            break;
        }
    }
    let live = table
        .iter()
        .filter(|(pid, _, st)| *pid != root && tree.contains(pid) && *st != b'Z' && *st != b'X')
        .map(|(pid, _, _)| *pid)
        .collect();
    (live, tree)
}

#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn sigkill(pid: i32, tree: &std::collections::HashSet<i32>) {
    // SAFETY: pidfd_open/pidfd_send_signal take plain integers.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd >= 0 {
        // SAFETY: fresh descriptor.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
        // The pidfd pins the process; confirm it is still one of ours before signalling.
        if stat_of(pid).is_some_and(|(ppid, _)| tree.contains(&ppid)) {
            // SAFETY: `pidfd` is owned and open for the call; the null siginfo is allowed
            // (the kernel fills in a SI_USER one), and the other arguments are integers.
            unsafe {
                libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), libc::SIGKILL, std::ptr::null::<u8>(), 0)
            };
        }
    } else if std::io::Error::last_os_error().raw_os_error() == Some(libc::ENOSYS) {
        // SAFETY: plain kill.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Whether [`kill_tree`] reaches descendants that left the helper's process group (`setsid`,
/// `setpgid`): the subreaper's `/proc` scan does, the portable group kill does not.
pub const KILL_TREE_REACHES_ESCAPED: bool = cfg!(all(target_os = "linux", not(feature = "portable")));

/// SIGKILLs every descendant of the helper until none is left (bounded: a process stuck in
/// uninterruptible sleep cannot hold the tool for long). `true`: none is left.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
pub fn kill_tree(helper: i32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    for round in 0.. {
        if Instant::now() >= deadline {
            return false;
        }
        let (live, tree) = descendants(helper);
        if live.is_empty() {
            return true;
        }
        for pid in live {
            sigkill(pid, &tree);
        }
        // Killed processes turn into zombies asynchronously; do not spin on /proc.
        std::thread::sleep(Duration::from_millis(if round < 5 { 1 } else { 10 }));
    }
    true
}

/// Whether the helper may have descendants left, read from its children list (one small file,
/// where [`kill_tree`] scans all of /proc). Every descendant's chain of parents ends at a
/// child of the helper (orphans are re-parented to it), so none of them means the tree is
/// empty, and stays so: nothing is left to fork. Unknown (a kernel without the list): `true`.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn may_have_descendants(helper: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{helper}/task/{helper}/children")).map_or(true, |s| !s.trim().is_empty())
}

#[cfg(any(not(target_os = "linux"), feature = "portable"))]
fn may_have_descendants(_helper: i32) -> bool {
    true
}

/// SIGKILLs the helper's process group: the helper, bash and every descendant that stayed in
/// the group. The helper is an unreaped child until `wait_helper`, so its pid (the group id)
/// cannot be reused meanwhile.
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
pub fn kill_tree(helper: i32) -> bool {
    // SAFETY: plain signal to a process group of ours.
    unsafe { libc::killpg(helper, libc::SIGKILL) };
    true
}

fn wait_helper(pid: i32) {
    loop {
        let mut st = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r >= 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return;
        }
    }
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

fn read_some(fd: RawFd, buf: &mut [u8]) -> isize {
    // SAFETY: reading into a live buffer.
    unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) }
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
    let mut envp: Vec<*const libc::c_char> = env_c.iter().map(|c| c.as_ptr()).collect();
    envp.push(std::ptr::null());
    let arg0 = CString::new("bash").expect("static");
    let arg1 = CString::new("-c").expect("static");
    let argv: [*const libc::c_char; 4] = [arg0.as_ptr(), arg1.as_ptr(), cmd.as_ptr(), std::ptr::null()];

    let pipes = (|| -> std::io::Result<_> {
        let devnull = std::fs::File::open("/dev/null")?;
        Ok((OwnedFd::from(devnull), pipe_cloexec()?, pipe_cloexec()?, pipe_cloexec()?))
    })();
    let Ok((devnull, (out_r, out_w), (err_r, err_w), (status_r, status_w))) = pipes else {
        return done(spawn_error(libc::EMFILE));
    };

    // SAFETY: the child only runs `helper_main`, which makes async-signal-safe calls on
    // data prepared above.
    let helper = unsafe { libc::fork() };
    if helper == 0 {
        // SAFETY: this is the forked child of a possibly multi-threaded parent; helper_main
        // only makes async-signal-safe calls, on descriptors that were opened above and are
        // owned by this process's copy of the table, and never returns.
        unsafe {
            helper_main(
                devnull.as_raw_fd(),
                out_w.as_raw_fd(),
                err_w.as_raw_fd(),
                status_w.as_raw_fd(),
                &bash,
                &argv,
                &envp,
                cwd.as_ref(),
                confine,
            )
        }
    }
    drop((devnull, out_w, err_w, status_w));
    // The helper's group exists before the first kill can target it (the helper sets it too).
    #[cfg(any(not(target_os = "linux"), feature = "portable"))]
    if helper > 0 {
        // SAFETY: our own child, which has not exec'd.
        unsafe { libc::setpgid(helper, helper) };
    }
    if helper < 0 {
        return done(spawn_error(std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EAGAIN)));
    }

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
        // SAFETY: valid pollfd array.
        let n = unsafe { libc::poll(fds.as_mut_ptr(), 3, wait) };
        if n <= 0 {
            continue;
        }
        for (i, cap) in [(0usize, &mut out), (1, &mut err)] {
            if fds[i].revents != 0 {
                let r = read_some(fds[i].fd, &mut chunk);
                if r > 0 {
                    cap.push(&chunk[..r as usize]);
                } else if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                    cap.eof = true;
                }
            }
        }
        if fds[2].revents != 0 {
            let r = read_some(status_r.as_raw_fd(), &mut chunk);
            if r > 0 {
                status_buf.extend_from_slice(&chunk[..r as usize]);
                while status_buf.len() >= 5 {
                    let v = i32::from_ne_bytes([status_buf[1], status_buf[2], status_buf[3], status_buf[4]]);
                    match status_buf[0] {
                        b'E' => spawn_errno = spawn_errno.or(Some(v)),
                        b'C' => confine_error = confine_error.or(Some(v)),
                        _ => exit_status = Some(v),
                    }
                    status_buf.drain(..5);
                }
            } else if r == 0 || std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
                status_eof = true;
            }
        }
    }

    if killed_at.is_some() || spawn_errno.is_some() || confine_error.is_some() {
        // Everything is dead or dying; the helper exits once it has reaped it all. A helper
        // that lingers (cannot happen short of a stopped helper) is killed outright.
        kill_tree(helper);
        if !status_eof {
            // SAFETY: our own child.
            unsafe { libc::kill(helper, libc::SIGKILL) };
        }
        wait_helper(helper);
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
            wait_helper(helper)
        });
    } else {
        // Normal completion: background processes the command left behind keep running,
        // as in the original; the helper reaps them and is reaped here in turn.
        std::thread::spawn(move || wait_helper(helper));
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
