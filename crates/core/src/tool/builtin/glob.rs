//! `glob` (CONTRACT §11.7 with the §21 decisions: full glob syntax, sort then cap) and the
//! exported `matchesGlob` / `collectFiles`.

use std::os::fd::OwnedFd;

use oma_os::fs;

use globset::{GlobBuilder, GlobMatcher};

use super::path_safety::{
    basename, outside_error, relative, resolve, resolve_path_within_cwd, FsError, Resolved, SandboxSpec,
};
use super::walk::{collect_parallel, sort_locale, walk, Flow, Walked, MAX_WALK_DEPTH};
use super::ToolOutput;

/// A compiled filename glob. A pattern containing `/` matches the path relative to the
/// searched directory (`*` does not cross `/`, `**` does); one without `/` matches the
/// basename at any depth. Always case-insensitive.
pub struct GlobPattern {
    matcher: GlobMatcher,
    basename_only: bool,
}

impl GlobPattern {
    pub fn new(pattern: &str) -> GlobPattern {
        let p = pattern.strip_prefix("./").unwrap_or(pattern);
        let basename_only = !p.contains('/');
        let build = |p: &str| {
            GlobBuilder::new(p)
                .case_insensitive(true)
                .literal_separator(true)
                .backslash_escape(true)
                .build()
                .map(|g| g.compile_matcher())
        };
        // A pattern globset rejects (an unclosed `[` or `{`) is taken literally, as the
        // original's escaping did: it never fails.
        let matcher = build(p).unwrap_or_else(|_| build(&globset::escape(p)).expect("escaped glob compiles"));
        GlobPattern { matcher, basename_only }
    }

    /// `rel`: a `/`-separated path relative to the searched directory.
    pub fn matches_rel(&self, rel: &str) -> bool {
        if self.basename_only {
            self.matcher.is_match(basename(rel))
        } else {
            self.matcher.is_match(rel)
        }
    }
}

/// `matchesGlob(filename, glob)`.
pub fn matches_glob(filename: &str, glob: &str) -> bool {
    GlobPattern::new(glob).matches_rel(filename)
}

fn open_dir_by_path(p: &str) -> Option<OwnedFd> {
    let c = std::ffi::CString::new(p).ok()?;
    fs::openat(fs::cwd(), &c, libc::O_RDONLY | libc::O_DIRECTORY, 0).ok()
}

/// `collectFiles(dir, glob, signal, { maxFiles })`: paths `join(dir, …)`; an unreadable
/// directory yields nothing, and so does one deeper than `MAX_WALK_DEPTH` (the exported
/// function returns a plain list, so there is no room for a note).
pub fn collect_files(
    dir: &str,
    glob: Option<&str>,
    cancelled: &dyn Fn() -> bool,
    max_files: Option<usize>,
) -> Vec<String> {
    let pattern = glob.map(GlobPattern::new);
    let mut out = Vec::new();
    let Some(fd) = open_dir_by_path(dir) else { return out };
    let max = max_files.unwrap_or(usize::MAX);
    if max == 0 {
        return out;
    }
    let _ = walk(&fd, dir, cancelled, &mut |e| {
        if pattern.as_ref().is_none_or(|p| p.matches_rel(e.rel)) {
            out.push(e.path.to_string());
        }
        if out.len() >= max {
            Flow::Stop
        } else {
            Flow::Continue
        }
    });
    out
}

/// The resolved target of glob / grep, as `stat` classifies it.
pub(super) enum Target {
    /// A directory, with a descriptor to list it (`None`: not readable, so no entries, as
    /// the original's walker silently skips an unreadable directory).
    Dir(Option<OwnedFd>),
    /// Anything else (searched / listed as a single file).
    File,
}

/// `stat` of the resolved target (needs no read permission, like Node's), mapped to the
/// tools' texts.
pub(super) fn open_target(r: &Resolved, what: &str) -> Result<Target, String> {
    use std::os::fd::AsFd;
    let fail = |e: FsError| match e {
        FsError::Escape => outside_error(&r.candidate, &r.root),
        e => format!("Cannot access path \"{what}\": {}", e.message()),
    };
    let pfd = r.sandbox.open(&r.path, super::path_safety::O_PATH, 0, "stat").map_err(fail)?;
    let st = fs::fstat(pfd.as_fd()).map_err(|e| fail(FsError::Os(e, "stat", Some(r.path.clone()))))?;
    if fs::file_type(&st) != libc::S_IFDIR {
        return Ok(Target::File);
    }
    Ok(Target::Dir(fs::openat(pfd.as_fd(), c".", libc::O_RDONLY | libc::O_DIRECTORY, 0).ok()))
}

/// Absolute form of a resolved path, for display relative to the sandbox root (the path is
/// verbatim, possibly relative, when the sandbox is disabled).
pub(super) fn absolute(r: &Resolved, spec: &SandboxSpec) -> String {
    resolve(&spec.process_cwd, &r.path)
}

pub(super) fn display(root: &str, abs: &str, raw: &str) -> String {
    // Fast path: a normalised path under the root is just the suffix.
    if root == "/" {
        if abs.len() > 1 && abs.starts_with('/') && !abs.contains("//") {
            return abs[1..].to_string();
        }
    } else if abs.len() > root.len() + 1 && abs.starts_with(root) && abs.as_bytes()[root.len()] == b'/' {
        return abs[root.len() + 1..].to_string();
    }
    let rel = relative(root, abs);
    if rel.is_empty() {
        raw.to_string()
    } else {
        rel
    }
}

pub struct GlobInput {
    pub path: Option<String>,
    pub pattern: Option<String>,
    pub max_files: usize,
}

pub fn glob_tool(input: &GlobInput, spec: &SandboxSpec, cancelled: &(dyn Fn() -> bool + Sync)) -> ToolOutput {
    // §21: with the sandbox disabled the default is the process cwd.
    let requested = input.path.clone().unwrap_or_else(|| spec.root.clone().unwrap_or_else(|| spec.process_cwd.clone()));
    let r = match resolve_path_within_cwd(&requested, spec, false) {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(e),
    };
    let target = match open_target(&r, &r.path) {
        Ok(x) => x,
        Err(e) => return ToolOutput::error(e),
    };
    let pattern = input.pattern.as_deref().map(GlobPattern::new);
    let abs = absolute(&r, spec);
    let mut lines: Vec<String> = Vec::new();
    let mut walked = Walked::default();
    if let Target::File = target {
        if pattern.as_ref().is_some_and(|p| !p.matches_rel(basename(&abs))) {
            return ToolOutput::ok("No files matched.".to_string());
        }
        lines.push(display(&r.root, &abs, &r.path));
    } else if let Target::Dir(Some(fd)) = target {
        // Order is irrelevant here (sorted below), so the walk runs on several threads.
        let keep = |rel: &str| pattern.as_ref().is_none_or(|p| p.matches_rel(rel));
        let (files, w) = collect_parallel(&fd, &abs, cancelled, &keep);
        walked = w;
        lines = files.into_iter().map(|p| display(&r.root, &p, &p)).collect();
    }
    let deep_note = || format!("\n\n(directories nested more than {MAX_WALK_DEPTH} levels deep were not listed)");
    if lines.is_empty() {
        let mut data = "No files matched.".to_string();
        if walked.too_deep {
            data.push_str(&deep_note());
        }
        return ToolOutput::ok(data);
    }
    sort_locale(&mut lines);
    let truncated = lines.len() > input.max_files;
    lines.truncate(input.max_files);
    let mut data = lines.join("\n");
    if truncated {
        data.push_str(&format!("\n\n(listing capped at {} paths; raise maxFiles for more)", input.max_files));
    }
    if walked.too_deep {
        data.push_str(&deep_note());
    }
    ToolOutput::ok(data)
}

/// `maxFiles` when the input does not give it (the field's description says so).
pub const DEFAULT_MAX_FILES: u32 = 500;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_paths() {
        assert_eq!(display("/r", "/r/a/b", "x"), "a/b");
        assert_eq!(display("/r", "/r", "raw"), "raw");
        assert_eq!(display("/", "/a/b", "x"), "a/b");
        assert_eq!(display("/r", "/rx/a", "x"), "../rx/a");
    }

    #[test]
    fn glob_syntax() {
        assert!(matches_glob("a.TS", "*.ts"));
        assert!(matches_glob("src/deep/a.ts", "*.ts"));
        assert!(matches_glob("src/deep/a.ts", "**/*.ts"));
        assert!(matches_glob("a.ts", "**/*.ts"));
        assert!(matches_glob("src/a.ts", "src/*.ts"));
        assert!(!matches_glob("src/deep/a.ts", "src/*.ts"));
        assert!(matches_glob("src/deep/a.ts", "src/**/*.ts"));
        assert!(matches_glob("b.js", "[ab].{js,ts}"));
        assert!(!matches_glob("c.js", "[ab].{js,ts}"));
        assert!(matches_glob("x?.md", "x?.md"));
        // Unclosed class: literal, never an error.
        assert!(matches_glob("[ab", "[ab"));
    }

    #[test]
    fn a_deep_tree_is_listed_to_the_bound_with_a_note() {
        use crate::tool::builtin::testutil::{rm_rf, small_stack, tmp_dir};
        use crate::tool::builtin::walk::tests::deep_tree;
        let root = tmp_dir("glob-deep");
        drop(deep_tree(&root, 600));
        let spec = SandboxSpec { root: Some(root.clone()), process_cwd: "/".into() };
        let s2 = spec.clone();
        let out =
            small_stack(move || glob_tool(&GlobInput { path: None, pattern: None, max_files: 10_000 }, &s2, &|| false));
        let lines: Vec<&str> = out.data.lines().collect();
        assert_eq!(lines.len(), 513 + 2);
        assert_eq!(lines[514], "(directories nested more than 512 levels deep were not listed)");
        let out =
            glob_tool(&GlobInput { path: None, pattern: Some("nothing".into()), max_files: 10 }, &spec, &|| false);
        assert_eq!(out.data, "No files matched.\n\n(directories nested more than 512 levels deep were not listed)");
        // collectFiles: a plain list, cut at the same depth.
        let files = small_stack(move || collect_files(&root, None, &|| false, None));
        assert_eq!(files.len(), 513);
        rm_rf(&files[0][..files[0].len() - "/f.txt".len()]);
    }
}
