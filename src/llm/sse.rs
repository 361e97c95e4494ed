//! Incremental Server-Sent Events parser (WHATWG rules): bytes may be split anywhere, lines
//! end with CRLF, LF or CR, `data:` lines of one event join with `\n`, comments are skipped.

#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SseEvent {
    pub event: Option<String>,
    pub data: String,
}

#[derive(Default)]
pub struct SseParser {
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

    /// Feeds bytes; complete events are appended to `out`.
    pub fn push(&mut self, mut chunk: &[u8], out: &mut Vec<SseEvent>) {
        if self.skip_lf {
            if chunk.first() == Some(&b'\n') {
                chunk = &chunk[1..];
            }
            self.skip_lf = false;
        }
        let mut start = 0;
        let mut i = 0;
        while i < chunk.len() {
            let c = chunk[i];
            if c == b'\n' || c == b'\r' {
                let line = if self.buf.is_empty() {
                    std::borrow::Cow::Borrowed(&chunk[start..i])
                } else {
                    self.buf.extend_from_slice(&chunk[start..i]);
                    std::borrow::Cow::Owned(std::mem::take(&mut self.buf))
                };
                self.line(&line, out);
                if c == b'\r' {
                    if i + 1 < chunk.len() {
                        if chunk[i + 1] == b'\n' {
                            i += 1;
                        }
                    } else {
                        self.skip_lf = true;
                    }
                }
                start = i + 1;
            }
            i += 1;
        }
        self.buf.extend_from_slice(&chunk[start..]);
    }

    /// End of stream: a final line without terminator and an undispatched event still count
    /// (servers that close right after the last `data:` line are common).
    pub fn finish(&mut self, out: &mut Vec<SseEvent>) {
        if !self.buf.is_empty() {
            let line = std::mem::take(&mut self.buf);
            self.line(&line, out);
        }
        self.dispatch(out);
    }

    fn line(&mut self, line: &[u8], out: &mut Vec<SseEvent>) {
        if line.is_empty() {
            self.dispatch(out);
            return;
        }
        if line[0] == b':' {
            return;
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
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(&value);
                self.has_data = true;
            }
            b"event" => self.event = Some(value.into_owned()),
            _ => {}
        }
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
            p.push(c, &mut out);
        }
        p.finish(&mut out);
        out
    }

    #[test]
    fn every_split_gives_the_same_events() {
        let input = "event: a\r\ndata: one\r\ndata:two\r\n\r\n: comment\n\ndata: {\"x\":\"é\"}\r\rdata: [DONE]\n\n".as_bytes();
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
    fn unterminated_last_event_is_dispatched() {
        assert_eq!(parse_split(b"data: tail", 3), vec![SseEvent { event: None, data: "tail".into() }]);
        assert!(parse_split(b"event: x\n\n", 2).is_empty());
    }
}
