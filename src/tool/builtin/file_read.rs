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
