//! `file_write` (CONTRACT §11.5): the only tool that creates a missing sandbox root.

use super::path_safety::{dirname, outside_error, resolve_path_within_cwd, FsError, SandboxSpec};
use super::{plural, ToolOutput};

pub fn file_write(path: &str, content: &str, spec: &SandboxSpec) -> ToolOutput {
    let r = match resolve_path_within_cwd(path, spec, true) {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(e),
    };
    let outside = || ToolOutput::error(outside_error(&r.candidate, &r.root));
    let existed = r.sandbox.open(&r.path, libc::O_PATH, 0, "stat").is_ok();
    let parent = dirname(&r.path);
    match r.sandbox.mkdir_p(parent) {
        Ok(()) => {}
        Err(FsError::Escape) => return outside(),
        Err(e) => {
            return ToolOutput::error(format!("Failed to create parent directory \"{parent}\": {}", e.message()))
        }
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
