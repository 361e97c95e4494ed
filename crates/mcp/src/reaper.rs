//! How a stdio server is started on Linux so that its whole tree can be ended, including
//! descendants that called `setsid` or double-forked: under oma-os's reaping helper, the layout
//! `bash` uses. The helper marks itself a child subreaper, leads a process group (ignoring the
//! polite SIGTERM to it, which is for the server), and forks the server into that group with the
//! pipes as its stdin and stdout. Orphans of the tree are re-parented to the helper, so the tree
//! stays the helper's descendants whatever they do; the end is oma-os's `kill_tree` of the helper
//! (a `/proc` scan that SIGKILLs every descendant through pidfds; with the `portable` feature, a
//! SIGKILL of the group). The helper reports the server's exit over a pipe of its own, reaps
//! everything and exits once no descendant is left.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, OwnedFd};

use oma_os::fs;
use oma_os::process::{self, pipe_cloexec, wait_child, Group, Record};

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
        if fs::is_executable(&cand) {
            return Ok(cand);
        }
    }
    Err(io::Error::from_raw_os_error(libc::ENOENT))
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
    let (in_r, in_w) = pipe_cloexec()?;
    let (out_r, out_w) = pipe_cloexec()?;
    let (ex_r, ex_w) = pipe_cloexec()?;
    let (st_r, st_w) = pipe_cloexec()?;
    let command = process::Command { program: &program, argv: &args, env: &envs, cwd: cwd.as_deref() };
    let layout = process::Layout {
        // stderr: the server's is Node's.
        stdio: [Some(in_r.as_fd()), Some(out_w.as_fd()), None],
        records: ex_w.as_fd(),
        exit: Some(st_w.as_fd()),
        group: Group::Helper,
        subreaper: true,
        ignore_sigterm: true,
        confine: None,
    };
    let spawned = process::spawn_helper(&command, &layout);
    drop((in_r, out_w, ex_w, st_w));
    let pid = spawned.map_err(io::Error::from_raw_os_error)?;
    // EOF: the server exec'd (the pipe is close-on-exec); a record: the errno it failed with.
    let mut buf = [0u8; Record::LEN];
    let mut got = 0;
    while got < buf.len() {
        match fs::read(ex_r.as_fd(), &mut buf[got..]) {
            Err(libc::EINTR) => continue,
            Ok(0) | Err(_) => break,
            Ok(n) => got += n,
        }
    }
    if let Some(Record::StartFailed(e) | Record::ConfineFailed(e)) = Record::parse(&buf[..got]) {
        // The helper exits once its only child is reaped.
        wait_child(pid);
        return Err(io::Error::from_raw_os_error(e));
    }
    Ok(Started { helper: pid, stdin: in_w, stdout: out_r, exited: st_r })
}

/// Ends every descendant of the helper (bash's kill), then reaps the helper, which exits once
/// it has reaped them. Blocking (bounded by the kill's own bound): run it off the async threads.
pub(crate) fn end_tree(helper: i32) {
    process::kill_tree(helper);
    wait_child(helper);
}

/// SIGTERM or SIGKILL to the helper's group (the helper ignores SIGTERM).
pub(crate) fn signal_group(helper: i32, sig: libc::c_int) {
    process::signal_group(helper, sig);
}
