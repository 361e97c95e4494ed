//! `file_write` (CONTRACT §11.5): the only tool that creates a missing sandbox root.

use super::path_safety::{dirname, outside_error, resolve_path_within_cwd, FsError, SandboxSpec};
use super::{plural, ToolOutput};

pub fn file_write(path: &str, content: &str, spec: &SandboxSpec) -> ToolOutput {
    let r = match resolve_path_within_cwd(path, spec, true) {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(e),
    };
    let outside = || ToolOutput::error(outside_error(&r.candidate, &r.root));
    let existed = r.sandbox.open(&r.path, super::path_safety::O_PATH, 0, "stat").is_ok();
    let parent = dirname(&r.path);
    match r.sandbox.mkdir_p(parent) {
        Ok(()) => {}
        Err(FsError::Escape) => return outside(),
        Err(e) => return ToolOutput::error(format!("Failed to create parent directory \"{parent}\": {}", e.message())),
    }
    // A temporary file renamed over the target: a hard link is replaced, not written through.
    let written = r.sandbox.write_file(&r.path, content.as_bytes());
    match written {
        Ok(()) => {}
        Err(FsError::Escape) => return outside(),
        Err(e) => return ToolOutput::error(format!("Failed to write file \"{}\": {}", r.path, e.message())),
    }
    let n = content.matches('\n').count() as u64 + 1;
    ToolOutput::ok(format!(
        "{} \"{}\" ({n} line{}, {} bytes).",
        if existed { "Updated" } else { "Created" },
        r.path,
        plural(n),
        content.len()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::builtin::testutil::{hard_link_from_outside, rm_rf, with_fifo};
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    #[test]
    fn a_hard_link_to_an_outside_file_is_replaced_not_written_through() {
        let (base, root, outside) = hard_link_from_outside("fw-link", "secret.txt", "keep me\n", "link.txt");
        // One inode: the link has this mode too.
        std::fs::set_permissions(&outside, std::fs::Permissions::from_mode(0o600)).unwrap();
        let spec = SandboxSpec { root: Some(root.clone()), process_cwd: "/".into() };
        let out = file_write(&format!("{root}/link.txt"), "rewritten\n", &spec);
        assert_eq!(out, ToolOutput::ok(format!("Updated \"{root}/link.txt\" (2 lines, 10 bytes).")));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "keep me\n");
        assert_eq!(std::fs::read_to_string(format!("{root}/link.txt")).unwrap(), "rewritten\n");
        assert_eq!(std::fs::metadata(format!("{root}/link.txt")).unwrap().mode() & 0o777, 0o600);
        // A new file still gets the usual 0o666 minus umask, and a fresh directory.
        let out = file_write(&format!("{root}/a/b/new.txt"), "", &spec);
        assert_eq!(out, ToolOutput::ok(format!("Created \"{root}/a/b/new.txt\" (1 line, 0 bytes).")));
        let mask = oma_os::fs::umask();
        assert_eq!(std::fs::metadata(format!("{root}/a/b/new.txt")).unwrap().mode() & 0o777, 0o666 & !mask as u32);
        rm_rf(&base);
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let (root, out) = with_fifo("fw-fifo", &[], "pipe", "file_write to a FIFO", |root, pipe| {
            file_write(pipe, "x", &SandboxSpec { root: Some(root.into()), process_cwd: "/".into() })
        });
        assert_eq!(
            out,
            ToolOutput::error(format!(
                "Failed to write file \"{root}/pipe\": not a regular file (a FIFO): the built-in file tools only read and write regular files"
            ))
        );
        rm_rf(&root);
    }
}
