//! Path safety (CONTRACT §12 plus the §21 decisions) and race-free file access.
//!
//! Resolution follows the original exactly (lexical check, then realpath with the longest
//! existing prefix) so every text and every returned path is the same. The original then
//! opens the resolved *path*, so a rename or symlink swap between the check and the open
//! redirects I/O. Here every open goes through [`Sandbox`], which opens relative to a file
//! descriptor of the root with `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` (or, where
//! the kernel lacks openat2, component by component with `O_NOFOLLOW`). A path that a racing
//! swap would lead outside fails with `EXDEV`, reported as the outside-root error.

use std::ffi::{CStr, CString};
use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use oma_os::fs;

pub const DEFAULT_WORKSPACE_DIRNAME: &str = ".agent-workspace";

/// The largest file `file_read` and `file_edit` read, and the largest result `file_edit`
/// writes: 32 MiB. Far above any file a model can use whole (a context window holds a few
/// MB of text), and small enough that the worst case stays bounded: `file_read`'s numbered
/// output of a file of empty lines (~10 characters per input byte) stays under V8's
/// maximum string length (2^29 - 24), and `file_edit`'s peak (the file, the edited copy and
/// their JS strings) stays near 100 MB. Larger files are for `grep`, which streams them.
pub const MAX_FILE_BYTES: u64 = 32 << 20;

/// Node (libuv) fails any path of PATH_MAX bytes or more with ENAMETOOLONG; the sandbox's
/// opens are relative to the root's descriptor, so the length is checked here to keep the
/// original's limit (and with it how deep a tree the tools can create).
const PATH_MAX: usize = libc::PATH_MAX as usize;

// ---------------------------------------------------------------------------------------
// POSIX `path` module semantics (Node's path.resolve / relative / dirname / basename).

/// `path.resolve(base, p)` for an absolute `base`.
pub fn resolve(base: &str, p: &str) -> String {
    if p.starts_with('/') {
        normalize_abs(p)
    } else if p.is_empty() {
        normalize_abs(base)
    } else {
        normalize_abs(&format!("{base}/{p}"))
    }
}

/// Normalises an absolute path: collapses `//`, `.` and `..`, drops a trailing slash.
pub fn normalize_abs(p: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for c in p.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            c => parts.push(c),
        }
    }
    let mut out = String::with_capacity(p.len());
    for c in &parts {
        out.push('/');
        out.push_str(c);
    }
    if out.is_empty() {
        out.push('/');
    }
    out
}

fn components(p: &str) -> Vec<&str> {
    p.split('/').filter(|c| !c.is_empty()).collect()
}

/// `path.relative(from, to)` for normalised absolute paths.
pub fn relative(from: &str, to: &str) -> String {
    let f = components(from);
    let t = components(to);
    let common = f.iter().zip(&t).take_while(|(a, b)| a == b).count();
    let mut parts: Vec<&str> = vec![".."; f.len() - common];
    parts.extend_from_slice(&t[common..]);
    parts.join("/")
}

/// `path.dirname` (normalised input; relative paths allowed, as with the sandbox disabled).
pub fn dirname(p: &str) -> &str {
    match p.rfind('/') {
        None => ".",
        Some(0) => "/",
        Some(i) => &p[..i],
    }
}

/// `path.basename`.
pub fn basename(p: &str) -> &str {
    let t = p.trim_end_matches('/');
    match t.rfind('/') {
        Some(i) => &t[i + 1..],
        None => t,
    }
}

/// `path.join(a, b)` for an absolute normalised `a` and a single name `b`.
pub fn join(a: &str, b: &str) -> String {
    if a.ends_with('/') {
        format!("{a}{b}")
    } else {
        format!("{a}/{b}")
    }
}

/// §12 *within*, with the §21 fix: only a real `..` component escapes (`<root>/..cache` is
/// inside).
pub fn is_within(root: &str, candidate: &str) -> bool {
    let rel = relative(root, candidate);
    rel.is_empty() || (rel != ".." && !rel.starts_with("../") && !rel.starts_with('/'))
}

// ---------------------------------------------------------------------------------------
// Node-style filesystem error messages (`ENOENT: no such file or directory, open '/x'`).

/// libuv's code and description for an errno.
fn uv_error(errno: i32) -> (&'static str, &'static str) {
    match errno {
        libc::ENOENT => ("ENOENT", "no such file or directory"),
        libc::EACCES => ("EACCES", "permission denied"),
        libc::EPERM => ("EPERM", "operation not permitted"),
        libc::EISDIR => ("EISDIR", "illegal operation on a directory"),
        libc::ENOTDIR => ("ENOTDIR", "not a directory"),
        libc::ELOOP => ("ELOOP", "too many symbolic links encountered"),
        libc::EEXIST => ("EEXIST", "file already exists"),
        libc::ENAMETOOLONG => ("ENAMETOOLONG", "name too long"),
        libc::EROFS => ("EROFS", "read-only file system"),
        libc::ENOSPC => ("ENOSPC", "no space left on device"),
        libc::EMFILE => ("EMFILE", "too many open files"),
        libc::ENFILE => ("ENFILE", "file table overflow"),
        libc::EINVAL => ("EINVAL", "invalid argument"),
        libc::EXDEV => ("EXDEV", "cross-device link not permitted"),
        libc::EBUSY => ("EBUSY", "resource busy or locked"),
        libc::ENOTEMPTY => ("ENOTEMPTY", "directory not empty"),
        libc::EIO => ("EIO", "i/o error"),
        libc::ETXTBSY => ("ETXTBSY", "text file is busy"),
        libc::EFBIG => ("EFBIG", "file too large"),
        libc::EDQUOT => ("EDQUOT", "disk quota exceeded"),
        libc::ENXIO => ("ENXIO", "no such device or address"),
        libc::ENOMEM => ("ENOMEM", "not enough memory"),
        libc::EAGAIN => ("EAGAIN", "resource temporarily unavailable"),
        _ => ("EIO", "i/o error"),
    }
}

/// A filesystem failure, rendered like the message of Node's corresponding error.
#[derive(Debug, Clone, PartialEq)]
pub enum FsError {
    /// errno, syscall, path (`None` for errors Node reports without a path, e.g. `read`).
    Os(i32, &'static str, Option<String>),
    /// Node's `ERR_INVALID_ARG_VALUE` for a path containing a NUL byte.
    NulByte(String),
    /// A symlink swapped in after resolution would have led outside the root.
    Escape,
    /// A FIFO, device or socket: refused without reading or writing it (a FIFO would block
    /// the thread in open or write forever, a device like /dev/zero never ends).
    NotRegular(&'static str),
    /// More than [`MAX_FILE_BYTES`]; the size when known (`None`: it grew while being read).
    TooLarge(Option<u64>),
}

impl FsError {
    pub fn os(err: &io::Error, syscall: &'static str, path: &str) -> FsError {
        FsError::Os(err.raw_os_error().unwrap_or(libc::EIO), syscall, Some(path.to_string()))
    }

    /// The message text (`Escape` has no message of its own; callers map it first).
    pub fn message(&self) -> String {
        match self {
            FsError::Os(errno, syscall, path) => {
                let (code, desc) = uv_error(*errno);
                match path {
                    Some(p) => format!("{code}: {desc}, {syscall} '{p}'"),
                    None => format!("{code}: {desc}, {syscall}"),
                }
            }
            FsError::NulByte(p) => format!(
                "The argument 'path' must be a string, Uint8Array, or URL without null bytes. Received {}",
                inspect_string(p)
            ),
            FsError::Escape => "EXDEV: cross-device link not permitted".to_string(),
            FsError::NotRegular(kind) => {
                format!("not a regular file ({kind}): the built-in file tools only read and write regular files")
            }
            FsError::TooLarge(size) => format!(
                "file too large ({}): the built-in file tools read files of at most {MAX_FILE_BYTES} bytes (32 MiB); use grep to search a larger file",
                match size {
                    Some(n) => format!("{n} bytes"),
                    None => format!("more than {MAX_FILE_BYTES} bytes"),
                }
            ),
        }
    }
}

/// `util.inspect` of a string: single quotes unless the text contains one (then double
/// quotes, then backticks), control characters escaped.
pub fn inspect_string(s: &str) -> String {
    let quote = if !s.contains('\'') {
        '\''
    } else if !s.contains('"') {
        '"'
    } else if !s.contains('`') && !s.contains("${") {
        '`'
    } else {
        '\''
    };
    let mut out = String::with_capacity(s.len() + 2);
    out.push(quote);
    for c in s.chars() {
        match c {
            '\u{8}' => out.push_str("\\b"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\u{c}' => out.push_str("\\f"),
            '\r' => out.push_str("\\r"),
            '\\' => out.push_str("\\\\"),
            c if c == quote => {
                out.push('\\');
                out.push(c);
            }
            c if (c as u32) < 0x20 || c as u32 == 0x7f => out.push_str(&format!("\\x{:02X}", c as u32)),
            c => out.push(c),
        }
    }
    out.push(quote);
    out
}

// ---------------------------------------------------------------------------------------
// Resolution (§12).

/// What the JS side passes: `root: None` means `cwd: null` (sandbox disabled); otherwise
/// the already-defaulted root (`context.cwd ?? defaultWorkspaceDir()`), and the process cwd
/// for resolving relative roots.
#[derive(Debug, Clone)]
pub struct SandboxSpec {
    pub root: Option<String>,
    pub process_cwd: String,
}

/// A successful resolution plus the handle every later I/O goes through.
#[derive(Debug)]
pub struct Resolved {
    /// The symlink-free path (verbatim input when the sandbox is disabled).
    pub path: String,
    /// The real root (`/` when disabled).
    pub root: String,
    /// The lexically resolved input, for the outside-root text.
    pub candidate: String,
    pub sandbox: Sandbox,
}

pub fn outside_error(candidate: &str, real_root: &str) -> String {
    format!(
        "Path \"{candidate}\" is outside the agent's working directory \"{real_root}\". Built-in filesystem tools are sandboxed to this directory; set OrchestratorConfig.defaultCwd / AgentConfig.cwd to widen it, or AgentConfig.cwd: null to disable the sandbox."
    )
}

fn cstring(p: &str) -> Result<CString, FsError> {
    CString::new(p).map_err(|_| FsError::NulByte(p.to_string()))
}

/// realpath(3), with Node's error text.
pub fn realpath(p: &str) -> Result<String, FsError> {
    let c = cstring(p)?;
    match std::fs::canonicalize(Path::new(std::ffi::OsStr::from_bytes(c.as_bytes()))) {
        Ok(r) => Ok(String::from_utf8_lossy(r.as_os_str().as_bytes()).into_owned()),
        Err(e) => Err(FsError::os(&e, "realpath", p)),
    }
}

/// realpath tolerating a missing suffix: resolve the longest existing prefix and re-append
/// the rest. Iterative: the original recursed once per component, which overflowed the
/// stack (SIGSEGV of the host) on a path of ~10k components. The prefix is found by
/// bisection, so a long path costs O(log n) realpath calls rather than n. Bisection needs
/// resolvability to be monotonic in the prefix length, which it is (resolving `a/b` resolves
/// `a` first); were a racing change to break it for an instant, the result is still checked
/// against the root and every later open goes through the root's descriptor.
fn realpath_tolerant(p: &str) -> String {
    if let Ok(r) = realpath(p) {
        return r;
    }
    let comps = components(p);
    let prefix = |k: usize| {
        let mut s = String::with_capacity(p.len());
        for c in &comps[..k] {
            s.push('/');
            s.push_str(c);
        }
        if s.is_empty() {
            s.push('/');
        }
        s
    };
    // Invariant: prefix(lo) resolves (0 is the filesystem root), prefix(hi) does not.
    let (mut lo, mut hi) = (0usize, comps.len());
    let mut lo_real: Option<String> = None;
    while hi - lo > 1 {
        let mid = lo + (hi - lo) / 2;
        match realpath(&prefix(mid)) {
            Ok(r) => {
                lo = mid;
                lo_real = Some(r);
            }
            Err(_) => hi = mid,
        }
    }
    // The filesystem root resolves to itself.
    let mut out = lo_real.unwrap_or_else(|| realpath("/").unwrap_or_else(|_| "/".to_string()));
    for c in &comps[lo..] {
        if !out.ends_with('/') {
            out.push('/');
        }
        out.push_str(c);
    }
    out
}

fn mkdir_p_by_path(p: &str) -> Result<(), FsError> {
    let c = cstring(p)?;
    // Also bounds std's create_dir_all, which recurses once per missing component.
    if p.len() >= PATH_MAX {
        return Err(FsError::Os(libc::ENAMETOOLONG, "mkdir", Some(p.to_string())));
    }
    std::fs::create_dir_all(Path::new(std::ffi::OsStr::from_bytes(c.as_bytes())))
        .map_err(|e| FsError::os(&e, "mkdir", p))
}

/// `resolvePathWithinCwd(inputPath, context, { ensureRoot })`.
pub fn resolve_path_within_cwd(input: &str, spec: &SandboxSpec, ensure_root: bool) -> Result<Resolved, String> {
    let Some(root_in) = &spec.root else {
        return Ok(Resolved {
            path: input.to_string(),
            root: "/".to_string(),
            candidate: resolve(&spec.process_cwd, input),
            sandbox: Sandbox::disabled(),
        });
    };
    if !input.starts_with('/') {
        return Err(format!("Path \"{input}\" must be absolute. Built-in filesystem tools require absolute paths."));
    }
    let root = resolve(&spec.process_cwd, root_in);
    let real_root = match realpath(&root) {
        Ok(r) => r,
        Err(e) if !ensure_root => {
            return Err(format!("Could not resolve working directory \"{root}\": {}", e.message()))
        }
        Err(_) => match mkdir_p_by_path(&root).and_then(|_| realpath(&root)) {
            Ok(r) => r,
            Err(e) => return Err(format!("Could not create or resolve working directory \"{root}\": {}", e.message())),
        },
    };
    let candidate = resolve(&spec.process_cwd, input);
    if !is_within(&root, &candidate) {
        return Err(outside_error(&candidate, &real_root));
    }
    let real_candidate = realpath_tolerant(&candidate);
    if !is_within(&real_root, &real_candidate) {
        return Err(outside_error(&candidate, &real_root));
    }
    let sandbox = match Sandbox::open_root(&real_root) {
        Ok(s) => s,
        Err(e) => return Err(format!("Could not resolve working directory \"{root}\": {}", e.message())),
    };
    Ok(Resolved { path: real_candidate, root: real_root, candidate, sandbox })
}

// ---------------------------------------------------------------------------------------
// Race-free access relative to the root's file descriptor.

/// A handle that only names a file: Linux's `O_PATH`, or its portable stand-in (see oma-os).
pub(crate) use oma_os::fs::O_PATH;

/// 0 = unknown, 1 = openat2 works, 2 = missing (ENOSYS) → component walk.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
static OPENAT2: std::sync::atomic::AtomicU8 = std::sync::atomic::AtomicU8::new(0);

/// Test hook: exercise the component-walk path on kernels that do have openat2.
static FORCE_FALLBACK: AtomicBool = AtomicBool::new(false);

pub fn force_component_walk(on: bool) {
    FORCE_FALLBACK.store(on, Ordering::Relaxed);
}

#[cfg(all(target_os = "linux", not(feature = "portable")))]
fn openat2_disabled() -> bool {
    FORCE_FALLBACK.load(Ordering::Relaxed) || OPENAT2.load(Ordering::Relaxed) == 2
}

/// File type bits of `name` in `dir` (not following a symlink), `None` if it cannot be stat'ed.
fn kind_at(dir: BorrowedFd<'_>, name: &CStr) -> Option<libc::mode_t> {
    fs::fstatat_nofollow(dir, name).ok().map(|st| fs::file_type(&st))
}

/// Fallback resolution: every component opened relative to the previous one, never
/// following a symlink. The resolved path was symlink-free when checked, so a symlink met
/// here was swapped in afterwards: refused as an escape.
fn open_components(root: BorrowedFd<'_>, rel: &[&str], flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    let mut cur: Option<OwnedFd> = None;
    for (i, comp) in rel.iter().enumerate() {
        let dir = cur.as_ref().map_or(root, |f| f.as_fd());
        let name = CString::new(*comp).map_err(|_| libc::EINVAL)?;
        if *comp == ".." {
            return Err(libc::EXDEV);
        }
        let last = i + 1 == rel.len();
        let f = if last { flags | libc::O_NOFOLLOW } else { O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW };
        match fs::openat(dir, &name, f, mode) {
            // O_PATH | O_NOFOLLOW opens a symlink itself instead of failing: refuse it too.
            Ok(fd)
                if cfg!(all(target_os = "linux", not(feature = "portable")))
                    && last
                    && flags & O_PATH != 0
                    && fs::fstat(fd.as_fd()).is_ok_and(|st| fs::file_type(&st) == libc::S_IFLNK) =>
            {
                return Err(libc::EXDEV)
            }
            Ok(fd) => cur = Some(fd),
            Err(e @ (libc::ELOOP | libc::ENOTDIR)) => {
                // A symlink, or a directory again after a swap back: a swap raced with us.
                let swapped = match kind_at(dir, &name) {
                    Some(libc::S_IFLNK) => true,
                    Some(libc::S_IFDIR) => !last,
                    _ => false,
                };
                return Err(if swapped { libc::EXDEV } else { e });
            }
            Err(e) => return Err(e),
        }
    }
    match cur {
        Some(fd) => Ok(fd),
        // The root itself.
        None => fs::openat(root, c".", flags, mode),
    }
}

/// The handle all I/O of one tool call goes through.
#[derive(Debug)]
pub struct Sandbox {
    /// `None`: sandbox disabled, paths are opened as given.
    root: Option<(OwnedFd, String)>,
}

impl Sandbox {
    pub fn disabled() -> Sandbox {
        Sandbox { root: None }
    }

    pub fn open_root(real_root: &str) -> Result<Sandbox, FsError> {
        let c = cstring(real_root)?;
        let fd = fs::openat(fs::cwd(), &c, O_PATH | libc::O_DIRECTORY, 0)
            .map_err(|e| FsError::Os(e, "open", Some(real_root.to_string())))?;
        Ok(Sandbox { root: Some((fd, real_root.to_string())) })
    }

    pub fn is_enabled(&self) -> bool {
        self.root.is_some()
    }

    /// Components of `path` below the root (empty for the root itself).
    fn rel<'a>(root: &str, path: &'a str) -> Result<Vec<&'a str>, i32> {
        let rest = if root == "/" {
            path
        } else {
            match path.strip_prefix(root) {
                Some(r) if r.is_empty() || r.starts_with('/') => r,
                _ => return Err(libc::EXDEV),
            }
        };
        Ok(components(rest))
    }

    /// Opens `path` (a path returned by the resolution). Errors carry `syscall` and `path`
    /// like Node's; an escape attempt yields [`FsError::Escape`].
    pub fn open(&self, path: &str, flags: i32, mode: u32, syscall: &'static str) -> Result<OwnedFd, FsError> {
        let cpath = cstring(path)?;
        if path.len() >= PATH_MAX {
            return Err(FsError::Os(libc::ENAMETOOLONG, syscall, Some(path.to_string())));
        }
        let res = match &self.root {
            None => fs::openat(fs::cwd(), &cpath, flags, mode),
            Some((fd, root)) => Self::rel(root, path).and_then(|rel| open_beneath(fd.as_fd(), &rel, flags, mode)),
        };
        res.map_err(|e| {
            if e == libc::EXDEV && self.root.is_some() {
                FsError::Escape
            } else {
                FsError::Os(e, syscall, Some(path.to_string()))
            }
        })
    }

    /// `mkdir -p dir` (Node's recursive mkdir error codes: ENOTDIR for a file in the middle,
    /// EEXIST for a file at the end, the message naming `dir`).
    pub fn mkdir_p(&self, dir: &str) -> Result<(), FsError> {
        cstring(dir)?;
        if dir.len() >= PATH_MAX {
            return Err(FsError::Os(libc::ENAMETOOLONG, "mkdir", Some(dir.to_string())));
        }
        let Some((rootfd, root)) = &self.root else {
            return mkdir_p_by_path(dir);
        };
        let rel = Self::rel(root, dir).map_err(|_| FsError::Escape)?;
        let err = |e: i32| FsError::Os(e, "mkdir", Some(dir.to_string()));
        let mut cur: Option<OwnedFd> = None;
        for (i, comp) in rel.iter().enumerate() {
            let parent = cur.as_ref().map_or(rootfd.as_fd(), |f| f.as_fd());
            let name = CString::new(*comp).map_err(|_| FsError::NulByte(dir.to_string()))?;
            let last = i + 1 == rel.len();
            let mut created = false;
            let mut retries = 0;
            let fd = loop {
                match fs::openat(parent, &name, O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0) {
                    Ok(fd) => break fd,
                    Err(libc::ENOENT) if !created => {
                        match fs::mkdirat(parent, &name, 0o777) {
                            Ok(()) | Err(libc::EEXIST) => {}
                            Err(e) => return Err(err(e)),
                        }
                        created = true;
                    }
                    Err(libc::ELOOP | libc::ENOTDIR) => match kind_at(parent, &name) {
                        // A symlink here was swapped in after resolution.
                        Some(libc::S_IFLNK) => return Err(FsError::Escape),
                        // Swapped back to a directory meanwhile: look again (bounded).
                        Some(libc::S_IFDIR) if retries < 8 => retries += 1,
                        Some(libc::S_IFDIR) => return Err(FsError::Escape),
                        _ => return Err(err(if last { libc::EEXIST } else { libc::ENOTDIR })),
                    },
                    Err(e) => return Err(err(e)),
                }
            };
            cur = Some(fd);
        }
        Ok(())
    }
}

/// openat2 (Linux ≥ 5.6) where it exists, else the component walk; other OSes, and the
/// `portable` feature, always walk.
fn open_beneath(root: BorrowedFd<'_>, rel: &[&str], flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    #[cfg(all(target_os = "linux", not(feature = "portable")))]
    if !openat2_disabled() {
        let joined = if rel.is_empty() { ".".to_string() } else { rel.join("/") };
        let c = CString::new(joined).map_err(|_| libc::EINVAL)?;
        match fs::openat2_beneath(root, &c, flags, mode) {
            Err(libc::ENOSYS) => OPENAT2.store(2, Ordering::Relaxed),
            other => {
                OPENAT2.store(1, Ordering::Relaxed);
                return other;
            }
        }
    }
    open_components(root, rel, flags, mode)
}

/// The type of a file for the refusal text, `None` for a regular file or a directory.
fn special_kind(mode: libc::mode_t) -> Option<&'static str> {
    match mode & libc::S_IFMT {
        libc::S_IFREG | libc::S_IFDIR => None,
        libc::S_IFIFO => Some("a FIFO"),
        libc::S_IFCHR => Some("a character device"),
        libc::S_IFBLK => Some("a block device"),
        libc::S_IFSOCK => Some("a socket"),
        libc::S_IFLNK => Some("a symbolic link"),
        _ => Some("an unknown file type"),
    }
}

/// Reads up to `limit` bytes; more is [`FsError::TooLarge`]. `read` errors carry no path, like
/// Node's readFile.
fn read_bounded(fd: &OwnedFd, size_hint: u64, limit: u64) -> Result<Vec<u8>, FsError> {
    let mut buf: Vec<u8> = Vec::with_capacity(size_hint.min(limit) as usize + 1);
    loop {
        if buf.len() as u64 > limit {
            return Err(FsError::TooLarge(None));
        }
        if buf.capacity() - buf.len() < 8192 {
            buf.reserve(buf.capacity().clamp(64 * 1024, 8 << 20));
        }
        // Never more than one byte past the limit: that byte tells "too large".
        let room = (buf.capacity() - buf.len()).min((limit + 1 - buf.len() as u64) as usize);
        match fs::read_append(fd.as_fd(), &mut buf, room) {
            Ok(0) => return Ok(buf),
            Ok(_) | Err(libc::EINTR) => {}
            Err(e) => return Err(FsError::Os(e, "read", None)),
        }
    }
}

/// Names of temporary files: unique per process and call; the O_EXCL create retries on a
/// clash with anything already there.
static TMP_SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

fn tmp_name() -> CString {
    let seq = TMP_SEQ.fetch_add(1, Ordering::Relaxed);
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    // Short and fixed-length, so the target's own name (up to NAME_MAX) never makes the
    // temporary name too long.
    CString::new(format!(".oma-write-{}-{seq}-{nanos:x}.tmp", std::process::id())).expect("no NUL")
}

impl Sandbox {
    /// Reads the whole of a regular file at `path` (a resolved path). Opened with O_NONBLOCK
    /// (a FIFO without a writer must not block the open) and checked with fstat on that same
    /// descriptor: a FIFO, device or socket is refused without a read; a directory keeps
    /// Node's text (`EISDIR ..., read`). At most [`MAX_FILE_BYTES`] are read.
    pub fn read_file(&self, path: &str) -> Result<Vec<u8>, FsError> {
        self.read_file_limited(path, MAX_FILE_BYTES)
    }

    pub(crate) fn read_file_limited(&self, path: &str, limit: u64) -> Result<Vec<u8>, FsError> {
        let fd = self.open(path, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY, 0, "open")?;
        let st = fs::fstat(fd.as_fd()).map_err(|e| FsError::Os(e, "fstat", None))?;
        if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
            return Err(FsError::Os(libc::EISDIR, "read", None));
        }
        if let Some(kind) = special_kind(st.st_mode) {
            return Err(FsError::NotRegular(kind));
        }
        // A sparse or huge file is refused before reading a byte; a file that grows while
        // being read is caught by the bounded read.
        if st.st_size as u64 > limit {
            return Err(FsError::TooLarge(Some(st.st_size as u64)));
        }
        read_bounded(&fd, st.st_size as u64, limit)
    }

    /// Replaces the content of the file at `path` (a resolved path; its parent directory
    /// exists) with `data`, or creates it.
    ///
    /// Written to a new temporary file in the same directory (created beneath the root like
    /// every other open), given the old file's owner and mode, fsync'ed, then renamed over
    /// the target. So a hard link inside the root to a file outside it is replaced rather
    /// than written through (the original's O_TRUNC rewrote the outside file), and a crash
    /// mid-write leaves the old content intact. Only where the directory forbids creating
    /// the temporary file (EACCES / EPERM) is a file with a single link rewritten in place,
    /// as Node would; a multiply-linked one is then refused with that error.
    ///
    /// Errors keep Node's shapes: `EISDIR ..., open '<path>'` for a directory, the open's
    /// error for the path, `write` errors without a path.
    pub fn write_file(&self, path: &str, data: &[u8]) -> Result<(), FsError> {
        self.write_file_at(path, data, true)
    }

    fn write_file_at(&self, path: &str, data: &[u8], follow: bool) -> Result<(), FsError> {
        let os = |e: i32, syscall: &'static str| FsError::Os(e, syscall, Some(path.to_string()));
        // The target as an open by path would see it: a symlink loop fails ELOOP here, an
        // escape is refused, a directory gets Node's text.
        match self.open(path, O_PATH, 0, "open") {
            Ok(fd) => {
                let st = fs::fstat(fd.as_fd()).map_err(|e| os(e, "open"))?;
                if st.st_mode & libc::S_IFMT == libc::S_IFDIR {
                    return Err(os(libc::EISDIR, "open"));
                }
                if let Some(kind) = special_kind(st.st_mode) {
                    return Err(FsError::NotRegular(kind));
                }
            }
            Err(FsError::Os(libc::ENOENT, ..)) => {}
            Err(e) => return Err(e),
        }
        // Only with the sandbox disabled (verbatim paths): `x/` names a directory.
        if path.ends_with('/') {
            return Err(os(libc::EISDIR, "open"));
        }
        let name = cstring(basename(path))?;
        let dir = self.open(dirname(path), O_PATH | libc::O_DIRECTORY, 0, "open").map_err(|e| match e {
            FsError::Os(e, ..) => os(e, "open"),
            e => e,
        })?;
        let dirfd = dir.as_fd();
        // From here on only (dirfd, name): the entry itself, never what a symlink points to.
        let old = match fs::fstatat_nofollow(dirfd, &name) {
            Ok(st) => match st.st_mode & libc::S_IFMT {
                libc::S_IFREG => Some(st),
                libc::S_IFDIR => return Err(os(libc::EISDIR, "open")),
                libc::S_IFLNK if self.root.is_none() => {
                    // No sandbox: a symlink is written through, as Node does; replace what it
                    // leads to, or (dangling, loop) open it the way Node would.
                    return match realpath(path) {
                        Ok(real) if follow => self.write_file_at(&real, data, false),
                        _ => write_through_symlink(path, data),
                    };
                }
                // The resolution left no symlink here: one now was swapped in, or dangles.
                libc::S_IFLNK => return Err(FsError::Escape),
                m => return Err(FsError::NotRegular(special_kind(m).unwrap_or("an unknown file type"))),
            },
            Err(libc::ENOENT) => None,
            Err(e) => return Err(os(e, "open")),
        };
        let mut attempts = 0;
        let (tmp, tmpfd) = loop {
            let tmp = tmp_name();
            match fs::openat(dirfd, &tmp, libc::O_WRONLY | libc::O_CREAT | libc::O_EXCL | libc::O_NOFOLLOW, 0o666) {
                Ok(fd) => break (tmp, fd),
                Err(libc::EEXIST) if attempts < 16 => attempts += 1,
                Err(e @ (libc::EACCES | libc::EPERM)) => {
                    return match write_in_place(dirfd, &name, old.is_some(), data) {
                        Some(r) => r.map_err(|e| FsError::Os(e, "write", None)),
                        None => Err(os(e, "open")),
                    }
                }
                Err(e) => return Err(os(e, "open")),
            }
        };
        let unlink_tmp = || {
            let _ = fs::unlinkat(dirfd, &tmp);
        };
        if let Some(st) = &old {
            // Owner first, then the mode without the set-id and sticky bits (KEPT_MODE_BITS).
            // Either may be refused (another user's file): best effort, the content is what
            // matters.
            if fs::fchown(tmpfd.as_fd(), st.st_uid, st.st_gid).is_err() {
                let _ = fs::fchown(tmpfd.as_fd(), u32::MAX, st.st_gid);
            }
            let _ = fs::fchmod(tmpfd.as_fd(), st.st_mode & KEPT_MODE_BITS);
        }
        if let Err(e) = fs::write_all(tmpfd.as_fd(), data) {
            unlink_tmp();
            return Err(FsError::Os(e, "write", None));
        }
        if let Err(e) = fs::fsync(tmpfd.as_fd()) {
            unlink_tmp();
            return Err(FsError::Os(e, "fsync", None));
        }
        drop(tmpfd);
        if let Err(e) = fs::renameat(dirfd, &tmp, &name) {
            unlink_tmp();
            return Err(os(e, "rename"));
        }
        // Make the rename itself durable; best effort (the directory may not be readable).
        if let Ok(d) = fs::openat(dirfd, c".", libc::O_RDONLY | libc::O_DIRECTORY, 0) {
            let _ = fs::fsync(d.as_fd());
        }
        Ok(())
    }
}

/// The mode bits a rewritten file keeps: the permission bits only. Set-user-id, set-group-id
/// and sticky bits are dropped, as the kernel drops set-id bits when a process without
/// `CAP_FSETID` writes a file: Node running as root keeps that capability, so without this a
/// set-id file a confined command left (or a program anyone could swap in) would get the
/// model's content and keep its privilege.
const KEPT_MODE_BITS: libc::mode_t = 0o777;

/// Drops the set-id and sticky bits of a file rewritten in place (best effort: the file may
/// be another user's).
fn drop_special_bits(fd: BorrowedFd<'_>, mode: libc::mode_t) {
    if mode & 0o7000 != 0 {
        let _ = fs::fchmod(fd, mode & KEPT_MODE_BITS);
    }
}

/// Sandbox disabled, a symlink that does not resolve (dangling: Node creates its target;
/// a loop: ELOOP): opened by path as Node's writeFile would, refusing a non-regular file.
fn write_through_symlink(path: &str, data: &[u8]) -> Result<(), FsError> {
    let c = cstring(path)?;
    let fd = fs::openat(fs::cwd(), &c, libc::O_WRONLY | libc::O_CREAT | libc::O_NONBLOCK | libc::O_NOCTTY, 0o666)
        .map_err(|e| FsError::Os(e, "open", Some(path.to_string())))?;
    let st = fs::fstat(fd.as_fd()).map_err(|e| FsError::Os(e, "open", Some(path.to_string())))?;
    if let Some(kind) = special_kind(st.st_mode) {
        return Err(FsError::NotRegular(kind));
    }
    drop_special_bits(fd.as_fd(), st.st_mode);
    fs::truncate_to_empty(fd.as_fd()).map_err(|e| FsError::Os(e, "write", None))?;
    fs::write_all(fd.as_fd(), data).map_err(|e| FsError::Os(e, "write", None))
}

/// The fallback of [`Sandbox::write_file`] for a directory that forbids new files: rewrite
/// in place, only an existing regular file with a single link (checked on the opened
/// descriptor, so a link added or a FIFO swapped in meanwhile is caught; O_NONBLOCK keeps a
/// FIFO from blocking the open). `None`: not applicable, the caller reports its own error.
fn write_in_place(dirfd: BorrowedFd<'_>, name: &CStr, existed: bool, data: &[u8]) -> Option<Result<(), i32>> {
    if !existed {
        return None;
    }
    let fd = fs::openat(dirfd, name, libc::O_WRONLY | libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY, 0).ok()?;
    let st = fs::fstat(fd.as_fd()).ok()?;
    if st.st_mode & libc::S_IFMT != libc::S_IFREG || st.st_nlink != 1 {
        return None;
    }
    drop_special_bits(fd.as_fd(), st.st_mode);
    if let Err(e) = fs::truncate_to_empty(fd.as_fd()) {
        return Some(Err(e));
    }
    Some(fs::write_all(fd.as_fd(), data))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicU8;

    #[test]
    fn path_helpers() {
        assert_eq!(resolve("/a/b", "../c/./d/"), "/a/c/d");
        assert_eq!(resolve("/a", "/x//y/.."), "/x");
        assert_eq!(resolve("/", ".."), "/");
        assert_eq!(relative("/a/b", "/a/b"), "");
        assert_eq!(relative("/a/b", "/a/c/d"), "../c/d");
        assert_eq!(relative("/", "/x/y"), "x/y");
        assert!(is_within("/r", "/r"));
        assert!(is_within("/r", "/r/..cache"));
        assert!(is_within("/r", "/r/a/..b"));
        assert!(!is_within("/r", "/r2"));
        assert!(!is_within("/r", "/"));
        assert_eq!(dirname("/a/b"), "/a");
        assert_eq!(dirname("/a"), "/");
        assert_eq!(basename("/a/b.txt"), "b.txt");
    }

    #[test]
    fn node_error_texts() {
        assert_eq!(
            FsError::Os(libc::ENOENT, "open", Some("/x".into())).message(),
            "ENOENT: no such file or directory, open '/x'"
        );
        assert_eq!(FsError::Os(libc::EISDIR, "read", None).message(), "EISDIR: illegal operation on a directory, read");
        assert_eq!(
            FsError::NulByte("/t/it's\0".into()).message(),
            "The argument 'path' must be a string, Uint8Array, or URL without null bytes. Received \"/t/it's\\x00\""
        );
    }

    fn tmp() -> String {
        let base = std::env::temp_dir().join(format!("oma-ps-{}-{}", std::process::id(), rand_suffix()));
        std::fs::create_dir_all(&base).unwrap();
        std::fs::canonicalize(base).unwrap().to_string_lossy().into_owned()
    }

    fn rand_suffix() -> u64 {
        use std::time::{SystemTime, UNIX_EPOCH};
        static N: AtomicU8 = AtomicU8::new(0);
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64
            + N.fetch_add(1, Ordering::Relaxed) as u64
    }

    #[test]
    fn escapes_refused_in_both_modes() {
        let dir = tmp();
        let root = format!("{dir}/root");
        let outside = format!("{dir}/outside");
        std::fs::create_dir_all(&root).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::os::unix::fs::symlink(&outside, format!("{root}/link")).unwrap();
        let sb = Sandbox::open_root(&root).unwrap();
        // A symlink component (as after a swap) must not be followed outside.
        for disable in [false, true] {
            force_component_walk(disable);
            let r = sb.open(&format!("{root}/link/new.txt"), libc::O_WRONLY | libc::O_CREAT, 0o666, "open");
            assert_eq!(r.unwrap_err(), FsError::Escape);
            assert_eq!(sb.mkdir_p(&format!("{root}/link/sub")).unwrap_err(), FsError::Escape);
            assert!(!Path::new(&format!("{outside}/new.txt")).exists());
            assert!(!Path::new(&format!("{outside}/sub")).exists());
            sb.mkdir_p(&format!("{root}/a/b")).unwrap();
            sb.write_file(&format!("{root}/a/b/f.txt"), b"hi").unwrap();
            assert_eq!(std::fs::read(format!("{root}/a/b/f.txt")).unwrap(), b"hi");
        }
        force_component_walk(false);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn deep_paths_resolve_without_recursion() {
        use crate::tool::builtin::testutil::{rm_rf, small_stack, tmp_dir};
        let root = tmp_dir("ps-deep");
        std::fs::create_dir_all(format!("{root}/x/y")).unwrap();
        std::os::unix::fs::symlink(format!("{root}/x"), format!("{root}/l")).unwrap();
        let spec = SandboxSpec { root: Some(root.clone()), process_cwd: "/".into() };
        // ~20k components: the recursive resolver overflowed even an 8 MiB stack here.
        let tail = vec!["a"; 20_000].join("/");
        let (s2, t2) = (spec.clone(), tail.clone());
        let r = small_stack(move || {
            resolve_path_within_cwd(&format!("{}/l/y/{t2}", s2.root.as_ref().unwrap()), &s2, false).map(|r| r.path)
        });
        // The longest existing prefix is resolved (the symlink replaced), the rest re-appended.
        assert_eq!(r.unwrap(), format!("{root}/x/y/{tail}"));
        // Short paths resolve as before.
        let r = resolve_path_within_cwd(&format!("{root}/l/y/new/file.txt"), &spec, false).unwrap();
        assert_eq!(r.path, format!("{root}/x/y/new/file.txt"));
        let r = resolve_path_within_cwd(&format!("{root}/l"), &spec, false).unwrap();
        assert_eq!(r.path, format!("{root}/x"));
        // Opening it fails like Node's open of an over-long path.
        let long = format!("{root}/{tail}");
        let r = resolve_path_within_cwd(&long, &spec, false).unwrap();
        assert_eq!(
            r.sandbox.read_file(&r.path).unwrap_err(),
            FsError::Os(libc::ENAMETOOLONG, "open", Some(long.clone()))
        );
        assert_eq!(r.sandbox.mkdir_p(&long).unwrap_err(), FsError::Os(libc::ENAMETOOLONG, "mkdir", Some(long.clone())));
        rm_rf(&root);
    }

    #[test]
    fn a_rewrite_never_keeps_set_id_or_sticky_bits() {
        use crate::tool::builtin::testutil::{rm_rf, tmp_dir};
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let base = tmp_dir("ps-setid");
        let root = format!("{base}/root");
        std::fs::create_dir_all(&root).unwrap();
        let mode = |p: &str| std::fs::metadata(p).unwrap().mode() & 0o7777;
        for (name, bits) in [("suid", 0o4755), ("sgid", 0o2750), ("both", 0o6711), ("sticky", 0o1644)] {
            let p = format!("{root}/{name}");
            std::fs::write(&p, "old\n").unwrap();
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(bits)).unwrap();
            // A non-root user not in the file's group cannot set its set-gid bit: nothing to test.
            if mode(&p) != bits {
                continue;
            }
            // Replaced (the sandbox), rewritten without one, and rewritten in place.
            Sandbox::open_root(&root).unwrap().write_file(&p, b"new\n").unwrap();
            assert_eq!((name, mode(&p)), (name, bits & 0o777));
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(bits)).unwrap();
            Sandbox::disabled().write_file(&p, b"newer\n").unwrap();
            assert_eq!((name, mode(&p)), (name, bits & 0o777));
            std::fs::set_permissions(&p, std::fs::Permissions::from_mode(bits)).unwrap();
            let dir = std::fs::File::open(&root).unwrap();
            let c = std::ffi::CString::new(name).unwrap();
            assert_eq!(write_in_place(dir.as_fd(), &c, true, b"in place\n"), Some(Ok(())));
            assert_eq!((name, mode(&p)), (name, bits & 0o777));
            assert_eq!(std::fs::read_to_string(&p).unwrap(), "in place\n");
        }
        rm_rf(&base);
    }

    #[test]
    fn write_replaces_hard_links_and_keeps_mode() {
        use crate::tool::builtin::testutil::{hard_link_from_outside, rm_rf};
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        let (base, root, outside) = hard_link_from_outside("ps-link", "outside.txt", "outside\n", "link.txt");
        // One inode: the link has this mode too.
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o640)).unwrap();
        let sb = Sandbox::open_root(&root).unwrap();
        sb.write_file(&format!("{root}/link.txt"), b"inside\n").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "outside\n");
        assert_eq!(std::fs::metadata(&outside).unwrap().nlink(), 1);
        let inside = std::fs::metadata(format!("{root}/link.txt")).unwrap();
        assert_eq!(std::fs::read_to_string(format!("{root}/link.txt")).unwrap(), "inside\n");
        // The replaced file keeps the old one's mode and owner.
        assert_eq!(inside.mode() & 0o7777, 0o640);
        assert_eq!(inside.uid(), std::fs::metadata(&outside).unwrap().uid());
        // Executable bits survive a rewrite too; no temporary file is left behind.
        std::fs::write(format!("{root}/run.sh"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(format!("{root}/run.sh"), std::fs::Permissions::from_mode(0o755)).unwrap();
        sb.write_file(&format!("{root}/run.sh"), b"#!/bin/sh\necho hi\n").unwrap();
        assert_eq!(std::fs::metadata(format!("{root}/run.sh")).unwrap().mode() & 0o7777, 0o755);
        let mut names: Vec<String> =
            std::fs::read_dir(&root).unwrap().map(|e| e.unwrap().file_name().to_string_lossy().into_owned()).collect();
        names.sort();
        assert_eq!(names, ["link.txt", "run.sh"]);
        // A directory at the target keeps Node's text; nothing is created.
        std::fs::create_dir(format!("{root}/dir")).unwrap();
        assert_eq!(
            sb.write_file(&format!("{root}/dir"), b"x").unwrap_err().message(),
            format!("EISDIR: illegal operation on a directory, open '{root}/dir'")
        );
        rm_rf(&base);
    }

    #[test]
    fn write_in_a_read_only_directory_falls_back_only_for_single_links() {
        use crate::tool::builtin::testutil::{rm_rf, tmp_dir};
        use std::os::unix::fs::PermissionsExt;
        if oma_os::process::is_superuser() {
            return; // root ignores directory permissions: nothing to test
        }
        let root = tmp_dir("ps-ro");
        std::fs::create_dir(format!("{root}/ro")).unwrap();
        std::fs::write(format!("{root}/ro/single.txt"), "old").unwrap();
        std::fs::write(format!("{root}/ro/linked.txt"), "old").unwrap();
        std::fs::hard_link(format!("{root}/ro/linked.txt"), format!("{root}/other.txt")).unwrap();
        std::fs::set_permissions(format!("{root}/ro"), std::fs::Permissions::from_mode(0o555)).unwrap();
        let sb = Sandbox::open_root(&root).unwrap();
        sb.write_file(&format!("{root}/ro/single.txt"), b"new").unwrap();
        assert_eq!(std::fs::read_to_string(format!("{root}/ro/single.txt")).unwrap(), "new");
        let e = sb.write_file(&format!("{root}/ro/linked.txt"), b"new").unwrap_err();
        assert_eq!(e.message(), format!("EACCES: permission denied, open '{root}/ro/linked.txt'"));
        assert_eq!(std::fs::read_to_string(format!("{root}/other.txt")).unwrap(), "old");
        std::fs::set_permissions(format!("{root}/ro"), std::fs::Permissions::from_mode(0o755)).unwrap();
        rm_rf(&root);
    }

    #[test]
    fn non_regular_files_are_refused_without_blocking() {
        use crate::tool::builtin::testutil::{rm_rf, with_fifo};
        let (root, (read, write)) = with_fifo("ps-fifo", &[], "fifo", "FIFO read/write", |root, fifo| {
            let sb = Sandbox::open_root(root).unwrap();
            (sb.read_file(fifo), sb.write_file(fifo, b"x"))
        });
        assert_eq!(read.unwrap_err(), FsError::NotRegular("a FIFO"));
        assert_eq!(write.unwrap_err(), FsError::NotRegular("a FIFO"));
        assert_eq!(
            FsError::NotRegular("a FIFO").message(),
            "not a regular file (a FIFO): the built-in file tools only read and write regular files"
        );
        // Devices, with the sandbox disabled: refused before a byte is read.
        let open = Sandbox::disabled();
        assert_eq!(open.read_file("/dev/zero").unwrap_err(), FsError::NotRegular("a character device"));
        assert_eq!(open.write_file("/dev/null", b"x").unwrap_err(), FsError::NotRegular("a character device"));
        rm_rf(&root);
    }

    #[test]
    fn reads_are_bounded() {
        use crate::tool::builtin::testutil::{rm_rf, tmp_dir};
        let root = tmp_dir("ps-big");
        // A sparse file just over the limit: refused from its size, nothing read.
        let f = std::fs::File::create(format!("{root}/sparse")).unwrap();
        f.set_len(MAX_FILE_BYTES + 1).unwrap();
        let sb = Sandbox::open_root(&root).unwrap();
        let e = sb.read_file(&format!("{root}/sparse")).unwrap_err();
        assert_eq!(e, FsError::TooLarge(Some(MAX_FILE_BYTES + 1)));
        assert_eq!(
            e.message(),
            "file too large (33554433 bytes): the built-in file tools read files of at most 33554432 bytes (32 MiB); use grep to search a larger file"
        );
        f.set_len(MAX_FILE_BYTES).unwrap();
        assert_eq!(sb.read_file(&format!("{root}/sparse")).unwrap().len() as u64, MAX_FILE_BYTES);
        // A source that says nothing of its size (a pipe) is cut one byte past the limit.
        let (rd, wr) = oma_os::process::pipe_cloexec().unwrap();
        fs::write_all(wr.as_fd(), &[b'x'; 100]).unwrap();
        drop(wr);
        assert_eq!(read_bounded(&rd, 0, 10).unwrap_err(), FsError::TooLarge(None));
        rm_rf(&root);
    }
}
