//! Reading files of the folder for the hub itself (the changes view), with the
//! same confinement as the agent's tools: a path or symlink that leads out of
//! the folder is refused, never followed.

use std::io::Read;
use std::path::Path;

use rustix::io::Errno;

use super::beneath::Folder;
use super::paths::relative_in_folder;

/// What is at a path of the folder.
#[derive(Debug, PartialEq, Eq)]
pub enum FolderFile {
    /// A regular file of at most the size asked for.
    Bytes(Vec<u8>),
    /// A regular file larger than that.
    TooLarge,
    Missing,
    /// Outside the folder, not a regular file, or unreadable.
    Refused,
}

pub struct FolderReader(Folder);

impl FolderReader {
    /// `root` must be canonical, as sessions' folders are.
    pub fn open(root: &Path) -> std::io::Result<Self> {
        Folder::open(root).map(Self)
    }

    /// Whether nothing is at `requested` (a path the hub may not look at is
    /// not said to be missing).
    pub fn is_missing(&self, root: &Path, requested: &str) -> bool {
        relative_in_folder(root, requested).is_ok_and(|rel| self.0.open_read(&rel).err() == Some(Errno::NOENT))
    }

    /// The file at `requested` (relative to the folder), if it holds at most `max` bytes.
    pub fn read(&self, root: &Path, requested: &str, max: u64) -> FolderFile {
        let Ok(rel) = relative_in_folder(root, requested) else { return FolderFile::Refused };
        let file = match self.0.open_read(&rel) {
            Ok(file) => file,
            Err(Errno::NOENT) => return FolderFile::Missing,
            Err(_) => return FolderFile::Refused,
        };
        match file.metadata() {
            Ok(meta) if !meta.is_file() => return FolderFile::Refused,
            Ok(meta) if meta.len() > max => return FolderFile::TooLarge,
            Ok(_) => {}
            Err(_) => return FolderFile::Refused,
        }
        // Bounded even if the file grows after its size was read.
        let mut bytes = Vec::new();
        match file.take(max + 1).read_to_end(&mut bytes) {
            Ok(_) if bytes.len() as u64 > max => FolderFile::TooLarge,
            Ok(_) => FolderFile::Bytes(bytes),
            Err(_) => FolderFile::Refused,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_inside_and_refuses_what_leads_out() {
        let dir = std::env::temp_dir().join(format!("hub-confined-{}", std::process::id()));
        let root = dir.join("root");
        std::fs::create_dir_all(&root).unwrap();
        let root = root.canonicalize().unwrap();
        std::fs::write(root.join("a.txt"), "hello").unwrap();
        std::fs::write(dir.join("secret.txt"), "no").unwrap();
        std::os::unix::fs::symlink(dir.join("secret.txt"), root.join("out")).unwrap();
        std::fs::create_dir(root.join("sub")).unwrap();
        let reader = FolderReader::open(&root).unwrap();
        let rows = [
            ("a.txt", 100, FolderFile::Bytes(b"hello".to_vec())),
            ("a.txt", 4, FolderFile::TooLarge),
            ("missing.txt", 100, FolderFile::Missing),
            ("out", 100, FolderFile::Refused),
            ("../secret.txt", 100, FolderFile::Refused),
            ("sub", 100, FolderFile::Refused),
        ];
        for (path, max, expected) in rows {
            assert_eq!(reader.read(&root, path, max), expected, "{path} (max {max})");
        }
        assert!(reader.is_missing(&root, "missing.txt"));
        assert!(!reader.is_missing(&root, "a.txt"));
        assert!(!reader.is_missing(&root, "../nowhere.txt"), "outside is not looked at");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
