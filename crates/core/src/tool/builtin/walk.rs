//! The shared directory walker (`fs-walk.ts`): depth-first, symlinks skipped, `SKIP_DIRS`
//! pruned at any depth, hidden entries kept. It works on directory file descriptors
//! (`openat(O_NOFOLLOW)` per step), so a directory swapped for a symlink mid-walk is never
//! entered. Entries are visited in byte order of their names (the original used the OS order,
//! which is unspecified; sorted is one valid order and makes caps deterministic).

use std::ffi::{CStr, CString};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use oma_os::fs::{self, EntryKind as Kind};

use super::path_safety::join;

pub const SKIP_DIRS: [&str; 7] = [".git", ".svn", ".hg", "node_modules", ".next", "dist", "build"];

pub fn is_skipped_dir(name: &[u8]) -> bool {
    SKIP_DIRS.iter().any(|d| d.as_bytes() == name)
}

/// Lists a directory: (name, kind), sorted by name bytes. Symlinks, FIFOs, devices and
/// sockets are `Other`: skipped entirely, never opened (a FIFO would block the open, a device
/// like /dev/zero never ends). Unreadable → empty.
fn list_dir(dir: BorrowedFd<'_>) -> Vec<(CString, Kind)> {
    let mut out = fs::list_dir(dir);
    out.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
    out
}

/// Opens the entry `name` of `dir` with `flags`, never through a symlink.
pub(crate) fn open_child(dir: BorrowedFd<'_>, name: &CStr, flags: i32) -> Option<OwnedFd> {
    fs::openat(dir, name, flags | libc::O_NOFOLLOW, 0).ok()
}

/// Opens `name` in `dir` for reading, never through a symlink. O_NONBLOCK: a FIFO
/// swapped in since the listing must not block (no effect on regular files); O_NOCTTY: a
/// terminal must not become the process's controlling one. FIFOs and devices met by the
/// listing are never opened at all (see `list_dir`).
pub fn open_file_at(dir: BorrowedFd<'_>, name: &CStr) -> Option<std::fs::File> {
    open_child(dir, name, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY).map(std::fs::File::from)
}

/// A regular file met by the walk.
pub struct FileEntry<'a> {
    /// `join(dir, name)` of the walk (names decoded as UTF-8 with U+FFFD, like Node).
    pub path: &'a str,
    /// Path relative to the walk's start directory, `/`-separated (for glob matching).
    pub rel: &'a str,
    pub name: &'a CStr,
    /// The directory's descriptor, shareable so the file can be opened later elsewhere.
    pub dir: &'a Arc<OwnedFd>,
}

impl FileEntry<'_> {
    /// Opens the file for reading without following a symlink swapped in since the listing.
    pub fn open(&self) -> Option<std::fs::File> {
        open_file_at(self.dir.as_fd(), self.name)
    }

    pub fn basename(&self) -> &str {
        match self.rel.rfind('/') {
            Some(i) => &self.rel[i + 1..],
            None => self.rel,
        }
    }
}

/// Continue or stop the walk.
pub enum Flow {
    Continue,
    Stop,
}

/// How deep below its start a walk descends. Far deeper than any real project tree (and
/// than most trees Node's own fs can reach: paths of PATH_MAX bytes or more fail there), and
/// it bounds what a walk holds: one open directory descriptor and one listing per level. A
/// deeper directory is not entered and the walk reports it ([`Walked::too_deep`]), for the
/// tools' note.
pub const MAX_WALK_DEPTH: usize = 512;

/// What a walk did not cover.
#[derive(Default, Debug, Clone, Copy, PartialEq, Eq)]
pub struct Walked {
    /// Some directory lay more than [`MAX_WALK_DEPTH`] levels down and was skipped.
    pub too_deep: bool,
}

/// Appends `name` to a `/`-joined path (`join`'s rule: no doubled slash after `/`).
fn push_name(buf: &mut String, name: &str) {
    if !buf.is_empty() && !buf.ends_with('/') {
        buf.push('/');
    }
    buf.push_str(name);
}

/// Walks the directory open at `dir` (whose path is `dir_path`), depth-first, entries in
/// name order. `cancelled` is checked before each directory and each entry; `visit` returns
/// `Flow::Stop` to end the walk.
///
/// Iterative, with an explicit stack: the original recursion per level overflowed the
/// thread's stack on a tree a few thousand levels deep and killed the host process.
pub fn walk(
    dir: &OwnedFd,
    dir_path: &str,
    cancelled: &dyn Fn() -> bool,
    visit: &mut dyn FnMut(&FileEntry) -> Flow,
) -> Walked {
    struct Frame {
        dir: Arc<OwnedFd>,
        entries: std::vec::IntoIter<(CString, Kind)>,
        /// Lengths of `path` and `rel` for this directory.
        path_len: usize,
        rel_len: usize,
    }
    let mut walked = Walked::default();
    let Ok(dup) = dir.try_clone() else { return walked };
    if cancelled() {
        return walked;
    }
    let mut path = dir_path.to_string();
    let mut rel = String::new();
    let root = Arc::new(dup);
    let mut stack =
        vec![Frame { entries: list_dir(root.as_fd()).into_iter(), dir: root, path_len: path.len(), rel_len: 0 }];
    while let Some(top) = stack.last_mut() {
        let Some((name, kind)) = top.entries.next() else {
            stack.pop();
            continue;
        };
        if cancelled() {
            return walked;
        }
        let dir = top.dir.clone();
        path.truncate(top.path_len);
        rel.truncate(top.rel_len);
        let display = String::from_utf8_lossy(name.as_bytes());
        push_name(&mut path, &display);
        push_name(&mut rel, &display);
        match kind {
            Kind::Dir if !is_skipped_dir(name.as_bytes()) => {
                // `stack.len()` is the depth of the directory being entered.
                if stack.len() > MAX_WALK_DEPTH {
                    walked.too_deep = true;
                    continue;
                }
                if cancelled() {
                    return walked;
                }
                if let Some(sub) = open_child(dir.as_fd(), &name, libc::O_RDONLY | libc::O_DIRECTORY) {
                    let entries = list_dir(sub.as_fd()).into_iter();
                    stack.push(Frame { dir: Arc::new(sub), entries, path_len: path.len(), rel_len: rel.len() });
                }
            }
            Kind::File => {
                let entry = FileEntry { path: &path, rel: &rel, name: &name, dir: &dir };
                if let Flow::Stop = visit(&entry) {
                    return walked;
                }
            }
            _ => {}
        }
    }
    walked
}

/// Parallel variant for callers that do not need walk order (glob sorts its result): the
/// directories form a shared queue served by several threads; `keep(rel)` is called for
/// every regular file and says whether to keep its path. Same skipping rules as [`walk`]:
/// symlinks never followed, `SKIP_DIRS` pruned, nothing below [`MAX_WALK_DEPTH`].
///
/// A queued directory is opened only when a thread takes it (the queue holds its parent's
/// descriptor and its name), so a directory with 100k subdirectories costs one descriptor,
/// not 100k; the queue is served last-in first-out, so the parents kept open stay about
/// one per level.
pub fn collect_parallel(
    dir: &OwnedFd,
    dir_path: &str,
    cancelled: &(dyn Fn() -> bool + Sync),
    keep: &(dyn Fn(&str) -> bool + Sync),
) -> (Vec<String>, Walked) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{Condvar, Mutex};

    struct Job {
        /// The directory itself (the start), or its parent and its name there.
        open: Result<Arc<OwnedFd>, (Arc<OwnedFd>, CString)>,
        path: String,
        rel: String,
        depth: usize,
    }
    struct Queue {
        dirs: Vec<Job>,
        active: usize,
    }
    let Ok(dup) = dir.try_clone() else { return (Vec::new(), Walked::default()) };
    let start = Job { open: Ok(Arc::new(dup)), path: dir_path.to_string(), rel: String::new(), depth: 0 };
    let queue = Mutex::new(Queue { dirs: vec![start], active: 0 });
    let ready = Condvar::new();
    let too_deep = AtomicBool::new(false);
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4);
    let results = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                let mut mine: Vec<String> = Vec::new();
                loop {
                    let job = {
                        let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
                        loop {
                            if let Some(j) = q.dirs.pop() {
                                q.active += 1;
                                break Some(j);
                            }
                            if q.active == 0 {
                                break None;
                            }
                            q = ready.wait(q).unwrap_or_else(|e| e.into_inner());
                        }
                    };
                    let Some(job) = job else { break };
                    let mut subdirs = Vec::new();
                    let fd = match job.open {
                        Ok(fd) => Some(fd),
                        Err((parent, name)) if !cancelled() => {
                            open_child(parent.as_fd(), &name, libc::O_RDONLY | libc::O_DIRECTORY).map(Arc::new)
                        }
                        Err(_) => None,
                    };
                    if let Some(fd) = fd.filter(|_| !cancelled()) {
                        for (name, kind) in list_dir(fd.as_fd()) {
                            let shown = String::from_utf8_lossy(name.as_bytes());
                            let child_rel =
                                if job.rel.is_empty() { shown.to_string() } else { format!("{}/{shown}", job.rel) };
                            match kind {
                                Kind::Dir if !is_skipped_dir(name.as_bytes()) => {
                                    if job.depth + 1 > MAX_WALK_DEPTH {
                                        too_deep.store(true, Ordering::Relaxed);
                                        continue;
                                    }
                                    let path = join(&job.path, &shown);
                                    subdirs.push(Job {
                                        open: Err((fd.clone(), name)),
                                        path,
                                        rel: child_rel,
                                        depth: job.depth + 1,
                                    });
                                }
                                Kind::File if keep(&child_rel) => mine.push(join(&job.path, &shown)),
                                _ => {}
                            }
                        }
                    }
                    let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
                    // Reversed, so the stack pops them in name order (depth-first, like walk).
                    q.dirs.extend(subdirs.into_iter().rev());
                    q.active -= 1;
                    ready.notify_all();
                }
                results.lock().unwrap_or_else(|e| e.into_inner()).append(&mut mine);
            });
        }
    });
    let files = results.into_inner().unwrap_or_else(|e| e.into_inner());
    (files, Walked { too_deep: too_deep.into_inner() })
}

/// `localeCompare` approximated as ICU root collation does it for file names: primary
/// weights whitespace < punctuation < symbols < digits < letters (case-insensitive, accents
/// ignored only for ASCII-looking letters), then lower case before upper case on ties.
pub fn locale_compare(a: &str, b: &str) -> std::cmp::Ordering {
    collation_key(a).cmp(&collation_key(b)).then_with(|| a.cmp(b))
}

/// Sort key for [`locale_compare`]: primary weights, then tertiary (case) weights.
pub fn collation_key(s: &str) -> (Vec<u32>, Vec<u8>) {
    s.chars().filter_map(weight).unzip()
}

/// Sorts with `localeCompare` order, computing each key once.
pub fn sort_locale(lines: &mut [String]) {
    lines.sort_by_cached_key(|l| (collation_key(l), l.clone()));
}

/// ICU root order of printable ASCII non-alphanumerics (measured with Node's localeCompare).
const PUNCT_ORDER: &str = "\t\n\u{b}\u{c}\r _-,;:!?.'\"()[]{}@*/\\&#%`^+<=>|~$";

/// (primary, tertiary) weight; `None` for ignorable control characters.
fn weight(c: char) -> Option<(u32, u8)> {
    if let Some(i) = PUNCT_ORDER.find(c) {
        return Some((1 + i as u32, 0));
    }
    if c.is_ascii_digit() {
        return Some((100 + (c as u32 - '0' as u32), 0));
    }
    if c.is_ascii_alphabetic() {
        let lower = c.to_ascii_lowercase();
        return Some((200 + (lower as u32 - 'a' as u32) * 4, if c.is_ascii_uppercase() { 1 } else { 0 }));
    }
    if (c as u32) < 0x20 || c as u32 == 0x7f {
        return None;
    }
    // Other characters: after ASCII letters, case-insensitively by code point.
    let lower = c.to_lowercase().next().unwrap_or(c);
    Some((1000 + lower as u32, if lower != c { 1 } else { 0 }))
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    #[test]
    fn parallel_collection_equals_the_walk() {
        let base = std::env::temp_dir().join(format!("oma-walk-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for i in 0..200 {
            let d = base.join(format!("d{}/e{}", i % 9, i % 4));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(format!("f{i}.txt")), "x").unwrap();
        }
        std::fs::create_dir_all(base.join("node_modules/x")).unwrap();
        std::fs::write(base.join("node_modules/x/skip.txt"), "x").unwrap();
        std::os::unix::fs::symlink(base.join("d1"), base.join("link")).unwrap();
        let root = base.to_string_lossy().into_owned();
        let c = std::ffi::CString::new(root.clone()).unwrap();
        let fd = fs::openat(fs::cwd(), &c, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
        let mut seq = Vec::new();
        walk(&fd, &root, &|| false, &mut |e| {
            seq.push(e.path.to_string());
            Flow::Continue
        });
        let (mut par, walked) = collect_parallel(&fd, &root, &|| false, &|_| true);
        assert!(!walked.too_deep);
        assert_eq!(seq.len(), 200);
        let mut sorted = seq.clone();
        sorted.sort();
        par.sort();
        assert_eq!(par, sorted);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn collation_matches_node() {
        let mut v = vec!["Zeta.md", "sub/B.TXT", "alpha.md", "a.txt", ".hidden.txt"];
        v.sort_by(|a, b| locale_compare(a, b));
        assert_eq!(v, [".hidden.txt", "a.txt", "alpha.md", "sub/B.TXT", "Zeta.md"]);
        // Measured in Node: a A "a b" a_ a-b a1 aa aA Aa AA ab b B
        let mut v = vec!["B", "ab", "AA", "Aa", "aA", "aa", "a1", "a-b", "a_", "a b", "A", "a", "b"];
        v.sort_by(|a, b| locale_compare(a, b));
        assert_eq!(v, ["a", "A", "a b", "a_", "a-b", "a1", "aa", "aA", "Aa", "AA", "ab", "b", "B"]);
        let mut v = vec!["x9", "x10", "X.txt", "x.txt", "x-y", "x_y"];
        v.sort_by(|a, b| locale_compare(a, b));
        assert_eq!(v, ["x_y", "x-y", "x.txt", "X.txt", "x10", "x9"]);
    }

    /// `levels` nested directories `d` under `root`, each holding `f.txt`, built through
    /// descriptors (the paths soon exceed PATH_MAX). Returns the root's descriptor.
    pub(crate) fn deep_tree(root: &str, levels: usize) -> OwnedFd {
        let c = CString::new(root).unwrap();
        let top = fs::openat(fs::cwd(), &c, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
        let mut cur = top.try_clone().unwrap();
        for _ in 0..=levels {
            let f = fs::openat(cur.as_fd(), c"f.txt", libc::O_WRONLY | libc::O_CREAT, 0o644).unwrap();
            fs::write_all(f.as_fd(), b"needle\n").unwrap();
            fs::mkdirat(cur.as_fd(), c"d", 0o755).expect("mkdirat");
            cur = open_child(cur.as_fd(), c"d", libc::O_RDONLY | libc::O_DIRECTORY).unwrap();
        }
        top
    }

    #[test]
    fn a_deep_tree_is_walked_iteratively_and_cut_at_the_bound() {
        use crate::tool::builtin::testutil::{rm_rf, small_stack, tmp_dir};
        let root = tmp_dir("walk-deep");
        let fd = Arc::new(deep_tree(&root, 700));
        let (fd2, r2) = (fd.clone(), root.clone());
        // The recursive walk overflowed a small stack long before 700 levels (and the 2 MiB
        // of a blocking thread at a few thousand).
        let (files, walked) = small_stack(move || {
            let mut files = Vec::new();
            let walked = walk(&fd2, &r2, &|| false, &mut |e| {
                files.push(e.rel.to_string());
                Flow::Continue
            });
            (files, walked)
        });
        // f.txt at depths 0..=MAX_WALK_DEPTH, nothing below; `d` sorts before `f.txt`, so
        // depth-first order lists the deepest first.
        assert_eq!(files.len(), MAX_WALK_DEPTH + 1);
        assert_eq!(files[0], format!("{}f.txt", "d/".repeat(MAX_WALK_DEPTH)));
        assert_eq!(files[MAX_WALK_DEPTH], "f.txt");
        assert!(walked.too_deep);
        let (mut par, walked) = collect_parallel(&fd, &root, &|| false, &|_| true);
        par.sort_by_key(|p| p.len());
        assert_eq!(par.len(), MAX_WALK_DEPTH + 1);
        assert_eq!(par[MAX_WALK_DEPTH], format!("{root}/{}f.txt", "d/".repeat(MAX_WALK_DEPTH)));
        assert!(walked.too_deep);
        rm_rf(&root);
    }

    #[test]
    fn fifos_in_a_tree_are_skipped_unopened() {
        use crate::tool::builtin::testutil::{rm_rf, with_fifo};
        let (root, (seq, par)) = with_fifo("walk-fifo", &[("a.txt", "x")], "b.fifo", "walk over a FIFO", |root, _| {
            let c = CString::new(root).unwrap();
            let fd = fs::openat(fs::cwd(), &c, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
            let mut seq = Vec::new();
            walk(&fd, root, &|| false, &mut |e| {
                seq.push(e.rel.to_string());
                Flow::Continue
            });
            (seq, collect_parallel(&fd, root, &|| false, &|_| true).0)
        });
        assert_eq!(seq, ["a.txt"]);
        assert_eq!(par, [format!("{root}/a.txt")]);
        rm_rf(&root);
    }

    #[test]
    fn a_wide_directory_does_not_hold_a_descriptor_per_subdirectory() {
        use crate::tool::builtin::testutil::{rm_rf, tmp_dir};
        let root = tmp_dir("walk-wide");
        for i in 0..2000 {
            std::fs::create_dir(format!("{root}/d{i:04}")).unwrap();
        }
        std::fs::write(format!("{root}/d1999/f.txt"), "x").unwrap();
        let c = CString::new(root.clone()).unwrap();
        let fd = fs::openat(fs::cwd(), &c, libc::O_RDONLY | libc::O_DIRECTORY, 0).unwrap();
        // /dev/fd: the open descriptors on Linux (a link to /proc/self/fd) and on macOS alike.
        let open_fds = || std::fs::read_dir("/dev/fd").unwrap().count();
        let before = open_fds();
        // Measured from inside the walk, after the listing of the root queued 2000 jobs.
        let peak = std::sync::atomic::AtomicUsize::new(0);
        let (files, _) = collect_parallel(&fd, &root, &|| false, &|_| {
            peak.fetch_max(open_fds(), std::sync::atomic::Ordering::Relaxed);
            true
        });
        assert_eq!(files, [format!("{root}/d1999/f.txt")]);
        // Eager opening held ~2000 descriptors here; lazy opening a handful per thread. The
        // margin absorbs descriptors of tests running alongside (a deep walk holds ~500).
        let peak = peak.into_inner();
        assert!(peak < before + 1000, "{before} → {peak}");
        rm_rf(&root);
    }
}
