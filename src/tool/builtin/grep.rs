//! `grep` (CONTRACT §11.8, one in-process behaviour per §21): the fallback's output format
//! and global cap (note only when lines were dropped), the walker's skip list, binary files
//! (containing a NUL byte) skipped, symlinks not followed, Rust regex syntax with a
//! backtracking engine (fancy-regex) for lookaround / back-references, abort honoured
//! between files.

use std::io::Read;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{sinks::Lossy, BinaryDetection, Searcher, SearcherBuilder};

use super::glob::{absolute, display, open_target, GlobPattern};
use super::path_safety::{resolve_path_within_cwd, SandboxSpec};
use super::walk::{walk, Flow};
use super::ToolOutput;

pub struct GrepInput {
    pub pattern: String,
    pub path: Option<String>,
    pub glob: Option<String>,
    pub max_results: usize,
}

enum Engine {
    Fast(RegexMatcher, Searcher),
    Backtracking(fancy_regex::Regex),
}

fn compile(pattern: &str) -> Option<Engine> {
    // multi_line: `^`/`$` match at line boundaries of the searched buffer; the line
    // terminator keeps every match within one line, like the original's per-line test.
    if let Ok(m) = RegexMatcherBuilder::new().multi_line(true).line_terminator(Some(b'\n')).build(pattern) {
        let searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::none())
            .build();
        return Some(Engine::Fast(m, searcher));
    }
    fancy_regex::Regex::new(pattern).ok().map(Engine::Backtracking)
}

struct Hit {
    file: String,
    line: u64,
    text: String,
}

/// Searches one file's bytes; pushes hits until `limit` is reached. Returns false once the
/// limit is hit.
fn search_bytes(engine: &mut Engine, bytes: &[u8], file: &str, hits: &mut Vec<Hit>, limit: usize) -> bool {
    if memchr::memchr(0, bytes).is_some() {
        return true; // binary: skipped
    }
    match engine {
        Engine::Fast(m, searcher) => {
            let _ = searcher.search_slice(
                &*m,
                bytes,
                Lossy(|lnum, line| {
                    let text = line.strip_suffix('\n').unwrap_or(line);
                    hits.push(Hit { file: file.to_string(), line: lnum, text: text.to_string() });
                    Ok(hits.len() < limit)
                }),
            );
        }
        Engine::Backtracking(re) => {
            let text = String::from_utf8_lossy(bytes);
            let mut lines: Vec<&str> = text.split('\n').collect();
            // No empty "line" after a final newline: the same lines the fast engine sees.
            if lines.last() == Some(&"") {
                lines.pop();
            }
            for (i, l) in lines.iter().enumerate() {
                if hits.len() >= limit {
                    break;
                }
                if re.is_match(l).unwrap_or(false) {
                    hits.push(Hit { file: file.to_string(), line: i as u64 + 1, text: l.to_string() });
                }
            }
        }
    }
    hits.len() < limit
}

pub fn grep_tool(input: &GrepInput, spec: &SandboxSpec, cancelled: &dyn Fn() -> bool) -> ToolOutput {
    let requested = input.path.clone().unwrap_or_else(|| spec.root.clone().unwrap_or_else(|| spec.process_cwd.clone()));
    let r = match resolve_path_within_cwd(&requested, spec, false) {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(e),
    };
    let Some(mut engine) = compile(&input.pattern) else {
        return ToolOutput::error(format!("Invalid regular expression: \"{}\"", input.pattern));
    };
    let (fd, is_dir) = match open_target(&r, &r.path) {
        Ok(x) => x,
        Err(e) => return ToolOutput::error(e),
    };
    let abs = absolute(&r, spec);
    // One more than the cap, to know whether anything was dropped.
    let limit = input.max_results.saturating_add(1);
    let mut hits: Vec<Hit> = Vec::new();
    let mut buf: Vec<u8> = Vec::new();
    if !is_dir {
        let mut f = std::fs::File::from(fd);
        if f.read_to_end(&mut buf).is_ok() {
            search_bytes(&mut engine, &buf, &display(&r.root, &abs, &r.path), &mut hits, limit);
        }
    } else {
        let pattern = input.glob.as_deref().map(GlobPattern::new);
        walk(&fd, &abs, cancelled, &mut |e| {
            if pattern.as_ref().is_some_and(|p| !p.matches_rel(e.rel)) {
                return Flow::Continue;
            }
            let Some(mut f) = e.open() else { return Flow::Continue };
            buf.clear();
            if f.read_to_end(&mut buf).is_err() {
                return Flow::Continue; // unreadable → skipped
            }
            if search_bytes(&mut engine, &buf, &display(&r.root, e.path, e.path), &mut hits, limit) {
                Flow::Continue
            } else {
                Flow::Stop
            }
        });
    }
    if hits.is_empty() {
        return ToolOutput::ok("No matches found.".to_string());
    }
    let dropped = hits.len() > input.max_results;
    hits.truncate(input.max_results);
    let mut data = String::new();
    for (i, h) in hits.iter().enumerate() {
        if i > 0 {
            data.push('\n');
        }
        data.push_str(&h.file);
        data.push(':');
        data.push_str(&h.line.to_string());
        data.push(':');
        data.push_str(&h.text);
    }
    if dropped {
        data.push_str(&format!(
            "\n\n(results capped at {}; use maxResults to raise the limit)",
            input.max_results
        ));
    }
    ToolOutput::ok(data)
}
