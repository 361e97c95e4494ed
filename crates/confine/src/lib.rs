//! oma-confine: the operating-system side of the confined shell (issue 14).
//!
//! The work is split around `fork`, because the child of a multi-threaded process (Node) may
//! only make async-signal-safe calls before `execve`:
//!
//! - [`prepare`] runs in the parent. It opens every path, builds the Landlock ruleset (one
//!   descriptor with every rule added), writes the seccomp program and computes the resource
//!   limits. All allocation, path lookup and error text happens here.
//! - [`apply_in_child`] runs in the forked child right before `execve`. It makes plain system
//!   calls on the prepared data only: `setrlimit`, the capability drop, `PR_SET_NO_NEW_PRIVS`,
//!   `landlock_restrict_self` and `seccomp(SECCOMP_SET_MODE_FILTER)`.
//!
//! What the confinement enforces (Linux):
//! - Landlock file rules: the command may create, write, remove, rename and truncate only under
//!   the sandbox root, its private temp dir and the extra write paths; it may read and execute
//!   only under the default read set ([`DEFAULT_READ_DIRS`], [`DEFAULT_READ_FILES`],
//!   [`DEFAULT_DEVICES`]), the root, the temp dir and the extra read paths.
//! - Landlock's ptrace restriction (every ABI): no `ptrace` of, and no `/proc/<pid>/environ`,
//!   `fd/`, `mem`, … of, a process outside the command's domain (its parent Node among them).
//! - Landlock scopes (ABI 6): no signal to a process outside the domain, no connection to an
//!   abstract unix socket created outside it.
//! - With the network denied: Landlock TCP bind/connect rules (ABI 4) and a seccomp filter that
//!   refuses `socket()` of every family but `AF_UNIX` with `EACCES` (UDP, raw, netlink
//!   included).
//! - Always, in the same filter: every call that gives a file a mode refuses setuid and setgid
//!   bits (`EPERM`): `chmod` and its variants, `creat`, `mknod`/`mknodat`, and `open`/`openat`
//!   with `O_CREAT` or `O_TMPFILE`. Landlock has no rule for file modes, and a command started
//!   by root could otherwise leave a setuid-root program behind. `openat2` (whose mode the
//!   filter cannot read), `io_uring_setup` (io_uring opens files and creates sockets past
//!   seccomp), System V IPC and the kernel keyrings (objects shared by every process of the
//!   uid, found by key rather than by path) answer `ENOSYS`, as on a kernel without them.
//! - Capabilities: a command started by root loses every capability (bounding set included), so
//!   it cannot reconfigure the machine (mount is refused by Landlock anyway).
//! - Resource limits (`setrlimit`): CPU seconds, address space, file size, open files, processes.

#![cfg_attr(not(target_os = "linux"), allow(dead_code))]

use std::fmt;
use std::path::PathBuf;

#[cfg(target_os = "linux")]
mod linux;
#[cfg(target_os = "linux")]
pub use linux::{apply_in_child, landlock_abi, Prepared};

#[cfg(not(target_os = "linux"))]
mod other;
#[cfg(not(target_os = "linux"))]
pub use other::{apply_in_child, landlock_abi, Prepared};

/// Directories the command may read and execute from by default: binaries, libraries,
/// certificates and locale data (`/usr/share`, `/usr/lib/locale`), and `/proc` (tools read
/// `/proc/self`; another process's private files there stay closed by the ptrace restriction).
/// Missing ones are skipped.
pub const DEFAULT_READ_DIRS: &[&str] = &[
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/libx32",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
    "/etc/alternatives",
    "/etc/ld.so.conf.d",
    "/proc",
    "/sys/devices/system/cpu",
];

/// Single files under /etc that a shell, the dynamic loader, name lookups and common tools
/// read. The rest of /etc (keys, service credentials) stays closed. Missing ones are skipped.
pub const DEFAULT_READ_FILES: &[&str] = &[
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
    "/etc/localtime",
    "/etc/timezone",
    "/etc/locale.alias",
    "/etc/locale.conf",
    "/etc/default/locale",
    "/etc/hosts",
    "/etc/host.conf",
    "/etc/resolv.conf",
    "/etc/gai.conf",
    "/etc/services",
    "/etc/protocols",
    "/etc/mime.types",
    "/etc/magic",
    "/etc/os-release",
    "/etc/debian_version",
    "/etc/bash.bashrc",
    "/etc/profile",
    "/etc/inputrc",
    "/etc/gitconfig",
];

/// Devices the command may open for reading and writing (`> /dev/null` needs the write).
pub const DEFAULT_DEVICES: &[&str] = &["/dev/null", "/dev/zero", "/dev/full", "/dev/random", "/dev/urandom"];

/// The newest Landlock ABI whose rights the confinement asks for; a newer kernel is used at
/// this level. 6 is the minimum with every guarantee (ABI 3: truncate, 4: TCP, 6: scopes).
pub const REQUIRED_LANDLOCK_ABI: i32 = 6;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Network {
    Deny,
    Allow,
}

/// Resource limits; `None` leaves the inherited limit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Limits {
    pub cpu_seconds: Option<u64>,
    pub address_space_bytes: Option<u64>,
    pub file_size_bytes: Option<u64>,
    pub open_files: Option<u64>,
    pub processes: Option<u64>,
}

#[derive(Clone, Debug)]
pub struct Policy {
    /// The sandbox root: readable and writable, the command's working directory.
    pub root: PathBuf,
    /// The root's private dir (HOME and TMPDIR): readable and writable. Never shared with
    /// another root's commands (the caller gives each root its own).
    pub temp_dir: PathBuf,
    pub read_paths: Vec<PathBuf>,
    pub write_paths: Vec<PathBuf>,
    pub network: Network,
    pub limits: Limits,
    /// Refuse to prepare when the kernel cannot enforce every part (the default); otherwise
    /// enforce what it can and list the rest in [`Prepared::not_enforced`].
    pub required: bool,
}

/// Why [`prepare`] refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// `required` and the kernel lacks something: each entry names one missing part.
    Missing(Vec<String>),
    /// A path of the policy cannot be used (does not exist, not a directory, …).
    Path(String),
    /// A limit cannot be set (above the hard limit this process has).
    Limit(String),
    /// Not Linux.
    Unsupported(String),
    /// A system call failed while preparing.
    Os(String),
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Missing(parts) => write!(
                f,
                "The confined shell cannot enforce its policy on this host: {}. Pass `required: false` to run with what the kernel enforces.",
                parts.join("; ")
            ),
            Error::Path(s) | Error::Limit(s) | Error::Unsupported(s) | Error::Os(s) => f.write_str(s),
        }
    }
}

impl std::error::Error for Error {}

/// The refusal on other platforms.
pub fn unsupported_text(platform: &str) -> String {
    format!(
        "The confined shell is not supported on {platform}: it needs Linux (Landlock and seccomp). Use another ShellExecutor there."
    )
}

/// What an ABI and the host lack for a policy, in the order the parts are applied. Pure, so
/// the texts are tested for every ABI without such a kernel.
pub fn missing_parts(abi: i32, policy: &Policy, seccomp: Result<(), String>, uid: u32) -> Vec<String> {
    let mut out = Vec::new();
    if abi < 1 {
        out.push(
            "Landlock is not available on this kernel (not built in, or not enabled at boot: see /sys/kernel/security/lsm)"
                .to_string(),
        );
    } else {
        if abi < 3 {
            out.push(format!("Landlock ABI 3 (truncate rules) is not available on this kernel (found ABI {abi})"));
        }
        if abi < 4 && policy.network == Network::Deny {
            out.push(format!("Landlock ABI 4 (network rules) is not available on this kernel (found ABI {abi})"));
        }
        if abi < 6 {
            out.push(format!(
                "Landlock ABI 6 (signal and abstract unix socket scopes) is not available on this kernel (found ABI {abi})"
            ));
        }
    }
    if let Err(why) = seccomp {
        out.push(why);
    }
    if policy.limits.processes.is_some() && uid == 0 {
        out.push("the process limit is not enforced for root (Linux does not apply RLIMIT_NPROC to uid 0)".to_string());
    }
    out
}

/// Prepares the confinement in the parent.
pub fn prepare(policy: &Policy) -> Result<Prepared, Error> {
    #[cfg(target_os = "linux")]
    {
        linux::prepare(policy)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = policy;
        Err(Error::Unsupported(unsupported_text(std::env::consts::OS)))
    }
}

/// A step of [`apply_in_child`], to name the one that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Step {
    Rlimit = 1,
    Capabilities = 2,
    NoNewPrivs = 3,
    Landlock = 4,
    Seccomp = 5,
}

impl Step {
    pub fn from_u8(v: u8) -> Option<Step> {
        Some(match v {
            1 => Step::Rlimit,
            2 => Step::Capabilities,
            3 => Step::NoNewPrivs,
            4 => Step::Landlock,
            5 => Step::Seccomp,
            _ => return None,
        })
    }

    pub fn name(self) -> &'static str {
        match self {
            Step::Rlimit => "setrlimit",
            Step::Capabilities => "dropping capabilities",
            Step::NoNewPrivs => "PR_SET_NO_NEW_PRIVS",
            Step::Landlock => "landlock_restrict_self",
            Step::Seccomp => "seccomp",
        }
    }
}

/// A failure of [`apply_in_child`]: the step and its errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ApplyError {
    pub step: Step,
    pub errno: i32,
}

impl ApplyError {
    /// One `i32` for a status pipe: the step above the low 16 bits of the errno.
    pub fn pack(self) -> i32 {
        ((self.step as i32) << 16) | (self.errno & 0xffff)
    }

    pub fn unpack(v: i32) -> Option<ApplyError> {
        Some(ApplyError { step: Step::from_u8((v >> 16) as u8)?, errno: v & 0xffff })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(network: Network, processes: Option<u64>) -> Policy {
        Policy {
            root: "/r".into(),
            temp_dir: "/t".into(),
            read_paths: vec![],
            write_paths: vec![],
            network,
            limits: Limits { processes, ..Limits::default() },
            required: true,
        }
    }

    #[test]
    fn missing_names_each_part() {
        let p = policy(Network::Deny, None);
        assert!(missing_parts(7, &p, Ok(()), 1000).is_empty());
        assert!(missing_parts(6, &p, Ok(()), 1000).is_empty());
        assert_eq!(
            missing_parts(5, &p, Ok(()), 1000),
            ["Landlock ABI 6 (signal and abstract unix socket scopes) is not available on this kernel (found ABI 5)"]
        );
        assert_eq!(
            missing_parts(3, &p, Ok(()), 1000),
            [
                "Landlock ABI 4 (network rules) is not available on this kernel (found ABI 3)",
                "Landlock ABI 6 (signal and abstract unix socket scopes) is not available on this kernel (found ABI 3)"
            ]
        );
        // With the network allowed, the TCP rules are not needed (the seccomp filter still is:
        // it refuses setuid and setgid modes).
        let allow = policy(Network::Allow, None);
        assert_eq!(missing_parts(3, &allow, Err("no seccomp".into()), 1000).len(), 2);
        assert_eq!(missing_parts(4, &allow, Ok(()), 1000).len(), 1);
        assert_eq!(missing_parts(2, &allow, Ok(()), 1000).len(), 2);
        let none = missing_parts(0, &p, Err("seccomp is not available".into()), 1000);
        assert_eq!(none.len(), 2);
        assert!(none[0].starts_with("Landlock is not available on this kernel"));
        assert_eq!(none[1], "seccomp is not available");
        let root = missing_parts(7, &policy(Network::Deny, Some(64)), Ok(()), 0);
        assert_eq!(root, ["the process limit is not enforced for root (Linux does not apply RLIMIT_NPROC to uid 0)"]);
        assert!(missing_parts(7, &policy(Network::Deny, Some(64)), Ok(()), 1000).is_empty());
    }

    #[test]
    fn error_texts() {
        let e = Error::Missing(vec!["a".into(), "b".into()]);
        assert_eq!(
            e.to_string(),
            "The confined shell cannot enforce its policy on this host: a; b. Pass `required: false` to run with what the kernel enforces."
        );
        assert_eq!(
            unsupported_text("macos"),
            "The confined shell is not supported on macos: it needs Linux (Landlock and seccomp). Use another ShellExecutor there."
        );
    }

    #[test]
    fn apply_error_round_trips() {
        let e = ApplyError { step: Step::Landlock, errno: libc::EPERM };
        assert_eq!(ApplyError::unpack(e.pack()), Some(e));
        assert_eq!(ApplyError::unpack(libc::EPERM), None);
    }
}
