//! `grep` (CONTRACT §11.8, one in-process behaviour per §21): the fallback's output format
//! and global cap (note only when lines were dropped), the walker's skip list, binary files
//! (containing a NUL byte) skipped, symlinks not followed, Rust regex syntax with a
//! backtracking engine (fancy-regex) for lookaround / back-references, abort honoured
//! between files.

use std::cell::Cell;
use std::io::BufRead;
use std::time::{Duration, Instant};

use oma_os::fs;

use grep_regex::{RegexMatcher, RegexMatcherBuilder};
use grep_searcher::{sinks::Lossy, BinaryDetection, Searcher, SearcherBuilder, Sink, SinkMatch};

use super::glob::{absolute, display, open_target, GlobPattern, Target};
use super::path_safety::{outside_error, FsError};
use super::path_safety::{resolve_path_within_cwd, SandboxSpec};
use super::walk::{open_file_at, walk, Flow, Walked, MAX_WALK_DEPTH};
use super::ToolOutput;

pub struct GrepInput {
    pub pattern: String,
    pub path: Option<String>,
    pub glob: Option<String>,
    pub max_results: usize,
}

// One engine per search, cloned per worker thread: the size difference costs nothing, and
// boxing the searchers would add an indirection per file.
#[allow(clippy::large_enum_variant)]
#[derive(Clone)]
enum Engine {
    /// The matcher, a searcher for whole-file buffers, one for streamed large files.
    Fast(RegexMatcher, Searcher, Searcher),
    /// The matcher and the longest line a streamed file may hold.
    Backtracking(fancy_regex::Regex, usize),
}

/// Files up to this size are read whole (binary check over the entire file before any
/// match counts); larger ones are streamed so memory stays bounded.
const WHOLE_READ_LIMIT: u64 = 64 << 20;

/// The longest line a streamed (larger than [`WHOLE_READ_LIMIT`]) file may hold: both
/// engines buffer a whole line, so a file of many GB without a newline grew memory without
/// bound. A file with a longer line is skipped, like a binary one.
const STREAM_LINE_LIMIT: usize = 64 << 20;

/// The backtracking engine's step budget for one line (fancy-regex's own default, now
/// explicit): a step is one backtrack. Past it the search ends with an error rather than
/// counting the line as "no match" (which silently hid matches) and moving on to the next
/// equally slow line.
const BACKTRACK_LIMIT: usize = 1_000_000;

/// The backtracking engine's time budget for one line. Steps alone do not bound time: a
/// lookahead such as `(?=.*x)` re-scans the rest of the line at every start position
/// without a single backtrack (seconds on a 100 KB line). Generous enough that no sane
/// pattern meets it even in a debug build.
const LINE_TIME_BUDGET: Duration = Duration::from_secs(2);

fn compile(pattern: &str) -> Option<Engine> {
    compile_with(pattern, STREAM_LINE_LIMIT)
}

fn compile_with(pattern: &str, line_limit: usize) -> Option<Engine> {
    // multi_line: `^`/`$` match at line boundaries of the searched buffer; the line
    // terminator keeps every match within one line, like the original's per-line test.
    if let Ok(m) = RegexMatcherBuilder::new().multi_line(true).line_terminator(Some(b'\n')).build(pattern) {
        let searcher = SearcherBuilder::new().line_number(true).binary_detection(BinaryDetection::none()).build();
        let streaming = SearcherBuilder::new()
            .line_number(true)
            .binary_detection(BinaryDetection::quit(0))
            .heap_limit(Some(line_limit))
            .build();
        return Some(Engine::Fast(m, searcher, streaming));
    }
    let re = fancy_regex::RegexBuilder::new(pattern).backtrack_limit(BACKTRACK_LIMIT).build().ok()?;
    Some(Engine::Backtracking(re, line_limit))
}

struct Hit {
    file: String,
    line: u64,
    text: String,
}

/// Why a search stopped before the end.
#[derive(Debug, PartialEq)]
enum Halt {
    /// Aborted (or, inside the tree search, enough hits elsewhere): the hits so far stand.
    Cancelled,
    /// A budget of the backtracking engine ran out on this line: the search fails.
    Budget { line: u64, reason: String },
}

/// Room left (`hits.len() < limit`), or why the search stopped.
type Searched = Result<bool, Halt>;

/// What the matcher consults while it runs: the abort check and the per-line time budget.
struct Watch<'a> {
    cancelled: &'a dyn Fn() -> bool,
    line_budget: Duration,
    /// Calls since the last check (checks are amortised over a few VM steps).
    ticks: Cell<u32>,
}

impl<'a> Watch<'a> {
    fn new(cancelled: &'a dyn Fn() -> bool) -> Self {
        Watch { cancelled, line_budget: LINE_TIME_BUDGET, ticks: Cell::new(0) }
    }
}

/// Unwinds out of the matcher (see [`Watched`]).
enum Abort {
    Cancelled,
    Time,
}

/// A line handed to fancy-regex through its `Input` trait, so that the VM's own accesses
/// to the text (every instruction that reads it, each lookaround or delegate included)
/// check the abort flag and the time budget. fancy-regex offers no callback, so leaving a
/// running match is an unwind (`resume_unwind`: no panic hook, no message) caught by
/// [`is_match_watched`]. It happens only between VM instructions, never inside the regex
/// crate's own search, whose caches therefore stay consistent.
struct Watched<'a> {
    text: &'a str,
    watch: &'a Watch<'a>,
    started: Instant,
}

impl Watched<'_> {
    #[inline]
    fn tick(&self) {
        let n = self.watch.ticks.get().wrapping_add(1);
        self.watch.ticks.set(n);
        if n.is_multiple_of(16) && (self.watch.cancelled)() {
            std::panic::resume_unwind(Box::new(Abort::Cancelled));
        }
        if n.is_multiple_of(256) && self.started.elapsed() > self.watch.line_budget {
            std::panic::resume_unwind(Box::new(Abort::Time));
        }
    }
}

impl fancy_regex::Input for Watched<'_> {
    type Match<'t>
        = fancy_regex::Match<'t>
    where
        Self: 't;

    fn len(&self) -> usize {
        self.text.len()
    }
    fn as_bytes(&self) -> &[u8] {
        self.tick();
        self.text.as_bytes()
    }
    fn is_char_boundary(&self, ix: usize) -> bool {
        self.text.is_char_boundary(ix)
    }
    fn is_ascii(&self) -> bool {
        self.text.is_ascii()
    }
    fn prev_codepoint_ix(&self, i: usize) -> usize {
        fancy_regex::Input::prev_codepoint_ix(self.text, i)
    }
    fn make_match<'t>(&'t self, start: usize, end: usize) -> fancy_regex::Match<'t> {
        fancy_regex::Input::make_match(self.text, start, end)
    }
    fn advance_position(&self, i: usize) -> usize {
        self.tick();
        fancy_regex::Input::advance_position(self.text, i)
    }
}

/// One line through the backtracking engine, under the watch.
fn is_match_watched(re: &fancy_regex::Regex, line: &str, lnum: u64, watch: &Watch) -> Result<bool, Halt> {
    if (watch.cancelled)() {
        return Err(Halt::Cancelled);
    }
    let input = Watched { text: line, watch, started: Instant::now() };
    let budget = |reason: String| Halt::Budget { line: lnum, reason };
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| re.is_match(&input))) {
        Ok(Ok(m)) => Ok(m),
        Ok(Err(fancy_regex::Error::RuntimeError(fancy_regex::RuntimeError::BacktrackLimitExceeded))) => {
            Err(budget(format!("the pattern needed more than {BACKTRACK_LIMIT} backtracking steps")))
        }
        Ok(Err(e)) => Err(budget(format!("the regex engine failed ({e})"))),
        Err(payload) => match payload.downcast::<Abort>() {
            Ok(a) => match *a {
                Abort::Cancelled => Err(Halt::Cancelled),
                Abort::Time => {
                    Err(budget(format!("matching the line took more than {} s", watch.line_budget.as_secs_f64())))
                }
            },
            Err(other) => std::panic::resume_unwind(other),
        },
    }
}

/// The tool's text for a budget that ran out.
fn budget_error(file: &str, line: u64, reason: &str) -> String {
    format!(
        "grep stopped on line {line} of \"{file}\": {reason}. Simplify the pattern: nested quantifiers, back-references and lookaround over long lines can backtrack almost without end."
    )
}

/// Searches one file's bytes; pushes hits until `limit` is reached.
fn search_bytes(
    engine: &mut Engine,
    bytes: &[u8],
    file: &str,
    hits: &mut Vec<Hit>,
    limit: usize,
    watch: &Watch,
) -> Searched {
    if memchr::memchr(0, bytes).is_some() {
        return Ok(true); // binary: skipped
    }
    match engine {
        Engine::Fast(m, searcher, _) => {
            // Linear time: at most WHOLE_READ_LIMIT bytes, so no check inside is needed.
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
        Engine::Backtracking(re, _) => {
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
                if is_match_watched(re, l, i as u64 + 1, watch)? {
                    hits.push(Hit { file: file.to_string(), line: i as u64 + 1, text: l.to_string() });
                }
            }
        }
    }
    Ok(hits.len() < limit)
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

/// A reader that fails once the search is aborted: a streamed file (of any size) is read
/// chunk by chunk, and the abort is checked at each chunk.
struct WatchedReader<'a, R> {
    inner: R,
    cancelled: &'a dyn Fn() -> bool,
    tripped: bool,
}

impl<R: std::io::Read> std::io::Read for WatchedReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if (self.cancelled)() {
            self.tripped = true;
            return Err(std::io::Error::other("grep aborted"));
        }
        self.inner.read(buf)
    }
}

/// Searches a large file without holding it in memory. A NUL byte met before the search
/// stops skips the file; one after the cap was reached cannot be seen (documented limit).
fn search_stream(
    engine: &mut Engine,
    f: std::fs::File,
    file: &str,
    hits: &mut Vec<Hit>,
    limit: usize,
    watch: &Watch,
) -> Searched {
    let room = limit.saturating_sub(hits.len());
    let mut local: Vec<Hit> = Vec::new();
    let mut binary = false;
    match engine {
        Engine::Fast(m, _, searcher) => {
            let mut sink = FileSink { file, hits: Vec::new(), room, binary: false };
            let mut reader = WatchedReader { inner: f, cancelled: watch.cancelled, tripped: false };
            let r = searcher.search_reader(&*m, &mut reader, &mut sink);
            if reader.tripped {
                return Err(Halt::Cancelled);
            }
            if r.is_err() {
                return Ok(true); // unreadable → skipped
            }
            local = sink.hits;
            binary = sink.binary;
        }
        Engine::Backtracking(re, line_limit) => {
            use std::io::Read;
            let mut reader = std::io::BufReader::with_capacity(64 * 1024, f);
            let mut line: Vec<u8> = Vec::new();
            let mut n = 0u64;
            loop {
                line.clear();
                // At most one byte past the limit: that byte says the line is too long.
                match (&mut reader).take(*line_limit as u64 + 1).read_until(b'\n', &mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if line.len() > *line_limit {
                    return Ok(hits.len() < limit); // skipped, like a binary file
                }
                n += 1;
                if memchr::memchr(0, &line).is_some() {
                    binary = true;
                    break;
                }
                let text = String::from_utf8_lossy(&line);
                let text = text.strip_suffix('\n').unwrap_or(&text);
                if is_match_watched(re, text, n, watch)? {
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
    Ok(hits.len() < limit)
}

/// One file: read whole when small, streamed when large. No fstat for small files: the file
/// is read to EOF and only a file that outgrows the limit is checked, rewound and streamed
/// (one syscall less per file matters on trees of many small files). The abort is checked
/// per chunk read.
fn search_file(
    engine: &mut Engine,
    f: std::fs::File,
    file: &str,
    hits: &mut Vec<Hit>,
    limit: usize,
    buf: &mut Vec<u8>,
    watch: &Watch,
) -> Searched {
    use std::os::fd::AsFd;
    buf.clear();
    loop {
        if (watch.cancelled)() {
            return Err(Halt::Cancelled);
        }
        if buf.len() as u64 > WHOLE_READ_LIMIT {
            // Only a regular file is streamed: a device swapped in since the listing (say
            // /dev/zero) would never end.
            if !is_regular(f.as_fd()) || fs::rewind(f.as_fd()).is_err() {
                return Ok(true);
            }
            return search_stream(engine, f, file, hits, limit, watch);
        }
        if buf.capacity() - buf.len() < 16 * 1024 {
            buf.reserve(128 * 1024);
        }
        match fs::read_append(f.as_fd(), buf, usize::MAX) {
            Ok(0) => break,
            Ok(_) | Err(libc::EINTR) => {}
            Err(_) => return Ok(true), // unreadable → skipped
        }
    }
    search_bytes(engine, buf, file, hits, limit, watch)
}

/// Searches a directory tree: the walk (one thread) hands batches of files, numbered in walk
/// order, to worker threads; results are reassembled in walk order, so the output is exactly
/// the sequential one (a budget error included: it counts only if the search would have
/// reached it). Batches keep the synchronisation cost per file low. Once the batches
/// completed in order hold `limit` hits, or one failed, walk and workers stop.
fn search_tree(
    engine: &Engine,
    fd: &std::os::fd::OwnedFd,
    abs: &str,
    root: &str,
    pattern: Option<&GlobPattern>,
    cancelled: &(dyn Fn() -> bool + Sync),
    limit: usize,
) -> (Result<Vec<Hit>, String>, Walked) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::{mpsc, Arc, Mutex};

    const BATCH: usize = 32;
    // A file to search: its path, its directory's handle, its name there.
    type Item = (String, Arc<std::os::fd::OwnedFd>, std::ffi::CString);

    let workers = std::env::var("OMA_GREP_WORKERS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 4));
    let stop = AtomicBool::new(false);
    let halted = || stop.load(Ordering::Relaxed) || cancelled();
    let (job_tx, job_rx) = mpsc::sync_channel::<(usize, Vec<Item>)>(2 * workers);
    let job_rx = Mutex::new(job_rx);
    // (batch number, hits, whether the batch was searched to its end, a budget error).
    let (res_tx, res_rx) = mpsc::channel::<(usize, Vec<Hit>, bool, Option<String>)>();
    let mut out: Vec<Hit> = Vec::new();
    let mut failed: Option<String> = None;
    let mut walked = Walked::default();
    std::thread::scope(|s| {
        for _ in 0..workers {
            let mut engine = engine.clone();
            let res_tx = res_tx.clone();
            let (job_rx, halted) = (&job_rx, &halted);
            s.spawn(move || {
                let mut buf = Vec::new();
                let watch = Watch::new(halted);
                loop {
                    let job = job_rx.lock().map_err(|_| ()).and_then(|rx| rx.recv().map_err(|_| ()));
                    let Ok((seq, items)) = job else { break };
                    let mut hits = Vec::new();
                    let mut complete = true;
                    let mut failure = None;
                    for (path, dir, name) in items {
                        if hits.len() >= limit {
                            break;
                        }
                        if halted() {
                            complete = false;
                            break;
                        }
                        if let Some(f) = open_file_at(std::os::fd::AsFd::as_fd(&*dir), &name) {
                            let before = hits.len();
                            let r = search_file(&mut engine, f, "", &mut hits, limit, &mut buf, &watch);
                            // The display path is only worth computing for files with hits.
                            if hits.len() > before {
                                let shown = display(root, &path, &path);
                                for h in &mut hits[before..] {
                                    h.file.clone_from(&shown);
                                }
                            }
                            match r {
                                Ok(_) => {}
                                Err(Halt::Cancelled) => {
                                    complete = false;
                                    break;
                                }
                                Err(Halt::Budget { line, reason }) => {
                                    failure = Some(budget_error(&display(root, &path, &path), line, &reason));
                                    break;
                                }
                            }
                        }
                    }
                    if res_tx.send((seq, hits, complete, failure)).is_err() {
                        break;
                    }
                }
            });
        }
        drop(res_tx);
        let halted = &halted;
        let walker = s.spawn(move || {
            let mut seq = 0usize;
            let mut batch: Vec<Item> = Vec::with_capacity(BATCH);
            let walked = walk(fd, abs, halted, &mut |e| {
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
            walked
        });
        let mut pending: std::collections::BTreeMap<usize, (Vec<Hit>, bool, Option<String>)> =
            std::collections::BTreeMap::new();
        let mut next = 0usize;
        // After an aborted (incomplete) or failed batch nothing later counts: the result
        // stays a prefix of the full one, as with a sequential walk stopped at the same point.
        let mut ended = false;
        for (seq, hits, complete, failure) in res_rx {
            pending.insert(seq, (hits, complete, failure));
            while let Some((h, complete, failure)) = pending.remove(&next) {
                if !ended && out.len() < limit {
                    out.extend(h);
                    // Hits enough before the failing line: a sequential search stops first.
                    if out.len() < limit && failure.is_some() {
                        failed = failure.clone();
                    }
                }
                ended |= !complete || failure.is_some();
                next += 1;
            }
            if out.len() >= limit || failed.is_some() {
                stop.store(true, Ordering::Relaxed);
            }
        }
        walked = walker.join().unwrap_or_default();
    });
    out.truncate(limit);
    (failed.map_or(Ok(out), Err), walked)
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
    let mut walked = Walked::default();
    match target {
        Target::File => match r.sandbox.open(&r.path, libc::O_RDONLY | libc::O_NONBLOCK | libc::O_NOCTTY, 0, "open") {
            // Regular files only: a FIFO or device named as the path has no lines to search
            // (and /dev/zero would never end).
            Ok(fd) if is_regular(std::os::fd::AsFd::as_fd(&fd)) => {
                let mut buf = Vec::new();
                let shown = display(&r.root, &abs, &r.path);
                let watch = Watch::new(cancelled);
                if let Err(Halt::Budget { line, reason }) =
                    search_file(&mut engine, std::fs::File::from(fd), &shown, &mut hits, limit, &mut buf, &watch)
                {
                    return ToolOutput::error(budget_error(&shown, line, &reason));
                }
            }
            Ok(_) => {}
            Err(FsError::Escape) => return ToolOutput::error(outside_error(&r.candidate, &r.root)),
            Err(_) => {} // unreadable → skipped
        },
        Target::Dir(Some(fd)) => {
            let pattern = input.glob.as_deref().map(GlobPattern::new);
            let (found, w) = search_tree(&engine, &fd, &abs, &r.root, pattern.as_ref(), cancelled, limit);
            walked = w;
            match found {
                Ok(h) => hits = h,
                Err(e) => return ToolOutput::error(e),
            }
        }
        Target::Dir(None) => {}
    }
    let mut data = String::new();
    if hits.is_empty() {
        data.push_str("No matches found.");
    }
    let dropped = hits.len() > input.max_results;
    hits.truncate(input.max_results);
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
        data.push_str(&format!("\n\n(results capped at {}; use maxResults to raise the limit)", input.max_results));
    }
    if walked.too_deep {
        data.push_str(&format!("\n\n(directories nested more than {MAX_WALK_DEPTH} levels deep were not searched)"));
    }
    ToolOutput::ok(data)
}

fn is_regular(fd: std::os::fd::BorrowedFd<'_>) -> bool {
    fs::fstat(fd).is_ok_and(|st| fs::file_type(&st) == libc::S_IFREG)
}

/// `maxResults` when the input does not give it (the field's description says so).
pub const DEFAULT_MAX_RESULTS: u32 = 100;

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn hits_of(engine: &mut Engine, content: &[u8], stream: bool) -> Vec<(u64, String)> {
        let path = std::env::temp_dir().join(format!("oma-grep-{}-{}", std::process::id(), stream as u8));
        std::fs::File::create(&path).unwrap().write_all(content).unwrap();
        let f = std::fs::File::open(&path).unwrap();
        let mut hits = Vec::new();
        let watch = Watch::new(&|| false);
        if stream {
            search_stream(engine, f, "f", &mut hits, 100, &watch).unwrap();
        } else {
            let mut buf = Vec::new();
            search_file(engine, f, "f", &mut hits, 100, &mut buf, &watch).unwrap();
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

    fn watch_with(cancelled: &dyn Fn() -> bool, line_budget: Duration) -> Watch<'_> {
        Watch { cancelled, line_budget, ticks: Cell::new(0) }
    }

    /// Exceeds fancy-regex's step budget on any line of a few dozen characters.
    const CATASTROPHIC: &str = r"(.*)(.*)(.*)(.*)\1\2\3\4z";

    #[test]
    fn an_exhausted_step_budget_is_an_error_not_a_silent_miss() {
        let Some(Engine::Backtracking(re, _)) = compile(CATASTROPHIC) else { panic!("backtracking engine expected") };
        // No time budget in play: the step budget alone decides, deterministically.
        let watch = watch_with(&|| false, Duration::MAX);
        let r = is_match_watched(&re, &"a".repeat(100), 7, &watch);
        assert_eq!(
            r,
            Err(Halt::Budget { line: 7, reason: "the pattern needed more than 1000000 backtracking steps".into() })
        );
        // Ordinary back-references still match.
        assert_eq!(is_match_watched(&re, "abab", 1, &watch), Ok(false));
        let Some(Engine::Backtracking(re2, _)) = compile(r"(\w+) \1") else { panic!() };
        assert_eq!(is_match_watched(&re2, "hello hello", 1, &watch), Ok(true));
    }

    #[test]
    fn the_time_budget_holds_inside_one_line() {
        // A lookahead re-scanning the line at each start: slow without a single backtrack.
        let Some(Engine::Backtracking(re, _)) = compile(r"(?=.*x)(.*)\1y") else { panic!() };
        let watch = watch_with(&|| false, Duration::ZERO);
        let r = is_match_watched(&re, &"a".repeat(20_000), 3, &watch);
        assert_eq!(r, Err(Halt::Budget { line: 3, reason: "matching the line took more than 0 s".into() }));
    }

    #[test]
    fn abort_is_seen_inside_the_matcher() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let Some(Engine::Backtracking(re, _)) = compile(r"(?=.*x)(.*)\1y") else { panic!() };
        // Not aborted at the start of the line, aborted at the first check inside it: only a
        // check within the running match can see it (the line alone takes seconds).
        let calls = AtomicUsize::new(0);
        let cancelled = || calls.fetch_add(1, Ordering::Relaxed) >= 1;
        let watch = watch_with(&cancelled, Duration::MAX);
        assert_eq!(is_match_watched(&re, &"a".repeat(50_000), 1, &watch), Err(Halt::Cancelled));
        assert!(calls.load(Ordering::Relaxed) >= 2);
    }

    #[test]
    fn a_budget_error_ends_the_tool_with_a_clear_text() {
        use crate::tool::builtin::testutil::{rm_rf, tmp_dir};
        let root = tmp_dir("grep-budget");
        std::fs::write(format!("{root}/a.txt"), "needle one\n").unwrap();
        std::fs::write(format!("{root}/b.txt"), format!("x\n{}\n", "a".repeat(100))).unwrap();
        let spec = SandboxSpec { root: Some(root.clone()), process_cwd: "/".into() };
        let input = GrepInput { pattern: format!("needle|{CATASTROPHIC}"), path: None, glob: None, max_results: 100 };
        let out = grep_tool(&input, &spec, &|| false);
        assert!(out.is_error, "{}", out.data);
        // Which budget runs out first depends on the machine; the text names it.
        assert!(out.data.starts_with("grep stopped on line 2 of \"b.txt\": the pattern "), "{}", out.data);
        assert!(
            out.data.ends_with(". Simplify the pattern: nested quantifiers, back-references and lookaround over long lines can backtrack almost without end."),
            "{}",
            out.data
        );
        // A single file as the path reports the same way.
        let one = GrepInput { path: Some(format!("{root}/b.txt")), ..input };
        let out = grep_tool(&one, &spec, &|| false);
        assert!(out.is_error && out.data.starts_with("grep stopped on line 2 of \"b.txt\": "), "{}", out.data);
        rm_rf(&root);
    }

    #[test]
    fn a_budget_error_after_enough_hits_is_not_reached() {
        use crate::tool::builtin::testutil::{rm_rf, tmp_dir};
        let root = tmp_dir("grep-budget-cap");
        // Enough hits in earlier files: a sequential search stops before the slow line.
        for i in 0..40 {
            std::fs::write(format!("{root}/a{i:02}.txt"), "needle\n").unwrap();
        }
        std::fs::write(format!("{root}/z.txt"), format!("{}\n", "a".repeat(100))).unwrap();
        let spec = SandboxSpec { root: Some(root.clone()), process_cwd: "/".into() };
        let input = GrepInput { pattern: format!("needle|{CATASTROPHIC}"), path: None, glob: None, max_results: 5 };
        let out = grep_tool(&input, &spec, &|| false);
        assert!(!out.is_error, "{}", out.data);
        assert!(out.data.ends_with("(results capped at 5; use maxResults to raise the limit)"));
        rm_rf(&root);
    }

    #[test]
    fn fifos_are_skipped_and_deep_trees_noted() {
        use crate::tool::builtin::testutil::{rm_rf, small_stack, tmp_dir, with_fifo};
        use crate::tool::builtin::walk::tests::deep_tree;
        let files = [("a.txt", "needle\n")];
        let (root, (tree, single)) = with_fifo("grep-fifo", &files, "p.fifo", "grep over a FIFO", |root, fifo| {
            let spec = SandboxSpec { root: Some(root.into()), process_cwd: "/".into() };
            let tree = grep_tool(
                &GrepInput { pattern: "needle".into(), path: None, glob: None, max_results: 100 },
                &spec,
                &|| false,
            );
            let one = GrepInput { pattern: "needle".into(), path: Some(fifo.into()), glob: None, max_results: 100 };
            (tree, grep_tool(&one, &spec, &|| false))
        });
        assert_eq!(tree, ToolOutput::ok("a.txt:1:needle".into()));
        assert_eq!(single, ToolOutput::ok("No matches found.".into()));
        rm_rf(&root);

        let root = tmp_dir("grep-deep");
        drop(deep_tree(&root, 600));
        let spec = SandboxSpec { root: Some(root.clone()), process_cwd: "/".into() };
        let out = small_stack(move || {
            grep_tool(
                &GrepInput { pattern: "needle".into(), path: None, glob: None, max_results: 1000 },
                &spec,
                &|| false,
            )
        });
        assert!(!out.is_error);
        let lines: Vec<&str> = out.data.lines().collect();
        // Walk order: `d` sorts before `f.txt`, so the deepest file comes first.
        assert_eq!(lines.len(), 513 + 2);
        assert_eq!(lines[0], format!("{}f.txt:1:needle", "d/".repeat(512)));
        assert_eq!(lines[512], "f.txt:1:needle");
        assert_eq!(lines[514], "(directories nested more than 512 levels deep were not searched)");
        rm_rf(&root);
    }

    #[test]
    fn a_streamed_file_with_an_endless_line_is_skipped_with_bounded_memory() {
        // With a 1 KiB line limit instead of 64 MiB: a file whose line outgrows it is skipped
        // by both engines (before, the line buffer grew with the file).
        let long = format!("needle\n{}\nneedle\n", "a".repeat(5000));
        for pattern in ["needle", "needle(?!x)"] {
            let mut small = compile_with(pattern, 1024).unwrap();
            assert_eq!(hits_of(&mut small, long.as_bytes(), true), vec![], "{pattern}");
            let mut big = compile_with(pattern, 8192).unwrap();
            assert_eq!(
                hits_of(&mut big, long.as_bytes(), true),
                vec![(1, "needle".into()), (3, "needle".into())],
                "{pattern}"
            );
        }
    }
}
