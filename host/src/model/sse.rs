//! Server-sent events, decoded in linear time with a bound on each event.
//!
//! Written here rather than taken from `eventsource-stream`: that crate
//! re-parses its whole buffer from the start whenever a chunk arrives, so a
//! server that sends one enormous line in many small chunks makes it
//! quadratic, and nothing bounds how much it buffers. This decoder scans
//! each byte once (it remembers where the last scan stopped) and refuses an
//! event — the line being read plus the data gathered — larger than its cap.
//!
//! The format (WHATWG HTML, "Server-sent events"): lines end in `\n`, `\r\n`
//! or `\r`; `field: value` lines (one optional space after the colon);
//! lines starting with `:` are comments; a blank line dispatches the event;
//! `data` lines join with `\n`.

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event` field, `message` when none was given.
    pub event: String,
    pub data: String,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    #[error(
        "the server sent an event larger than {limit} bytes (the stream is not a Messages API stream)"
    )]
    TooLarge { limit: usize },
    #[error("the server sent an event that is not UTF-8")]
    NotUtf8,
}

#[derive(Debug)]
pub struct SseDecoder {
    /// Bytes of the line being read (no line end yet).
    line: Vec<u8>,
    /// The previous chunk ended in `\r`: a `\n` starting this one belongs
    /// to that line end.
    after_cr: bool,
    event: Option<String>,
    data: Option<String>,
    limit: usize,
}

impl SseDecoder {
    /// A decoder refusing events over `limit` bytes.
    pub fn new(limit: usize) -> Self {
        Self {
            line: Vec::new(),
            after_cr: false,
            event: None,
            data: None,
            limit,
        }
    }

    fn pending(&self) -> usize {
        self.line.len() + self.data.as_ref().map_or(0, String::len)
    }

    /// Feeds one chunk; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseEvent>, SseError> {
        let mut events = Vec::new();
        let mut rest = chunk;
        if self.after_cr {
            self.after_cr = false;
            if let Some(tail) = rest.strip_prefix(b"\n") {
                rest = tail;
            }
        }
        while let Some(end) = rest.iter().position(|b| *b == b'\n' || *b == b'\r') {
            if self.pending() + end > self.limit {
                return Err(SseError::TooLarge { limit: self.limit });
            }
            self.line.extend_from_slice(&rest[..end]);
            let line = std::mem::take(&mut self.line);
            if let Some(event) = self.line_ended(&line)? {
                events.push(event);
            }
            let crlf = rest[end] == b'\r';
            rest = &rest[end + 1..];
            if crlf {
                match rest.first() {
                    Some(b'\n') => rest = &rest[1..],
                    None => self.after_cr = true,
                    Some(_) => {}
                }
            }
        }
        if self.pending() + rest.len() > self.limit {
            return Err(SseError::TooLarge { limit: self.limit });
        }
        self.line.extend_from_slice(rest);
        Ok(events)
    }

    fn line_ended(&mut self, line: &[u8]) -> Result<Option<SseEvent>, SseError> {
        if line.is_empty() {
            let data = self.data.take();
            let event = self.event.take();
            return Ok(data.map(|data| SseEvent {
                event: event.unwrap_or_else(|| "message".into()),
                data,
            }));
        }
        if line.starts_with(b":") {
            return Ok(None);
        }
        let line = std::str::from_utf8(line).map_err(|_| SseError::NotUtf8)?;
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = Some(value.to_string()),
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            // `id` and `retry` matter to reconnecting browsers, not here.
            _ => {}
        }
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(decoder: &mut SseDecoder, chunks: &[&[u8]]) -> Result<Vec<SseEvent>, SseError> {
        let mut out = Vec::new();
        for chunk in chunks {
            out.extend(decoder.feed(chunk)?);
        }
        Ok(out)
    }

    fn event(name: &str, data: &str) -> SseEvent {
        SseEvent {
            event: name.into(),
            data: data.into(),
        }
    }

    #[test]
    fn decodes_events_across_any_split() -> Result<(), SseError> {
        let stream = b": ping\r\nevent: a\r\ndata: one\r\ndata:two\r\n\r\ndata: three\n\nevent: c\rdata: four\r\r";
        let expected = vec![
            event("a", "one\ntwo"),
            event("message", "three"),
            event("c", "four"),
        ];
        assert_eq!(all(&mut SseDecoder::new(1 << 20), &[stream])?, expected);
        // Every split point, and one byte at a time.
        for split in 0..stream.len() {
            let (a, b) = stream.split_at(split);
            assert_eq!(all(&mut SseDecoder::new(1 << 20), &[a, b])?, expected);
        }
        let bytes: Vec<&[u8]> = stream.chunks(1).collect();
        assert_eq!(all(&mut SseDecoder::new(1 << 20), &bytes)?, expected);
        Ok(())
    }

    #[test]
    fn refuses_an_event_over_the_cap_and_bad_text() {
        let mut decoder = SseDecoder::new(64);
        let long = vec![b'x'; 100];
        assert_eq!(
            decoder.feed(&long),
            Err(SseError::TooLarge { limit: 64 }),
            "a line with no end yet"
        );
        let mut decoder = SseDecoder::new(64);
        let many: Vec<u8> = b"data: 0123456789\n".repeat(8);
        assert_eq!(
            decoder.feed(&many),
            Err(SseError::TooLarge { limit: 64 }),
            "data gathered over many lines"
        );
        assert_eq!(
            SseDecoder::new(64).feed(b"data: \xff\n\n"),
            Err(SseError::NotUtf8)
        );
    }
}
