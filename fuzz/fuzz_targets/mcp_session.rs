//! The MCP session reader on what a server writes: newline-delimited JSON-RPC (stdio) or an SSE
//! answer stream whose events carry the messages (Streamable HTTP, through oma-llm's parser as
//! the transport does). Between lines the client calls and cancels tools, and time passes.
//! Asserts: no panic or stack overflow; every line the client writes is one JSON object; the
//! client's output and events per server line stay bounded (no queue grows with the input).
#![no_main]
use std::time::{Duration, Instant};

use libfuzzer_sys::fuzz_target;
use oma_llm::sse::SseParser;
use oma_mcp::session::{Config, Event, Session, Transmit};

/// Lines and events one step may produce at most: an answer or a cancellation per finished
/// request, and the client has at most a handful in flight here.
const MAX_PER_STEP: usize = 16;

struct Driver {
    s: Session,
    now: Instant,
    calls: Vec<u64>,
    tools: Vec<String>,
}

impl Driver {
    fn drain(&mut self) {
        let mut n = 0;
        while let Some(t) = self.s.poll_transmit() {
            let Transmit::Line(line) = t else { continue };
            let v: serde_json::Value = serde_json::from_str(&line).expect("the client writes JSON");
            assert!(v.is_object(), "the client writes objects: {line}");
            n += 1;
            assert!(n <= MAX_PER_STEP, "too many lines for one step");
        }
        let mut n = 0;
        while let Some(ev) = self.s.poll_event() {
            match ev {
                Event::Ready(tools) => self.tools = tools.into_iter().map(|t| t.raw_name).collect(),
                Event::CallDone(id, _) => self.calls.retain(|c| *c != id),
                Event::ConnectFailed(_) => {}
            }
            n += 1;
            assert!(n <= MAX_PER_STEP, "too many events for one step");
        }
    }

    /// One server line, then a client action chosen by `op`.
    fn line(&mut self, line: &str, op: u8) {
        self.s.handle_line(line, self.now);
        self.drain();
        match op % 8 {
            0 if self.calls.len() < 4 => {
                let name = self.tools.first().cloned().unwrap_or_else(|| "t".into());
                let id = self.s.call_tool(&name, "{}", self.now);
                self.calls.push(id);
            }
            1 => {
                if let Some(&id) = self.calls.first() {
                    self.s.cancel(id, "AbortError: This operation was aborted");
                }
            }
            2 => {
                self.now += Duration::from_millis(400);
                self.s.handle_timeout(self.now);
            }
            _ => {}
        }
        self.drain();
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let config = Config {
        client_name: "open-multi-agent".into(),
        client_version: "0.0.0".into(),
        name_prefix: if mode & 2 != 0 { Some("p".into()) } else { None },
        request_timeout: Duration::from_millis(1000),
        server: "srv".into(),
    };
    let now = Instant::now();
    let mut d = Driver { s: Session::new(config, now), now, calls: Vec::new(), tools: Vec::new() };
    d.drain();
    if mode & 1 == 0 {
        // stdio: one message per line, as the transport hands them over (lossy UTF-8).
        for (i, l) in rest.split(|&b| b == b'\n').enumerate() {
            d.line(&String::from_utf8_lossy(l), i as u8 ^ mode);
        }
    } else {
        // Streamable HTTP: SSE bytes in chunks of a fuzzer-chosen size; each `message` event's
        // data is a message.
        let mut p = SseParser::new();
        let mut events = Vec::new();
        let size = (mode as usize >> 2) + 1;
        let mut i = 0u8;
        for chunk in rest.chunks(size) {
            if p.push(chunk, &mut events).is_err() {
                break;
            }
            for ev in events.drain(..) {
                if ev.data.is_empty() || ev.event.as_deref().is_some_and(|e| e != "message") {
                    continue;
                }
                d.line(&ev.data, i);
                i = i.wrapping_add(1);
            }
        }
        let _ = p.finish(&mut events);
        for ev in events.drain(..) {
            d.line(&ev.data, i);
        }
    }
    d.now += Duration::from_secs(10);
    d.s.handle_timeout(d.now);
    d.drain();
    d.s.close(None);
    d.drain();
    assert!(d.s.poll_deadline().is_none(), "a closed session has no deadline");
});
