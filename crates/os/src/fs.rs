//! Descriptor-relative file calls. Every function takes the descriptors it works on as
//! `BorrowedFd` (open for the call, by the borrow) and returns a fresh `OwnedFd` for what it
//! opens (close-on-exec, so no command started meanwhile inherits it); names are `&CStr`.
//! `EINTR` is retried where a call can be interrupted by a signal before it has done anything.

use std::ffi::{CStr, CString};
use std::os::fd::{AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};

use crate::errno;

/// The current directory as the base of the `*at` calls (`AT_FDCWD`): a path relative to it is
/// opened as `open(2)` would.
pub fn cwd() -> BorrowedFd<'static> {
    // SAFETY: `AT_FDCWD` (-100) is not -1, the one value a `BorrowedFd` may not hold, and it
    // names no descriptor that could be closed under the borrow: the `*at` calls read it as
    // "the current directory", every other call fails with EBADF.
    unsafe { BorrowedFd::borrow_raw(libc::AT_FDCWD) }
}

/// A handle that only names a file (for fstat and as a directory to open relative to):
/// Linux's `O_PATH`. Elsewhere, and with the `portable` feature, a non-blocking read-only
/// open stands in; it needs read permission where `O_PATH` does not, and refuses a symlink as
/// the last component with ELOOP instead of opening it.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
pub const O_PATH: i32 = libc::O_PATH;
#[cfg(any(not(target_os = "linux"), feature = "portable"))]
pub const O_PATH: i32 = libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY;

/// A descriptor a system call just returned (`ret >= 0`), or the call's errno.
fn fd_from(ret: libc::c_long) -> Result<OwnedFd, i32> {
    if ret < 0 {
        Err(errno())
    } else {
        // SAFETY: a non-negative return of an opening call is a fresh descriptor that nothing
        // else owns; it is owned from here on.
        Ok(unsafe { OwnedFd::from_raw_fd(ret as RawFd) })
    }
}

fn status(ret: libc::c_int) -> Result<(), i32> {
    if ret == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// `openat(dir, name, flags | O_CLOEXEC, mode)`, retried on EINTR.
pub fn openat(dir: BorrowedFd<'_>, name: &CStr, flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    loop {
        // SAFETY: `dir` is open for the call (borrowed) or AT_FDCWD; `name` is NUL-terminated
        // and outlives the call; the flags and mode are plain integers.
        let r = unsafe { libc::openat(dir.as_raw_fd(), name.as_ptr(), flags | libc::O_CLOEXEC, mode as libc::c_uint) };
        match fd_from(r as libc::c_long) {
            Err(libc::EINTR) => continue,
            other => return other,
        }
    }
}

#[cfg(all(target_os = "linux", not(feature = "portable")))]
const RESOLVE_NO_MAGICLINKS: u64 = 0x02;
#[cfg(all(target_os = "linux", not(feature = "portable")))]
const RESOLVE_BENEATH: u64 = 0x08;

/// The kernel's `struct open_how` (linux/openat2.h).
#[cfg(all(target_os = "linux", not(feature = "portable")))]
#[repr(C)]
struct OpenHow {
    flags: u64,
    mode: u64,
    resolve: u64,
}

/// `openat2(dir, path, { flags | O_CLOEXEC, mode, RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS })`
/// (Linux ≥ 5.6): the kernel refuses, with EXDEV, any resolution that leaves `dir` (`..`, an
/// absolute symlink, a symlink leading out). Retried on EINTR, and on EAGAIN a few times (a
/// concurrent rename elsewhere made the kernel unsure). ENOSYS: the kernel has no openat2.
#[cfg(all(target_os = "linux", not(feature = "portable")))]
pub fn openat2_beneath(dir: BorrowedFd<'_>, path: &CStr, flags: i32, mode: u32) -> Result<OwnedFd, i32> {
    let creating = flags & libc::O_CREAT != 0;
    let how = OpenHow {
        flags: (flags | libc::O_CLOEXEC) as u32 as u64,
        mode: if creating { mode as u64 } else { 0 },
        resolve: RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS,
    };
    let mut attempts = 0;
    loop {
        // SAFETY: `dir` is open for the call (borrowed); `path` is NUL-terminated; `how` is a
        // live `open_how` and the size passed is its own, so the kernel reads only it.
        let r = unsafe {
            libc::syscall(
                libc::SYS_openat2,
                dir.as_raw_fd(),
                path.as_ptr(),
                &how as *const OpenHow,
                std::mem::size_of::<OpenHow>(),
            )
        };
        match fd_from(r) {
            Err(libc::EINTR) => continue,
            Err(libc::EAGAIN) if attempts < 16 => attempts += 1,
            other => return other,
        }
    }
}

/// `fstat(fd)`.
pub fn fstat(fd: BorrowedFd<'_>) -> Result<libc::stat, i32> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `fd` is open for the call (borrowed); `st` is a live local the kernel fills.
    status(unsafe { libc::fstat(fd.as_raw_fd(), st.as_mut_ptr()) })?;
    // SAFETY: fstat returned 0, so it wrote the whole `stat`.
    Ok(unsafe { st.assume_init() })
}

/// `fstatat(dir, name, AT_SYMLINK_NOFOLLOW)`: the entry itself, never what a symlink leads to.
pub fn fstatat_nofollow(dir: BorrowedFd<'_>, name: &CStr) -> Result<libc::stat, i32> {
    let mut st = std::mem::MaybeUninit::<libc::stat>::uninit();
    // SAFETY: `dir` is open for the call (borrowed) or AT_FDCWD; `name` is NUL-terminated;
    // `st` is a live local the kernel fills.
    status(unsafe { libc::fstatat(dir.as_raw_fd(), name.as_ptr(), st.as_mut_ptr(), libc::AT_SYMLINK_NOFOLLOW) })?;
    // SAFETY: fstatat returned 0, so it wrote the whole `stat`.
    Ok(unsafe { st.assume_init() })
}

/// The file type bits (`S_IFMT`) of a `stat`.
pub fn file_type(st: &libc::stat) -> libc::mode_t {
    st.st_mode & libc::S_IFMT
}

/// `mkdirat(dir, name, mode)`.
pub fn mkdirat(dir: BorrowedFd<'_>, name: &CStr, mode: libc::mode_t) -> Result<(), i32> {
    // SAFETY: `dir` is open for the call (borrowed) or AT_FDCWD; `name` is NUL-terminated.
    status(unsafe { libc::mkdirat(dir.as_raw_fd(), name.as_ptr(), mode) })
}

/// `unlinkat(dir, name, 0)`: removes a file (not a directory).
pub fn unlinkat(dir: BorrowedFd<'_>, name: &CStr) -> Result<(), i32> {
    // SAFETY: `dir` is open for the call (borrowed) or AT_FDCWD; `name` is NUL-terminated.
    status(unsafe { libc::unlinkat(dir.as_raw_fd(), name.as_ptr(), 0) })
}

/// `renameat(dir, from, dir, to)`: atomically replaces `to` by `from` within one directory.
pub fn renameat(dir: BorrowedFd<'_>, from: &CStr, to: &CStr) -> Result<(), i32> {
    // SAFETY: `dir` is open for the call (borrowed) or AT_FDCWD; both names are NUL-terminated.
    status(unsafe { libc::renameat(dir.as_raw_fd(), from.as_ptr(), dir.as_raw_fd(), to.as_ptr()) })
}

/// `fchown(fd, uid, gid)` (`u32::MAX`: leave that id as it is).
pub fn fchown(fd: BorrowedFd<'_>, uid: libc::uid_t, gid: libc::gid_t) -> Result<(), i32> {
    // SAFETY: `fd` is open for the call (borrowed); the ids are plain integers.
    status(unsafe { libc::fchown(fd.as_raw_fd(), uid, gid) })
}

/// `fchmod(fd, mode)`.
pub fn fchmod(fd: BorrowedFd<'_>, mode: libc::mode_t) -> Result<(), i32> {
    // SAFETY: `fd` is open for the call (borrowed); the mode is a plain integer.
    status(unsafe { libc::fchmod(fd.as_raw_fd(), mode) })
}

/// `fsync(fd)`.
pub fn fsync(fd: BorrowedFd<'_>) -> Result<(), i32> {
    // SAFETY: `fd` is open for the call (borrowed).
    status(unsafe { libc::fsync(fd.as_raw_fd()) })
}

/// `ftruncate(fd, 0)`: empties the file.
pub fn truncate_to_empty(fd: BorrowedFd<'_>) -> Result<(), i32> {
    // SAFETY: `fd` is open for the call (borrowed); the length is a plain integer.
    status(unsafe { libc::ftruncate(fd.as_raw_fd(), 0) })
}

/// `lseek(fd, 0, SEEK_SET)`: back to the start of the file.
pub fn rewind(fd: BorrowedFd<'_>) -> Result<(), i32> {
    // SAFETY: `fd` is open for the call (borrowed); offset and whence are plain integers.
    if unsafe { libc::lseek(fd.as_raw_fd(), 0, libc::SEEK_SET) } == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

/// One `read(fd)` into `buf`: the number of bytes read (0 at the end), or the errno (EINTR
/// included: the caller decides whether to go on).
pub fn read(fd: BorrowedFd<'_>, buf: &mut [u8]) -> Result<usize, i32> {
    // SAFETY: `fd` is open for the call (borrowed); the kernel writes at most `buf.len()`
    // bytes into `buf`, which is exclusively borrowed.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
    if n < 0 {
        Err(errno())
    } else {
        Ok(n as usize)
    }
}

/// One `read(fd)` appended to `buf`, into its spare capacity (no zeroing first), of at most
/// `max` bytes: the number read (0 at the end, or when there is no room), or the errno (EINTR
/// included). The caller reserves the room.
pub fn read_append(fd: BorrowedFd<'_>, buf: &mut Vec<u8>, max: usize) -> Result<usize, i32> {
    let spare = buf.spare_capacity_mut();
    let room = spare.len().min(max);
    // SAFETY: `fd` is open for the call (borrowed); the kernel writes at most `room` bytes,
    // all within the vector's spare capacity, which `buf`'s exclusive borrow keeps alive.
    let n = unsafe { libc::read(fd.as_raw_fd(), spare.as_mut_ptr().cast(), room) };
    if n < 0 {
        return Err(errno());
    }
    let n = n as usize;
    // SAFETY: read(2) initialised the first `n <= room` bytes of the spare capacity, so the
    // new length stays within the capacity and covers initialised bytes only.
    unsafe { buf.set_len(buf.len() + n) };
    Ok(n)
}

/// Writes all of `data` to `fd` (short writes continued, EINTR retried).
pub fn write_all(fd: BorrowedFd<'_>, mut data: &[u8]) -> Result<(), i32> {
    while !data.is_empty() {
        // SAFETY: `fd` is open for the call (borrowed); the kernel reads at most `data.len()`
        // bytes from the live slice `data`.
        let n = unsafe { libc::write(fd.as_raw_fd(), data.as_ptr().cast(), data.len()) };
        if n < 0 {
            let e = errno();
            if e == libc::EINTR {
                continue;
            }
            return Err(e);
        }
        data = &data[n as usize..];
    }
    Ok(())
}

/// `access(path, X_OK)`: whether the process may execute `path`.
pub fn is_executable(path: &CStr) -> bool {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    unsafe { libc::access(path.as_ptr(), libc::X_OK) == 0 }
}

/// `mkfifo(path, mode)`.
pub fn mkfifo(path: &CStr, mode: libc::mode_t) -> Result<(), i32> {
    // SAFETY: `path` is NUL-terminated and outlives the call.
    status(unsafe { libc::mkfifo(path.as_ptr(), mode) })
}

/// The process's file mode creation mask (read by setting it and setting it back, the only
/// way POSIX has: another thread creating a file in between gets mode 0o022 masked).
pub fn umask() -> libc::mode_t {
    // SAFETY: umask only swaps a process-wide integer.
    let m = unsafe { libc::umask(0o022) };
    // SAFETY: as above; restores the mask read.
    unsafe { libc::umask(m) };
    m
}

/// What a directory entry is, for a walk that enters directories and reads regular files only.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum EntryKind {
    File,
    Dir,
    /// Symlinks, FIFOs, devices, sockets, and entries that vanished before they could be
    /// stat'ed.
    Other,
}

/// The entries of the directory `dir` (without `.` and `..`), in the order the OS returns
/// them, with their kind: from the listing's `d_type`, or from a `fstatat` that does not
/// follow a symlink where the file system gives none. Unreadable: empty. `dir` itself is not
/// consumed, and a listing of it starts at its beginning whatever was listed before.
pub fn list_dir(dir: BorrowedFd<'_>) -> Vec<(CString, EntryKind)> {
    // fdopendir takes ownership of the descriptor it is given, so hand it a duplicate.
    let Ok(dup) = dir.try_clone_to_owned() else { return Vec::new() };
    let raw = std::os::fd::IntoRawFd::into_raw_fd(dup);
    // SAFETY: `raw` is a descriptor this function owns (the duplicate); on success the stream
    // owns it and closes it in closedir below.
    let stream = unsafe { libc::fdopendir(raw) };
    if stream.is_null() {
        // SAFETY: fdopendir failed, so `raw` is still ours alone to close.
        drop(unsafe { OwnedFd::from_raw_fd(raw) });
        return Vec::new();
    }
    // The duplicate shares the file offset with `dir`: an earlier listing may have moved it.
    // SAFETY: `stream` is a valid, open DIR stream until closedir below.
    unsafe { libc::rewinddir(stream) };
    let mut out = Vec::new();
    loop {
        // SAFETY: `stream` is valid; the entry it returns stays valid until the next readdir or
        // closedir on it, and is only read before the next iteration.
        let ent = unsafe { libc::readdir(stream) };
        if ent.is_null() {
            break;
        }
        // SAFETY: `ent` is the live entry just returned, whose d_name is NUL-terminated.
        let name = unsafe { CStr::from_ptr((*ent).d_name.as_ptr()) };
        let bytes = name.to_bytes();
        if bytes == b"." || bytes == b".." {
            continue;
        }
        // SAFETY: `ent` is the live entry just returned.
        let kind = match unsafe { (*ent).d_type } {
            libc::DT_REG => EntryKind::File,
            libc::DT_DIR => EntryKind::Dir,
            libc::DT_UNKNOWN => match fstatat_nofollow(dir, name).map(|st| file_type(&st)) {
                Ok(libc::S_IFREG) => EntryKind::File,
                Ok(libc::S_IFDIR) => EntryKind::Dir,
                _ => EntryKind::Other,
            },
            _ => EntryKind::Other,
        };
        out.push((name.to_owned(), kind));
    }
    // SAFETY: `stream` is valid and closed once; this closes the duplicate with it.
    unsafe { libc::closedir(stream) };
    out
}
