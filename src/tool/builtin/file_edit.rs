//! `file_edit` (CONTRACT §11.6; §21: the replacement is always literal, `$&` & co. included).

use super::path_safety::{outside_error, read_all, resolve_path_within_cwd, write_all, FsError, SandboxSpec};
use super::{plural, ToolOutput};

pub struct FileEditInput {
    pub path: String,
    pub old_string: String,
    pub new_string: String,
    pub replace_all: bool,
}

pub fn file_edit(input: &FileEditInput, spec: &SandboxSpec) -> ToolOutput {
    let r = match resolve_path_within_cwd(&input.path, spec, false) {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(e),
    };
    let outside = || ToolOutput::error(outside_error(&r.candidate, &r.root));
    let bytes = match r.sandbox.open(&r.path, libc::O_RDONLY, 0, "open").and_then(|fd| read_all(&fd)) {
        Ok(b) => b,
        Err(FsError::Escape) => return outside(),
        Err(e) => return ToolOutput::error(format!("Could not read \"{}\": {}", r.path, e.message())),
    };
    let text = String::from_utf8_lossy(&bytes);
    let count = if input.old_string.is_empty() { 0 } else { text.matches(input.old_string.as_str()).count() as u64 };
    if count == 0 {
        return ToolOutput::error(format!(
            "The string to replace was not found in \"{}\".\nMake sure `old_string` matches the file contents exactly, including indentation and line endings.",
            r.path
        ));
    }
    if count > 1 && !input.replace_all {
        return ToolOutput::error(format!(
            "`old_string` appears {count} times in \"{}\". Provide a more specific string to uniquely identify the section you want to replace, or set `replace_all: true` to replace every occurrence.",
            r.path
        ));
    }
    let updated = if input.replace_all {
        text.replace(input.old_string.as_str(), &input.new_string)
    } else {
        text.replacen(input.old_string.as_str(), &input.new_string, 1)
    };
    let written = r
        .sandbox
        .open(&r.path, libc::O_WRONLY | libc::O_CREAT | libc::O_TRUNC, 0o666, "open")
        .and_then(|fd| write_all(fd, updated.as_bytes()));
    match written {
        Ok(()) => {}
        Err(FsError::Escape) => return outside(),
        Err(e) => return ToolOutput::error(format!("Failed to write \"{}\": {}", r.path, e.message())),
    }
    let k = if input.replace_all { count } else { 1 };
    ToolOutput::ok(format!("Replaced {k} occurrence{} in \"{}\".", plural(k), r.path))
}
