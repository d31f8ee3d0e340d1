//! The reads and writes an agent asks the hub for (ACP's client `fs`). The hub
//! runs unsandboxed, so it does for the agent only what the agent's own
//! sandbox would let it: inside the session's root, link-safe (a link never
//! leads out), never a path the sandbox keeps read-only, nor, in a folder not
//! yet trusted, the agent config the sandbox hides. Blocking IO.

use std::io::Read;
use std::os::fd::AsRawFd;
use std::path::{Path, PathBuf};

use rustix::io::Errno;

use crate::sandbox::{hidden_until_trust, kept_read_only};
use crate::tools::paths::relative_in_folder;
use crate::tools::{write_whole_file, Folder};

/// The largest file the hub reads for an agent.
const MAX_READ: u64 = 10 * 1024 * 1024;

/// The text of the file at `path` (absolute), from line `line` (1-based) for
/// `limit` lines when given.
pub fn read(
    root: &Path,
    hide_config: bool,
    masked: &dyn Fn(&Path) -> bool,
    path: &Path,
    line: Option<u32>,
    limit: Option<u32>,
) -> Result<String, String> {
    let (folder, requested, rel) = place(root, path)?;
    let file = folder.open_read(&rel).map_err(|err| match err {
        Errno::NOENT => format!("{requested} does not exist."),
        err => format!("{requested} could not be read ({err}); the hub reads only files inside the folder."),
    })?;
    // Where it really is (links inside the folder followed): judged there.
    let real = std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())).ok();
    if real.as_deref().is_none_or(masked) {
        return Err(format!("{requested} is masked from the agents (a credential store or the hub's own data)."));
    }
    if hide_config {
        let in_root = real.as_deref().and_then(|real| real.strip_prefix(root).ok());
        if in_root.is_none_or(hidden_until_trust) {
            return Err(format!(
                "{requested} is the folder's agent config, hidden until the folder is trusted (the Trust banner)."
            ));
        }
    }
    match file.metadata() {
        Ok(meta) if !meta.is_file() => return Err(format!("{requested} is not a regular file.")),
        Ok(meta) if meta.len() > MAX_READ => {
            return Err(format!("{requested} is larger than {} MiB.", MAX_READ / 1024 / 1024))
        }
        Ok(_) => {}
        Err(err) => return Err(format!("{requested} could not be read ({err}).")),
    }
    let mut bytes = Vec::new();
    file.take(MAX_READ).read_to_end(&mut bytes).map_err(|err| format!("{requested} could not be read ({err})."))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{requested} is not a text file (not UTF-8)."))?;
    Ok(lines(&text, line, limit))
}

/// Writes `content` as the whole file at `path` (absolute).
pub fn write(root: &Path, masked: &dyn Fn(&Path) -> bool, path: &Path, content: &str) -> Result<(), String> {
    let (folder, requested, _) = place(root, path)?;
    // The folder's real place: `kept` judges paths relative to it.
    let real_root = std::fs::canonicalize(root).map_err(|err| format!("The folder could not be found: {err}."))?;
    let kept = |rel: &Path| kept_read_only(rel) || masked(&real_root.join(rel));
    write_whole_file(&folder, &requested, content, kept).map_err(|failure| failure.message)
}

/// The folder, and `path` in it.
fn place(root: &Path, path: &Path) -> Result<(Folder, String, PathBuf), String> {
    let requested = path.to_str().ok_or_else(|| format!("{} is not UTF-8.", path.display()))?.to_string();
    if !path.is_absolute() {
        return Err(format!("{requested} is not an absolute path."));
    }
    let rel = relative_in_folder(root, &requested).map_err(|failure| {
        format!("{} The hub reads and writes files for the agent inside the folder only.", failure.message)
    })?;
    let folder = Folder::open(root).map_err(|err| format!("The folder could not be opened: {err}."))?;
    Ok((folder, requested, rel))
}

/// `limit` lines of `text` from line `line` (1-based), as they are.
fn lines(text: &str, line: Option<u32>, limit: Option<u32>) -> String {
    if line.is_none() && limit.is_none() {
        return text.to_string();
    }
    let skip = line.map_or(0, |line| line.saturating_sub(1) as usize);
    let take = limit.map_or(usize::MAX, |limit| limit as usize);
    text.split_inclusive('\n').skip(skip).take(take).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nothing(_: &Path) -> bool {
        false
    }

    #[test]
    fn what_the_sandbox_masks_is_neither_read_nor_written_even_in_the_folder() {
        let (_dir, root) = folder();
        std::fs::create_dir_all(root.join(".ssh")).unwrap();
        std::fs::write(root.join(".ssh/id_ed25519"), "key").unwrap();
        std::os::unix::fs::symlink(".ssh/id_ed25519", root.join("notes.txt")).unwrap();
        // As with a home directory opened as the folder.
        let ssh = root.join(".ssh");
        let masked = |path: &Path| path.starts_with(&ssh);
        for path in [".ssh/id_ed25519", "notes.txt"] {
            let refused = read(&root, false, &masked, &root.join(path), None, None).unwrap_err();
            assert!(refused.contains("masked"), "{path}: {refused}");
        }
        let refused = write(&root, &masked, &root.join(".ssh/authorized_keys"), "evil").unwrap_err();
        assert!(refused.contains("read-only"), "{refused}");
        assert!(write(&root, &masked, &root.join("notes.txt"), "evil").is_err(), "through a link too");
        assert_eq!(std::fs::read_to_string(ssh.join("id_ed25519")).unwrap(), "key");
        assert!(!ssh.join("authorized_keys").exists());
    }

    fn folder() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        (dir, root)
    }

    #[test]
    fn reads_inside_the_folder_by_lines_and_nothing_outside() {
        let (_dir, root) = folder();
        std::fs::write(root.join("a.txt"), "one\ntwo\nthree\n").unwrap();
        let outside = tempfile::NamedTempFile::new().unwrap();
        std::os::unix::fs::symlink(outside.path(), root.join("out")).unwrap();
        assert_eq!(read(&root, false, &nothing, &root.join("a.txt"), None, None).unwrap(), "one\ntwo\nthree\n");
        assert_eq!(read(&root, false, &nothing, &root.join("a.txt"), Some(2), Some(1)).unwrap(), "two\n");
        assert_eq!(read(&root, false, &nothing, &root.join("a.txt"), Some(3), None).unwrap(), "three\n");
        let refused = |path: &Path| read(&root, false, &nothing, path, None, None).unwrap_err();
        assert!(refused(Path::new("a.txt")).contains("not an absolute path"));
        assert!(refused(outside.path()).contains("inside the folder only"));
        assert!(refused(&root.join("out")).contains("could not be read"), "a link leading out is not followed");
        assert!(read(&root, false, &nothing, &root.join("../a.txt"), None, None).is_err());
        assert!(refused(&root.join("none.txt")).contains("does not exist"));
    }

    #[test]
    fn agent_config_stays_hidden_until_trust_even_through_a_link() {
        let (_dir, root) = folder();
        std::fs::create_dir(root.join(".claude")).unwrap();
        std::fs::write(root.join(".claude/settings.json"), "{\"hooks\":{}}").unwrap();
        std::os::unix::fs::symlink(".claude/settings.json", root.join("innocent.json")).unwrap();
        for path in [".claude/settings.json", "innocent.json"] {
            let refused = read(&root, true, &nothing, &root.join(path), None, None).unwrap_err();
            assert!(refused.contains("hidden until the folder is trusted"), "{path}: {refused}");
            assert_eq!(
                read(&root, false, &nothing, &root.join(path), None, None).unwrap(),
                "{\"hooks\":{}}",
                "trusted: {path}"
            );
        }
    }

    #[test]
    fn writes_inside_the_folder_never_where_the_sandbox_keeps_read_only() {
        let (_dir, root) = folder();
        write(&root, &nothing, &root.join("src/new.rs"), "fn main() {}\n").unwrap();
        assert_eq!(std::fs::read_to_string(root.join("src/new.rs")).unwrap(), "fn main() {}\n");
        for kept in [".gemini/settings.json", ".claude/settings.local.json", ".git/config", ".envrc"] {
            let refused = write(&root, &nothing, &root.join(kept), "x").unwrap_err();
            assert!(refused.contains("keeps read-only"), "{kept}: {refused}");
            assert!(!root.join(kept).exists(), "{kept}");
        }
        let outside = tempfile::tempdir().unwrap();
        let refused = write(&root, &nothing, &outside.path().join("x.txt"), "x").unwrap_err();
        assert!(refused.contains("inside the folder only"), "{refused}");
        assert!(!outside.path().join("x.txt").exists());
    }
}
