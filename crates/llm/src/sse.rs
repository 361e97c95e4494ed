//! Incremental Server-Sent Events parser (WHATWG rules): bytes may be split anywhere, lines
//! end with CRLF, LF or CR, `data:` lines of one event join with `\n`, comments are skipped.
//! A line, and an event's joined data, longer than `MAX_EVENT_BYTES` end the stream with an
//! error: a server that never ends a line would otherwise grow the buffer without bound.

use super::limits::{event_too_large, MAX_EVENT_BYTES};
use super::LlmError;

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

#[derive(Default)]
pub struct SseParser {
    /// The `id` and `retry` fields seen so far (WHATWG: they persist across events), for a
    /// client that resumes a dropped stream (the MCP bridge's Streamable HTTP transport).
    last_event_id: Option<String>,
    retry_ms: Option<u64>,
    buf: Vec<u8>,
    /// A CR ended the previous chunk: a LF starting the next one belongs to it.
    skip_lf: bool,
    event: Option<String>,
    data: String,
    has_data: bool,
}

impl SseParser {
    pub fn new() -> Self {
        Self::default()
    }

    /// The last `id:` field of the stream (the `Last-Event-ID` to resume from).
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The last valid `retry:` field (milliseconds before reconnecting).
    pub fn retry_ms(&self) -> Option<u64> {
        self.retry_ms
    }

    /// Feeds bytes; complete events are appended to `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) -> Result<(), LlmError> {
        if self.skip_lf {
            if chunk.first() == Some(&b'\n') {
                chunk = &chunk[1..];
            }
            self.skip_lf = false;
        }
        let mut start = 0;
        let mut i = 0;
        while let Some(at) = memchr::memchr2(b'\n', b'\r', &chunk[i..]) {
            i += at;
            if self.buf.len() + (i - start) > MAX_EVENT_BYTES {
                return Err(event_too_large("Server-sent event line"));
            }
            let line = if self.buf.is_empty() {
                std::borrow::Cow::Borrowed(&chunk[start..i])
            } else {
                self.buf.extend_from_slice(&chunk[start..i]);
                std::borrow::Cow::Owned(std::mem::take(&mut self.buf))
            };
            self.line(&line, out)?;
            if chunk[i] == b'\r' {
                if i + 1 < chunk.len() {
                    if chunk[i + 1] == b'\n' {
                        i += 1;
                    }
                } else {
                    self.skip_lf = true;
                }
            }
            i += 1;
            start = i;
        }
        if self.buf.len() + (chunk.len() - start) > MAX_EVENT_BYTES {
            return Err(event_too_large("Server-sent event line"));
        }
        self.buf.extend_from_slice(&chunk[start..]);
        Ok(())
    }

    /// End of stream: a final line without terminator and an undispatched event still count
    /// (servers that close right after the last `data:` line are common).
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) -> Result<(), LlmError> {
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, out)?;
        }
        self.dispatch(out);
        Ok(())
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) -> Result<(), LlmError> {
        if line.is_empty() {
            self.dispatch(out);
            return Ok(());
        }
        if line[0] == b':' {
            return Ok(());
        }
        let (field, value) = match line.iter().position(|&c| c == b':') {
            Some(p) => {
                let v = &line[p + 1..];
                (&line[..p], v.strip_prefix(b" ").unwrap_or(v))
            }
            None => (line, &b""[..]),
        };
        let value = String::from_utf8_lossy(value);
        match field {
            b"data" => {
                if self.data.len() + 1 + value.len() > MAX_EVENT_BYTES {
                    return Err(event_too_large("Server-sent event"));
                }
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => self.event = Some(value.into_owned()),
            // A NUL in the id is ignored, as browsers do.
            b"id" if !value.contains('\0') => self.last_event_id = Some(value.into_owned()),
            b"retry" if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) => {
                self.retry_ms = value.parse().ok()
            }
            _ => {}
        }
        Ok(())
    }

    fn dispatch(&mut self, out: &mut Vec<SseEvent>) {
        if self.has_data {
            out.push(SseEvent { event: self.event.take(), data: std::mem::take(&mut self.data) });
        }
        self.event = None;
        self.has_data = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_split(input: &[u8], split: usize) -> Vec<SseEvent> {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        for c in input.chunks(split) {
            p.push(c, &mut out).unwrap();
        }
        p.finish(&mut out).unwrap();
        out
    }

    #[test]
    fn every_split_gives_the_same_events() {
        let input =
            "event: a\r\ndata: one\r\ndata:two\r\n\r\n: comment\n\ndata: {\"x\":\"é\"}\r\rdata: [DONE]\n\n".as_bytes();
        let want = vec![
            SseEvent { event: Some("a".into()), data: "one\ntwo".into() },
            SseEvent { event: None, data: "{\"x\":\"é\"}".into() },
            SseEvent { event: None, data: "[DONE]".into() },
        ];
        for split in 1..input.len() {
            assert_eq!(parse_split(input, split), want, "split {split}");
        }
    }

    #[test]
    fn id_and_retry_persist_for_resumption() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        p.push(b"id: e1\nretry: 500\ndata: \n\nretry: soon\ndata: x\n\nid: a\0b\n", &mut out).unwrap();
        assert_eq!(out, vec![SseEvent { event: None, data: "".into() }, SseEvent { event: None, data: "x".into() }]);
        assert_eq!((p.last_event_id(), p.retry_ms()), (Some("e1"), Some(500)));
        p.push(b"id: e2\n\n", &mut out).unwrap();
        assert_eq!(p.last_event_id(), Some("e2"));
    }

    #[test]
    fn unterminated_last_event_is_dispatched() {
        assert_eq!(parse_split(b"data: tail", 3), vec![SseEvent { event: None, data: "tail".into() }]);
        assert!(parse_split(b"event: x\n\n", 2).is_empty());
    }

    #[test]
    fn lines_and_events_are_bounded() {
        let mut p = SseParser::new();
        let mut out = Vec::new();
        // A line without end, fed in pieces: refused once it passes the limit.
        let piece = vec![b'x'; 1 << 20];
        let mut fed = 0;
        let err = loop {
            if let Err(e) = p.push(&piece, &mut out) {
                break e;
            }
            fed += piece.len();
            assert!(fed <= MAX_EVENT_BYTES, "accepted {fed} bytes of one line");
        };
        assert_eq!(err.message, "Server-sent event line exceeds the 16 MiB limit (16777216 bytes).");
        // One line over the limit inside one chunk.
        let mut line = vec![b'y'; MAX_EVENT_BYTES + 1];
        line.push(b'\n');
        assert!(SseParser::new().push(&line, &mut out).is_err());
        // An event whose data lines never end with a blank line.
        let mut p = SseParser::new();
        let data_line = format!("data: {}\n", "z".repeat(1 << 20));
        let err = (0..20).find_map(|_| p.push(data_line.as_bytes(), &mut out).err()).expect("refused");
        assert_eq!(err.message, "Server-sent event exceeds the 16 MiB limit (16777216 bytes).");
        assert!(out.is_empty());
        // Comments without end are lines too; many small events are fine.
        let mut p = SseParser::new();
        assert!((0..20).any(|_| p.push(&[b':'; 1 << 20], &mut out).is_err()));
        let mut p = SseParser::new();
        for _ in 0..100 {
            p.push(format!("data: {}\n\n", "w".repeat(1 << 20)).as_bytes(), &mut out).unwrap();
        }
        assert_eq!(out.len(), 100);
    }
}
