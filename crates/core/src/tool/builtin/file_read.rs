//! `file_read` (CONTRACT §11.4).

use super::path_safety::{outside_error, resolve_path_within_cwd, FsError, SandboxSpec};
use super::{plural, ToolOutput};

pub struct FileReadInput {
    pub path: String,
    /// Validated by the caller: integer ≥ 0.
    pub offset: Option<u64>,
    /// Validated by the caller: integer > 0.
    pub limit: Option<u64>,
}

pub fn file_read(input: &FileReadInput, spec: &SandboxSpec) -> ToolOutput {
    let r = match resolve_path_within_cwd(&input.path, spec, false) {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(e),
    };
    // Regular files only, at most MAX_FILE_BYTES (a FIFO would block, /dev/zero never ends).
    let bytes = r.sandbox.read_file(&r.path);
    let bytes = match bytes {
        Ok(b) => b,
        Err(FsError::Escape) => return ToolOutput::error(outside_error(&r.candidate, &r.root)),
        Err(e) => return ToolOutput::error(format!("Could not read file \"{}\": {}", r.path, e.message())),
    };
    let text = String::from_utf8_lossy(&bytes);
    let mut lines: Vec<&str> = text.split('\n').collect();
    if lines.last() == Some(&"") {
        lines.pop();
    }
    let total = lines.len() as u64;
    let start = input.offset.map_or(0, |o| o.saturating_sub(1));
    if start >= total && total > 0 {
        return ToolOutput::error(format!(
            "File \"{}\" has {total} line{} but offset {} is beyond the end.",
            r.path,
            plural(total),
            input.offset.unwrap_or(0)
        ));
    }
    let end = input.limit.map_or(total, |l| start.saturating_add(l).min(total));
    let mut out = String::new();
    for i in start..end {
        if i > start {
            out.push('\n');
        }
        out.push_str(&(i + 1).to_string());
        out.push('\t');
        out.push_str(lines[i as usize]);
    }
    if end < total {
        out.push_str(&format!("\n\n(showing lines {}\u{2013}{end} of {total})", start + 1));
    }
    ToolOutput::ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tool::builtin::path_safety::MAX_FILE_BYTES;
    use crate::tool::builtin::testutil::{no_hang, rm_rf, small_stack, tmp_dir, with_fifo};

    fn read(path: &str, root: Option<&str>) -> ToolOutput {
        let spec = SandboxSpec { root: root.map(str::to_string), process_cwd: "/".into() };
        let input = FileReadInput { path: path.to_string(), offset: None, limit: None };
        file_read(&input, &spec)
    }

    #[test]
    fn a_path_of_twenty_thousand_components_is_an_error_not_a_crash() {
        let root = tmp_dir("fr-deep");
        let path = format!("{root}/{}", vec!["a"; 20_000].join("/"));
        let (p2, r2) = (path.clone(), root.clone());
        let out = small_stack(move || read(&p2, Some(&r2)));
        assert_eq!(
            out,
            ToolOutput::error(format!("Could not read file \"{path}\": ENAMETOOLONG: name too long, open '{path}'"))
        );
        rm_rf(&root);
    }

    #[test]
    fn fifos_and_devices_are_refused() {
        let (root, out) = with_fifo("fr-fifo", &[], "pipe", "file_read of a FIFO", |root, pipe| read(pipe, Some(root)));
        assert_eq!(
            out,
            ToolOutput::error(format!(
                "Could not read file \"{root}/pipe\": not a regular file (a FIFO): the built-in file tools only read and write regular files"
            ))
        );
        // /dev/zero never ends: refused before any read (sandbox disabled to reach it).
        let out = no_hang("file_read of /dev/zero", || read("/dev/zero", None));
        assert_eq!(
            out,
            ToolOutput::error(
                "Could not read file \"/dev/zero\": not a regular file (a character device): the built-in file tools only read and write regular files".into()
            )
        );
        rm_rf(&root);
    }

    #[test]
    fn a_file_over_the_limit_is_refused() {
        let root = tmp_dir("fr-big");
        std::fs::File::create(format!("{root}/huge.log")).unwrap().set_len(1 << 40).unwrap(); // sparse, 1 TiB
        assert_eq!(
            read(&format!("{root}/huge.log"), Some(&root)),
            ToolOutput::error(format!(
                "Could not read file \"{root}/huge.log\": file too large (1099511627776 bytes): the built-in file tools read files of at most {MAX_FILE_BYTES} bytes (32 MiB); use grep to search a larger file"
            ))
        );
        rm_rf(&root);
    }
}
