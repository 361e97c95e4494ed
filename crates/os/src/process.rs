//! The reaping helper: how a command (`bash`) or an MCP stdio server is started so that its
//! whole tree can be ended, including descendants that called `setsid` or double-forked.
//!
//! [`spawn_helper`] forks a small *helper* (no exec) that, on Linux, marks itself a child
//! subreaper (`PR_SET_CHILD_SUBREAPER`, which is per process, so Node itself is untouched) and
//! forks the command. Anything the command starts stays a descendant of the helper even when its
//! parent dies, because orphans are re-parented to the nearest subreaper. [`kill_tree`] scans
//! `/proc` for the helper's descendants and SIGKILLs them (through pidfds, so a recycled pid is
//! never hit) until none is left; the helper reaps everything, reports the command's wait status
//! as a [`Record`] and exits once no descendant is left.
//!
//! Subreapers, `/proc` and pidfds are Linux's. Elsewhere (and with the `portable` feature) the
//! helper leads a process group ([`Group::Helper`]) that the command and what it starts stay in,
//! and the kill is a `killpg` of that group: a descendant that leaves the group survives it.
//!
//! Between `fork` and `execve` (and in the helper, which never execs) only async-signal-safe
//! calls are made, on memory prepared before the fork: the parent is a multi-threaded Node
//! process, whose other threads may hold the allocator's locks at the moment of the fork.

#[cfg(all(target_os = "linux", not(feature = "portable")))]
use std::collections::HashSet;
use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
#[cfg(all(target_os = "linux", not(feature = "portable")))]
use std::time::{Duration, Instant};

use crate::errno;

/// A pipe whose two ends are close-on-exec, so that no command started by another thread
/// inherits them: `(read end, write end)`.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
pub fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` is a live array of the two descriptors pipe2 writes.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe2 succeeded: both are fresh descriptors nothing else owns.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

/// Without pipe2 the close-on-exec flag comes a moment later: a process that another thread
/// starts in that moment can inherit a copy of the pipe and hold its EOF back until it exits.
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
pub fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: `fds` is a live array of the two descriptors pipe writes.
    if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: pipe succeeded: both are fresh descriptors nothing else owns.
    let pair = unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) };
    for fd in [&pair.0, &pair.1] {
        // SAFETY: `fd` is open (owned by `pair`); F_SETFD takes an integer argument.
        unsafe { libc::fcntl(fd.as_raw_fd(), libc::F_SETFD, libc::FD_CLOEXEC) };
    }
    Ok(pair)
}

/// `poll(fds, timeout_ms)`: the number of descriptors with events, 0 on timeout, -1 on error.
/// A negative `fd` in an entry is ignored by the kernel.
pub fn poll(fds: &mut [libc::pollfd], timeout_ms: i32) -> i32 {
    // SAFETY: `fds` is a live, exclusively borrowed array of `fds.len()` pollfds; the kernel
    // only writes their `revents`. Descriptor numbers are read, never closed.
    unsafe { libc::poll(fds.as_mut_ptr(), fds.len() as libc::nfds_t, timeout_ms) }
}

/// One status record from the helper or the command, over the record pipe: a tag byte and an
/// `i32` in native byte order (5 bytes, less than PIPE_BUF, so each write is atomic).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Record {
    /// The command could not be started (`chdir` or `execve` failed): its errno.
    StartFailed(i32),
    /// The command could not be confined: `oma_confine::ApplyError::pack`.
    ConfineFailed(i32),
    /// The command ended: its wait status.
    Exited(i32),
}

impl Record {
    pub const LEN: usize = 5;

    pub(crate) fn bytes(self) -> [u8; Record::LEN] {
        let (tag, v) = match self {
            Record::StartFailed(v) => (b'E', v),
            Record::ConfineFailed(v) => (b'C', v),
            Record::Exited(v) => (b'X', v),
        };
        let v = v.to_ne_bytes();
        [tag, v[0], v[1], v[2], v[3]]
    }

    /// The record at the start of `buf`, if a whole one is there (an unknown tag reads as
    /// `Exited`, the one record the helper writes itself).
    pub fn parse(buf: &[u8]) -> Option<Record> {
        let b: &[u8; Record::LEN] = buf.get(..Record::LEN)?.try_into().ok()?;
        let v = i32::from_ne_bytes([b[1], b[2], b[3], b[4]]);
        Some(match b[0] {
            b'E' => Record::StartFailed(v),
            b'C' => Record::ConfineFailed(v),
            _ => Record::Exited(v),
        })
    }
}

/// Writes `rec` to `fd`: async-signal-safe (a local buffer, one write, atomic).
fn write_record(fd: RawFd, rec: Record) {
    let b = rec.bytes();
    // SAFETY: the kernel reads `b.len()` bytes of the live local `b`; a closed `fd` only
    // fails with EBADF.
    unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
}

/// Which process leads the process group the tree lives in.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Group {
    /// The helper stays in this process's group; the command leads a group of its own.
    Command,
    /// The helper leads a group (set by both the helper and the parent, so neither order
    /// races) that the command and what it starts stay in: the group a `killpg` of the
    /// helper's pid reaches.
    Helper,
}

/// What the helper runs: `program` with `argv` (its first element is argv\[0\]) and exactly the
/// environment `env` (`NAME=value` strings), in `cwd` when given.
pub struct Command<'a> {
    pub program: &'a CStr,
    pub argv: &'a [CString],
    pub env: &'a [CString],
    pub cwd: Option<&'a CStr>,
}

/// How the helper and the command are laid out.
pub struct Layout<'a> {
    /// The command's descriptors 0, 1 and 2; `None`: the one this process has (inherited).
    /// The helper closes those given once the command is forked, so their EOFs are the
    /// command's tree's.
    pub stdio: [Option<BorrowedFd<'a>>; 3],
    /// The write end of the record pipe: descriptor 3 in the helper and the command,
    /// close-on-exec. The command writes its start failures there; its EOF, once the helper
    /// has let go of it too, tells that the command exec'd.
    pub records: BorrowedFd<'a>,
    /// The write end of a second pipe for the helper's [`Record::Exited`] (descriptor 4, which
    /// the command does not hold); `None`: the helper keeps `records` and writes it there.
    pub exit: Option<BorrowedFd<'a>>,
    pub group: Group,
    /// Whether the helper marks itself a child subreaper (Linux; ignored elsewhere).
    pub subreaper: bool,
    /// Whether the helper ignores SIGTERM, so that a polite SIGTERM to the group reaches the
    /// command and the helper stays to reap it (the command gets the default disposition).
    pub ignore_sigterm: bool,
    /// The confinement applied in the command after the `chdir`, before `execve`
    /// (`oma_confine::apply_in_child`); its Landlock ruleset stays open in the helper for it.
    pub confine: Option<&'a oma_confine::Prepared>,
}

/// Forks the helper, which forks the command as laid out. Returns the helper's pid (an
/// unreaped child of this process until [`wait_child`]: its pid, also the group id with
/// [`Group::Helper`], cannot be reused meanwhile), or fork's errno.
pub fn spawn_helper(cmd: &Command<'_>, layout: &Layout<'_>) -> Result<i32, i32> {
    // Everything the children use is allocated here, before the fork.
    let argv: Vec<*const libc::c_char> =
        cmd.argv.iter().map(|a| a.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let envp: Vec<*const libc::c_char> =
        cmd.env.iter().map(|e| e.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let args = HelperArgs {
        stdio: layout.stdio.map(|fd| fd.map_or(-1, |fd| fd.as_raw_fd())),
        records: layout.records.as_raw_fd(),
        exit: layout.exit.map_or(-1, |fd| fd.as_raw_fd()),
        program: cmd.program,
        argv: &argv,
        envp: &envp,
        cwd: cmd.cwd,
        own_group: layout.group == Group::Helper,
        command_group: layout.group == Group::Command,
        subreaper: layout.subreaper,
        ignore_sigterm: layout.ignore_sigterm,
        confine: layout.confine,
    };
    // SAFETY: the child runs only `helper_main`, which makes async-signal-safe calls on the
    // memory prepared above (borrowed by `args`, alive in the child's copy of it) and never
    // returns; the parent goes on as after any fork.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: this is the freshly forked child, as `helper_main` requires.
        unsafe { helper_main(&args) }
    }
    if pid < 0 {
        return Err(errno());
    }
    if args.own_group {
        // SAFETY: `pid` is our own child, which has not exec'd (it never does).
        unsafe { libc::setpgid(pid, pid) };
    }
    Ok(pid)
}

/// The helper's arguments as plain values: between fork and exec nothing may be allocated,
/// so everything is computed in the parent.
struct HelperArgs<'a> {
    stdio: [RawFd; 3],
    records: RawFd,
    exit: RawFd,
    program: &'a CStr,
    argv: &'a [*const libc::c_char],
    envp: &'a [*const libc::c_char],
    cwd: Option<&'a CStr>,
    own_group: bool,
    command_group: bool,
    subreaper: bool,
    ignore_sigterm: bool,
    confine: Option<&'a oma_confine::Prepared>,
}

/// The descriptor the record pipe is on in the helper and the command, and the exit pipe's.
const RECORDS_FD: RawFd = 3;
const EXIT_FD: RawFd = 4;

/// Closes every descriptor from `low` up.
///
/// # Safety
/// Only in a forked child that owns its whole descriptor table (between fork and exec): it
/// closes descriptors that objects of the parent's copy of the program still think they own.
unsafe fn close_fds_from(low: RawFd) {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    // SAFETY: close_range takes integers; the caller owns the table (this function's contract).
    if unsafe { libc::syscall(libc::SYS_close_range, low as u32, u32::MAX, 0u32) } == 0 {
        return;
    }
    for fd in low..65536 {
        // SAFETY: as above.
        unsafe { libc::close(fd) };
    }
}

/// Closes the descriptors `low..high`.
///
/// # Safety
/// As for [`close_fds_from`].
unsafe fn close_fds_between(low: RawFd, high: RawFd) {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    // SAFETY: close_range takes integers; the caller owns the table (this function's contract).
    if high > low && unsafe { libc::syscall(libc::SYS_close_range, low as u32, (high - 1) as u32, 0u32) } == 0 {
        return;
    }
    for fd in low..high {
        // SAFETY: as above.
        unsafe { libc::close(fd) };
    }
}

/// Signal dispositions back to default and an empty mask, as libuv does before exec (Node
/// ignores SIGPIPE, which an exec would otherwise inherit).
///
/// # Safety
/// Only in a forked child: it changes the whole process's signal handling.
unsafe fn reset_signals() {
    for sig in 1..32 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            // SAFETY: SIG_DFL is a valid disposition for every catchable signal.
            unsafe { libc::signal(sig, libc::SIG_DFL) };
        }
    }
    let mut set = std::mem::MaybeUninit::<libc::sigset_t>::uninit();
    // SAFETY: sigemptyset initialises the live local `set`, which sigprocmask then reads.
    unsafe {
        libc::sigemptyset(set.as_mut_ptr());
        libc::sigprocmask(libc::SIG_SETMASK, set.as_ptr(), std::ptr::null_mut());
    }
}

/// Runs in the forked helper; never returns.
///
/// # Safety
/// Only in the child of [`spawn_helper`]'s fork: it takes over the process's descriptors and
/// signals, and makes only async-signal-safe calls.
unsafe fn helper_main(a: &HelperArgs<'_>) -> ! {
    // SAFETY: (the whole body) the process is the freshly forked helper, which owns its copy
    // of the descriptor table and its signal state; every call below is async-signal-safe and
    // reads only memory the parent prepared (`a`), which the fork copied and nothing frees.
    unsafe {
        reset_signals();
        #[cfg(target_os = "linux")]
        if a.subreaper {
            libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
        }
        if a.own_group {
            libc::setpgid(0, 0);
        }
        if a.ignore_sigterm {
            libc::signal(libc::SIGTERM, libc::SIG_IGN);
        }
        // Only the given descriptors survive in the helper: it never execs, so the ones it
        // inherited from Node (other commands' pipes among them) would otherwise stay open as
        // long as it lives and delay their EOF. They are moved above the target numbers first,
        // so that placing them on 0..5 cannot clobber one another.
        let hi = |fd: RawFd| if fd < 0 { -1 } else { libc::fcntl(fd, libc::F_DUPFD, 10) };
        let stdio = a.stdio.map(hi);
        let records = hi(a.records);
        let exit = hi(a.exit);
        // The confinement's Landlock ruleset stays where `hi` put it (10 or above), open for
        // the command and close-on-exec there, so the command never holds it (with it, a
        // command could add rules to the ruleset later commands are confined by). Not on a
        // fixed low number: libuv's fork handler closes and reopens its signal-lock pipe in
        // every forked child, on the numbers it had in the parent (4 and 5 in a plain Node).
        let ruleset = a.confine.and_then(|p| p.ruleset_fd()).map_or(-1, hi);
        let lost = |orig: RawFd, moved: RawFd| orig >= 0 && moved < 0;
        if (0..3).any(|i| lost(a.stdio[i], stdio[i]))
            || records < 0
            || lost(a.exit, exit)
            || a.confine.is_some_and(|p| p.ruleset_fd().is_some()) && ruleset < 0
        {
            if records >= 0 {
                write_record(records, Record::StartFailed(errno()));
            }
            libc::_exit(126);
        }
        for (i, fd) in stdio.into_iter().enumerate() {
            if fd >= 0 {
                libc::dup2(fd, i as RawFd);
            }
        }
        libc::dup2(records, RECORDS_FD);
        let first_free = if exit >= 0 {
            libc::dup2(exit, EXIT_FD);
            libc::fcntl(EXIT_FD, libc::F_SETFD, libc::FD_CLOEXEC);
            EXIT_FD + 1
        } else {
            RECORDS_FD + 1
        };
        libc::fcntl(RECORDS_FD, libc::F_SETFD, libc::FD_CLOEXEC);
        if ruleset >= 0 {
            libc::fcntl(ruleset, libc::F_SETFD, libc::FD_CLOEXEC);
            close_fds_between(first_free, ruleset);
            close_fds_from(ruleset + 1);
        } else {
            close_fds_from(first_free);
        }
        let child = libc::fork();
        if child == 0 {
            command_main(a, if ruleset >= 0 { Some(ruleset) } else { None });
        }
        if child < 0 {
            write_record(RECORDS_FD, Record::StartFailed(errno()));
            libc::_exit(127);
        }
        // The helper keeps no copy of the command's pipes (their EOFs are the command's tree's),
        // nor, with a separate exit pipe, of the record pipe (its EOF tells the exec happened).
        for (i, fd) in a.stdio.iter().enumerate() {
            if *fd >= 0 {
                libc::close(i as RawFd);
            }
        }
        let exit_to = if exit >= 0 {
            libc::close(RECORDS_FD);
            EXIT_FD
        } else {
            RECORDS_FD
        };
        loop {
            let mut st: libc::c_int = 0;
            let pid = libc::waitpid(-1, &mut st, 0);
            if pid == child {
                write_record(exit_to, Record::Exited(st));
            } else if pid < 0 {
                if errno() == libc::EINTR {
                    continue;
                }
                libc::_exit(0); // ECHILD: every descendant is gone
            }
        }
    }
}

/// Runs in the command's process, forked by the helper; never returns.
///
/// # Safety
/// Only in the helper's freshly forked child, as [`helper_main`].
unsafe fn command_main(a: &HelperArgs<'_>, ruleset: Option<RawFd>) -> ! {
    // SAFETY: (the whole body) as in `helper_main`, whose fork this process is: it owns its
    // descriptors and signals, and reads only the parent's prepared memory.
    unsafe {
        if a.command_group {
            libc::setpgid(0, 0);
        }
        if a.ignore_sigterm {
            libc::signal(libc::SIGTERM, libc::SIG_DFL);
        }
        if a.exit >= 0 {
            libc::close(EXIT_FD);
        }
        if let Some(dir) = a.cwd {
            if libc::chdir(dir.as_ptr()) != 0 {
                write_record(RECORDS_FD, Record::StartFailed(errno()));
                libc::_exit(127);
            }
        }
        // Only the command and what it starts are confined. The helper stays outside the
        // domain: it runs no user code, and being outside is what keeps the command from
        // signalling or tracing its reaper (Landlock's scopes), so the kill-tree guarantee holds.
        if let Some(p) = a.confine {
            // apply_in_child's contract: a freshly forked child, right before execve.
            if let Err(e) = oma_confine::apply_in_child(p, ruleset) {
                write_record(RECORDS_FD, Record::ConfineFailed(e.pack()));
                libc::_exit(127);
            }
        }
        libc::execve(a.program.as_ptr(), a.argv.as_ptr(), a.envp.as_ptr());
        write_record(RECORDS_FD, Record::StartFailed(errno()));
        libc::_exit(127);
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

/// `(ppid, state)` of `pid`, from /proc.
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

/// Live (non-zombie) descendants of `root`, and the whole tree (`root` and every descendant,
/// zombies included).
#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn descendants(root: i32) -> (Vec<i32>, HashSet<i32>) {
    let table = process_table();
    let mut tree = HashSet::new();
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

/// SIGKILLs `pid` if it is still a child of a process of `tree`, through a pidfd, so that a
/// recycled pid is never hit.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn sigkill(pid: i32, tree: &HashSet<i32>) {
    // SAFETY: pidfd_open takes two integers and returns a fresh descriptor or -1.
    let pidfd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid, 0) };
    if pidfd >= 0 {
        // SAFETY: pidfd_open succeeded: a fresh descriptor that nothing else owns.
        let pidfd = unsafe { OwnedFd::from_raw_fd(pidfd as RawFd) };
        // The pidfd pins the process; confirm it is still one of ours before signalling.
        if stat_of(pid).is_some_and(|(ppid, _)| tree.contains(&ppid)) {
            // SAFETY: `pidfd` is owned and open for the call; the null siginfo is allowed
            // (the kernel fills in a SI_USER one), and the other arguments are integers.
            unsafe {
                libc::syscall(libc::SYS_pidfd_send_signal, pidfd.as_raw_fd(), libc::SIGKILL, std::ptr::null::<u8>(), 0)
            };
        }
    } else if errno() == libc::ENOSYS {
        // SAFETY: kill takes integers; without pidfds the pid was just read from /proc.
        unsafe { libc::kill(pid, libc::SIGKILL) };
    }
}

/// Whether [`kill_tree`] reaches descendants that left the helper's process group (`setsid`,
/// `setpgid`): the subreaper's `/proc` scan does, the portable group kill does not.
pub const KILL_TREE_REACHES_ESCAPED: bool = cfg!(all(target_os = "linux", not(feature = "portable")));

/// SIGKILLs every descendant of the helper until none is left (bounded: a process stuck in
/// uninterruptible sleep cannot hold the caller for long). `true`: none is left.
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

/// SIGKILLs the helper's process group ([`Group::Helper`]): the helper, the command and every
/// descendant that stayed in the group. The helper is an unreaped child until [`wait_child`],
/// so its pid (the group id) cannot be reused meanwhile.
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
pub fn kill_tree(helper: i32) -> bool {
    signal_group(helper, libc::SIGKILL);
    true
}

/// Whether the helper may have descendants left, read from its children list (one small file,
/// where [`kill_tree`] scans all of /proc). Every descendant's chain of parents ends at a
/// child of the helper (orphans are re-parented to it), so none of them means the tree is
/// empty, and stays so: nothing is left to fork. Unknown (a kernel without the list, the
/// portable layout): `true`.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
pub fn may_have_descendants(helper: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{helper}/task/{helper}/children")).map_or(true, |s| !s.trim().is_empty())
}

#[cfg(any(not(target_os = "linux"), feature = "portable"))]
pub fn may_have_descendants(_helper: i32) -> bool {
    true
}

/// Sends `sig` to the process group `pgid` (a helper's, with [`Group::Helper`]).
pub fn signal_group(pgid: i32, sig: libc::c_int) {
    // SAFETY: kill takes integers. The caller names the group of its own unreaped child, whose
    // id cannot be reused meanwhile.
    unsafe { libc::kill(-pgid, sig) };
}

/// Sends `sig` to the process `pid` (a helper: an unreaped child of the caller).
pub fn signal(pid: i32, sig: libc::c_int) {
    // SAFETY: kill takes integers; an unreaped child's pid cannot be reused.
    unsafe { libc::kill(pid, sig) };
}

/// Reaps the child `pid` (retried on EINTR); its wait status, or `None` if it could not be
/// waited for.
pub fn wait_child(pid: i32) -> Option<i32> {
    loop {
        let mut st = 0;
        // SAFETY: waitpid writes the live local `st`; `pid` names one child of ours.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r >= 0 {
            return Some(st);
        }
        if errno() != libc::EINTR {
            return None;
        }
    }
}

/// Whether the process runs with effective user id 0 (which, among other things, ignores
/// file and directory permissions).
pub fn is_superuser() -> bool {
    // SAFETY: geteuid takes nothing and cannot fail.
    unsafe { libc::geteuid() == 0 }
}
