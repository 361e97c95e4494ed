//! The stdio transport: the server is a child process speaking newline-delimited JSON-RPC on
//! its stdin/stdout; this module spawns it, moves lines between its pipes and the
//! [`Session`](crate::session::Session), and ends it. Policy stays in the session.
//!
//! - **Environment:** as the TypeScript SDK's `StdioClientTransport`: the child gets only the
//!   caller's default environment (the SDK's `getDefaultEnvironment()`: `HOME`, `LOGNAME`,
//!   `PATH`, `SHELL`, `TERM`, `USER` on POSIX, values starting with `()` skipped; the JS glue
//!   reads them from `process.env` by the list [`DEFAULT_INHERITED_ENV_VARS`]), overlaid with
//!   the config's `env` (a `None` value removes the variable, as Node drops `undefined`).
//! - **stderr** is inherited (the SDK's default), so a server's logs reach the terminal.
//! - **Lines** longer than [`MAX_LINE_BYTES`] (the SDK's read buffer limit) end the connection
//!   with a clear error instead of growing a buffer. Lines read and lines to write pass through
//!   byte-bounded queues ([`crate::queue`]), and the driver reads no further line while what it
//!   has to write does not fit: a server that floods requests and never reads its stdin stalls
//!   on its own stdout instead of growing the client. The client holds at most a few lines of
//!   [`MAX_LINE_BYTES`] plus two [`crate::queue::QUEUE_BYTES`] for it; its requests still end at
//!   their deadlines.
//! - **The process tree:** ending the server closes its stdin, waits [`GRACE`] for an exit,
//!   sends SIGTERM to its process group, waits [`GRACE`] again, then SIGKILLs the whole tree
//!   (the SDK's close order, on the tree so descendants go too). On Linux the server runs under
//!   a child-subreaper helper ([`crate::reaper`], the layout `bash` uses): descendants that
//!   called `setsid` or double-forked stay in the tree and end too. Elsewhere the server leads
//!   its own process group and the kill is the group's: a descendant that starts its own
//!   session escapes it (as with the SDK).

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader};
#[cfg(not(target_os = "linux"))]
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::queue;
use crate::session::{CallOutcome, Config, Event, Session, Tool, Transmit};

/// The variables a child inherits when `env` does not set them (the SDK's list).
#[cfg(not(windows))]
pub const DEFAULT_INHERITED_ENV_VARS: &[&str] = &["HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER"];
#[cfg(windows)]
pub const DEFAULT_INHERITED_ENV_VARS: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
];

/// The longest line read from a server (the SDK's `STDIO_DEFAULT_MAX_BUFFER_SIZE`).
pub const MAX_LINE_BYTES: usize = 10 * 1024 * 1024;
/// How long a closing server is given at each step before the next, harder one.
pub const GRACE: Duration = Duration::from_secs(2);

/// Whether a default variable's value may be passed on (the SDK skips shell functions).
pub fn inheritable(value: &str) -> bool {
    !value.starts_with("()")
}

/// How to start the server.
#[derive(Clone, Debug, Default)]
pub struct Spawn {
    pub command: String,
    pub args: Vec<String>,
    /// The default environment (already filtered), then the config's overrides.
    pub default_env: Vec<(String, String)>,
    pub env: Vec<(String, Option<String>)>,
    pub cwd: Option<String>,
}

impl Spawn {
    /// The child's whole environment.
    pub fn environment(&self) -> Vec<(String, String)> {
        let mut merged: Vec<(String, Option<String>)> =
            self.default_env.iter().map(|(k, v)| (k.clone(), Some(v.clone()))).collect();
        for (k, v) in &self.env {
            match merged.iter_mut().find(|(mk, _)| mk == k) {
                Some(slot) => slot.1 = v.clone(),
                None => merged.push((k.clone(), v.clone())),
            }
        }
        merged.into_iter().filter_map(|(k, v)| v.map(|v| (k, v))).collect()
    }
}

/// Node's text for a failed spawn (`spawn <command> ENOENT`), which the original rethrew.
fn spawn_error(command: &str, e: &std::io::Error) -> String {
    let code = match e.raw_os_error() {
        Some(libc::ENOENT) => "ENOENT",
        Some(libc::EACCES) => "EACCES",
        Some(libc::ENOTDIR) => "ENOTDIR",
        Some(libc::E2BIG) => "E2BIG",
        _ => return format!("spawn {command} failed: {e}"),
    };
    format!("spawn {command} {code}")
}

pub(crate) enum Command_ {
    Call { key: u64, raw_name: String, arguments: String, reply: oneshot::Sender<CallOutcome> },
    Cancel { key: u64, reason: String },
    Disconnect { done: oneshot::Sender<()> },
}

/// What a transport's reader hands the driver.
pub(crate) enum Read {
    Line(String),
    /// The stream ended (`None`) or failed (the reason).
    End(Option<String>),
    /// Request `id` could not be delivered or answered (HTTP): its error message.
    Fail(u64, String),
}

/// A connected server. Dropping it (without [`Client::disconnect`]) ends the server the same way.
pub struct Client {
    /// Unbounded, as it holds only the caller's own commands: one per call it awaits (and one
    /// cancel per call), never anything a server controls.
    pub(crate) tx: mpsc::UnboundedSender<Command_>,
    pub(crate) pid: Option<u32>,
    /// Set once the driver has ended the tree: the group id may be reused after that.
    pub(crate) ended: Arc<AtomicBool>,
    /// The HTTP connection's state (the bearer token), `None` over stdio.
    pub(crate) http: Option<Arc<crate::http::Shared>>,
}

impl Client {
    /// Calls a tool; `key` names the call for [`Client::cancel`] (unique per client, chosen by
    /// the caller). Resolves with the tool's text; never fails (a lost server is a text).
    pub async fn call(&self, key: u64, raw_name: String, arguments: String) -> CallOutcome {
        let (reply, rx) = oneshot::channel();
        let closed = || CallOutcome {
            text: crate::rules::call_failed(
                &raw_name,
                &crate::session::mcp_error(crate::session::CONNECTION_CLOSED, "Connection closed"),
            ),
            is_error: true,
        };
        if self.tx.send(Command_::Call { key, raw_name: raw_name.clone(), arguments, reply }).is_err() {
            return closed();
        }
        rx.await.unwrap_or_else(|_| closed())
    }

    /// Gives up on the call `key` (the server gets `notifications/cancelled`).
    pub fn cancel(&self, key: u64, reason: String) {
        let _ = self.tx.send(Command_::Cancel { key, reason });
    }

    /// SIGTERM to the server's process group at once, without waiting (the embedding
    /// process is exiting and cannot wait for [`Client::disconnect`]). Nothing once the tree
    /// has been ended.
    pub fn terminate_now(&self) {
        if !self.ended.load(Ordering::Acquire) {
            #[cfg(unix)]
            signal_pid_group(self.pid, libc::SIGTERM);
        }
    }

    /// The bearer token for the next requests (HTTP; ignored over stdio).
    pub fn set_token(&self, token: Option<String>) {
        if let Some(h) = &self.http {
            h.set_token(token);
        }
    }

    /// Ends the server and its process tree; resolves when it is gone.
    pub async fn disconnect(&self) {
        let (done, rx) = oneshot::channel();
        if self.tx.send(Command_::Disconnect { done }).is_ok() {
            let _ = rx.await;
        }
    }
}

/// Starts the server, runs the handshake and lists its tools. On any failure the child (and
/// its tree) is ended before the error is returned. Must run inside a tokio runtime with
/// time and process (or, on Linux, I/O) drivers; the connection's task stays on it.
pub async fn connect(spawn: Spawn, config: Config) -> Result<(Client, Vec<Tool>), String> {
    let command = spawn.command.clone();
    let (proc, stdin, stdout) = start(spawn).await.map_err(|e| spawn_error(&command, &e))?;
    let pid = proc.group();
    let ended = proc.ended.clone();
    let (line_tx, line_rx) = queue::channel::<Read>();
    tokio::spawn(read_lines(stdout, line_tx));
    let (write_tx, write_rx) = queue::channel::<Transmit>();
    tokio::spawn(write_lines(stdin, write_rx));

    let (tx, rx) = mpsc::unbounded_channel();
    let (ready_tx, ready_rx) = oneshot::channel();
    let session = Session::new(config, Instant::now().into_std());
    tokio::spawn(drive(session, Ending::Process(proc), line_rx, write_tx, rx, ready_tx));
    match ready_rx.await {
        Ok(Ok(tools)) => Ok((Client { tx, pid, ended, http: None }, tools)),
        Ok(Err(e)) => Err(e),
        Err(_) => Err(crate::session::mcp_error(crate::session::CONNECTION_CLOSED, "Connection closed")),
    }
}

/// The server started under the subreaper helper, with its pipes.
#[cfg(target_os = "linux")]
async fn start(
    spawn: Spawn,
) -> std::io::Result<(Proc, tokio::net::unix::pipe::Sender, tokio::net::unix::pipe::Receiver)> {
    use tokio::net::unix::pipe;
    let started = tokio::task::spawn_blocking(move || crate::reaper::start(&spawn))
        .await
        .map_err(|e| std::io::Error::other(e.to_string()))??;
    let helper = started.helper;
    // From here the tree is ended on every path (Proc's drop), also if a pipe fails.
    let mut proc = Proc { helper, exited: None, ended: Arc::new(AtomicBool::new(false)) };
    proc.exited = Some(pipe::Receiver::from_owned_fd(started.exited)?);
    let stdin = pipe::Sender::from_owned_fd(started.stdin)?;
    let stdout = pipe::Receiver::from_owned_fd(started.stdout)?;
    Ok((proc, stdin, stdout))
}

#[cfg(not(target_os = "linux"))]
async fn start(spawn: Spawn) -> std::io::Result<(Proc, tokio::process::ChildStdin, tokio::process::ChildStdout)> {
    use std::process::Stdio;
    let mut cmd = Command::new(&spawn.command);
    cmd.args(&spawn.args)
        .env_clear()
        .envs(spawn.environment())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    if let Some(cwd) = &spawn.cwd {
        cmd.current_dir(cwd);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    // The last resort if the driver task itself is torn down (runtime shutdown).
    cmd.kill_on_drop(true);
    let mut child = cmd.spawn()?;
    // Kept from the start: `Child::id` forgets it once the child is reaped, and the group
    // may outlive the leader.
    let pid = child.id();
    let stdin = child.stdin.take().expect("stdin is piped");
    let stdout = child.stdout.take().expect("stdout is piped");
    Ok((Proc { child, pid, ended: Arc::new(AtomicBool::new(false)) }, stdin, stdout))
}

/// What a read item counts in its queue.
pub(crate) fn read_bytes(r: &Read) -> usize {
    match r {
        Read::Line(l) => l.len(),
        Read::End(d) => d.as_ref().map_or(0, String::len),
        Read::Fail(_, m) => m.len(),
    }
}

/// What an item to write counts in its queue.
fn transmit_bytes(t: &Transmit) -> usize {
    match t {
        Transmit::Line(l) => l.len(),
        Transmit::End(_) => 0,
    }
}

async fn read_lines(stdout: impl AsyncRead + Unpin, tx: queue::Sender<Read>) {
    // Waits for room in the queue: while the driver cannot write, it reads nothing, this task
    // stops reading the pipe, and the server blocks on its stdout.
    let send = |r: Read| {
        let n = read_bytes(&r);
        let tx = tx.clone();
        async move { tx.send(r, n).await }
    };
    let mut r = BufReader::with_capacity(64 * 1024, stdout);
    let mut line: Vec<u8> = Vec::new();
    loop {
        let buf = match r.fill_buf().await {
            Ok(b) => b,
            Err(e) => {
                let _ = send(Read::End(Some(format!("reading the server's stdout failed: {e}")))).await;
                return;
            }
        };
        if buf.is_empty() {
            let _ = send(Read::End(None)).await;
            return;
        }
        let (take, complete) = match memchr(buf) {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        let body = if complete { &buf[..take - 1] } else { &buf[..take] };
        if line.len() + body.len() > MAX_LINE_BYTES {
            let _ = send(Read::End(Some(format!("the server wrote a line longer than {MAX_LINE_BYTES} bytes")))).await;
            return;
        }
        line.extend_from_slice(body);
        r.consume(take);
        if complete {
            let text = String::from_utf8_lossy(&line).into_owned();
            line.clear();
            if line.capacity() > 1024 * 1024 {
                line.shrink_to(64 * 1024);
            }
            if send(Read::Line(text)).await.is_err() {
                return;
            }
        }
    }
}

fn memchr(b: &[u8]) -> Option<usize> {
    b.iter().position(|&c| c == b'\n')
}

async fn write_lines(mut stdin: impl AsyncWrite + Unpin, mut rx: queue::Receiver<Transmit>) {
    // The permit is held until the line is written: the queue's room is what the pipe took.
    while let Some((t, _permit)) = rx.recv().await {
        // A request's end concerns transports with a stream per request, not a pipe.
        let Transmit::Line(mut line) = t else { continue };
        line.push('\n');
        if stdin.write_all(line.as_bytes()).await.is_err() || stdin.flush().await.is_err() {
            // The server stopped reading; its exit (or the reader's end) closes the session.
            return;
        }
    }
    // The channel closed: dropping stdin sends EOF, the polite request to exit.
}

type Ready = oneshot::Sender<Result<Vec<Tool>, String>>;

/// What the driver ends when the connection closes.
pub(crate) enum Ending {
    Process(Proc),
    Http(Arc<crate::http::Shared>),
}

/// The server process as the driver ends it.
#[cfg(not(target_os = "linux"))]
pub(crate) struct Proc {
    child: Child,
    /// Kept from the spawn (see `start`).
    pid: Option<u32>,
    ended: Arc<AtomicBool>,
}

#[cfg(not(target_os = "linux"))]
impl Proc {
    fn group(&self) -> Option<u32> {
        self.pid
    }

    async fn end(&mut self) {
        end_tree(&mut self.child, self.pid).await;
    }
}

/// The server under its subreaper helper, as the driver ends it.
#[cfg(target_os = "linux")]
pub(crate) struct Proc {
    /// The helper's pid, also the group id. An unreaped child of ours until the tree is ended,
    /// so neither can be reused meanwhile.
    helper: i32,
    /// Readable once the server has exited (see `reaper`).
    exited: Option<tokio::net::unix::pipe::Receiver>,
    ended: Arc<AtomicBool>,
}

#[cfg(target_os = "linux")]
impl Proc {
    fn group(&self) -> Option<u32> {
        Some(self.helper as u32)
    }

    /// Whether the server exited within `wait`.
    async fn exits_within(&mut self, wait: Duration) -> bool {
        use tokio::io::AsyncReadExt;
        let Some(r) = self.exited.as_mut() else { return true };
        let mut b = [0u8; 4];
        // A record or EOF (the helper is gone): either way the server is.
        if tokio::time::timeout(wait, r.read(&mut b)).await.is_ok() {
            self.exited = None;
            return true;
        }
        false
    }

    /// Stdin is already closed: wait, SIGTERM to the group, wait, then the tree's SIGKILL.
    async fn end(&mut self) {
        if !self.exits_within(GRACE).await {
            crate::reaper::signal_group(self.helper, libc::SIGTERM);
            self.exits_within(GRACE).await;
        }
        // Descendants outlive the server's exit as often as not (a daemon, a setsid'd child):
        // the tree goes in every case.
        let helper = self.helper;
        let _ = tokio::task::spawn_blocking(move || crate::reaper::end_tree(helper)).await;
        self.ended.store(true, Ordering::Release);
    }
}

/// The last resort if the driver never ended the tree (runtime shutdown, a failed start): the
/// whole group at once; what left the group is left.
#[cfg(target_os = "linux")]
impl Drop for Proc {
    fn drop(&mut self) {
        if !self.ended.load(Ordering::Acquire) {
            crate::reaper::signal_group(self.helper, libc::SIGKILL);
        }
    }
}

pub(crate) async fn drive(
    mut session: Session,
    ending: Ending,
    mut lines: queue::Receiver<Read>,
    write_tx: queue::Sender<Transmit>,
    mut commands: mpsc::UnboundedReceiver<Command_>,
    ready: Ready,
) {
    let mut ready = Some(ready);
    let mut failure: Option<String> = None;
    // key → (request id, reply) and back: keys are the caller's, ids the session's.
    let mut calls: HashMap<u64, (u64, oneshot::Sender<CallOutcome>)> = HashMap::new();
    let mut by_id: HashMap<u64, u64> = HashMap::new();
    let mut write_tx = Some(write_tx);
    let mut disconnected: Option<oneshot::Sender<()>> = None;
    // What the session had to say that did not fit the write queue: while it waits, no line is
    // read (back-pressure), and the rest waits in the session.
    let mut held: Option<Transmit> = None;
    loop {
        if let Some(w) = &write_tx {
            while let Some(t) = held.take().or_else(|| session.poll_transmit()) {
                match w.try_room(transmit_bytes(&t)) {
                    Some(p) => {
                        let _ = w.send_with(t, p);
                    }
                    None => {
                        held = Some(t);
                        break;
                    }
                }
            }
        }
        while let Some(ev) = session.poll_event() {
            match ev {
                Event::Ready(tools) => {
                    if let Some(r) = ready.take() {
                        if r.send(Ok(tools)).is_err() {
                            // The connect was dropped: nobody will use this server.
                            session.close(None);
                        }
                    }
                }
                // Answered once the server is ended (the original's cleanup before the rethrow).
                Event::ConnectFailed(e) => {
                    failure.get_or_insert(e);
                    session.close(None);
                }
                Event::CallDone(id, outcome) => {
                    if let Some(key) = by_id.remove(&id) {
                        if let Some((_, reply)) = calls.remove(&key) {
                            let _ = reply.send(outcome);
                        }
                    }
                }
            }
        }
        // Closed (server gone, connect failed, disconnect or every handle dropped): the events
        // above answered every call; later calls find the channel closed and answer the same.
        if session.is_closed() {
            break;
        }
        let deadline = session.poll_deadline().map(Instant::from_std);
        let room = {
            let need = held.as_ref().map(transmit_bytes);
            let w = write_tx.clone();
            async move {
                match (w, need) {
                    (Some(w), Some(n)) => w.room(n).await,
                    _ => std::future::pending().await,
                }
            }
        };
        tokio::select! {
            // The permit goes when the line has been handled (what it led to is queued).
            read = lines.recv(), if held.is_none() => match read {
                Some((Read::Line(l), _permit)) => session.handle_line(&l, Instant::now().into_std()),
                Some((Read::End(detail), _)) => session.close(detail.as_deref()),
                Some((Read::Fail(id, message), _)) => session.fail_request(id, &message),
                None => session.close(None),
            },
            permit = room => {
                // Without a writer (it is gone) the item is dropped: the reader's end closes the
                // session.
                if let (Some(p), Some(t), Some(w)) = (permit, held.take(), &write_tx) {
                    let _ = w.send_with(t, p);
                }
            }
            cmd = commands.recv() => match cmd {
                Some(Command_::Call { key, raw_name, arguments, reply }) => {
                    let id = session.call_tool(&raw_name, &arguments, Instant::now().into_std());
                    calls.insert(key, (id, reply));
                    by_id.insert(id, key);
                }
                Some(Command_::Cancel { key, reason }) => {
                    if let Some((id, _)) = calls.get(&key) {
                        session.cancel(*id, &reason);
                    }
                }
                Some(Command_::Disconnect { done }) => {
                    disconnected = Some(done);
                    session.close(None);
                }
                // Every handle is gone: the same as a disconnect nobody waits for.
                None => session.close(None),
            },
            _ = sleep_until(deadline) => session.handle_timeout(Instant::now().into_std()),
        }
    }
    // Flush what the session still had to say (cancellations), then close stdin.
    drop(write_tx.take());
    match ending {
        Ending::Process(mut proc) => {
            proc.end().await;
            proc.ended.store(true, Ordering::Release);
        }
        Ending::Http(shared) => shared.end_session().await,
    }
    if let Some(r) = ready.take() {
        let closed = || crate::session::mcp_error(crate::session::CONNECTION_CLOSED, "Connection closed");
        let _ = r.send(Err(failure.unwrap_or_else(closed)));
    }
    if let Some(done) = disconnected {
        let _ = done.send(());
    }
    // Commands sent after the end: calls answer "closed" through their dropped senders.
}

async fn sleep_until(deadline: Option<Instant>) {
    match deadline {
        Some(d) => tokio::time::sleep_until(d).await,
        None => std::future::pending().await,
    }
}

/// Ends the child and its process group: stdin is already closed; wait, SIGTERM, wait, SIGKILL.
#[cfg(not(target_os = "linux"))]
async fn end_tree(child: &mut Child, pid: Option<u32>) {
    if tokio::time::timeout(GRACE, child.wait()).await.is_err() {
        signal_group(child, pid, libc::SIGTERM);
        if tokio::time::timeout(GRACE, child.wait()).await.is_err() {
            signal_group(child, pid, libc::SIGKILL);
            let _ = child.wait().await;
        }
    }
    // Descendants left in the group (the leader exited on EOF or SIGTERM without them). The
    // group id cannot be reused while any member lives.
    signal_group(child, pid, libc::SIGKILL);
}

#[cfg(all(unix, not(target_os = "linux")))]
fn signal_group(_child: &mut Child, pid: Option<u32>, sig: libc::c_int) {
    signal_pid_group(pid, sig)
}

#[cfg(unix)]
fn signal_pid_group(pid: Option<u32>, sig: libc::c_int) {
    if let Some(pid) = pid {
        // SAFETY: kill(2) with a negative pid signals the server's process group (led by the
        // subreaper helper on Linux, by the child elsewhere); no memory is involved.
        unsafe {
            libc::kill(-(pid as libc::pid_t), sig);
        }
    }
}

/// Without process groups: the child only, and only the hard way.
#[cfg(not(unix))]
fn signal_group(child: &mut Child, _pid: Option<u32>, sig: libc::c_int) {
    if sig == libc::SIGKILL {
        let _ = child.start_kill();
    }
}

#[cfg(all(test, unix))]
mod tests {
    use super::*;
    use crate::rules;

    const INIT: &str =
        r#"{"jsonrpc":"2.0","id":0,"result":{"protocolVersion":"2025-06-18","capabilities":{"tools":{}}}}"#;
    const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"t"}]}}"#;

    fn config(timeout_ms: u64) -> Config {
        Config {
            client_name: rules::DEFAULT_CLIENT_NAME.into(),
            client_version: rules::DEFAULT_CLIENT_VERSION.into(),
            name_prefix: None,
            request_timeout: Duration::from_millis(timeout_ms),
            server: "sh".into(),
        }
    }

    /// A server written in sh: it reads the handshake, answers with fixed ids (the session's
    /// ids are deterministic) and then runs `rest`.
    fn sh(rest: &str) -> Spawn {
        let script = format!("read l; printf '%s\\n' '{INIT}'; read l; read l; printf '%s\\n' '{LIST}'; {rest}");
        Spawn {
            command: "sh".into(),
            args: vec!["-c".into(), script],
            default_env: vec![("PATH".into(), std::env::var("PATH").unwrap_or_default())],
            ..Spawn::default()
        }
    }

    /// Whether `pid` runs (a zombie waiting for its reaper does not: the container's init
    /// may never reap it).
    fn alive(pid: i32) -> bool {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(stat) => !stat.rsplit(')').next().unwrap_or("").trim_start().starts_with('Z'),
            // No procfs (not Linux): signal 0 only checks that the process exists.
            // SAFETY: no memory is involved.
            Err(_) => unsafe { libc::kill(pid, 0) == 0 },
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_call_answered_then_the_server_dies_mid_call() {
        let echo = r#"read l; printf '%s\n' '{"jsonrpc":"2.0","id":2,"result":{"content":[{"type":"text","text":"ok"}]}}'; read l; exit 3"#;
        let (client, tools) = connect(sh(echo), config(60_000)).await.unwrap();
        assert_eq!(tools.len(), 1);
        let r = client.call(7, "t".into(), "{}".into()).await;
        assert_eq!(r, CallOutcome { text: "ok".into(), is_error: false });
        // The server reads this call and exits: the call ends at once, not at its deadline.
        let r = client.call(8, "t".into(), "{}".into()).await;
        assert_eq!(
            r,
            CallOutcome { text: "MCP tool \"t\" failed: MCP error -32000: Connection closed".into(), is_error: true }
        );
        let r = client.call(9, "t".into(), "{}".into()).await;
        assert!(r.is_error && r.text.ends_with("Connection closed"));
        client.disconnect().await;
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_endless_line_is_a_clear_error() {
        // 11 MiB without a newline, then the server waits.
        let flood = "head -c 11534336 /dev/zero | tr '\\0' 'x'; sleep 100";
        let (client, _) = connect(sh(&format!("read l; {flood}")), config(60_000)).await.unwrap();
        let r = client.call(1, "t".into(), "{}".into()).await;
        assert_eq!(
            r.text,
            format!("MCP tool \"t\" failed: MCP error -32000: Connection closed (the server wrote a line longer than {MAX_LINE_BYTES} bytes)")
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn disconnect_ends_the_tree() {
        let dir = std::env::temp_dir().join(format!("oma-mcp-tree-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pidfile = dir.join("pid");
        // The server ignores EOF and SIGTERM, and has a descendant that does too.
        let rest = format!(
            "trap '' TERM; sh -c 'trap \"\" TERM; sleep 300' & echo $! > {}; while :; do sleep 1; done",
            pidfile.display()
        );
        let (client, _) = connect(sh(&rest), config(60_000)).await.unwrap();
        let mut pid = String::new();
        for _ in 0..200 {
            pid = std::fs::read_to_string(&pidfile).unwrap_or_default();
            if pid.ends_with('\n') {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let pid: i32 = pid.trim().parse().unwrap();
        assert!(alive(pid));
        client.disconnect().await;
        // The group is sent SIGKILL before disconnect returns; a descendant (not our child, so
        // nobody waits for it) then dies when the kernel next schedules it, which on a loaded
        // machine can be a moment later: wait for that (bounded), not for a second signal.
        for _ in 0..250 {
            if !alive(pid) {
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert!(!alive(pid), "the descendant outlived disconnect");
        let r = client.call(1, "t".into(), "{}".into()).await;
        assert!(r.is_error && r.text.ends_with("Connection closed"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A descendant that left the server's session and group (`setsid`) and ignores SIGTERM
    /// and SIGHUP ends at disconnect too (Linux: the subreaper helper keeps it in the tree).
    #[cfg(target_os = "linux")]
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn disconnect_ends_a_setsid_descendant() {
        if !oma_os::process::KILL_TREE_REACHES_ESCAPED {
            // oma-core's portable build: the group kill, which a setsid'd process escapes.
            return;
        }
        let dir = std::env::temp_dir().join(format!("oma-mcp-setsid-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let pidfile = dir.join("pid");
        let rest = format!(
            "setsid sh -c 'trap \"\" TERM HUP; echo $$ > {p}.tmp; mv {p}.tmp {p}; exec sleep 300' & wait; while :; do sleep 1; done",
            p = pidfile.display()
        );
        let (client, _) = connect(sh(&rest), config(60_000)).await.unwrap();
        let pid: i32 = loop {
            match std::fs::read_to_string(&pidfile) {
                Ok(p) if p.ends_with('\n') => break p.trim().parse().unwrap(),
                _ => tokio::time::sleep(Duration::from_millis(20)).await,
            }
        };
        assert!(alive(pid));
        // SAFETY: no memory is involved.
        assert_ne!(unsafe { libc::getsid(pid) }, unsafe { libc::getsid(client.pid.unwrap() as i32) });
        client.disconnect().await;
        // kill_tree returns once no live descendant is left: gone (or a zombie) at once.
        assert!(!alive(pid), "the setsid descendant outlived disconnect");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn failed_connects() {
        let missing = Spawn { command: "/nonexistent/oma-mcp-server".into(), ..Spawn::default() };
        assert_eq!(connect(missing, config(1000)).await.err().unwrap(), "spawn /nonexistent/oma-mcp-server ENOENT");
        // Silent server: the handshake times out and the child is ended.
        let silent = Spawn {
            command: "sleep".into(),
            args: vec!["100".into()],
            default_env: sh("").default_env,
            ..Spawn::default()
        };
        assert_eq!(connect(silent, config(200)).await.err().unwrap(), "MCP error -32001: Request timed out");
        // Exits at once.
        let gone = Spawn { command: "true".into(), default_env: sh("").default_env, ..Spawn::default() };
        assert_eq!(connect(gone, config(60_000)).await.err().unwrap(), "MCP error -32000: Connection closed");
    }

    #[test]
    fn environment_merge() {
        let s = Spawn {
            default_env: vec![("PATH".into(), "/bin".into()), ("HOME".into(), "/h".into())],
            env: vec![("HOME".into(), None), ("X".into(), Some("1".into())), ("PATH".into(), Some("/p".into()))],
            ..Spawn::default()
        };
        assert_eq!(s.environment(), vec![("PATH".into(), "/p".into()), ("X".into(), "1".into())]);
        assert!(!inheritable("() { :; }"));
        assert!(inheritable("/usr/bin"));
    }
}
