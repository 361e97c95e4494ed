//! Real escapes from a forked, confined child: each attempt is a system call whose errno the
//! child reports as its exit code (the child only makes system calls on data built before the
//! fork, as the shell's child does).

#![allow(
    clippy::undocumented_unsafe_blocks,
    reason = "each block is one raw system call, an escape attempt on CStrings and local buffers built
              before it, whose errno the test asserts: a comment on each would repeat that"
)]

use std::ffi::CString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use super::*;
use crate::{prepare, Limits, Network, Policy};

/// A named system call made in the confined child; its errno (0: it succeeded).
type Attempt<'a> = (&'a str, Box<dyn Fn() -> i32 + 'a>);

struct Dirs {
    base: PathBuf,
    root: PathBuf,
    tmp: PathBuf,
    outside: PathBuf,
    secret: PathBuf,
}

impl Dirs {
    fn new() -> Dirs {
        static N: AtomicUsize = AtomicUsize::new(0);
        let base = std::env::temp_dir().join(format!(
            "oma-confine-test-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let (root, tmp, outside) = (base.join("root"), base.join("tmp"), base.join("outside"));
        for d in [&root, &tmp, &outside] {
            std::fs::create_dir_all(d).unwrap();
        }
        let secret = outside.join("secret");
        std::fs::write(&secret, "top secret\n").unwrap();
        Dirs { base, root, tmp, outside, secret }
    }

    fn policy(&self, network: Network) -> Policy {
        Policy {
            root: self.root.clone(),
            temp_dir: self.tmp.clone(),
            read_paths: vec![],
            write_paths: vec![],
            network,
            limits: Limits::default(),
            required: false,
        }
    }
}

impl Drop for Dirs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.base);
    }
}

/// Landlock with every scope this crate asks for, or a visible skip.
fn landlock_or_skip(test: &str) -> bool {
    let abi = landlock_abi();
    if abi < crate::REQUIRED_LANDLOCK_ABI {
        eprintln!(
            "skipped {test}: this kernel has Landlock ABI {abi}, the test needs {}",
            crate::REQUIRED_LANDLOCK_ABI
        );
        return false;
    }
    true
}

fn c(p: &std::path::Path) -> CString {
    CString::new(p.as_os_str().as_encoded_bytes()).unwrap()
}

fn errno_now() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Forks, confines the child, runs `attempt` there and returns its result (0 or an errno).
/// 250 + step: the confinement itself failed.
fn in_child(p: &Prepared, attempt: &dyn Fn() -> i32) -> i32 {
    // SAFETY: the child makes only system calls (apply_in_child and the attempt) on data built
    // before the fork, then _exits.
    let pid = unsafe { libc::fork() };
    assert!(pid >= 0);
    if pid == 0 {
        unsafe {
            if let Err(e) = apply_in_child(p, None) {
                libc::_exit(250 + e.step as i32);
            }
            libc::_exit(attempt());
        }
    }
    let mut st = 0;
    // SAFETY: our own child.
    unsafe { libc::waitpid(pid, &mut st, 0) };
    assert!(libc::WIFEXITED(st), "child died: {st:#x}");
    libc::WEXITSTATUS(st)
}

/// 0 when the call returned ≥ 0, else its errno.
fn res(r: libc::c_long) -> i32 {
    if r >= 0 {
        0
    } else {
        errno_now()
    }
}

fn sh(p: Arc<Prepared>, cwd: &std::path::Path, script: &str) -> std::process::Output {
    let mut cmd = std::process::Command::new("/bin/sh");
    cmd.arg("-c").arg(script).current_dir(cwd).env_clear().env("PATH", "/usr/bin:/bin");
    // SAFETY: apply_in_child is async-signal-safe and allocates nothing.
    unsafe {
        cmd.pre_exec(move || apply_in_child(&p, None).map_err(|e| std::io::Error::from_raw_os_error(e.errno)));
    }
    cmd.output().unwrap()
}

#[test]
fn filesystem_escapes_are_refused() {
    if !landlock_or_skip("filesystem_escapes_are_refused") {
        return;
    }
    let d = Dirs::new();
    let p = prepare(&Policy { required: true, ..d.policy(Network::Deny) }).unwrap();
    assert!(p.not_enforced().is_empty());
    let inside = c(&d.root.join("made"));
    let in_tmp = c(&d.tmp.join("made"));
    let outside_new = c(&d.outside.join("new"));
    let outside_dir = c(&d.outside.join("dir"));
    let secret = c(&d.secret);
    let moved = c(&d.outside.join("moved"));
    let hard = c(&d.root.join("hard"));
    let link = c(&d.root.join("link"));
    let outside = c(&d.outside);
    let through_link = c(&d.root.join("link/new"));
    let dotdot = c(&d.root.join("../outside/new"));
    let etc_new = c(std::path::Path::new("/etc/oma-confine-test"));
    let open = |path: &CString, flags: i32| -> i32 {
        // SAFETY: NUL-terminated path; the descriptor is left to _exit.
        res(unsafe { libc::open(path.as_ptr(), flags | libc::O_CLOEXEC, 0o600) } as libc::c_long)
    };
    let wr = libc::O_CREAT | libc::O_WRONLY;
    // Work inside succeeds.
    assert_eq!(in_child(&p, &|| open(&inside, wr)), 0);
    assert_eq!(in_child(&p, &|| open(&in_tmp, wr)), 0);
    assert_eq!(in_child(&p, &|| open(&c(std::path::Path::new("/usr/bin/env")), libc::O_RDONLY)), 0);
    // Create, read, write, truncate, remove, rename and link outside: refused.
    assert_eq!(in_child(&p, &|| open(&outside_new, wr)), libc::EACCES);
    assert_eq!(in_child(&p, &|| open(&secret, libc::O_RDONLY)), libc::EACCES);
    assert_eq!(in_child(&p, &|| open(&secret, libc::O_WRONLY)), libc::EACCES);
    assert_eq!(in_child(&p, &|| res(unsafe { libc::truncate(secret.as_ptr(), 0) } as _)), libc::EACCES);
    assert_eq!(in_child(&p, &|| res(unsafe { libc::unlink(secret.as_ptr()) } as _)), libc::EACCES);
    assert_eq!(in_child(&p, &|| res(unsafe { libc::mkdir(outside_dir.as_ptr(), 0o700) } as _)), libc::EACCES);
    assert_eq!(in_child(&p, &|| open(&dotdot, wr)), libc::EACCES);
    assert_eq!(in_child(&p, &|| open(&etc_new, wr)), libc::EACCES);
    let rename = in_child(&p, &|| res(unsafe { libc::rename(inside.as_ptr(), moved.as_ptr()) } as _));
    assert!(rename == libc::EACCES || rename == libc::EXDEV, "rename out: {rename}");
    let hl = in_child(&p, &|| res(unsafe { libc::link(secret.as_ptr(), hard.as_ptr()) } as _));
    assert!(hl == libc::EACCES || hl == libc::EXDEV, "hard link of a secret: {hl}");
    // A symlink it makes itself is followed to the outside, where the rules apply.
    assert_eq!(
        in_child(&p, &|| {
            // SAFETY: NUL-terminated paths.
            if unsafe { libc::symlink(outside.as_ptr(), link.as_ptr()) } != 0 {
                return 99;
            }
            open(&through_link, wr)
        }),
        libc::EACCES
    );
    assert!(std::fs::read_to_string(&d.secret).unwrap() == "top secret\n");
    assert!(!d.outside.join("new").exists() && !d.outside.join("moved").exists());
}

#[test]
fn processes_outside_cannot_be_signalled_traced_or_read() {
    if !landlock_or_skip("processes_outside_cannot_be_signalled_traced_or_read") {
        return;
    }
    let d = Dirs::new();
    let p = prepare(&d.policy(Network::Deny)).unwrap();
    let mut sibling = std::process::Command::new("sleep").arg("30").spawn().unwrap();
    let sib = sibling.id() as libc::pid_t;
    let environ = c(&PathBuf::from(format!("/proc/{}/environ", std::process::id())));
    let own_status = c(std::path::Path::new("/proc/self/status"));
    assert_eq!(in_child(&p, &|| res(unsafe { libc::kill(sib, libc::SIGKILL) } as _)), libc::EPERM);
    assert_eq!(in_child(&p, &|| res(unsafe { libc::kill(libc::getppid(), 0) } as _)), libc::EPERM);
    assert_eq!(in_child(&p, &|| res(unsafe { libc::ptrace(libc::PTRACE_ATTACH, sib, 0usize, 0usize) })), libc::EPERM);
    assert_eq!(
        in_child(&p, &|| res(unsafe { libc::open(environ.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) } as _)),
        libc::EACCES
    );
    assert_eq!(
        in_child(&p, &|| res(unsafe { libc::open(own_status.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) } as _)),
        0
    );
    assert!(sibling.try_wait().unwrap().is_none(), "the sibling was killed");
    sibling.kill().unwrap();
    sibling.wait().unwrap();
}

#[test]
fn network_is_denied_and_can_be_allowed() {
    if !landlock_or_skip("network_is_denied_and_can_be_allowed") {
        return;
    }
    let d = Dirs::new();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let addr = libc::sockaddr_in {
        sin_family: libc::AF_INET as libc::sa_family_t,
        sin_port: port.to_be(),
        sin_addr: libc::in_addr { s_addr: u32::from_ne_bytes([127, 0, 0, 1]) },
        sin_zero: [0; 8],
    };
    let connect = |fd: i32| {
        // SAFETY: a sockaddr_in of the right length.
        res(unsafe {
            libc::connect(fd, (&addr as *const libc::sockaddr_in).cast(), std::mem::size_of_val(&addr) as u32)
        } as _)
    };
    let socket = |family, ty| res(unsafe { libc::socket(family, ty | libc::SOCK_CLOEXEC, 0) } as _);
    let deny = prepare(&Policy { required: true, ..d.policy(Network::Deny) }).unwrap();
    for (family, ty) in [
        (libc::AF_INET, libc::SOCK_STREAM),
        (libc::AF_INET, libc::SOCK_DGRAM),
        (libc::AF_INET6, libc::SOCK_STREAM),
        (libc::AF_INET6, libc::SOCK_DGRAM),
        (libc::AF_INET, libc::SOCK_RAW),
        (libc::AF_NETLINK, libc::SOCK_RAW),
        (libc::AF_PACKET, libc::SOCK_DGRAM),
    ] {
        assert_eq!(in_child(&deny, &|| socket(family, ty)), libc::EACCES, "family {family} type {ty}");
    }
    assert_eq!(in_child(&deny, &|| socket(libc::AF_UNIX, libc::SOCK_STREAM)), 0);
    assert_eq!(
        in_child(&deny, &|| {
            let mut sv = [0; 2];
            res(unsafe { libc::socketpair(libc::AF_UNIX, libc::SOCK_STREAM, 0, sv.as_mut_ptr()) } as _)
        }),
        0
    );
    // io_uring could create sockets past the seccomp filter.
    assert_eq!(
        in_child(&deny, &|| res(unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, std::ptr::null_mut::<u8>()) })),
        libc::ENOSYS
    );
    // A TCP socket made before the confinement (as if inherited) still cannot connect:
    // Landlock's TCP rule, the second layer.
    // SAFETY: a fresh socket, closed below.
    let pre = unsafe { libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0) };
    assert!(pre >= 0);
    assert_eq!(in_child(&deny, &|| connect(pre)), libc::EACCES);
    let allow = prepare(&d.policy(Network::Allow)).unwrap();
    assert_eq!(in_child(&allow, &|| connect(pre)), 0);
    assert_eq!(in_child(&allow, &|| socket(libc::AF_INET, libc::SOCK_DGRAM)), 0);
    // SAFETY: ours.
    unsafe { libc::close(pre) };
    drop(listener);
}

#[test]
fn a_shell_works_inside() {
    if !landlock_or_skip("a_shell_works_inside") {
        return;
    }
    let d = Dirs::new();
    let p = Arc::new(prepare(&d.policy(Network::Deny)).unwrap());
    let script = format!(
        "set -e; echo hi > f; cat f | tr a-z A-Z; mkdir -p a/b; mv f a/b/g; ln -s a/b/g s; cat s; rm -r a s; \
         (cd {tmp} && echo t > x && cat x && rm x); ls /usr/bin >/dev/null; wc -l < /etc/passwd >/dev/null; \
         grep -E '^Cap(Eff|Prm|Bnd)' /proc/self/status; echo done",
        tmp = d.tmp.display()
    );
    let o = sh(p, &d.root, &script);
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(o.status.success(), "{out}\n{}", String::from_utf8_lossy(&o.stderr));
    assert!(out.starts_with("HI\nhi\nt\n"), "{out}");
    assert!(out.ends_with("done\n"), "{out}");
    // No capability survives the exec, even for root.
    for line in out.lines().filter(|l| l.starts_with("Cap")) {
        assert!(line.ends_with("0000000000000000"), "{line}");
    }
    assert_eq!(std::fs::read_dir(&d.root).unwrap().count(), 0);
}

#[test]
fn limits_are_applied() {
    let d = Dirs::new();
    let mut policy = d.policy(Network::Deny);
    policy.limits =
        Limits { file_size_bytes: Some(4096), cpu_seconds: Some(1), open_files: Some(64), ..Limits::default() };
    let p = Arc::new(prepare(&policy).unwrap());
    let o = sh(p.clone(), &d.root, "ulimit -f; ulimit -t; ulimit -n; head -c 100000 /dev/zero > big");
    let out = String::from_utf8_lossy(&o.stdout);
    // sh reports the file size limit in 512-byte blocks.
    assert_eq!(out, "8\n1\n64\n");
    use std::os::unix::process::ExitStatusExt;
    let by_signal = o.status.signal() == Some(libc::SIGXFSZ) || o.status.code() == Some(128 + libc::SIGXFSZ);
    assert!(by_signal, "{:?}", o.status);
    assert_eq!(std::fs::metadata(d.root.join("big")).unwrap().len(), 4096);
    let o = sh(p, &d.root, "exec sh -c 'while :; do :; done'");
    assert_eq!(o.status.signal(), Some(libc::SIGXCPU), "{:?}", o.status);
}

#[test]
fn the_process_limit_is_missing_for_root_and_applied_otherwise() {
    let d = Dirs::new();
    let mut policy = d.policy(Network::Deny);
    policy.limits.processes = Some(16);
    let uid = unsafe { libc::getuid() };
    if uid == 0 {
        policy.required = true;
        match prepare(&policy) {
            Err(Error::Missing(m)) => assert!(m.iter().any(|s| s.contains("RLIMIT_NPROC")), "{m:?}"),
            Err(e) => panic!("{e}"),
            Ok(_) => panic!("prepared a process limit root ignores"),
        }
        policy.required = false;
        let p = prepare(&policy).unwrap();
        assert!(p.not_enforced().iter().any(|s| s.contains("RLIMIT_NPROC")));
        // The limit itself is set: a child that drops to `nobody` before the confinement (as a
        // non-root user's shell would be) cannot fork past it.
        const NOBODY: u32 = 65534;
        // SAFETY: the child makes only system calls, then _exits.
        let pid = unsafe { libc::fork() };
        if pid == 0 {
            unsafe {
                if libc::setgid(NOBODY) != 0 || libc::setuid(NOBODY) != 0 {
                    libc::_exit(240);
                }
                if apply_in_child(&p, None).is_err() {
                    libc::_exit(241);
                }
                let mut kids = [0 as libc::pid_t; 64];
                let mut n = 0;
                let mut result = 0;
                while n < kids.len() {
                    let k = libc::fork();
                    if k == 0 {
                        libc::sleep(30);
                        libc::_exit(0);
                    }
                    if k < 0 {
                        result = errno_now();
                        break;
                    }
                    kids[n] = k;
                    n += 1;
                }
                for k in &kids[..n] {
                    libc::kill(*k, libc::SIGKILL);
                    libc::waitpid(*k, std::ptr::null_mut(), 0);
                }
                // The count of children it made, above the errno.
                libc::_exit(if result == libc::EAGAIN && n < 16 { 0 } else { 100 + result.min(99) });
            }
        }
        let mut st = 0;
        // SAFETY: our own child.
        unsafe { libc::waitpid(pid, &mut st, 0) };
        assert_eq!(libc::WEXITSTATUS(st), 0, "a fork loop as nobody under a 16-process limit: {st:#x}");
    } else {
        let p = Arc::new(prepare(&policy).unwrap());
        let o = sh(p, &d.root, "ulimit -u");
        assert_eq!(String::from_utf8_lossy(&o.stdout), "16\n");
    }
}

#[test]
fn bad_paths_and_required_parts_are_clear_errors() {
    let d = Dirs::new();
    let mut policy = d.policy(Network::Deny);
    policy.root = d.base.join("nope");
    let e = prepare(&policy).err().unwrap().to_string();
    assert!(
        e.starts_with(&format!("The confined shell's sandbox root {}/nope cannot be used: ", d.base.display())),
        "{e}"
    );
    policy.root = d.secret.clone();
    let e = prepare(&policy).err().unwrap().to_string();
    assert_eq!(e, format!("The confined shell's sandbox root {} is not a directory.", d.secret.display()));
    let mut policy = d.policy(Network::Deny);
    policy.read_paths.push(d.base.join("missing"));
    let e = prepare(&policy).err().unwrap().to_string();
    assert!(e.starts_with("The confined shell's read path "), "{e}");
    // Extra paths are granted: the secret's directory as a read path, another as a write path.
    let mut policy = d.policy(Network::Deny);
    policy.read_paths.push(d.outside.clone());
    let extra = d.base.join("extra");
    std::fs::create_dir(&extra).unwrap();
    policy.write_paths.push(extra.clone());
    if landlock_or_skip("bad_paths_and_required_parts_are_clear_errors (extra paths)") {
        let p = Arc::new(prepare(&policy).unwrap());
        let o = sh(
            p,
            &d.root,
            &format!(
                "cat {} && echo w > {}/w && ! echo x > {}/x",
                d.secret.display(),
                extra.display(),
                d.outside.display()
            ),
        );
        assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
        assert_eq!(String::from_utf8_lossy(&o.stdout), "top secret\n");
        assert!(extra.join("w").exists() && !d.outside.join("x").exists());
    }
}

#[test]
fn the_filter_is_well_formed() {
    let Some(f) = seccomp_filter(Network::Deny) else {
        eprintln!("skipped the_filter_is_well_formed: no filter on {}", std::env::consts::ARCH);
        return;
    };
    // Every jump lands inside the program, and the program ends with a return.
    for (i, ins) in f.iter().enumerate() {
        if ins.code == 0x15 || ins.code == 0x45 {
            assert!(i + 1 + (ins.jt as usize) < f.len());
        }
    }
    assert_eq!(f.last().unwrap().code, 0x06);
    assert!(f.len() < 160);
}

#[test]
fn setuid_and_setgid_modes_are_refused_with_either_network() {
    let d = Dirs::new();
    let file = d.root.join("prog");
    std::fs::write(&file, "#!/bin/sh\n").unwrap();
    let f = c(&file);
    for network in [Network::Deny, Network::Allow] {
        let p = prepare(&d.policy(network)).unwrap();
        let f = &f;
        let chmod = |mode: libc::mode_t| move || res(unsafe { libc::chmod(f.as_ptr(), mode) } as _);
        assert_eq!(in_child(&p, &chmod(0o755)), 0);
        assert_eq!(in_child(&p, &chmod(0o4755)), libc::EPERM);
        assert_eq!(in_child(&p, &chmod(0o2755)), libc::EPERM);
        assert_eq!(
            in_child(&p, &|| res(unsafe { libc::fchmodat(libc::AT_FDCWD, f.as_ptr(), 0o6755, 0) } as _)),
            libc::EPERM
        );
        assert_eq!(
            in_child(&p, &|| {
                // SAFETY: a fresh descriptor, left to _exit.
                let fd = unsafe { libc::open(f.as_ptr(), libc::O_RDONLY | libc::O_CLOEXEC) };
                res(unsafe { libc::fchmod(fd, 0o4711) } as _)
            }),
            libc::EPERM
        );
        // The plain bits still work through every variant.
        assert_eq!(in_child(&p, &|| res(unsafe { libc::fchmodat(libc::AT_FDCWD, f.as_ptr(), 0o700, 0) } as _)), 0);
    }
    use std::os::unix::fs::PermissionsExt;
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o7777, 0o700);
}

/// The child's result for a call that may have made the file at `path`, then whether a file
/// with a set-id bit is there (the parent removes it for the next case).
fn made_setid(path: &std::path::Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    let m = std::fs::symlink_metadata(path).map(|m| m.permissions().mode());
    let _ = std::fs::remove_file(path);
    m.is_ok_and(|m| m & 0o6000 != 0)
}

#[test]
fn set_id_bits_are_refused_on_every_creation_path() {
    let d = Dirs::new();
    let f = d.root.join("made");
    let cf = c(&f);
    let root = c(&d.root);
    let existing = d.root.join("existing");
    std::fs::write(&existing, "x").unwrap();
    let ce = c(&existing);
    for network in [Network::Deny, Network::Allow] {
        let p = prepare(&d.policy(network)).unwrap();
        let (cf, root, ce) = (&cf, &root, &ce);
        let wr = libc::O_WRONLY | libc::O_CLOEXEC;
        let open = |flags: i32, mode: libc::c_uint| move || res(unsafe { libc::open(cf.as_ptr(), flags, mode) } as _);
        let openat = |flags: i32, mode: libc::c_uint| {
            move || res(unsafe { libc::syscall(libc::SYS_openat, libc::AT_FDCWD, cf.as_ptr(), flags, mode) })
        };
        // Each creation path with a set-id mode: refused, and no such file appears.
        let refused: Vec<Attempt<'_>> = vec![
            ("open O_CREAT 04755", Box::new(open(wr | libc::O_CREAT, 0o4755))),
            ("open O_CREAT|O_TRUNC 06755", Box::new(open(wr | libc::O_CREAT | libc::O_TRUNC, 0o6755))),
            ("openat O_CREAT 02755", Box::new(openat(wr | libc::O_CREAT | libc::O_EXCL, 0o2755))),
            ("creat 04711", Box::new(|| res(unsafe { libc::creat(cf.as_ptr(), 0o4711) } as _))),
            (
                "mknod S_IFREG|04755",
                Box::new(|| res(unsafe { libc::mknod(cf.as_ptr(), libc::S_IFREG | 0o4755, 0) } as _)),
            ),
            (
                "mknodat S_IFREG|02755",
                Box::new(|| res(unsafe { libc::mknodat(libc::AT_FDCWD, cf.as_ptr(), libc::S_IFREG | 0o2755, 0) } as _)),
            ),
            (
                // A nameless file made set-id, then linked in (AT_EMPTY_PATH needs no capability
                // for a file opened with O_TMPFILE... but the open itself is refused first).
                "openat O_TMPFILE 04755",
                Box::new(|| {
                    res(unsafe {
                        libc::syscall(libc::SYS_openat, libc::AT_FDCWD, root.as_ptr(), libc::O_TMPFILE | wr, 0o4755)
                    })
                }),
            ),
        ];
        // glibc's open() is openat; the old open call is a path of its own.
        #[cfg(target_arch = "x86_64")]
        let refused = {
            let mut r = refused;
            r.push((
                "SYS_open O_CREAT 04755",
                Box::new(|| res(unsafe { libc::syscall(libc::SYS_open, cf.as_ptr(), wr | libc::O_CREAT, 0o4755) })),
            ));
            r
        };
        for (what, attempt) in &refused {
            assert_eq!(in_child(&p, attempt.as_ref()), libc::EPERM, "{what} ({network:?})");
            assert!(!made_setid(&f), "{what} left a set-id file ({network:?})");
        }
        // An existing file opened with O_CREAT and a set-id mode: refused too (the filter
        // cannot tell whether the file exists); without O_CREAT the mode is ignored, so any
        // value passes.
        assert_eq!(
            in_child(&p, &|| res(unsafe { libc::open(ce.as_ptr(), wr | libc::O_CREAT, 0o4755) } as _)),
            libc::EPERM
        );
        assert_eq!(in_child(&p, &|| res(unsafe { libc::open(ce.as_ptr(), wr, 0o4755) } as _)), 0);
        assert_eq!(
            in_child(&p, &|| res(unsafe { libc::syscall(libc::SYS_openat, libc::AT_FDCWD, ce.as_ptr(), wr, 0o6755) })),
            0
        );
        // Plain modes still work on every path.
        assert_eq!(in_child(&p, &open(wr | libc::O_CREAT, 0o755)), 0);
        assert!(f.exists() && !made_setid(&f));
        assert_eq!(in_child(&p, &openat(wr | libc::O_CREAT, 0o1755)), 0);
        assert!(f.exists() && !made_setid(&f));
        assert_eq!(in_child(&p, &|| res(unsafe { libc::mknod(cf.as_ptr(), libc::S_IFREG | 0o644, 0) } as _)), 0);
        assert!(f.exists() && !made_setid(&f));
        assert_eq!(in_child(&p, &|| res(unsafe { libc::creat(cf.as_ptr(), 0o700) } as _)), 0);
        assert!(f.exists() && !made_setid(&f));
        // openat2 carries its mode in a struct the filter cannot read: ENOSYS, so callers fall
        // back to openat (glibc's open() never uses it).
        assert_eq!(
            in_child(&p, &|| {
                let how = [(wr | libc::O_CREAT) as u64, 0o4755u64, 0u64];
                res(unsafe { libc::syscall(libc::SYS_openat2, libc::AT_FDCWD, cf.as_ptr(), how.as_ptr(), 24usize) })
            }),
            libc::ENOSYS
        );
        assert!(!f.exists());
        // mkdir: the kernel keeps only the permission and sticky bits of the mode, so a set-id
        // directory cannot be made this way (and chmod refuses the bit).
        assert_eq!(in_child(&p, &|| res(unsafe { libc::mkdir(cf.as_ptr(), 0o6755) } as _)), 0);
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(std::fs::metadata(&f).unwrap().permissions().mode() & 0o7000, 0);
        std::fs::remove_dir(&f).unwrap();
        // io_uring can open files past seccomp: refused with the network allowed too.
        assert_eq!(
            in_child(&p, &|| res(unsafe { libc::syscall(libc::SYS_io_uring_setup, 1u32, std::ptr::null_mut::<u8>()) })),
            libc::ENOSYS,
            "{network:?}"
        );
    }
}

#[test]
fn system_v_ipc_is_refused() {
    let d = Dirs::new();
    let key = 0x6f6d_0000 | (std::process::id() as i32 & 0xffff);
    // Objects made outside the sandbox by the same uid, as another program would.
    // SAFETY: plain IPC calls; each object is removed below.
    let shm = unsafe { libc::shmget(key, 4096, libc::IPC_CREAT | 0o600) };
    let msq = unsafe { libc::msgget(key, libc::IPC_CREAT | 0o600) };
    let sem = unsafe { libc::semget(key, 1, libc::IPC_CREAT | 0o600) };
    assert!(shm >= 0 && msq >= 0 && sem >= 0, "System V IPC unavailable here");
    for network in [Network::Deny, Network::Allow] {
        let p = prepare(&d.policy(network)).unwrap();
        let attempts: Vec<Attempt<'_>> = vec![
            ("shmget", Box::new(|| res(unsafe { libc::shmget(key, 0, 0) } as _))),
            ("shmget IPC_PRIVATE", Box::new(|| res(unsafe { libc::shmget(libc::IPC_PRIVATE, 4096, 0o600) } as _))),
            (
                "shmat",
                Box::new(|| {
                    let a = unsafe { libc::shmat(shm, std::ptr::null(), libc::SHM_RDONLY) };
                    if a as isize == -1 {
                        errno_now()
                    } else {
                        0
                    }
                }),
            ),
            ("shmctl", Box::new(|| res(unsafe { libc::shmctl(shm, libc::IPC_STAT, std::ptr::null_mut()) } as _))),
            ("shmdt", Box::new(|| res(unsafe { libc::shmdt(std::ptr::null()) } as _))),
            ("msgget", Box::new(|| res(unsafe { libc::msgget(key, 0) } as _))),
            (
                "msgrcv",
                Box::new(|| {
                    let mut buf = [0u8; 64];
                    res(unsafe { libc::msgrcv(msq, buf.as_mut_ptr().cast(), 32, 0, libc::IPC_NOWAIT) } as _)
                }),
            ),
            (
                "msgsnd",
                Box::new(|| {
                    let buf = [1u8; 16];
                    res(unsafe { libc::msgsnd(msq, buf.as_ptr().cast(), 8, libc::IPC_NOWAIT) } as _)
                }),
            ),
            ("msgctl", Box::new(|| res(unsafe { libc::msgctl(msq, libc::IPC_RMID, std::ptr::null_mut()) } as _))),
            ("semget", Box::new(|| res(unsafe { libc::semget(key, 0, 0) } as _))),
            ("semctl", Box::new(|| res(unsafe { libc::semctl(sem, 0, libc::IPC_RMID) } as _))),
            (
                "semop",
                Box::new(|| {
                    let mut op = libc::sembuf { sem_num: 0, sem_op: 1, sem_flg: libc::IPC_NOWAIT as _ };
                    res(unsafe { libc::semop(sem, &mut op, 1) } as _)
                }),
            ),
            (
                "semtimedop",
                Box::new(|| {
                    let op = libc::sembuf { sem_num: 0, sem_op: 1, sem_flg: libc::IPC_NOWAIT as _ };
                    res(unsafe { libc::syscall(libc::SYS_semtimedop, sem, &op, 1usize, std::ptr::null::<u8>()) })
                }),
            ),
        ];
        for (what, attempt) in &attempts {
            assert_eq!(in_child(&p, attempt.as_ref()), libc::ENOSYS, "{what} ({network:?})");
        }
    }
    // Nothing inside changed them: the message queue and semaphore are still there.
    // SAFETY: as above.
    unsafe {
        assert_eq!(libc::msgctl(msq, libc::IPC_RMID, std::ptr::null_mut()), 0);
        assert_eq!(libc::semctl(sem, 0, libc::IPC_RMID), 0);
        assert_eq!(libc::shmctl(shm, libc::IPC_RMID, std::ptr::null_mut()), 0);
    }
}

/// The native numbers in the filter are the target's own (libc's constants); the compat ones
/// are pinned by the arch tables above.
#[test]
fn native_numbers_match_the_target() {
    let Some(a) = ARCHES else { return };
    let n = &a[0];
    let sys = |v: libc::c_long| v as u32;
    assert_eq!(n.socket, sys(libc::SYS_socket));
    assert_eq!(n.openat, sys(libc::SYS_openat));
    assert!(n.mode1.contains(&sys(libc::SYS_fchmod)));
    assert!(n.mode2.contains(&sys(libc::SYS_fchmodat)));
    assert!(n.mode2.contains(&sys(libc::SYS_mknodat)));
    for nr in [
        libc::SYS_openat2,
        libc::SYS_io_uring_setup,
        libc::SYS_shmget,
        libc::SYS_shmat,
        libc::SYS_shmctl,
        libc::SYS_shmdt,
        libc::SYS_msgget,
        libc::SYS_msgsnd,
        libc::SYS_msgrcv,
        libc::SYS_msgctl,
        libc::SYS_semget,
        libc::SYS_semop,
        libc::SYS_semctl,
        libc::SYS_semtimedop,
        libc::SYS_add_key,
        libc::SYS_request_key,
        libc::SYS_keyctl,
    ] {
        assert!(n.nosys.contains(&sys(nr)), "{nr} is not refused");
    }
    #[cfg(target_arch = "x86_64")]
    {
        assert_eq!(n.open, sys(libc::SYS_open));
        assert_eq!(n.mode1, [libc::SYS_chmod, libc::SYS_fchmod, libc::SYS_creat, libc::SYS_mknod].map(sys));
    }
}

#[test]
fn the_keyrings_are_refused() {
    let d = Dirs::new();
    const KEY_SPEC_USER_KEYRING: i32 = -4;
    const KEYCTL_SEARCH: i32 = 10;
    const KEYCTL_READ: i32 = 11;
    const KEYCTL_UNLINK: i32 = 9;
    let desc = CString::new(format!("oma-confine-test-{}", std::process::id())).unwrap();
    let user = c"user";
    // A key in the uid's user keyring, shared by every process of the uid, as a login or a
    // credential helper would leave one.
    // SAFETY: add_key with NUL-terminated strings and a payload of the given length.
    let key = unsafe {
        libc::syscall(
            libc::SYS_add_key,
            user.as_ptr(),
            desc.as_ptr(),
            b"secret".as_ptr(),
            6usize,
            KEY_SPEC_USER_KEYRING,
        )
    };
    if key < 0 {
        eprintln!("skipped the_keyrings_are_refused: add_key failed ({})", errno_now());
        return;
    }
    for network in [Network::Deny, Network::Allow] {
        let p = prepare(&d.policy(network)).unwrap();
        let search = || {
            res(unsafe {
                libc::syscall(libc::SYS_keyctl, KEYCTL_SEARCH, KEY_SPEC_USER_KEYRING, user.as_ptr(), desc.as_ptr(), 0)
            })
        };
        let read = || {
            let mut buf = [0u8; 16];
            res(unsafe { libc::syscall(libc::SYS_keyctl, KEYCTL_READ, key, buf.as_mut_ptr(), buf.len()) })
        };
        let add = || {
            res(unsafe {
                libc::syscall(
                    libc::SYS_add_key,
                    user.as_ptr(),
                    desc.as_ptr(),
                    b"x".as_ptr(),
                    1usize,
                    KEY_SPEC_USER_KEYRING,
                )
            })
        };
        let request = || res(unsafe { libc::syscall(libc::SYS_request_key, user.as_ptr(), desc.as_ptr(), 0usize, 0) });
        for (what, attempt) in
            [("search", &search as &dyn Fn() -> i32), ("read", &read), ("add", &add), ("request", &request)]
        {
            assert_eq!(in_child(&p, attempt), libc::ENOSYS, "{what} ({network:?})");
        }
    }
    // The key is still there, unchanged; removed here.
    let mut buf = [0u8; 16];
    // SAFETY: keyctl on our own key.
    unsafe {
        assert_eq!(libc::syscall(libc::SYS_keyctl, KEYCTL_READ, key, buf.as_mut_ptr(), buf.len()), 6);
        assert_eq!(&buf[..6], b"secret");
        libc::syscall(libc::SYS_keyctl, KEYCTL_UNLINK, key, KEY_SPEC_USER_KEYRING);
    }
}
