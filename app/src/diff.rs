//! Unified diffs of a file edit, as the cards and the transcript show them:
//! changed lines with a few lines of context, line numbers on both sides, and
//! the unchanged stretches between them folded into one row.

use similar::algorithms::{myers, Capture, Compact, Replace};
use similar::{group_diff_ops, DiffTag};

/// Lines of unchanged context kept around each change.
pub const CONTEXT: usize = 3;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineTag {
    Same,
    Removed,
    Added,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DiffRow {
    /// One line; numbers count from 1 in the old and the new file.
    Line { tag: LineTag, old: Option<usize>, new: Option<usize>, text: String },
    /// This many unchanged lines, not shown.
    Fold(usize),
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct UnifiedDiff {
    pub rows: Vec<DiffRow>,
    pub added: usize,
    pub removed: usize,
}

impl UnifiedDiff {
    pub fn is_unchanged(&self) -> bool {
        self.added == 0 && self.removed == 0
    }
}

/// The diff from `old` to `new` by lines, keeping `context` lines around changes.
///
/// Myers is called directly rather than through `TextDiff`: that dispatches on
/// the algorithm at run time, which put all six of `similar`'s algorithms (about
/// 300 KB) into the browser's wasm for the one this uses.
pub fn unified(old: &str, new: &str, context: usize) -> UnifiedDiff {
    let old_lines: Vec<&str> = old.split_inclusive('\n').collect();
    let new_lines: Vec<&str> = new.split_inclusive('\n').collect();
    // The hooks TextDiff uses: Compact slides hunks to join them, Replace pairs deletions with insertions.
    let mut hook = Compact::new(Replace::new(Capture::new()), &old_lines[..], &new_lines[..]);
    let Ok(()) = myers::diff(&mut hook, &old_lines, 0..old_lines.len(), &new_lines, 0..new_lines.len());
    let ops = hook.into_inner().into_inner().into_ops();
    let mut result = UnifiedDiff::default();
    // Where the previous group ended in the old file: what lies between is folded.
    let mut shown_until = 0;
    for group in group_diff_ops(ops, context) {
        let (Some(first), Some(last)) = (group.first(), group.last()) else { continue };
        let start = first.old_range().start;
        if start > shown_until {
            result.rows.push(DiffRow::Fold(start - shown_until));
        }
        shown_until = last.old_range().end;
        for op in &group {
            let (tag, old_range, new_range) = op.as_tag_tuple();
            if tag == DiffTag::Equal {
                for (old_index, new_index) in old_range.zip(new_range) {
                    result.rows.push(row(LineTag::Same, Some(old_index), Some(new_index), old_lines[old_index]));
                }
                continue;
            }
            for index in old_range {
                result.removed += 1;
                result.rows.push(row(LineTag::Removed, Some(index), None, old_lines[index]));
            }
            for index in new_range {
                result.added += 1;
                result.rows.push(row(LineTag::Added, None, Some(index), new_lines[index]));
            }
        }
    }
    if result.is_unchanged() {
        return UnifiedDiff::default();
    }
    if old_lines.len() > shown_until {
        result.rows.push(DiffRow::Fold(old_lines.len() - shown_until));
    }
    result
}

/// One line of the diff; indices count from 0, the numbers shown from 1.
fn row(tag: LineTag, old: Option<usize>, new: Option<usize>, text: &str) -> DiffRow {
    DiffRow::Line {
        tag,
        old: old.map(|index| index + 1),
        new: new.map(|index| index + 1),
        text: text.trim_end_matches(['\n', '\r']).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn numbered(range: std::ops::Range<usize>) -> String {
        range.map(|n| format!("line {n}\n")).collect()
    }

    fn line(tag: LineTag, old: Option<usize>, new: Option<usize>, text: &str) -> DiffRow {
        DiffRow::Line { tag, old, new, text: text.into() }
    }

    #[test]
    fn a_new_file_is_all_added_lines() {
        let diff = unified("", "fn main() {}\nfn other() {}\n", CONTEXT);
        assert_eq!((diff.added, diff.removed), (2, 0));
        assert_eq!(
            diff.rows,
            [line(LineTag::Added, None, Some(1), "fn main() {}"), line(LineTag::Added, None, Some(2), "fn other() {}"),]
        );
    }

    #[test]
    fn one_change_in_a_long_file_keeps_three_lines_each_side_and_folds_the_rest() {
        let old = numbered(1..101);
        let new = old.replace("line 50\n", "line fifty\n");
        let diff = unified(&old, &new, CONTEXT);
        assert_eq!((diff.added, diff.removed), (1, 1));
        assert_eq!(diff.rows.first(), Some(&DiffRow::Fold(46)), "lines 1..=46 folded");
        assert_eq!(diff.rows.last(), Some(&DiffRow::Fold(47)), "lines 54..=100 folded");
        assert_eq!(diff.rows[1], line(LineTag::Same, Some(47), Some(47), "line 47"));
        assert_eq!(diff.rows[4], line(LineTag::Removed, Some(50), None, "line 50"));
        assert_eq!(diff.rows[5], line(LineTag::Added, None, Some(50), "line fifty"));
        assert_eq!(diff.rows[8], line(LineTag::Same, Some(53), Some(53), "line 53"));
        assert_eq!(diff.rows.len(), 10);
    }

    #[test]
    fn distant_changes_are_separate_hunks_with_a_fold_between() {
        let old = numbered(1..41);
        let new = old.replace("line 5\n", "").replace("line 30\n", "line 30\nline 30b\n");
        let diff = unified(&old, &new, CONTEXT);
        assert_eq!((diff.added, diff.removed), (1, 1));
        let folds: Vec<usize> =
            diff.rows.iter().filter_map(|row| if let DiffRow::Fold(n) = row { Some(*n) } else { None }).collect();
        // Line 1; lines 9..=27 between the hunks (28..=30 lead into the insert); 34..=40 after.
        assert_eq!(folds, [1, 19, 7]);
        assert!(diff.rows.contains(&line(LineTag::Added, None, Some(30), "line 30b")));
    }

    #[test]
    fn identical_texts_have_no_rows() {
        let text = numbered(1..10);
        let diff = unified(&text, &text, CONTEXT);
        assert!(diff.is_unchanged());
        assert!(diff.rows.is_empty());
    }

    #[test]
    fn a_last_line_without_newline_still_compares_by_content() {
        let diff = unified("a\nb", "a\nc", CONTEXT);
        assert_eq!(
            diff.rows,
            [
                line(LineTag::Same, Some(1), Some(1), "a"),
                line(LineTag::Removed, Some(2), None, "b"),
                line(LineTag::Added, None, Some(2), "c"),
            ]
        );
    }

    proptest::proptest! {
        /// With context enough to fold nothing, the rows are both files: the
        /// old one in its unchanged and removed lines, the new one in its
        /// unchanged and added lines, each numbered in order.
        #[test]
        fn the_rows_hold_both_files(
            old in proptest::collection::vec("[abc]{0,2}", 0..12),
            new in proptest::collection::vec("[abc]{0,2}", 0..12),
        ) {
            let (old, new) = (old.join("\n"), new.join("\n"));
            let diff = unified(&old, &new, usize::MAX / 2);
            let side = |keep: LineTag, numbers: fn(&DiffRow) -> Option<usize>| {
                let rows: Vec<&DiffRow> = diff.rows.iter().filter(|row| matches!(row, DiffRow::Line { tag, .. } if *tag == LineTag::Same || *tag == keep)).collect();
                let numbered: Vec<usize> = rows.iter().filter_map(|row| numbers(row)).collect();
                let text: Vec<&str> = rows.iter().map(|row| match row { DiffRow::Line { text, .. } => text.as_str(), DiffRow::Fold(_) => "" }).collect();
                (text, numbered)
            };
            let lines = |text: &str| text.split_inclusive('\n').map(|line| line.trim_end_matches('\n').to_string()).collect::<Vec<_>>();
            if old == new {
                proptest::prop_assert!(diff.rows.is_empty());
            } else {
                let (old_text, old_numbers) = side(LineTag::Removed, |row| match row { DiffRow::Line { old, .. } => *old, _ => None });
                let (new_text, new_numbers) = side(LineTag::Added, |row| match row { DiffRow::Line { new, .. } => *new, _ => None });
                proptest::prop_assert_eq!(old_text, lines(&old));
                proptest::prop_assert_eq!(new_text, lines(&new));
                proptest::prop_assert_eq!(old_numbers, (1..=lines(&old).len()).collect::<Vec<_>>());
                proptest::prop_assert_eq!(new_numbers, (1..=lines(&new).len()).collect::<Vec<_>>());
                proptest::prop_assert!(!diff.rows.iter().any(|row| matches!(row, DiffRow::Fold(_))));
            }
        }
    }
}
