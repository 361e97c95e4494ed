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
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};

pub const DEFAULT_WORKSPACE_DIRNAME: &str = ".agent-workspace";

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
/// the rest.
fn realpath_tolerant(p: &str) -> String {
    match realpath(p) {
        Ok(r) => r,
        Err(_) => {
            let parent = dirname(p);
            if parent == p {
                return p.to_string();
            }
            join(&realpath_tolerant(parent), basename(p))
        }
    }
}

fn mkdir_p_by_path(p: &str) -> Result<(), FsError> {
    let c = cstring(p)?;
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
        return Err(format!(
            "Path \"{input}\" must be absolute. Built-in filesystem tools require absolute paths."
        ));
    }
    let root = resolve(&spec.process_cwd, root_in);
    let real_root = match realpath(&root) {
        Ok(r) => r,
        Err(e) if !ensure_root => {
            return Err(format!("Could not resolve working directory \"{root}\": {}", e.message()))
        }
        Err(_) => match mkdir_p_by_path(&root).and_then(|_| realpath(&root)) {
            Ok(r) => r,
            Err(e) => {
                return Err(format!(
                    "Could not create or resolve working directory \"{root}\": {}",
                    e.message()
                ))
            }
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

const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
const RESOLVE_BENEATH: u64 = 0x08;

#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// 0 = unknown, 1 = openat2 works, 2 = missing (ENOSYS) → component walk.
static OPENAT2: AtomicU8 = AtomicU8::new(0);

/// Test hook: exercise the component-walk path on kernels that do have openat2.
static FORCE_FALLBACK: AtomicBool = AtomicBool::new(false);

pub fn force_component_walk(on: bool) {
    FORCE_FALLBACK.store(on, Ordering::Relaxed);
}

fn openat2_disabled() -> bool {
    FORCE_FALLBACK.load(Ordering::Relaxed) || OPENAT2.load(Ordering::Relaxed) == 2
}

fn last_errno() -> i32 {
    io::Error::last_os_error().raw_os_error().unwrap_or(libc::EIO)
}

fn fd_from(ret: libc::c_long) -> Result<OwnedFd, i32> {
    if ret < 0 {
        Err(last_errno())
    } else {
        // SAFETY: the syscall returned a fresh descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(ret as RawFd) })
    }
}

fn sys_openat(dirfd: RawFd, name: &CStr, flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    loop {
        // SAFETY: valid NUL-terminated path; dirfd is a live descriptor or AT_FDCWD.
        let r = unsafe { libc::openat(dirfd, name.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) };
        match fd_from(r as libc::c_long) {
            Err(libc::EINTR) => continue,
            other => return other,
        }
    }
}

fn sys_openat2(dirfd: RawFd, path: &CStr, flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    let creating = flags & libc::O_CREAT != 0;
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u32 as u64,
        mode: if creating { mode as u64 } else { 0 },
        resolve: RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    let mut attempts = 0;
    loop {
        // SAFETY: `how` is a valid open_how of the size passed; path is NUL-terminated.
        let r = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dirfd,
                path.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        match fd_from(r) {
            Err(libc::EINTR) => continue,
            // EAGAIN: a concurrent rename elsewhere made the kernel unsure; retry a few times.
            Err(libc::EAGAIN) if attempts < 16 => attempts += 1,
            other => return other,
        }
    }
}

fn fd_kind(fd: &OwnedFd) -> Option<libc::mode_t> {
    // SAFETY: zeroed stat is a valid out-parameter; fd is live.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    (unsafe { libc::fstat(fd.as_raw_fd(), &mut st) } == 0).then_some(st.st_mode & libc::S_IFMT)
}

/// File type bits of `name` (not following a symlink), `None` if it cannot be stat'ed.
fn kind_at(dirfd: RawFd, name: &CStr) -> Option<libc::mode_t> {
    // SAFETY: zeroed stat is a valid out-parameter.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::fstatat(dirfd, name.as_ptr(), &mut st, libc::AT_SYMLINK_NOFOLLOW) };
    (r == 0).then_some(st.st_mode & libc::S_IFMT)
}

/// Fallback resolution: every component opened relative to the previous one, never
/// following a symlink. The resolved path was symlink-free when checked, so a symlink met
/// here was swapped in afterwards: refused as an escape.
fn open_components(root: RawFd, rel: &[&str], flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    let mut cur: Option<OwnedFd> = None;
    for (i, comp) in rel.iter().enumerate() {
        let dir = cur.as_ref().map_or(root, |f| f.as_raw_fd());
        let name = CString::new(*comp).map_err(|_| libc::EINVAL)?;
        if *comp == ".." {
            return Err(libc::EXDEV);
        }
        let last = i + 1 == rel.len();
        let f = if last { flags | libc::O_NOFOLLOW } else { libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW };
        match sys_openat(dir, &name, f, mode) {
            // O_PATH | O_NOFOLLOW opens a symlink itself instead of failing: refuse it too.
            Ok(fd) if last && flags & libc::O_PATH != 0 && fd_kind(&fd) == Some(libc::S_IFLNK) => return Err(libc::EXDEV),
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
        None => sys_openat(root, c".", flags, mode),
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
        let fd = sys_openat(libc::AT_FDCWD, &c, libc::O_PATH | libc::O_DIRECTORY, 0)
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
        let res = match &self.root {
            None => sys_openat(libc::AT_FDCWD, &cpath, flags, mode),
            Some((fd, root)) => Self::rel(root, path).and_then(|rel| open_beneath(fd.as_raw_fd(), &rel, flags, mode)),
        };
        res.map_err(|e| if e == libc::EXDEV && self.root.is_some() { FsError::Escape } else { FsError::Os(e, syscall, Some(path.to_string())) })
    }

    /// `mkdir -p dir` (Node's recursive mkdir error codes: ENOTDIR for a file in the middle,
    /// EEXIST for a file at the end, the message naming `dir`).
    pub fn mkdir_p(&self, dir: &str) -> Result<(), FsError> {
        let cdir = cstring(dir)?;
        let Some((rootfd, root)) = &self.root else {
            return mkdir_p_by_path(dir);
        };
        let _ = cdir;
        let rel = Self::rel(root, dir).map_err(|_| FsError::Escape)?;
        let err = |e: i32| FsError::Os(e, "mkdir", Some(dir.to_string()));
        let mut cur: Option<OwnedFd> = None;
        for (i, comp) in rel.iter().enumerate() {
            let parent = cur.as_ref().map_or(rootfd.as_raw_fd(), |f| f.as_raw_fd());
            let name = CString::new(*comp).map_err(|_| FsError::NulByte(dir.to_string()))?;
            let last = i + 1 == rel.len();
            let mut created = false;
            let mut retries = 0;
            let fd = loop {
                match sys_openat(parent, &name, libc::O_PATH | libc::O_DIRECTORY | libc::O_NOFOLLOW, 0) {
                    Ok(fd) => break fd,
                    Err(libc::ENOENT) if !created => {
                        // SAFETY: valid dirfd and NUL-terminated name.
                        let r = unsafe { libc::mkdirat(parent, name.as_ptr(), 0o777) };
                        if r != 0 {
                            let e = last_errno();
                            if e != libc::EEXIST {
                                return Err(err(e));
                            }
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

fn open_beneath(root: RawFd, rel: &[&str], flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    if !openat2_disabled() {
        let joined = if rel.is_empty() { ".".to_string() } else { rel.join("/") };
        let c = CString::new(joined).map_err(|_| libc::EINVAL)?;
        match sys_openat2(root, &c, flags, mode) {
            Err(libc::ENOSYS) => OPENAT2.store(2, Ordering::Relaxed),
            other => {
                OPENAT2.store(1, Ordering::Relaxed);
                return other;
            }
        }
    }
    open_components(root, rel, flags, mode)
}

/// Reads everything from a descriptor (`read` errors reported without a path, like Node's
/// readFile).
pub fn read_all(fd: &OwnedFd) -> Result<Vec<u8>, FsError> {
    use std::io::Read;
    let mut f = std::fs::File::from(fd.try_clone().map_err(|e| FsError::Os(e.raw_os_error().unwrap_or(libc::EIO), "read", None))?);
    let mut buf = Vec::new();
    f.read_to_end(&mut buf)
        .map_err(|e| FsError::Os(e.raw_os_error().unwrap_or(libc::EIO), "read", None))?;
    Ok(buf)
}

pub fn write_all(fd: OwnedFd, data: &[u8]) -> Result<(), FsError> {
    use std::io::Write;
    let mut f = std::fs::File::from(fd);
    f.write_all(data)
        .map_err(|e| FsError::Os(e.raw_os_error().unwrap_or(libc::EIO), "write", None))
}

#[cfg(test)]
mod tests {
    use super::*;

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
        SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64 + N.fetch_add(1, Ordering::Relaxed) as u64
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
            let fd = sb.open(&format!("{root}/a/b/f.txt"), libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o666, "open").unwrap();
            write_all(fd, b"hi").unwrap();
            assert_eq!(std::fs::read(format!("{root}/a/b/f.txt")).unwrap(), b"hi");
        }
        force_component_walk(false);
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
