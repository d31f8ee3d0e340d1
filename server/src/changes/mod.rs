//! `GET /api/sessions/{id}/changes`: every file a session's calls wrote, and in
//! a git repository the working tree against `HEAD`. Bounded in files, bytes
//! and time; git runs as a child process, the disk is read off the runtime's
//! workers, and nothing is read outside the folder.

pub mod git;
pub mod session;
pub mod texts;

use std::path::{Path, PathBuf};
use std::time::Duration;

use protocol::changes::{ChangesResponse, GitFileChange, GitStatus, Omitted, SessionFileChange};
use protocol::events::SeqEvent;

use crate::tools::confined::{FolderFile, FolderReader};
use git::{HeadBlob, Listing};
use session::Written;
use texts::{as_text, line_counts, TextBudget, MAX_FILE_BYTES, MAX_TOTAL_BYTES};

/// Git gets this long for all its runs together.
pub const GIT_TIMEOUT: Duration = Duration::from_secs(10);

#[derive(Debug, thiserror::Error)]
pub enum ChangesError {
    #[error("reading the changes failed: {0}")]
    Task(#[from] tokio::task::JoinError),
}

/// The session's changes and the folder's git state, as the API answers them.
pub async fn collect(folder: PathBuf, events: Vec<SeqEvent>) -> Result<ChangesResponse, ChangesError> {
    let (listing, note) = match tokio::time::timeout(GIT_TIMEOUT, git_state(&folder)).await {
        Ok(Ok(listing)) => (listing, None),
        Ok(Err(err)) => (None, Some(format!("The working tree is not shown: {err}."))),
        Err(_) => {
            (None, Some(format!("The working tree is not shown: git took longer than {} s.", GIT_TIMEOUT.as_secs())))
        }
    };
    let response = tokio::task::spawn_blocking(move || {
        let reader = FolderReader::open(&folder).ok();
        let mut budget = TextBudget::default();
        let files = session::written_files(&events)
            .into_iter()
            .map(|written| session_entry(written, &folder, reader.as_ref(), &mut budget))
            .collect();
        let git = listing.map(|(listing, blobs)| git_entries(listing, blobs, &folder, reader.as_ref(), &mut budget));
        ChangesResponse { files, git, note }
    })
    .await?;
    Ok(response)
}

/// The listing and, for each entry, what `HEAD` holds.
async fn git_state(folder: &Path) -> Result<Option<(Listing, Vec<HeadBlob>)>, git::GitError> {
    let Some(listing) = git::listing(folder).await? else { return Ok(None) };
    let names: Vec<Option<String>> = listing.entries.iter().map(|entry| entry.head_object.clone()).collect();
    let blobs = git::head_blobs(folder, &names, MAX_FILE_BYTES, MAX_TOTAL_BYTES).await?;
    Ok(Some((listing, blobs)))
}

fn session_entry(
    written: Written,
    folder: &Path,
    reader: Option<&FolderReader>,
    budget: &mut TextBudget,
) -> SessionFileChange {
    // Whether the file is still there, looked at inside the folder only; a
    // path the hub may not look at counts as there (not "deleted").
    let change = written.kind(|path| reader.is_none_or(|reader| !reader.is_missing(folder, path)));
    let Written { path, old_text, new_text, tool_id, seq, writes } = written;
    let Texts { old_text, new_text, added, removed, omitted } = Texts::bounded(Ok(old_text), Ok(new_text), budget);
    SessionFileChange { path, change, old_text, new_text, tool_id, seq, writes, added, removed, omitted }
}

fn git_entries(
    listing: Listing,
    blobs: Vec<HeadBlob>,
    folder: &Path,
    reader: Option<&FolderReader>,
    budget: &mut TextBudget,
) -> protocol::changes::GitChanges {
    let files = listing
        .entries
        .iter()
        .zip(blobs)
        .map(|(entry, blob)| {
            let old = match blob {
                HeadBlob::Absent => Ok(String::new()),
                HeadBlob::TooLarge => Err(Omitted::TooLarge),
                HeadBlob::OverBudget => Err(Omitted::Budget),
                HeadBlob::Other => Err(Omitted::Binary),
                HeadBlob::Bytes(bytes) => as_text(bytes),
            };
            let new = match (entry.status, reader) {
                (GitStatus::Deleted, _) => Ok(String::new()),
                (_, None) => Err(Omitted::Unreadable),
                (_, Some(reader)) => match reader.read(folder, &entry.path, MAX_FILE_BYTES as u64) {
                    FolderFile::Bytes(bytes) => as_text(bytes),
                    FolderFile::TooLarge => Err(Omitted::TooLarge),
                    FolderFile::Missing => Ok(String::new()),
                    FolderFile::Refused => Err(Omitted::Unreadable),
                },
            };
            let Texts { old_text, new_text, added, removed, omitted } = Texts::bounded(old, new, budget);
            GitFileChange {
                path: entry.path.clone(),
                status: entry.status,
                code: entry.code.clone(),
                old_path: entry.old_path.clone(),
                old_text,
                new_text,
                added,
                removed,
                omitted,
            }
        })
        .collect();
    listing.into_changes(files)
}

/// A file's two texts with their line counts, or none of them and why.
struct Texts {
    old_text: String,
    new_text: String,
    added: usize,
    removed: usize,
    omitted: Option<Omitted>,
}

impl Texts {
    fn bounded(old: Result<String, Omitted>, new: Result<String, Omitted>, budget: &mut TextBudget) -> Self {
        let admitted = old.and_then(|old| new.map(|new| (old, new))).and_then(|(old, new)| {
            budget.admit(&old, &new)?;
            Ok((old, new))
        });
        match admitted {
            Ok((old_text, new_text)) => {
                let (added, removed) = line_counts(&old_text, &new_text);
                Self { old_text, new_text, added, removed, omitted: None }
            }
            Err(omitted) => {
                Self { old_text: String::new(), new_text: String::new(), added: 0, removed: 0, omitted: Some(omitted) }
            }
        }
    }
}
