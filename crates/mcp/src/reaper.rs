//! How a stdio server is started on Linux so that its whole tree can be ended, including
//! descendants that called `setsid` or double-forked: the layout `bash` uses
//! (oma_core's `tool::builtin::bash`). A small *helper* is forked (no exec); it marks itself a
//! child subreaper (`PR_SET_CHILD_SUBREAPER`, per process, so Node is untouched), leads a process
//! group, and forks the server into that group with the pipes as its stdin and stdout. Orphans
//! of the tree are re-parented to the helper, so the tree stays the helper's descendants
//! whatever they do; the end is bash's `kill_tree` of the helper (a `/proc` scan that SIGKILLs
//! every descendant through pidfds; with oma-core's `portable` feature, a SIGKILL of the group).
//! The helper reports the server's exit over a pipe, reaps everything and exits once no
//! descendant is left.
//!
//! Between `fork` and `execve` (and in the helper, which never execs) only async-signal-safe
//! calls are made: everything is allocated before the fork.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use crate::stdio::Spawn;

/// A started server: the helper's pid (also the group id) and the parent's pipe ends.
pub(crate) struct Started {
    pub helper: i32,
    pub stdin: OwnedFd,
    pub stdout: OwnedFd,
    /// Readable once the server itself has exited (a record, or EOF if the helper is gone).
    pub exited: OwnedFd,
}

fn cstring(s: &str) -> io::Result<CString> {
    CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "nul byte found in provided data"))
}

/// The program as `execvp` finds it: a name with a `/` as it is, else the first executable
/// match in the child's `PATH` (or `/usr/bin:/bin` without one).
fn find_program(command: &str, env: &[(String, String)]) -> io::Result<CString> {
    if command.contains('/') {
        return cstring(command);
    }
    let path = env.iter().find(|(k, _)| k == "PATH").map_or("/usr/bin:/bin", |(_, v)| v.as_str());
    for dir in path.split(':') {
        let dir = if dir.is_empty() { "." } else { dir };
        let cand = cstring(&format!("{dir}/{command}"))?;
        // SAFETY: NUL-terminated path.
        if unsafe { libc::access(cand.as_ptr(), libc::X_OK) } == 0 {
            return Ok(cand);
        }
    }
    Err(io::Error::from_raw_os_error(libc::ENOENT))
}

fn pipe_cloexec() -> io::Result<(OwnedFd, OwnedFd)> {
    let mut fds = [0 as RawFd; 2];
    // SAFETY: valid out array of two descriptors.
    if unsafe { libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) } != 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: fresh descriptors.
    Ok(unsafe { (OwnedFd::from_raw_fd(fds[0]), OwnedFd::from_raw_fd(fds[1])) })
}

fn errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Writes a 4-byte value (async-signal-safe; ≤ PIPE_BUF, so atomic).
fn write_i32(fd: RawFd, v: i32) {
    let b = v.to_ne_bytes();
    // SAFETY: a local buffer.
    unsafe { libc::write(fd, b.as_ptr().cast(), b.len()) };
}

/// Starts the server under a fresh helper. Blocks until the server has exec'd (or failed to:
/// its errno, as a spawn error). Run it off the async threads.
pub(crate) fn start(spawn: &Spawn) -> io::Result<Started> {
    let env = spawn.environment();
    let program = find_program(&spawn.command, &env)?;
    let args: Vec<CString> = std::iter::once(spawn.command.as_str())
        .chain(spawn.args.iter().map(String::as_str))
        .map(cstring)
        .collect::<Result<_, _>>()?;
    let envs: Vec<CString> = env.iter().map(|(k, v)| cstring(&format!("{k}={v}"))).collect::<Result<_, _>>()?;
    let cwd = spawn.cwd.as_deref().map(cstring).transpose()?;
    let argv: Vec<*const libc::c_char> =
        args.iter().map(|a| a.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let envp: Vec<*const libc::c_char> =
        envs.iter().map(|e| e.as_ptr()).chain(std::iter::once(std::ptr::null())).collect();
    let (in_r, in_w) = pipe_cloexec()?;
    let (out_r, out_w) = pipe_cloexec()?;
    let (ex_r, ex_w) = pipe_cloexec()?;
    let (st_r, st_w) = pipe_cloexec()?;
    // SAFETY: the child runs only async-signal-safe code on memory prepared above.
    let pid = unsafe { libc::fork() };
    if pid == 0 {
        // SAFETY: in the forked child.
        unsafe {
            helper_main(
                in_r.as_raw_fd(),
                out_w.as_raw_fd(),
                ex_w.as_raw_fd(),
                st_w.as_raw_fd(),
                &program,
                &argv,
                &envp,
                cwd.as_ref(),
            )
        }
    }
    if pid < 0 {
        return Err(io::Error::last_os_error());
    }
    // The group the signals target (the helper sets it too, so neither order races).
    // SAFETY: plain call on our child.
    unsafe { libc::setpgid(pid, pid) };
    drop((in_r, out_w, ex_w, st_w));
    // EOF: the server exec'd (the pipe is close-on-exec); 4 bytes: the errno it failed with.
    let mut buf = [0u8; 4];
    let mut got = 0;
    while got < 4 {
        // SAFETY: reading into a local buffer.
        let n = unsafe { libc::read(ex_r.as_raw_fd(), buf[got..].as_mut_ptr().cast(), 4 - got) };
        if n < 0 && errno() == libc::EINTR {
            continue;
        }
        if n <= 0 {
            break;
        }
        got += n as usize;
    }
    if got == 4 {
        // The helper exits once its only child is reaped.
        wait_helper(pid);
        return Err(io::Error::from_raw_os_error(i32::from_ne_bytes(buf)));
    }
    Ok(Started { helper: pid, stdin: in_w, stdout: out_r, exited: st_r })
}

/// Closes every descriptor from `low` up.
unsafe fn close_fds_from(low: RawFd) {
    if libc::syscall(libc::SYS_close_range, low as u32, u32::MAX, 0u32) == 0 {
        return;
    }
    for fd in low..65536 {
        libc::close(fd);
    }
}

/// The helper (never returns). Its descriptors: 0 and 1 the server's pipes, 2 the inherited
/// stderr, 3 the exec-error pipe (close-on-exec), 4 the exit-record pipe; nothing else of Node's.
#[allow(clippy::too_many_arguments)]
unsafe fn helper_main(
    in_r: RawFd,
    out_w: RawFd,
    ex_w: RawFd,
    st_w: RawFd,
    program: &CString,
    argv: &[*const libc::c_char],
    envp: &[*const libc::c_char],
    cwd: Option<&CString>,
) -> ! {
    // Default dispositions and an empty mask (as libuv before exec: Node ignores SIGPIPE).
    for sig in 1..32 {
        if sig != libc::SIGKILL && sig != libc::SIGSTOP {
            libc::signal(sig, libc::SIG_DFL);
        }
    }
    let mut set: libc::sigset_t = std::mem::zeroed();
    libc::sigemptyset(&mut set);
    libc::sigprocmask(libc::SIG_SETMASK, &set, std::ptr::null_mut());
    libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
    libc::setpgid(0, 0);
    // The polite SIGTERM to the group is for the server; the helper stays to reap.
    libc::signal(libc::SIGTERM, libc::SIG_IGN);
    // Above the target numbers first, so placing them cannot clobber one another.
    let hi = |fd: RawFd| libc::fcntl(fd, libc::F_DUPFD, 10);
    let (a, b, c, d) = (hi(in_r), hi(out_w), hi(ex_w), hi(st_w));
    if a < 0 || b < 0 || c < 0 || d < 0 {
        if c >= 0 {
            write_i32(c, errno());
        }
        libc::_exit(126);
    }
    libc::dup2(a, 0);
    libc::dup2(b, 1);
    libc::dup2(c, 3);
    libc::dup2(d, 4);
    libc::fcntl(3, libc::F_SETFD, libc::FD_CLOEXEC);
    libc::fcntl(4, libc::F_SETFD, libc::FD_CLOEXEC);
    close_fds_from(5);
    let child = libc::fork();
    if child == 0 {
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
        libc::close(4);
        if let Some(dir) = cwd {
            if libc::chdir(dir.as_ptr()) != 0 {
                write_i32(3, errno());
                libc::_exit(127);
            }
        }
        libc::execve(program.as_ptr(), argv.as_ptr(), envp.as_ptr());
        write_i32(3, errno());
        libc::_exit(127);
    }
    if child < 0 {
        write_i32(3, errno());
        libc::_exit(127);
    }
    // The helper keeps no copy of the server's pipes (their EOFs are the server's) nor of the
    // exec-error pipe (its EOF tells the parent the exec happened).
    libc::close(0);
    libc::close(1);
    libc::close(3);
    loop {
        let mut st: libc::c_int = 0;
        let pid = libc::waitpid(-1, &mut st, 0);
        if pid == child {
            write_i32(4, st);
        } else if pid < 0 {
            if errno() == libc::EINTR {
                continue;
            }
            libc::_exit(0); // ECHILD: every descendant is gone
        }
    }
}

/// Ends every descendant of the helper (bash's kill), then reaps the helper, which exits once
/// it has reaped them. Blocking (bounded by the kill's own bound): run it off the async threads.
pub(crate) fn end_tree(helper: i32) {
    oma_core::tool::builtin::bash::kill_tree(helper);
    wait_helper(helper);
}

/// SIGTERM or SIGKILL to the helper's group (the helper ignores SIGTERM).
pub(crate) fn signal_group(helper: i32, sig: libc::c_int) {
    // SAFETY: a signal to the group of our unreaped child (its id cannot be reused meanwhile).
    unsafe { libc::kill(-helper, sig) };
}

fn wait_helper(pid: i32) {
    loop {
        let mut st = 0;
        // SAFETY: waiting for our own child.
        let r = unsafe { libc::waitpid(pid, &mut st, 0) };
        if r >= 0 || errno() != libc::EINTR {
            return;
        }
    }
}
