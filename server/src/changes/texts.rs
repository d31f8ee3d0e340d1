//! The texts a changes answer carries: bounded per file and in all, told
//! apart from binary content, and summed up as lines added and removed.

use std::time::{Duration, Instant};

use protocol::changes::Omitted;
use similar::algorithms::{myers, Capture};
use similar::DiffOp;

/// A file larger than this is listed without its texts.
pub const MAX_FILE_BYTES: usize = 1 << 20;
/// All texts of one answer together (a page would not render more anyway).
pub const MAX_TOTAL_BYTES: usize = 8 << 20;
/// Counting lines gives up refining after this: the counts stay right in sum,
/// only possibly larger than the shortest diff's.
const COUNT_DEADLINE: Duration = Duration::from_millis(200);

/// The bytes an answer may still spend on texts.
#[derive(Debug)]
pub struct TextBudget {
    left: usize,
}

impl Default for TextBudget {
    fn default() -> Self {
        Self { left: MAX_TOTAL_BYTES }
    }
}

impl TextBudget {
    /// Takes both texts of a file, or says why they are left out.
    pub fn admit(&mut self, old: &str, new: &str) -> Result<(), Omitted> {
        if old.len() > MAX_FILE_BYTES || new.len() > MAX_FILE_BYTES {
            return Err(Omitted::TooLarge);
        }
        let size = old.len() + new.len();
        if size > self.left {
            return Err(Omitted::Budget);
        }
        self.left -= size;
        Ok(())
    }
}

/// Text, or why the bytes are not shown as text.
pub fn as_text(bytes: Vec<u8>) -> Result<String, Omitted> {
    // Git's own test for binary content: a NUL in the first 8000 bytes.
    if bytes.iter().take(8000).any(|&byte| byte == 0) {
        return Err(Omitted::Binary);
    }
    String::from_utf8(bytes).map_err(|_| Omitted::Binary)
}

/// Lines added and removed from `old` to `new`, as the diff view counts them.
pub fn line_counts(old: &str, new: &str) -> (usize, usize) {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    let mut capture = Capture::new();
    let deadline = Instant::now() + COUNT_DEADLINE;
    let Ok(()) = myers::diff_deadline(
        &mut capture,
        &old_lines,
        0..old_lines.len(),
        &new_lines,
        0..new_lines.len(),
        Some(deadline),
    );
    capture.into_ops().iter().fold((0, 0), |(added, removed), op| match *op {
        DiffOp::Equal { .. } => (added, removed),
        DiffOp::Insert { new_len, .. } => (added + new_len, removed),
        DiffOp::Delete { old_len, .. } => (added, removed + old_len),
        DiffOp::Replace { old_len, new_len, .. } => (added + new_len, removed + old_len),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_match_what_changed() {
        let rows = [
            ("", "a\nb\n", (2, 0)),
            ("a\nb\n", "", (0, 2)),
            ("a\nb\nc\n", "a\nB\nc\n", (1, 1)),
            ("a\n", "a\n", (0, 0)),
            ("a", "a\nb", (2, 1)),
        ];
        for (old, new, expected) in rows {
            assert_eq!(line_counts(old, new), expected, "{old:?} → {new:?}");
        }
    }

    #[test]
    fn binary_and_oversized_texts_are_left_out() {
        assert_eq!(as_text(b"plain\n".to_vec()), Ok("plain\n".to_string()));
        assert_eq!(as_text(vec![b'a', 0, b'b']), Err(Omitted::Binary));
        assert_eq!(as_text(vec![0xff, 0xfe]), Err(Omitted::Binary));
        let mut budget = TextBudget { left: 10 };
        assert_eq!(budget.admit("12345", "123"), Ok(()));
        assert_eq!(budget.admit("123", ""), Err(Omitted::Budget));
        assert_eq!(budget.admit(&"x".repeat(MAX_FILE_BYTES + 1), ""), Err(Omitted::TooLarge));
        assert_eq!(budget.admit("12", ""), Ok(()));
    }
}
