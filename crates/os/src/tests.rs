//! The crate's calls on real files in temp directories and on real processes.

use std::ffi::{CStr, CString};
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::fs::{self, EntryKind};
use crate::process::{self, Group, Record};

/// A fresh directory under the temp dir, removed when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let name = format!("oma-os-test-{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed));
        let p = std::env::temp_dir().join(name);
        // A leftover of an earlier run with the same pid goes first.
        let _ = std::fs::remove_dir_all(&p);
        std::fs::create_dir_all(&p).map(|()| TempDir(std::fs::canonicalize(p).unwrap())).unwrap()
    }

    fn open(&self) -> OwnedFd {
        fs::openat(fs::cwd(), &c(&self.0), libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap()
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn c(p: &Path) -> CString {
    CString::new(p.as_os_str().as_bytes()).unwrap()
}

#[test]
fn openat_opens_relative_to_a_directory_and_never_through_a_final_symlink_with_nofollow() {
    let t = TempDir::new();
    std::fs::write(t.0.join("f"), b"x").unwrap();
    std::os::unix::fs::symlink(t.0.join("f"), t.0.join("l")).unwrap();
    let dir = t.open();
    let f = fs::openat(dir.as_fd(), c"f", libc::O_RDONLY, 0).unwrap();
    assert_eq!(fs::file_type(&fs::fstat(f.as_fd()).unwrap()), libc::S_IFREG);
    assert_eq!(fs::openat(dir.as_fd(), c"l", libc::O_RDONLY | libc::O_NOFOLLOW, 0).unwrap_err(), libc::ELOOP);
    assert_eq!(fs::openat(dir.as_fd(), c"missing", libc::O_RDONLY, 0).unwrap_err(), libc::ENOENT);
    // What it opens is close-on-exec.
    let flags = std::fs::read_to_string(format!("/proc/self/fdinfo/{}", std::os::fd::AsRawFd::as_raw_fd(&f)));
    if let Ok(info) = flags {
        let flags = info.lines().find_map(|l| l.strip_prefix("flags:")).unwrap().trim();
        assert_ne!(u32::from_str_radix(flags, 8).unwrap() & libc::O_CLOEXEC as u32, 0);
    }
}

#[cfg(all(target_os = "linux", not(feature = "portable")))]
#[test]
fn openat2_stays_beneath_its_directory() {
    let t = TempDir::new();
    std::fs::create_dir(t.0.join("d")).unwrap();
    std::fs::write(t.0.join("d/f"), b"x").unwrap();
    std::os::unix::fs::symlink("/etc", t.0.join("abs")).unwrap();
    std::os::unix::fs::symlink("../..", t.0.join("d/up")).unwrap();
    std::os::unix::fs::symlink("f", t.0.join("d/rel")).unwrap();
    let dir = t.open();
    match fs::openat2_beneath(dir.as_fd(), c"d/f", libc::O_RDONLY, 0) {
        Err(libc::ENOSYS) => return, // a kernel before 5.6: the caller walks components
        r => assert!(r.is_ok()),
    }
    // A symlink that stays inside is followed.
    assert!(fs::openat2_beneath(dir.as_fd(), c"d/rel", libc::O_RDONLY, 0).is_ok());
    for escape in [c"..", c"d/../..", c"abs/passwd", c"d/up/etc", c"/etc/passwd"] {
        assert_eq!(fs::openat2_beneath(dir.as_fd(), escape, libc::O_RDONLY, 0).unwrap_err(), libc::EXDEV, "{escape:?}");
    }
    // Creating: the mode is passed only with O_CREAT.
    let f = fs::openat2_beneath(dir.as_fd(), c"d/new", libc::O_WRONLY | libc::O_CREAT, 0o600).unwrap();
    assert_eq!(fs::fstat(f.as_fd()).unwrap().st_mode & 0o777, 0o600 & !fs::umask());
}

#[test]
fn fstatat_does_not_follow_a_symlink() {
    let t = TempDir::new();
    std::os::unix::fs::symlink("/nonexistent", t.0.join("dangling")).unwrap();
    let dir = t.open();
    assert_eq!(fs::file_type(&fs::fstatat_nofollow(dir.as_fd(), c"dangling").unwrap()), libc::S_IFLNK);
    assert_eq!(fs::fstatat_nofollow(dir.as_fd(), c"none").unwrap_err(), libc::ENOENT);
    assert_eq!(fs::file_type(&fs::fstatat_nofollow(fs::cwd(), &c(&t.0)).unwrap()), libc::S_IFDIR);
}

#[test]
fn a_listing_gives_kinds_skips_dot_entries_and_starts_over_each_time() {
    let t = TempDir::new();
    std::fs::write(t.0.join("file"), b"").unwrap();
    std::fs::create_dir(t.0.join("sub")).unwrap();
    std::os::unix::fs::symlink("sub", t.0.join("link")).unwrap();
    fs::mkfifo(&c(&t.0.join("fifo")), 0o600).unwrap();
    let dir = t.open();
    for _ in 0..2 {
        let mut got = fs::list_dir(dir.as_fd());
        got.sort_by(|a, b| a.0.cmp(&b.0));
        let want: Vec<(CString, EntryKind)> = vec![
            (c"fifo".into(), EntryKind::Other),
            (c"file".into(), EntryKind::File),
            (c"link".into(), EntryKind::Other),
            (c"sub".into(), EntryKind::Dir),
        ];
        assert_eq!(got, want);
    }
    // The directory's own descriptor is still open and usable.
    assert!(fs::fstat(dir.as_fd()).is_ok());
    // Not a directory: nothing.
    let f = fs::openat(dir.as_fd(), c"file", libc::O_RDONLY, 0).unwrap();
    assert!(fs::list_dir(f.as_fd()).is_empty());
}

#[test]
fn reads_append_within_the_bound_and_writes_go_whole() {
    let t = TempDir::new();
    let dir = t.open();
    let data: Vec<u8> = (0..200_000u32).map(|i| i as u8).collect();
    let w = fs::openat(dir.as_fd(), c"data", libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o644).unwrap();
    fs::write_all(w.as_fd(), &data).unwrap();
    fs::fsync(w.as_fd()).unwrap();
    let r = fs::openat(dir.as_fd(), c"data", libc::O_RDONLY, 0).unwrap();
    let mut buf = b"head".to_vec();
    buf.reserve(10);
    let room = buf.capacity() - buf.len();
    assert_eq!(fs::read_append(r.as_fd(), &mut buf, 3).unwrap(), 3.min(room));
    assert_eq!(&buf[..7], b"head\x00\x01\x02");
    // No room: nothing is read.
    let mut full = Vec::new();
    assert_eq!(fs::read_append(r.as_fd(), &mut full, usize::MAX).unwrap(), 0);
    fs::rewind(r.as_fd()).unwrap();
    let mut all = Vec::with_capacity(1 << 20);
    while fs::read_append(r.as_fd(), &mut all, usize::MAX).unwrap() > 0 {
        all.reserve(1 << 16);
    }
    assert_eq!(all, data);
    let mut small = [0u8; 4];
    fs::rewind(r.as_fd()).unwrap();
    assert_eq!(fs::read(r.as_fd(), &mut small).unwrap(), 4);
    assert_eq!(small, [0, 1, 2, 3]);
    assert_eq!(fs::read(w.as_fd(), &mut small).unwrap_err(), libc::EBADF);
}

#[test]
fn the_steps_of_an_atomic_rewrite() {
    let t = TempDir::new();
    let dir = t.open();
    std::fs::write(t.0.join("target"), b"old").unwrap();
    let tmp = fs::openat(dir.as_fd(), c"tmp", libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL, 0o600).unwrap();
    fs::write_all(tmp.as_fd(), b"new content").unwrap();
    fs::fchmod(tmp.as_fd(), 0o640).unwrap();
    // Keeping one's own ids is always allowed.
    let st = fs::fstat(tmp.as_fd()).unwrap();
    fs::fchown(tmp.as_fd(), st.st_uid, st.st_gid).unwrap();
    fs::renameat(dir.as_fd(), c"tmp", c"target").unwrap();
    assert_eq!(std::fs::read(t.0.join("target")).unwrap(), b"new content");
    assert_eq!(fs::fstatat_nofollow(dir.as_fd(), c"target").unwrap().st_mode & 0o7777, 0o640);
    assert_eq!(fs::fstatat_nofollow(dir.as_fd(), c"tmp").unwrap_err(), libc::ENOENT);
    let f = fs::openat(dir.as_fd(), c"target", libc::O_WRONLY, 0).unwrap();
    fs::truncate_to_empty(f.as_fd()).unwrap();
    assert_eq!(std::fs::read(t.0.join("target")).unwrap(), b"");
    fs::mkdirat(dir.as_fd(), c"made", 0o755).unwrap();
    assert_eq!(fs::mkdirat(dir.as_fd(), c"made", 0o755).unwrap_err(), libc::EEXIST);
    fs::unlinkat(dir.as_fd(), c"target").unwrap();
    assert_eq!(fs::unlinkat(dir.as_fd(), c"target").unwrap_err(), libc::ENOENT);
    assert_eq!(fs::unlinkat(dir.as_fd(), c"made").unwrap_err(), libc::EISDIR);
}

#[test]
fn executable_and_umask() {
    assert!(fs::is_executable(c"/bin/sh"));
    assert!(!fs::is_executable(c"/nonexistent/sh"));
    let m = fs::umask();
    assert_eq!(fs::umask(), m, "reading the mask leaves it as it was");
}

#[test]
fn records_round_trip() {
    for rec in [Record::StartFailed(libc::ENOENT), Record::ConfineFailed(0x0003_000d), Record::Exited(0x0300)] {
        let mut b = rec.bytes().to_vec();
        assert_eq!(Record::parse(&b), Some(rec));
        b.truncate(Record::LEN - 1);
        assert_eq!(Record::parse(&b), None);
    }
}

fn read_all(fd: OwnedFd) -> Vec<u8> {
    let mut out = Vec::new();
    std::fs::File::from(fd).read_to_end(&mut out).unwrap();
    out
}

fn records(bytes: &[u8]) -> Vec<Record> {
    bytes.chunks(Record::LEN).map(|b| Record::parse(b).unwrap()).collect()
}

fn sh(script: &str) -> Vec<CString> {
    vec![c"sh".into(), c"-c".into(), CString::new(script).unwrap()]
}

/// bash's layout: the three stdio pipes given, one record pipe for everything.
struct Run {
    helper: i32,
    stdout: OwnedFd,
    records: OwnedFd,
}

fn run(program: &CStr, argv: &[CString], cwd: Option<&CStr>, group: Group) -> Run {
    let (out_r, out_w) = process::pipe_cloexec().unwrap();
    let (rec_r, rec_w) = process::pipe_cloexec().unwrap();
    let devnull = fs::openat(fs::cwd(), c"/dev/null", libc::O_RDONLY, 0).unwrap();
    let env = [CString::new("PATH=/usr/bin:/bin").unwrap()];
    let cmd = process::Command { program, argv, env: &env, cwd };
    let layout = process::Layout {
        stdio: [Some(devnull.as_fd()), Some(out_w.as_fd()), Some(out_w.as_fd())],
        records: rec_w.as_fd(),
        exit: None,
        group,
        subreaper: process::KILL_TREE_REACHES_ESCAPED,
        ignore_sigterm: false,
        confine: None,
    };
    let helper = process::spawn_helper(&cmd, &layout).unwrap();
    Run { helper, stdout: out_r, records: rec_r }
}

fn group() -> Group {
    if process::KILL_TREE_REACHES_ESCAPED {
        Group::Command
    } else {
        Group::Helper
    }
}

#[test]
fn the_helper_runs_the_command_and_reports_its_exit() {
    let t = TempDir::new();
    let r = run(c"/bin/sh", &sh("pwd; echo \"$PATH\"; exit 3"), Some(&c(&t.0)), group());
    let out = String::from_utf8(read_all(r.stdout)).unwrap();
    assert_eq!(out, format!("{}\n/usr/bin:/bin\n", t.0.display()));
    let recs = records(&read_all(r.records));
    assert_eq!(recs.len(), 1);
    let Record::Exited(st) = recs[0] else { panic!("{recs:?}") };
    assert!(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 3);
    // The helper exits 0 once every descendant is reaped.
    let st = process::wait_child(r.helper).unwrap();
    assert!(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0);
}

#[test]
fn a_command_that_cannot_start_is_a_record_with_its_errno() {
    let r = run(c"/nonexistent/sh", &sh("true"), None, group());
    assert_eq!(records(&read_all(r.records)), [Record::StartFailed(libc::ENOENT), Record::Exited(127 << 8)]);
    process::wait_child(r.helper).unwrap();
    let r = run(c"/bin/sh", &sh("true"), Some(c"/nonexistent/dir"), group());
    assert_eq!(records(&read_all(r.records)), [Record::StartFailed(libc::ENOENT), Record::Exited(127 << 8)]);
    process::wait_child(r.helper).unwrap();
}

#[test]
fn the_helper_holds_none_of_the_descriptors_it_inherited() {
    // A pipe open (not close-on-exec-relevant: the helper never execs) when the helper forks:
    // its EOF must not wait for the helper.
    let (r, w) = process::pipe_cloexec().unwrap();
    let run = run(c"/bin/sh", &sh("echo 0; exec sleep 300"), None, group());
    // The command runs (so the helper has forked it): the kill below cannot come before it.
    assert_eq!(first_line_pid(&run.stdout), 0);
    drop(w);
    assert_eq!(read_all(r), b"");
    // The EOF came while the command (and so the helper) still ran: no exit record yet.
    let mut fds =
        [libc::pollfd { fd: std::os::fd::AsRawFd::as_raw_fd(&run.records), events: libc::POLLIN, revents: 0 }];
    assert_eq!(process::poll(&mut fds, 0), 0);
    assert!(process::kill_tree(run.helper));
    process::wait_child(run.helper).unwrap();
}

/// The pid a command printed on its first line (read as it comes: the command goes on running).
fn first_line_pid(stdout: &OwnedFd) -> i32 {
    let mut line = Vec::new();
    let mut b = [0u8; 1];
    while fs::read(stdout.as_fd(), &mut b).unwrap() == 1 && b[0] != b'\n' {
        line.push(b[0]);
    }
    String::from_utf8(line).unwrap().trim().parse().unwrap()
}

fn alive(pid: i32) -> bool {
    // A zombie is dead: only its entry is left until it is reaped.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .is_ok_and(|s| !matches!(s.as_bytes()[s.rfind(')').unwrap() + 2], b'Z' | b'X'))
}

#[test]
fn the_kill_ends_the_whole_tree() {
    // With the subreaper a descendant that left the group (setsid) is reached too; the portable
    // group kill reaches those that stayed.
    let script = if process::KILL_TREE_REACHES_ESCAPED {
        "setsid sleep 300 & echo $!; sleep 300"
    } else {
        "sleep 300 & echo $!; sleep 300"
    };
    let r = run(c"/bin/sh", &sh(script), None, group());
    let pid = first_line_pid(&r.stdout);
    assert!(alive(pid));
    assert!(process::kill_tree(r.helper));
    // The helper reaps everything, then exits (portable: it was killed with its group).
    process::wait_child(r.helper).unwrap();
    // With the subreaper the kill returned once nothing was left alive; the group kill's SIGKILL
    // lands asynchronously: waited for under a bound that only guards against a hang.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while alive(pid) && std::time::Instant::now() < deadline {
        if process::KILL_TREE_REACHES_ESCAPED {
            panic!("{pid} survived the kill");
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    assert!(!alive(pid), "{pid} survived the kill");
}

#[test]
fn the_mcp_layout_tells_the_exec_and_keeps_the_helper_through_a_sigterm() {
    // stdin, stdout, the record pipe, the exit pipe.
    let [(in_r, in_w), (out_r, out_w), (ex_r, ex_w), (st_r, st_w)] = [(); 4].map(|()| process::pipe_cloexec().unwrap());
    let argv = sh("read line; echo \"got $line\"; exec sleep 300");
    let helper = process::spawn_helper(
        &process::Command { program: c"/bin/sh", argv: &argv, env: &[], cwd: None },
        // What oma-mcp's reaper asks for.
        &process::Layout {
            group: Group::Helper,
            subreaper: true,
            ignore_sigterm: true,
            stdio: [Some(in_r.as_fd()), Some(out_w.as_fd()), None],
            records: ex_w.as_fd(),
            exit: Some(st_w.as_fd()),
            confine: None,
        },
    )
    .unwrap();
    drop((in_r, out_w, ex_w, st_w));
    // EOF without a record: the command exec'd.
    assert_eq!(read_all(ex_r), b"");
    fs::write_all(in_w.as_fd(), b"hello\n").unwrap();
    let mut got = [0u8; 10];
    let mut n = 0;
    while n < got.len() {
        n += fs::read(out_r.as_fd(), &mut got[n..]).unwrap();
    }
    assert_eq!(&got, b"got hello\n");
    // The group's SIGTERM ends the command; the helper ignores it and reports.
    process::signal_group(helper, libc::SIGTERM);
    let recs = records(&read_all(st_r));
    let Record::Exited(st) = recs[0] else { panic!("{recs:?}") };
    assert!(libc::WIFSIGNALED(st) && libc::WTERMSIG(st) == libc::SIGTERM);
    let st = process::wait_child(helper).unwrap();
    assert!(libc::WIFEXITED(st) && libc::WEXITSTATUS(st) == 0, "the helper outlived the SIGTERM");
}

#[test]
fn poll_sees_a_readable_pipe() {
    let (r, w) = process::pipe_cloexec().unwrap();
    let mut fds = [libc::pollfd { fd: std::os::fd::AsRawFd::as_raw_fd(&r), events: libc::POLLIN, revents: 0 }];
    assert_eq!(process::poll(&mut fds, 0), 0);
    fs::write_all(w.as_fd(), b"x").unwrap();
    assert_eq!(process::poll(&mut fds, -1), 1);
    assert_ne!(fds[0].revents & libc::POLLIN, 0);
}
