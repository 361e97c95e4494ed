//! `file_edit` (CONTRACT §11.6; §21: the replacement is always literal, `$&` & co. included).

use super::path_safety::{outside_error, resolve_path_within_cwd, FsError, SandboxSpec, MAX_FILE_BYTES};
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
    let bytes = match r.sandbox.read_file(&r.path) {
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
    // `replace_all` multiplies: a short `old_string` and a long `new_string` turned a 180 KB
    // file into 540 MB in one call. The result's size is known before building it.
    let k = if input.replace_all { count } else { 1 };
    let grown = (text.len() as u128 + k as u128 * input.new_string.len() as u128).saturating_sub(k as u128 * input.old_string.len() as u128);
    if grown > MAX_FILE_BYTES as u128 {
        return ToolOutput::error(format!(
            "The edited file would be {grown} bytes, more than the {MAX_FILE_BYTES}-byte (32 MiB) limit of the built-in file tools; \"{}\" was not changed.",
            r.path
        ));
    }
    let updated = if input.replace_all {
        text.replace(input.old_string.as_str(), &input.new_string)
    } else {
        text.replacen(input.old_string.as_str(), &input.new_string, 1)
    };
    let written = r.sandbox.write_file(&r.path, updated.as_bytes());
    match written {
        Ok(()) => {}
        Err(FsError::Escape) => return outside(),
        Err(e) => return ToolOutput::error(format!("Failed to write \"{}\": {}", r.path, e.message())),
    }
    ToolOutput::ok(format!("Replaced {k} occurrence{} in \"{}\".", plural(k), r.path))
}
