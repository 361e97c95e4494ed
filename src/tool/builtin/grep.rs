//! `grep` (CONTRACT §11.8, one in-process behaviour per §21): the fallback's output format
//! and global cap (note only when lines were dropped), the walker's skip list, binary files
//! (containing a NUL byte) skipped, symlinks not followed, Rust regex syntax with a
//! backtracking engine (fancy-regex) for lookaround / back-references, abort honoured
//! between files.

use std::io::BufRead;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{sinks::Lossy, BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};

use super::glob::{absolute, display, open_target, GlobPattern, Target};
use super::path_safety::{outside_error, FsError};
use super::path_safety::{resolve_path_within_cwd, SandboxSpec};
use super::walk::{open_file_at, walk, Flow};
use super::ToolOutput;

pub struct GrepInput {
    pub pattern: String,
    pub path: Option<String>,
    pub glob: Option<String>,
    pub max_results: usize,
}

#[derive(Clone)]
enum Engine {
    /// The matcher, a searcher for whole-file buffers, one for streamed large files.
    Fast(RegexMatcher, Searcher, Searcher),
    Backtracking(fancy_regex::Regex),
}

/// Files up to this size are read whole (binary check over the entire file before any
/// match counts); larger ones are streamed so memory stays bounded.
const WHOLE_READ_LIMIT: u64 = 64 << 20;

fn compile(pattern: &str) -> Option<Engine> {
    // multi_line: `^`/`$` match at line boundaries of the searched buffer; the line
    // terminator keeps every match within one line, like the original's per-line test.
    if let Ok(m) = RegexMatcherBuilder::new().multi_line(true).line_terminator(Some(b'\n')).build(pattern) {
        let searcher = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::none())
            .build();
        let streaming = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .build();
        return Some(Engine::Fast(m, searcher, streaming));
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
        Engine::Fast(m, searcher, _) => {
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

/// Collects one streamed file's hits; the file's hits are dropped if a NUL byte shows up.
struct FileSink<'a> {
    file: &'a str,
    hits: Vec<Hit>,
    room: usize,
    binary: bool,
}

impl Sink for FileSink<'_> {
    type Error = std::io::Error;

    fn matched(&mut self, _: &Searcher, m: &SinkMatch<'_>) -> Result<bool, std::io::Error> {
        let line = String::from_utf8_lossy(m.bytes());
        let text = line.strip_suffix('\n').unwrap_or(&line);
        self.hits.push(Hit { file: self.file.to_string(), line: m.line_number().unwrap_or(0), text: text.to_string() });
        Ok(self.hits.len() < self.room)
    }

    fn binary_data(&mut self, _: &Searcher, _: u64) -> Result<bool, std::io::Error> {
        self.binary = true;
        Ok(false)
    }
}

/// Searches a large file without holding it in memory. A NUL byte met before the search
/// stops skips the file; one after the cap was reached cannot be seen (documented limit).
fn search_stream(engine: &mut Engine, f: std::fs::File, file: &str, hits: &mut Vec<Hit>, limit: usize) -> bool {
    let room = limit.saturating_sub(hits.len());
    let mut local: Vec<Hit> = Vec::new();
    let mut binary = false;
    match engine {
        Engine::Fast(m, _, searcher) => {
            let mut sink = FileSink { file, hits: Vec::new(), room, binary: false };
            if searcher.search_file(&*m, &f, &mut sink).is_err() {
                return true; // unreadable → skipped
            }
            local = sink.hits;
            binary = sink.binary;
        }
        Engine::Backtracking(re) => {
            let mut reader = std::io::BufReader::with_capacity(64 * 1024, f);
            let mut line: Vec<u8> = Vec::new();
            let mut n = 0u64;
            loop {
                line.clear();
                match reader.read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                n += 1;
                if memchr::memchr(0, &line).is_some() {
                    binary = true;
                    break;
                }
                let text = String::from_utf8_lossy(&line);
                let text = text.strip_suffix('\n').unwrap_or(&text);
                if re.is_match(text).unwrap_or(false) {
                    local.push(Hit { file: file.to_string(), line: n, text: text.to_string() });
                    if local.len() >= room {
                        break;
                    }
                }
            }
        }
    }
    if !binary {
        hits.extend(local);
    }
    hits.len() < limit
}

/// One file: read whole when small, streamed when large. No fstat: the file is read to EOF
/// and only a file that outgrows the limit is rewound and streamed (one syscall less per
/// file matters on trees of many small files).
fn search_file(engine: &mut Engine, f: std::fs::File, file: &str, hits: &mut Vec<Hit>, limit: usize, buf: &mut Vec<u8>) -> bool {
    use std::os::fd::AsRawFd;
    buf.clear();
    loop {
        if buf.len() as u64 > WHOLE_READ_LIMIT {
            // SAFETY: plain lseek on our descriptor.
            if unsafe { libc::lseek(f.as_raw_fd(), 0, libc::SEEK_SET) } != 0 {
                return true;
            }
            return search_stream(engine, f, file, hits, limit);
        }
        if buf.capacity() - buf.len() < 16 * 1024 {
            buf.reserve(128 * 1024);
        }
        let spare = buf.spare_capacity_mut();
        // SAFETY: reading into the vector's spare capacity, then extending by what was read.
        let n = unsafe { libc::read(f.as_raw_fd(), spare.as_mut_ptr().cast(), spare.len()) };
        if n > 0 {
            unsafe { buf.set_len(buf.len() + n as usize) };
        } else if n == 0 {
            break;
        } else if std::io::Error::last_os_error().raw_os_error() != Some(libc::EINTR) {
            return true; // unreadable → skipped
        }
    }
    search_bytes(engine, buf, file, hits, limit)
}

/// Searches a directory tree: the walk (one thread) hands batches of files, numbered in walk
/// order, to worker threads; results are reassembled in walk order, so the output is exactly
/// the sequential one. Batches keep the synchronisation cost per file low. Once the batches
/// completed in order hold `limit` hits, walk and workers stop.
fn search_tree(
    engine: &Engine,
    fd: &std::os::fd::OwnedFd,
    abs: &str,
    root: &str,
    pattern: Option<&GlobPattern>,
    cancelled: &(dyn Fn() -> bool + Sync),
    limit: usize,
) -> Vec<Hit> {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc, Mutex};

    const BATCH: usize = 32;
    // A file to search: its path, its directory's handle, its name there.
    type Item = (String, Arc<std::os::fd::OwnedFd>, std::ffi::CString);

    let workers = std::env::var("OMA_GREP_WORKERS").ok().and_then(|v| v.parse().ok()).unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4));
    let stop = AtomicBool::new(false);
    let halted = || stop.load(Ordering::Relaxed) || cancelled();
    let (job_tx, job_rx) = mpsc::sync_channel::<(usize, Vec<Item>)>(2 * workers);
    let job_rx = Mutex::new(job_rx);
    // (batch number, hits, whether the batch was searched to its end).
    let (res_tx, res_rx) = mpsc::channel::<(usize, Vec<Hit>, bool)>();
    let mut out: Vec<Hit> = Vec::new();
    std::thread::scope(|s| {
        for _ in 0..workers {
            let mut engine = engine.clone();
            let res_tx = res_tx.clone();
            let (job_rx, halted) = (&job_rx, &halted);
            s.spawn(move || {
                let mut buf = Vec::new();
                loop {
                    let job = job_rx.lock().map_err(|_| ()).and_then(|rx| rx.recv().map_err(|_| ()));
                    let Ok((seq, items)) = job else { break };
                    let mut hits = Vec::new();
                    let mut complete = true;
                    for (path, dir, name) in items {
                        if hits.len() >= limit {
                            break;
                        }
                        if halted() {
                            complete = false;
                            break;
                        }
                        if let Some(f) = open_file_at(std::os::fd::AsRawFd::as_raw_fd(&*dir), &name) {
                            let before = hits.len();
                            search_file(&mut engine, f, "", &mut hits, limit, &mut buf);
                            // The display path is only worth computing for files with hits.
                            if hits.len() > before {
                                let shown = display(root, &path, &path);
                                for h in &mut hits[before..] {
                                    h.file.clone_from(&shown);
                                }
                            }
                        }
                    }
                    if res_tx.send((seq, hits, complete)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(res_tx);
        let halted = &halted;
        s.spawn(move || {
            let mut seq = 0usize;
            let mut batch: Vec<Item> = Vec::with_capacity(BATCH);
            walk(fd, abs, halted, &mut |e| {
                if pattern.is_some_and(|p| !p.matches_rel(e.rel)) {
                    return Flow::Continue;
                }
                batch.push((e.path.to_string(), e.dir.clone(), e.name.to_owned()));
                if batch.len() == BATCH {
                    let full = std::mem::replace(&mut batch, Vec::with_capacity(BATCH));
                    if job_tx.send((seq, full)).is_err() {
                        return Flow::Stop;
                    }
                    seq += 1;
                }
                Flow::Continue
            });
            if !batch.is_empty() {
                let _ = job_tx.send((seq, batch));
            }
        });
        let mut pending: std::collections::BTreeMap<usize, (Vec<Hit>, bool)> = std::collections::BTreeMap::new();
        let mut next = 0usize;
        // After an aborted (incomplete) batch nothing later counts: the result stays a prefix
        // of the full one, as with a sequential walk stopped at the same point.
        let mut ended = false;
        for (seq, hits, complete) in res_rx {
            pending.insert(seq, (hits, complete));
            while let Some((h, complete)) = pending.remove(&next) {
                if !ended && out.len() < limit {
                    out.extend(h);
                }
                ended |= !complete;
                next += 1;
            }
            if out.len() >= limit {
                stop.store(true, Ordering::Relaxed);
            }
        }
    });
    out.truncate(limit);
    out
}

pub fn grep_tool(input: &GrepInput, spec: &SandboxSpec, cancelled: &(dyn Fn() -> bool + Sync)) -> ToolOutput {
    let requested = input.path.clone().unwrap_or_else(|| spec.root.clone().unwrap_or_else(|| spec.process_cwd.clone()));
    let r = match resolve_path_within_cwd(&requested, spec, false) {
        Ok(r) => r,
        Err(e) => return ToolOutput::error(e),
    };
    let Some(mut engine) = compile(&input.pattern) else {
        return ToolOutput::error(format!("Invalid regular expression: \"{}\"", input.pattern));
    };
    let target = match open_target(&r, &r.path) {
        Ok(x) => x,
        Err(e) => return ToolOutput::error(e),
    };
    let abs = absolute(&r, spec);
    // One more than the cap, to know whether anything was dropped.
    let limit = input.max_results.saturating_add(1);
    let mut hits: Vec<Hit> = Vec::new();
    match target {
        Target::File => match r.sandbox.open(&r.path, libc::O_RDONLY | libc::O_NONBLOCK, 0, "open") {
            Ok(fd) => {
                let mut buf = Vec::new();
                search_file(&mut engine, std::fs::File::from(fd), &display(&r.root, &abs, &r.path), &mut hits, limit, &mut buf);
            }
            Err(FsError::Escape) => return ToolOutput::error(outside_error(&r.candidate, &r.root)),
            Err(_) => {} // unreadable → skipped
        },
        Target::Dir(Some(fd)) => {
            let pattern = input.glob.as_deref().map(GlobPattern::new);
            hits = search_tree(&engine, &fd, &abs, &r.root, pattern.as_ref(), cancelled, limit);
        }
        Target::Dir(None) => {}
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn hits_of(engine: &mut Engine, content: &[u8], stream: bool) -> Vec<(u64, String)> {
        let path = std::env::temp_dir().join(format!("oma-grep-{}-{}", std::process::id(), stream as u8));
        std::fs::File::create(&path).unwrap().write_all(content).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let mut hits = Vec::new();
        if stream {
            search_stream(engine, f, "f", &mut hits, 100);
        } else {
            let mut buf = Vec::new();
            search_file(engine, f, "f", &mut hits, 100, &mut buf);
        }
        std::fs::remove_file(&path).unwrap();
        hits.into_iter().map(|h| (h.line, h.text)).collect()
    }

    #[test]
    fn abort_mid_walk_yields_a_prefix_of_the_full_result() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let base = std::env::temp_dir().join(format!("oma-grep-abort-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&base);
        for i in 0..300 {
            let d = base.join(format!("d{:02}", i % 17));
            std::fs::create_dir_all(&d).unwrap();
            std::fs::write(d.join(format!("f{i:03}.txt")), format!("hit {i}\n")).unwrap();
        }
        let root = base.to_string_lossy().into_owned();
        let spec = SandboxSpec { root: Some(root.clone()), process_cwd: "/".into() };
        let input = GrepInput { pattern: "hit".into(), path: None, glob: None, max_results: 1000 };
        let full = grep_tool(&input, &spec, &|| false).data;
        assert_eq!(full.lines().count(), 300);
        let calls = AtomicUsize::new(0);
        let part = grep_tool(&input, &spec, &|| calls.fetch_add(1, Ordering::Relaxed) > 40).data;
        assert!(part == "No matches found." || full.starts_with(&part), "{part}");
        assert!(part.lines().count() < 300);
        std::fs::remove_dir_all(&base).unwrap();
    }

    #[test]
    fn streamed_and_whole_reads_agree() {
        let text = b"alpha\r\nbeta\nalphabet\n\xffalpha\nlast alpha";
        for pattern in ["alpha", "alpha(?=bet)", "^alpha"] {
            let mut e = compile(pattern).unwrap();
            let whole = hits_of(&mut e, text, false);
            let streamed = hits_of(&mut e, text, true);
            assert_eq!(whole, streamed, "{pattern}");
            assert!(!whole.is_empty());
        }
        let mut e = compile("alpha").unwrap();
        assert_eq!(hits_of(&mut e, b"alpha\n\0\nalpha\n", false), vec![]);
        assert_eq!(hits_of(&mut e, b"alpha\n\0\nalpha\n", true), vec![]);
        let mut e = compile("alpha(?=x)").unwrap();
        assert_eq!(hits_of(&mut e, b"alphax\n\0\n", true), vec![]);
    }
}
