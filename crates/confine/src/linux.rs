//! Linux: Landlock through the `landlock` crate (parent side only), the rest as plain syscalls.

use std::os::fd::{AsRawFd, OwnedFd, RawFd};
use std::path::Path;

use landlock::{
    Access, AccessFs, AccessNet, BitFlags, CompatLevel, Compatible, PathBeneath, PathFd, Ruleset, RulesetAttr,
    RulesetCreatedAttr, Scope, ABI,
};

use crate::{missing_parts, ApplyError, Error, Network, Policy, Step};

/// The kernel's Landlock ABI version: 0 when Landlock is missing or disabled.
pub fn landlock_abi() -> i32 {
    const LANDLOCK_CREATE_RULESET_VERSION: libc::c_uint = 1;
    // SAFETY: the version query takes no attribute pointer.
    let v = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<u8>(),
            0usize,
            LANDLOCK_CREATE_RULESET_VERSION,
        )
    };
    if v < 0 {
        0
    } else {
        v as i32
    }
}

fn abi_of(v: i32) -> ABI {
    match v {
        i32::MIN..=0 => ABI::Unsupported,
        1 => ABI::V1,
        2 => ABI::V2,
        3 => ABI::V3,
        4 => ABI::V4,
        5 => ABI::V5,
        6 => ABI::V6,
        7 => ABI::V7,
        8 => ABI::V8,
        // V9 adds the pathname unix socket rule; later ABIs add nothing the policy asks for.
        _ => ABI::V9,
    }
}

/// Which limit a prepared rlimit is (the resource type differs between libcs, so the child
/// matches on this instead of storing it).
#[derive(Clone, Copy, Debug)]
enum Res {
    Cpu,
    As,
    Fsize,
    Nofile,
    Nproc,
}

/// Everything the child needs, built by [`crate::prepare`]. Shared between concurrent commands:
/// `landlock_restrict_self` copies the ruleset into the new domain, so one ruleset serves many.
pub struct Prepared {
    ruleset: Option<OwnedFd>,
    filter: Vec<libc::sock_filter>,
    rlimits: Vec<(Res, libc::rlimit)>,
    drop_caps: bool,
    cap_last: libc::c_ulong,
    abi: i32,
    not_enforced: Vec<String>,
}

// SAFETY: the fields are plain data and an owned descriptor; nothing is mutated after prepare.
unsafe impl Send for Prepared {}
// SAFETY: as above; the child reads them through a shared reference.
unsafe impl Sync for Prepared {}

impl Prepared {
    /// The Landlock ruleset descriptor the child must keep open until [`apply_in_child`]
    /// (close-on-exec, so the command never holds it).
    pub fn ruleset_fd(&self) -> Option<RawFd> {
        self.ruleset.as_ref().map(|fd| fd.as_raw_fd())
    }

    /// Parts of the policy this kernel cannot enforce (only with `required: false`).
    pub fn not_enforced(&self) -> &[String] {
        &self.not_enforced
    }

    /// The Landlock ABI the ruleset was built for (0: none).
    pub fn landlock_abi(&self) -> i32 {
        self.abi
    }
}

fn seccomp_available() -> Result<(), String> {
    if seccomp_filter(Network::Deny).is_none() {
        return Err(format!("the seccomp filter is not available on this architecture ({})", std::env::consts::ARCH));
    }
    // SAFETY: a query without arguments.
    let r = unsafe { libc::prctl(libc::PR_GET_SECCOMP, 0, 0, 0, 0) };
    if r < 0 {
        return Err("seccomp is not available on this kernel (built without CONFIG_SECCOMP)".to_string());
    }
    Ok(())
}

fn has_capabilities() -> bool {
    #[repr(C)]
    struct Header {
        version: u32,
        pid: libc::c_int,
    }
    #[repr(C)]
    #[derive(Default, Clone, Copy)]
    struct Data {
        effective: u32,
        permitted: u32,
        inheritable: u32,
    }
    let mut h = Header { version: 0x2008_0522, pid: 0 };
    let mut d = [Data::default(); 2];
    // SAFETY: capget with a v3 header and two data slots.
    let r = unsafe { libc::syscall(libc::SYS_capget, &mut h as *mut Header, d.as_mut_ptr()) };
    // Unknown: drop anyway (the drop ignores what the kernel does not have).
    r != 0 || d.iter().any(|x| x.effective | x.permitted | x.inheritable != 0)
}

fn cap_last() -> libc::c_ulong {
    std::fs::read_to_string("/proc/sys/kernel/cap_last_cap").ok().and_then(|s| s.trim().parse().ok()).unwrap_or(63)
}

fn rlimits(policy: &Policy, uid: u32) -> Result<Vec<(Res, libc::rlimit)>, Error> {
    let l = &policy.limits;
    let mut out = Vec::new();
    let mut add = |res: Res, raw, soft: Option<u64>, hard_extra: u64, name: &str| -> Result<(), Error> {
        let Some(soft) = soft else { return Ok(()) };
        let hard = soft.saturating_add(hard_extra);
        let mut cur = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
        // SAFETY: reading a limit into a local.
        if unsafe { libc::getrlimit(raw, &mut cur) } == 0
            && uid != 0
            && cur.rlim_max != libc::RLIM_INFINITY
            && hard as libc::rlim_t > cur.rlim_max
        {
            return Err(Error::Limit(format!(
                "The confined shell's {name} limit ({soft}) is above this process's hard limit ({}).",
                cur.rlim_max
            )));
        }
        out.push((res, libc::rlimit { rlim_cur: soft as libc::rlim_t, rlim_max: hard as libc::rlim_t }));
        Ok(())
    };
    // CPU: SIGXCPU at the soft limit, SIGKILL a second later for a process that ignores it.
    add(Res::Cpu, libc::RLIMIT_CPU, l.cpu_seconds, 1, "CPU time")?;
    add(Res::As, libc::RLIMIT_AS, l.address_space_bytes, 0, "address space")?;
    add(Res::Fsize, libc::RLIMIT_FSIZE, l.file_size_bytes, 0, "file size")?;
    add(Res::Nofile, libc::RLIMIT_NOFILE, l.open_files, 0, "open files")?;
    add(Res::Nproc, libc::RLIMIT_NPROC, l.processes, 0, "process")?;
    Ok(out)
}

fn must_exist(p: &Path, what: &str) -> Result<std::fs::Metadata, Error> {
    std::fs::metadata(p)
        .map_err(|e| Error::Path(format!("The confined shell's {what} {} cannot be used: {e}.", p.display())))
}

fn ruleset(policy: &Policy, abi: ABI) -> Result<Option<OwnedFd>, Error> {
    if abi == ABI::Unsupported {
        return Ok(None);
    }
    let os = |e: landlock::RulesetError| Error::Os(format!("The confined shell's Landlock ruleset failed: {e}."));
    let all = AccessFs::from_all(abi);
    let read = AccessFs::from_read(abi);
    let file = AccessFs::from_file(abi);
    let mut rs = Ruleset::default().set_compatibility(CompatLevel::HardRequirement).handle_access(all).map_err(os)?;
    if policy.network == Network::Deny && abi >= ABI::V4 {
        rs = rs.handle_access(AccessNet::BindTcp | AccessNet::ConnectTcp).map_err(os)?;
    }
    if abi >= ABI::V6 {
        rs = rs.scope(Scope::Signal | Scope::AbstractUnixSocket).map_err(os)?;
    }
    let mut created = rs.create().map_err(os)?;
    let rule = |created: &mut landlock::RulesetCreated,
                path: &Path,
                access: BitFlags<AccessFs>,
                skip_missing: bool|
     -> Result<(), Error> {
        let meta = match std::fs::metadata(path) {
            Ok(m) => m,
            Err(_) if skip_missing => return Ok(()),
            Err(e) => return Err(Error::Path(format!("The confined shell cannot use {}: {e}.", path.display()))),
        };
        let access = if meta.is_dir() { access } else { access & file };
        let fd = match PathFd::new(path) {
            Ok(fd) => fd,
            Err(_) if skip_missing => return Ok(()),
            Err(e) => return Err(Error::Path(format!("The confined shell cannot open {}: {e}.", path.display()))),
        };
        (&mut *created).add_rule(PathBeneath::new(fd, access)).map_err(os)?;
        Ok(())
    };
    for p in crate::DEFAULT_READ_DIRS.iter().chain(crate::DEFAULT_READ_FILES) {
        rule(&mut created, Path::new(p), read, true)?;
    }
    // Read, write and truncate on the devices that are sinks and sources (no create/remove:
    // those are directory rights).
    for p in crate::DEFAULT_DEVICES {
        rule(&mut created, Path::new(p), all, true)?;
    }
    for p in &policy.read_paths {
        rule(&mut created, p, read, false)?;
    }
    for p in [&policy.root, &policy.temp_dir].into_iter().chain(&policy.write_paths) {
        rule(&mut created, p, all, false)?;
    }
    Ok(created.into())
}

pub(crate) fn prepare(policy: &Policy) -> Result<Prepared, Error> {
    for (p, what) in [(&policy.root, "sandbox root"), (&policy.temp_dir, "temp dir")] {
        if !must_exist(p, what)?.is_dir() {
            return Err(Error::Path(format!("The confined shell's {what} {} is not a directory.", p.display())));
        }
    }
    for p in &policy.read_paths {
        must_exist(p, "read path")?;
    }
    for p in &policy.write_paths {
        must_exist(p, "write path")?;
    }
    let abi_num = landlock_abi();
    // SAFETY: getuid cannot fail.
    let uid = unsafe { libc::getuid() };
    let seccomp = seccomp_available();
    let missing = missing_parts(abi_num, policy, seccomp.clone(), uid);
    if policy.required && !missing.is_empty() {
        return Err(Error::Missing(missing));
    }
    let rlimits = rlimits(policy, uid)?;
    let ruleset = ruleset(policy, abi_of(abi_num))?;
    let filter = if seccomp.is_ok() { seccomp_filter(policy.network) } else { None };
    Ok(Prepared {
        ruleset,
        filter: filter.unwrap_or_default(),
        rlimits,
        drop_caps: has_capabilities(),
        cap_last: cap_last(),
        abi: abi_num,
        not_enforced: missing,
    })
}

fn errno() -> i32 {
    std::io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

/// Applies the prepared confinement to the calling process.
///
/// `ruleset_fd` is where the Landlock ruleset descriptor is in this process (the caller may
/// have moved it: a helper that closes its inherited descriptors keeps this one), or `None`
/// for [`Prepared::ruleset_fd`].
///
/// # Safety
///
/// Meant for a freshly forked child of a possibly multi-threaded process, right before
/// `execve`: it only makes async-signal-safe system calls on data prepared in the parent and
/// allocates nothing. It changes the calling process irreversibly (limits, capabilities,
/// Landlock domain, seccomp filter); never call it in a process that must stay unconfined.
pub unsafe fn apply_in_child(p: &Prepared, ruleset_fd: Option<RawFd>) -> Result<(), ApplyError> {
    let fail = |step| Err(ApplyError { step, errno: errno() });
    for (res, lim) in &p.rlimits {
        let raw = match res {
            Res::Cpu => libc::RLIMIT_CPU,
            Res::As => libc::RLIMIT_AS,
            Res::Fsize => libc::RLIMIT_FSIZE,
            Res::Nofile => libc::RLIMIT_NOFILE,
            Res::Nproc => libc::RLIMIT_NPROC,
        };
        if libc::setrlimit(raw, lim) != 0 {
            return fail(Step::Rlimit);
        }
    }
    if p.drop_caps {
        // The bounding set first (it needs CAP_SETPCAP, which the capset below removes): an
        // execve by uid 0 would otherwise get the bounding set back as permitted capabilities.
        // A process that is no longer root (it changed its uid after the fork) cannot drop the
        // bounding set (EPERM) and needs not: with no_new_privs, an execve by a non-root uid
        // gains no capability from it.
        for cap in 0..=p.cap_last {
            if libc::prctl(libc::PR_CAPBSET_DROP, cap, 0, 0, 0) != 0
                && errno() != libc::EINVAL
                && !(errno() == libc::EPERM && libc::getuid() != 0)
            {
                return fail(Step::Capabilities);
            }
        }
        const PR_CAP_AMBIENT: libc::c_int = 47;
        const PR_CAP_AMBIENT_CLEAR_ALL: libc::c_ulong = 4;
        // EINVAL: a kernel before ambient capabilities (4.3) has none to clear.
        if libc::prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) != 0 && errno() != libc::EINVAL {
            return fail(Step::Capabilities);
        }
        let header: [u32; 2] = [0x2008_0522, 0];
        let data = [0u32; 6];
        if libc::syscall(libc::SYS_capset, header.as_ptr(), data.as_ptr()) != 0 {
            return fail(Step::Capabilities);
        }
    }
    if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
        return fail(Step::NoNewPrivs);
    }
    if let Some(fd) = ruleset_fd.or(p.ruleset_fd()) {
        if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
            return fail(Step::Landlock);
        }
    }
    if !p.filter.is_empty() {
        let prog = libc::sock_fprog { len: p.filter.len() as libc::c_ushort, filter: p.filter.as_ptr() as *mut _ };
        if libc::syscall(libc::SYS_seccomp, libc::SECCOMP_SET_MODE_FILTER, 0u32, &prog as *const libc::sock_fprog) != 0
        {
            return fail(Step::Seccomp);
        }
    }
    Ok(())
}

// ---- the seccomp program ------------------------------------------------------------------

/// `struct seccomp_data` offsets: nr, arch, and the low words of args[0..4] (little-endian
/// targets only).
const OFF_NR: u32 = 0;
const OFF_ARCH: u32 = 4;
const OFF_ARG: [u32; 4] = [16, 24, 32, 40];

#[derive(Clone, Copy)]
enum Ins {
    Ld(u32),
    /// Jump to the label when the accumulator equals the value, else fall through.
    Jeq(u32, u8),
    /// Jump to the label when the accumulator has any of the bits, else fall through.
    Jset(u32, u8),
    Ret(u32),
    Label(u8),
}

fn assemble(prog: &[Ins]) -> Vec<libc::sock_filter> {
    const BPF_LD_W_ABS: u16 = 0x20;
    const BPF_JEQ_K: u16 = 0x15;
    const BPF_JSET_K: u16 = 0x45;
    const BPF_RET_K: u16 = 0x06;
    let mut labels = [0usize; 32];
    let mut pc = 0;
    for i in prog {
        match i {
            Ins::Label(l) => labels[*l as usize] = pc,
            _ => pc += 1,
        }
    }
    let mut out = Vec::with_capacity(pc);
    for i in prog {
        let f = |code, jt, k| libc::sock_filter { code, jt, jf: 0, k };
        let jump = |l: u8, at: usize| u8::try_from(labels[l as usize] - (at + 1)).expect("short program");
        match *i {
            Ins::Label(_) => continue,
            Ins::Ld(off) => out.push(f(BPF_LD_W_ABS, 0, off)),
            Ins::Jeq(k, l) => out.push(f(BPF_JEQ_K, jump(l, out.len()), k)),
            Ins::Jset(k, l) => out.push(f(BPF_JSET_K, jump(l, out.len()), k)),
            Ins::Ret(v) => out.push(f(BPF_RET_K, 0, v)),
        }
    }
    out
}

/// One architecture's numbers; `NONE` where it lacks the call.
struct ArchNumbers {
    audit: u32,
    socket: u32,
    /// i386's multiplexer: its `SYS_SOCKET` call cannot be inspected (the domain is in
    /// memory), so every socket it would create is refused.
    socketcall: u32,
    /// Calls whose argument 1 is a mode: `chmod`, `fchmod`, `creat`, `mknod`.
    mode1: [u32; 4],
    /// Calls whose argument 2 is a mode: `fchmodat`, `fchmodat2`, `mknodat`.
    mode2: [u32; 3],
    /// `open`: the flags are argument 1, the mode argument 2.
    open: u32,
    /// `openat`: the flags are argument 2, the mode argument 3.
    openat: u32,
    /// Answered ENOSYS whatever the policy: `openat2` (its mode is in a struct the filter
    /// cannot read; callers fall back to `openat`, which it can), `io_uring_setup` (io_uring
    /// opens files and creates sockets past seccomp), System V IPC (`ipc`, `shm*`, `msg*`,
    /// `sem*`) and the kernel keyrings (`add_key`, `request_key`, `keyctl`): their objects are
    /// found by key or id, not by path, and shared by every process of the uid, outside the
    /// sandbox included (Landlock has no rule for them).
    nosys: &'static [u32],
    /// x32 calls carry this bit on x86_64's audit arch.
    x32_bit: u32,
}

const NONE: u32 = u32::MAX;

#[cfg(target_arch = "x86_64")]
const ARCHES: Option<[ArchNumbers; 2]> = Some([
    ArchNumbers {
        audit: 0xC000_003E,
        socket: 41,
        socketcall: NONE,
        mode1: [90, 91, 85, 133],
        mode2: [268, 452, 259],
        open: 2,
        openat: 257,
        // openat2, io_uring_setup; shmget shmat shmctl shmdt; msgget msgsnd msgrcv msgctl;
        // semget semop semctl semtimedop; add_key request_key keyctl.
        nosys: &[437, 425, 29, 30, 31, 67, 68, 69, 70, 71, 64, 65, 66, 220, 248, 249, 250],
        x32_bit: 0x4000_0000,
    },
    ArchNumbers {
        audit: 0x4000_0003,
        socket: 359,
        socketcall: 102,
        mode1: [15, 94, 8, 14],
        mode2: [306, 452, 297],
        open: 5,
        openat: 295,
        // The same, with i386's `ipc` multiplexer (117) and semtimedop_time64 (420).
        nosys: &[437, 425, 117, 395, 397, 396, 398, 399, 400, 401, 402, 393, 394, 420, 286, 287, 288],
        x32_bit: NONE,
    },
]);
#[cfg(target_arch = "aarch64")]
const ARCHES: Option<[ArchNumbers; 2]> = Some([
    ArchNumbers {
        audit: 0xC000_00B7,
        socket: 198,
        socketcall: NONE,
        mode1: [NONE, 52, NONE, NONE],
        mode2: [53, 452, 33],
        open: NONE,
        openat: 56,
        nosys: &[437, 425, 194, 196, 195, 197, 186, 189, 188, 187, 190, 193, 191, 192, 217, 218, 219],
        x32_bit: NONE,
    },
    ArchNumbers {
        audit: 0x4000_0028,
        socket: 281,
        socketcall: NONE,
        mode1: [15, 94, 8, 14],
        mode2: [333, 452, 324],
        open: 5,
        openat: 322,
        // EABI has no `ipc` multiplexer (OABI's 117 is not offered by arm64's compat layer).
        nosys: &[437, 425, 307, 305, 308, 306, 303, 301, 302, 304, 299, 298, 300, 312, 420, 309, 310, 311],
        x32_bit: NONE,
    },
]);
#[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
const ARCHES: Option<[ArchNumbers; 2]> = None;

/// The set-id bits no call of the command may give a file. Landlock has no rule for file
/// modes, and a command started by root could otherwise leave a setuid-root program behind.
const SETID_BITS: u32 = libc::S_ISUID | libc::S_ISGID;

/// `open`/`openat` flags with which the mode argument is used (the same values on every
/// architecture of [`ARCHES`]): `O_CREAT`, and `O_TMPFILE`'s own bit (a temporary file can be
/// linked into the tree later with the mode it was made with).
const CREATING_FLAGS: u32 = 0o100 | 0o2000_0000;

/// The confined command's seccomp filter. Always:
/// - a set-id mode → EPERM on every call that sets a mode: `chmod`, `fchmod`, `fchmodat`,
///   `fchmodat2`, `creat`, `mknod`, `mknodat`, and `open`/`openat` with `O_CREAT` or
///   `O_TMPFILE` (without them the mode argument is unused, whatever garbage it holds).
///   `mkdir` needs no rule: the kernel keeps only the permission and sticky bits of its mode;
/// - `openat2`, `io_uring_setup`, System V IPC and the keyrings → ENOSYS (see
///   [`ArchNumbers::nosys`]): what a kernel without them answers, so callers take the path they
///   have for one.
///
/// With the network denied: `socket()` of a family other than AF_UNIX → EACCES. Everything
/// else is allowed; every answer is an errno, never a kill (a call from an architecture the
/// kernel should not even offer gets ENOSYS).
pub(crate) fn seccomp_filter(network: Network) -> Option<Vec<libc::sock_filter>> {
    let arches = ARCHES?;
    let errno = |e: i32| libc::SECCOMP_RET_ERRNO | (e as u32 & 0xffff);
    const NATIVE: u8 = 0;
    const COMPAT: u8 = 1;
    const DOMAIN: u8 = 2;
    const SOCKETCALL: u8 = 3;
    const DENY_SOCKET: u8 = 4;
    const ALLOW: u8 = 5;
    const NOSYS: u8 = 6;
    const MODE1: u8 = 7;
    const MODE2: u8 = 8;
    const MODE3: u8 = 9;
    const DENY_MODE: u8 = 10;
    const OPEN: u8 = 11;
    const OPENAT: u8 = 12;
    let deny_network = network == Network::Deny;
    let mut p = vec![
        Ins::Ld(OFF_ARCH),
        Ins::Jeq(arches[0].audit, NATIVE),
        Ins::Jeq(arches[1].audit, COMPAT),
        Ins::Ret(errno(libc::ENOSYS)),
    ];
    for (label, a) in [(NATIVE, &arches[0]), (COMPAT, &arches[1])] {
        p.push(Ins::Label(label));
        p.push(Ins::Ld(OFF_NR));
        let mut on = |nr: u32, to: u8| {
            if nr != NONE {
                p.push(Ins::Jeq(nr, to));
                if a.x32_bit != NONE {
                    p.push(Ins::Jeq(nr | a.x32_bit, to));
                }
            }
        };
        for nr in a.mode1 {
            on(nr, MODE1);
        }
        for nr in a.mode2 {
            on(nr, MODE2);
        }
        on(a.open, OPEN);
        on(a.openat, OPENAT);
        for &nr in a.nosys {
            on(nr, NOSYS);
        }
        if deny_network {
            on(a.socket, DOMAIN);
            on(a.socketcall, SOCKETCALL);
        }
        p.push(Ins::Ret(libc::SECCOMP_RET_ALLOW));
    }
    const SYS_SOCKET: u32 = 1;
    // The block at `label`: load argument `arg`, jump as `test` says, else allow.
    let check = |label: u8, arg: usize, test: Ins| {
        [Ins::Label(label), Ins::Ld(OFF_ARG[arg]), test, Ins::Ret(libc::SECCOMP_RET_ALLOW)]
    };
    // `open` has its flags in argument 1 and its mode in 2; `openat` one further on.
    p.extend(check(OPEN, 1, Ins::Jset(CREATING_FLAGS, MODE2)));
    p.extend(check(OPENAT, 2, Ins::Jset(CREATING_FLAGS, MODE3)));
    // MODEn: the mode is argument n.
    for (label, arg) in [(MODE1, 1), (MODE2, 2), (MODE3, 3)] {
        p.extend(check(label, arg, Ins::Jset(SETID_BITS, DENY_MODE)));
    }
    p.extend([Ins::Label(DENY_MODE), Ins::Ret(errno(libc::EPERM))]);
    p.extend(check(SOCKETCALL, 0, Ins::Jeq(SYS_SOCKET, DENY_SOCKET)));
    p.extend([
        Ins::Label(DOMAIN),
        Ins::Ld(OFF_ARG[0]),
        Ins::Jeq(libc::AF_UNIX as u32, ALLOW),
        Ins::Label(DENY_SOCKET),
        Ins::Ret(errno(libc::EACCES)),
        Ins::Label(ALLOW),
        Ins::Ret(libc::SECCOMP_RET_ALLOW),
        Ins::Label(NOSYS),
        Ins::Ret(errno(libc::ENOSYS)),
    ]);
    Some(assemble(&p))
}

#[cfg(test)]
mod tests;
