//! The built-in tools (CONTRACT §11–§12, §21) in plain Rust; the napi binding and the JS
//! `ToolDefinition` objects wrap these.

pub mod bash;
pub mod confined;
pub mod delegate;
pub mod file_edit;
pub mod file_read;
pub mod file_write;
pub mod glob;
pub mod grep;
pub mod input;
pub mod path_safety;
pub mod walk;

/// A tool's `{ data, isError }`.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolOutput {
    pub data: String,
    pub is_error: bool,
}

impl ToolOutput {
    pub fn ok(data: String) -> ToolOutput {
        ToolOutput { data, is_error: false }
    }

    pub fn error(data: String) -> ToolOutput {
        ToolOutput { data, is_error: true }
    }
}

/// `s` for plural counts, as the texts use it.
pub(crate) fn plural(n: u64) -> &'static str {
    if n == 1 {
        ""
    } else {
        "s"
    }
}

/// The result text of a built-in tool whose native call failed (a Rust panic, a rejected
/// promise): `execute` never throws for the tool's own faults.
pub const FAILED_INTERNALLY: &str = "Tool \"{tool}\" failed internally: {message}";

#[cfg(test)]
pub(crate) mod testutil {
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A fresh, symlink-free temp directory.
    pub fn tmp_dir(tag: &str) -> String {
        static N: AtomicU64 = AtomicU64::new(0);
        let base = std::env::temp_dir().join(format!(
            "oma-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&base);
        std::fs::create_dir_all(&base).unwrap();
        std::fs::canonicalize(base).unwrap().to_string_lossy().into_owned()
    }

    /// Removes a tree of any depth (std's remove_dir_all recurses per level).
    pub fn rm_rf(dir: &str) {
        let _ = std::process::Command::new("rm").args(["-rf", "--", dir]).status();
    }

    pub fn mkfifo(path: &str) {
        let c = std::ffi::CString::new(path).unwrap();
        oma_os::fs::mkfifo(&c, 0o644).unwrap();
    }

    /// A fresh temp directory (`tmp_dir(tag)`) holding the regular `files` ([name, content])
    /// and a FIFO `name`, then `f(root, fifo path)` under `no_hang(what)`: a tool must refuse
    /// or skip the FIFO without opening it, as an open would block. Returns (root, what f gave).
    pub fn with_fifo<T: Send + 'static>(
        tag: &str,
        files: &[(&str, &str)],
        name: &str,
        what: &str,
        f: impl FnOnce(&str, &str) -> T + Send + 'static,
    ) -> (String, T) {
        let root = tmp_dir(tag);
        for (file, content) in files {
            std::fs::write(format!("{root}/{file}"), content).unwrap();
        }
        let fifo = format!("{root}/{name}");
        mkfifo(&fifo);
        let r2 = root.clone();
        (root, no_hang(what, move || f(&r2, &fifo)))
    }

    /// A temp directory `base` with `base/root/` and, outside the root, `base/outside`
    /// (holding `content`) hard-linked as `base/root/link`, as pnpm's store links files into
    /// node_modules. Returns (base, root, outside).
    pub fn hard_link_from_outside(tag: &str, outside: &str, content: &str, link: &str) -> (String, String, String) {
        let base = tmp_dir(tag);
        let (root, outside) = (format!("{base}/root"), format!("{base}/{outside}"));
        std::fs::create_dir_all(&root).unwrap();
        std::fs::write(&outside, content).unwrap();
        std::fs::hard_link(&outside, format!("{root}/{link}")).unwrap();
        (base, root, outside)
    }

    /// Runs `f` on a thread and fails the test if it has not returned after a minute: the
    /// cases it guards used to block forever (a FIFO's open), so a hang becomes a failure
    /// instead of a stuck test run. Not a timing assertion: a minute is no deadline for work
    /// that takes milliseconds.
    pub fn no_hang<T: Send + 'static>(what: &str, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(60)).unwrap_or_else(|_| panic!("{what} blocked"))
    }

    /// Runs `f` on a thread with a small stack: code that recurses per path component or
    /// directory level overflows it (and aborts the test binary), iterative code does not.
    pub fn small_stack<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        std::thread::Builder::new().stack_size(128 * 1024).spawn(f).unwrap().join().unwrap()
    }
}
