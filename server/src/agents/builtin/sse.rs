//! Server-sent events read in place: the model's reply arrives as network
//! chunks, each finished event's `data` is handed out as a slice. Nothing is
//! allocated per event (a fast local model sends thousands a second; the general
//! parser used before allocated a string per event and field).
//!
//! Only `data` matters to a chat completion stream; other fields and comments
//! are skipped. Lines end with LF, CRLF or CR, as the SSE format allows.

use std::ops::ControlFlow;

#[derive(Default)]
pub struct SseReader {
    /// The start of a line whose end has not arrived yet.
    partial: Vec<u8>,
    /// The data lines of the event being read, joined by `\n`.
    data: Vec<u8>,
    has_data: bool,
}

impl SseReader {
    /// Reads `bytes` after what came before, calling `on_data` with the data of
    /// every event that a blank line finishes; stops when `on_data` breaks.
    pub fn feed<B>(&mut self, bytes: &[u8], mut on_data: impl FnMut(&[u8]) -> ControlFlow<B>) -> ControlFlow<B> {
        let mut joined = std::mem::take(&mut self.partial);
        let input: &[u8] = if joined.is_empty() {
            bytes
        } else {
            joined.extend_from_slice(bytes);
            &joined
        };
        let mut rest = input;
        while let Some(end) = memchr::memchr2(b'\n', b'\r', rest) {
            let crlf = rest[end] == b'\r' && rest.get(end + 1) == Some(&b'\n');
            // A CR that ends the input may be the first half of a CRLF.
            if rest[end] == b'\r' && end + 1 == rest.len() {
                break;
            }
            let line = &rest[..end];
            rest = &rest[end + if crlf { 2 } else { 1 }..];
            self.line(line, &mut on_data)?;
        }
        let consumed = input.len() - rest.len();
        if joined.is_empty() {
            joined.extend_from_slice(&bytes[consumed..]);
        } else {
            joined.drain(..consumed);
        }
        self.partial = joined;
        ControlFlow::Continue(())
    }

    /// Bytes held for a line or an event that has not ended yet.
    pub fn unfinished(&self) -> usize {
        self.partial.len() + self.data.len()
    }

    /// The end of the stream: an unfinished last line and event still count, for
    /// servers that close without the final blank line.
    pub fn finish<B>(&mut self, mut on_data: impl FnMut(&[u8]) -> ControlFlow<B>) -> ControlFlow<B> {
        let last = std::mem::take(&mut self.partial);
        let last = last.strip_suffix(b"\r").unwrap_or(&last);
        if !last.is_empty() {
            self.line(last, &mut on_data)?;
        }
        self.line(b"", &mut on_data)
    }

    fn line<B>(&mut self, line: &[u8], on_data: &mut impl FnMut(&[u8]) -> ControlFlow<B>) -> ControlFlow<B> {
        if line.is_empty() {
            if !std::mem::take(&mut self.has_data) {
                return ControlFlow::Continue(());
            }
            let flow = on_data(&self.data);
            self.data.clear();
            return flow;
        }
        let (field, value) = match memchr::memchr(b':', line) {
            Some(colon) => {
                let value = &line[colon + 1..];
                (&line[..colon], value.strip_prefix(b" ").unwrap_or(value))
            }
            None => (line, &b""[..]),
        };
        if field == b"data" {
            if self.has_data {
                self.data.push(b'\n');
            }
            self.data.extend_from_slice(value);
            self.has_data = true;
        }
        ControlFlow::Continue(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every event's data, the input fed in pieces of `step` bytes.
    fn events(input: &str, step: usize) -> Vec<String> {
        let mut reader = SseReader::default();
        let mut seen = Vec::new();
        let mut collect = |data: &[u8]| {
            seen.push(String::from_utf8(data.to_vec()).unwrap());
            ControlFlow::<()>::Continue(())
        };
        for piece in input.as_bytes().chunks(step) {
            let _ = reader.feed(piece, &mut collect);
        }
        let _ = reader.finish(&mut collect);
        seen
    }

    #[test]
    fn events_are_read_whatever_the_chunking_and_line_endings() {
        let input = "data: {\"a\":1}\n\ndata: two\r\n\r\n: a comment\nevent: x\nid: 7\ndata:three\r\rdata: [DONE]\n\n";
        let expected = ["{\"a\":1}", "two", "three", "[DONE]"];
        for step in [1, 2, 3, 5, 7, 64, input.len()] {
            assert_eq!(events(input, step), expected, "fed {step} bytes at a time");
        }
    }

    #[test]
    fn data_lines_join_and_only_data_makes_an_event() {
        assert_eq!(events("data: a\ndata: b\ndata\n\nevent: ping\n\nretry: 5\n\n", 4), ["a\nb\n"]);
        assert_eq!(events("data:  two spaces\n\n", 100), [" two spaces"], "only one space is dropped");
    }

    #[test]
    fn a_stream_closed_without_the_final_blank_line_keeps_its_last_event() {
        assert_eq!(events("data: a\n\ndata: b", 3), ["a", "b"]);
        assert_eq!(events("data: a\n\ndata: b\r", 100), ["a", "b"]);
        assert!(events("", 1).is_empty());
    }

    #[test]
    fn what_waits_for_its_end_is_counted() {
        let mut reader = SseReader::default();
        let mut ignore = |_: &[u8]| ControlFlow::<()>::Continue(());
        let _ = reader.feed(b"data: 12345\ndata: 6", &mut ignore);
        assert_eq!(reader.unfinished(), "12345".len() + "data: 6".len());
        let _ = reader.feed(b"\n\n", &mut ignore);
        assert_eq!(reader.unfinished(), 0);
    }

    #[test]
    fn a_break_stops_the_reading() {
        let mut reader = SseReader::default();
        let mut seen = Vec::new();
        let flow = reader.feed(b"data: 1\n\ndata: stop\n\ndata: 3\n\n", |data| {
            seen.push(data.to_vec());
            if data == b"stop" {
                ControlFlow::Break("stopped")
            } else {
                ControlFlow::Continue(())
            }
        });
        assert_eq!(flow, ControlFlow::Break("stopped"));
        assert_eq!(seen, [b"1".to_vec(), b"stop".to_vec()]);
    }
}
