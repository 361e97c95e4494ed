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
    let grown = (text.len() as u128 + k as u128 * input.new_string.len() as u128)
        .saturating_sub(k as u128 * input.old_string.len() as u128);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::builtin::testutil::{hard_link_from_outside, rm_rf, tmp_dir, with_fifo};

    fn edit(path: &str, root: &str, old: &str, new: &str, all: bool) -> ToolOutput {
        let spec = SandboxSpec { root: Some(root.to_string()), process_cwd: "/".into() };
        let input =
            FileEditInput { path: path.into(), old_string: old.into(), new_string: new.into(), replace_all: all };
        file_edit(&input, &spec)
    }

    #[test]
    fn a_hard_link_to_an_outside_file_is_replaced_not_written_through() {
        // pnpm's node_modules: hard links into a global store.
        let (base, root, outside) = hard_link_from_outside("fe-link", "store.js", "let a = 1\n", "index.js");
        let out = edit(&format!("{root}/index.js"), &root, "1", "2", false);
        assert_eq!(out, ToolOutput::ok(format!("Replaced 1 occurrence in \"{root}/index.js\".")));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "let a = 1\n");
        assert_eq!(std::fs::read_to_string(format!("{root}/index.js")).unwrap(), "let a = 2\n");
        rm_rf(&base);
    }

    #[test]
    fn replace_all_cannot_grow_a_file_past_the_limit() {
        let root = tmp_dir("fe-grow");
        let path = format!("{root}/f.txt");
        let original = "ab".repeat(1000);
        std::fs::write(&path, &original).unwrap();
        // 1000 occurrences × 40 KB: a 2 KB file would become 40 MB.
        let big = "x".repeat(40_000);
        assert_eq!(
            edit(&path, &root, "a", &big, true),
            ToolOutput::error(format!(
                "The edited file would be 40001000 bytes, more than the 33554432-byte (32 MiB) limit of the built-in file tools; \"{path}\" was not changed."
            ))
        );
        assert_eq!(std::fs::read_to_string(&path).unwrap(), original);
        // Below the limit the same edit goes through.
        assert_eq!(
            edit(&path, &root, "a", "xyz", true),
            ToolOutput::ok(format!("Replaced 1000 occurrences in \"{path}\"."))
        );
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 4000);
        rm_rf(&root);
    }

    #[test]
    fn a_fifo_is_refused_without_blocking() {
        let (root, out) =
            with_fifo("fe-fifo", &[], "pipe", "file_edit of a FIFO", |root, pipe| edit(pipe, root, "a", "b", false));
        assert_eq!(
            out,
            ToolOutput::error(format!(
                "Could not read \"{root}/pipe\": not a regular file (a FIFO): the built-in file tools only read and write regular files"
            ))
        );
        rm_rf(&root);
    }
}
