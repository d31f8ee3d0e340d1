//! The folder's git working tree against `HEAD`, through the `git` CLI (no
//! shell). Only the folder's own files are listed, relative to it; what `HEAD`
//! held comes from git's objects, what is there now from disk, read inside
//! the folder only.

use std::path::Path;
use std::process::Stdio;

use protocol::changes::{GitChanges, GitStatus};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::Command;

/// Files listed at most; a larger working tree says it was cut short.
pub const MAX_FILES: usize = 300;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("git could not be run: {0}")]
    Spawn(std::io::Error),
    #[error("`git {command}` failed: {stderr}")]
    Failed { command: String, stderr: String },
    #[error("git answered something the hub does not read: {0}")]
    Unreadable(String),
    #[error("the repository's config was not trusted ({0})")]
    Untrusted(&'static str),
}

/// A working tree file as `git status` names it, with where its `HEAD` text is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StatusEntry {
    /// Relative to the folder.
    pub path: String,
    pub status: GitStatus,
    pub code: String,
    pub old_path: Option<String>,
    /// The object holding the `HEAD` side (`HEAD:<path from the repository root>`),
    /// none when `HEAD` has no such file.
    pub head_object: Option<String>,
}

/// The listing before texts: branch, entries, whether it was cut short.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Listing {
    pub branch: Option<String>,
    pub entries: Vec<StatusEntry>,
    pub truncated: bool,
}

impl Listing {
    pub fn into_changes(self, files: Vec<protocol::changes::GitFileChange>) -> GitChanges {
        GitChanges { branch: self.branch, files, truncated: self.truncated }
    }
}

/// `git` with what keeps it from running anything the repository's config
/// names (an fsmonitor command) or changing the index as it looks.
fn git(folder: &Path) -> Command {
    let mut command = Command::new("git");
    // What every helper of the hub gets (PATH, HOME, XDG_CONFIG_HOME… for the
    // user's git config): nothing the hub inherited besides, so no GIT_DIR,
    // GIT_CONFIG_PARAMETERS, GIT_ATTR_SOURCE, GIT_TRACE of a hook that started
    // it. First: it clears the variables set below.
    crate::tools::process::inherited_env(&mut command);
    command
        .arg("-C")
        .arg(folder)
        // The repository's config is the agent's to write (a write to .git asks, but may
        // be approved): nothing it names may run here. No fsmonitor hook, no fetch of
        // missing objects (which runs core.sshCommand or uploadpack), no transport at
        // all; filter drivers are switched off per call (`status_args`).
        .args(["--no-optional-locks", "-c", "core.fsmonitor=false", "-c", "protocol.allow=never"])
        .env("GIT_NO_LAZY_FETCH", "1")
        // Above every config (a repository's `protocol.ssh.allow = always` beats the
        // `-c` above), and honoured by git older than 2.44, which ignores NO_LAZY_FETCH.
        .env("GIT_ALLOW_PROTOCOL", "")
        .env("GIT_TERMINAL_PROMPT", "0")
        .env("GIT_OPTIONAL_LOCKS", "0")
        // Its messages in English: "not a git repository" is read below.
        .env("LC_ALL", "C")
        .env_remove("LANGUAGE")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    command
}

/// What git printed, at most the bytes asked for.
struct Printed {
    bytes: Vec<u8>,
    /// There was more; git was stopped.
    cut: bool,
}

/// What git prints beyond this is not read (a status of a huge untracked tree).
const MAX_STATUS_BYTES: usize = 4 << 20;
/// Enough for `cat-file --batch-check` of every listed file.
const MAX_CHECK_BYTES: usize = 1 << 20;
/// Bytes kept of git's error output.
const MAX_STDERR_BYTES: u64 = 16 << 10;

/// Runs `git <args>` in the folder, reading at most `cap` bytes of its output;
/// `Ok(None)` when git is not installed.
async fn run(folder: &Path, args: &[&str], input: Option<Vec<u8>>, cap: usize) -> Result<Option<Printed>, GitError> {
    let mut command = git(folder);
    command.args(args);
    if input.is_some() {
        command.stdin(Stdio::piped());
    }
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(GitError::Spawn(err)),
    };
    if let (Some(input), Some(mut stdin)) = (input, child.stdin.take()) {
        // Written beside the reading below: a large answer must not block the writer.
        tokio::spawn(async move {
            let _ = stdin.write_all(&input).await;
        });
    }
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(GitError::Spawn(std::io::Error::other("git's output was not piped")));
    };
    let (mut bytes, mut errors) = (Vec::new(), Vec::new());
    let (mut stdout, mut stderr) = (stdout.take(cap as u64 + 1), stderr.take(MAX_STDERR_BYTES));
    // Both at once: git blocks on a full stderr pipe as on a full stdout.
    let (read, _) = tokio::join!(stdout.read_to_end(&mut bytes), stderr.read_to_end(&mut errors));
    read.map_err(GitError::Spawn)?;
    let cut = bytes.len() > cap;
    if cut {
        bytes.truncate(cap);
        // Whatever it still has to say is not wanted.
        let _ = child.start_kill();
    }
    let status = child.wait().await.map_err(GitError::Spawn)?;
    if !status.success() && !cut {
        return Err(GitError::Failed {
            command: args.join(" "),
            stderr: String::from_utf8_lossy(&errors).trim().to_string(),
        });
    }
    Ok(Some(Printed { bytes, cut }))
}

/// The folder's changes against `HEAD`; `Ok(None)` when it is in no git
/// repository or git is not installed.
pub async fn listing(folder: &Path) -> Result<Option<Listing>, GitError> {
    let prefix = match run(folder, &["rev-parse", "--show-prefix"], None, MAX_CHECK_BYTES).await {
        Ok(Some(prefix)) => String::from_utf8_lossy(&prefix.bytes).trim_end_matches('\n').to_string(),
        Ok(None) => return Ok(None),
        Err(GitError::Failed { stderr, .. }) if stderr.contains("not a git repository") => return Ok(None),
        Err(err) => return Err(err),
    };
    let args = status_args(&filter_drivers(folder).await?);
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let Some(Printed { mut bytes, cut }) = run(folder, &args, None, MAX_STATUS_BYTES).await? else { return Ok(None) };
    if cut {
        // The last entry may be cut in the middle: only whole ones are read.
        bytes.truncate(bytes.iter().rposition(|&byte| byte == 0).map_or(0, |end| end + 1));
    }
    let has_head = run(folder, &["rev-parse", "--verify", "-q", "HEAD"], None, MAX_CHECK_BYTES).await.is_ok();
    let mut listing = parse_status(&bytes, &prefix, has_head)?;
    listing.truncated |= cut;
    Ok(Some(listing))
}

/// The filter drivers the repository's config names (`filter.<driver>.<key>`):
/// reading config runs nothing.
/// Fails closed: a listing cut short, a failure other than "no such key", or a
/// driver that `-c` cannot name (`-c` splits at the first `=`) leaves status unrun.
async fn filter_drivers(folder: &Path) -> Result<Vec<String>, GitError> {
    let listed = match run(folder, &["config", "--null", "--get-regexp", r"^filter\."], None, MAX_CHECK_BYTES).await {
        Ok(Some(Printed { cut: true, .. })) => return Err(unsafe_config("its filter settings are too long to read")),
        Ok(Some(printed)) => driver_names(&printed.bytes),
        Ok(None) => Vec::new(),
        // No such key: git says nothing and exits 1.
        Err(GitError::Failed { stderr, .. }) if stderr.is_empty() => Vec::new(),
        Err(err) => return Err(err),
    };
    if listed.iter().any(|driver| driver.contains('=')) {
        return Err(unsafe_config("a filter driver's name holds '=', which git cannot be told to skip"));
    }
    Ok(listed)
}

fn unsafe_config(why: &'static str) -> GitError {
    GitError::Untrusted(why)
}

/// Driver names from `git config --null --get-regexp`'s `key\nvalue\0` entries.
fn driver_names(printed: &[u8]) -> Vec<String> {
    let mut names: Vec<String> = printed
        .split(|&byte| byte == 0)
        .filter_map(|entry| {
            let key = String::from_utf8_lossy(entry.split(|&byte| byte == b'\n').next()?).into_owned();
            let (driver, _setting) = key.strip_prefix("filter.")?.rsplit_once('.')?;
            Some(driver.to_string())
        })
        .collect();
    names.sort();
    names.dedup();
    names
}

/// `git status` with every filter driver emptied: a `.gitattributes` naming a
/// driver whose `clean` command the agent wrote into `.git/config` would
/// otherwise run here. Submodules are not entered (their configs are as open).
fn status_args(drivers: &[String]) -> Vec<String> {
    let mut args = Vec::new();
    for driver in drivers {
        for setting in ["clean", "smudge", "process"] {
            args.extend(["-c".to_string(), format!("filter.{driver}.{setting}=")]);
        }
        args.extend(["-c".to_string(), format!("filter.{driver}.required=false")]);
    }
    args.extend(
        ["status", "--porcelain=v1", "-z", "--branch", "--untracked-files=all", "--ignore-submodules=all", "--", "."]
            .map(String::from),
    );
    args
}

/// Reads `git status --porcelain=v1 -z --branch`; paths there are from the
/// repository root, `prefix` (`git rev-parse --show-prefix`) is the folder's.
pub fn parse_status(output: &[u8], prefix: &str, has_head: bool) -> Result<Listing, GitError> {
    let mut fields = output.split(|&byte| byte == 0).filter(|field| !field.is_empty());
    let mut branch = None;
    let mut entries = Vec::new();
    let mut truncated = false;
    while let Some(field) = fields.next() {
        let field = String::from_utf8_lossy(field);
        if let Some(header) = field.strip_prefix("## ") {
            branch = branch_name(header);
            continue;
        }
        let (Some(code), Some(path)) = (field.get(..2), field.get(3..)) else {
            return Err(GitError::Unreadable(field.into_owned()));
        };
        let moved = code.contains(['R', 'C']);
        // A rename or copy names its source in the next field.
        let source = if moved { fields.next().map(|field| String::from_utf8_lossy(field).into_owned()) } else { None };
        if entries.len() == MAX_FILES {
            truncated = true;
            continue;
        }
        let status = status_of(code);
        let head_path = match status {
            GitStatus::Untracked | GitStatus::Added => None,
            GitStatus::Renamed | GitStatus::Copied => source.clone(),
            _ => Some(path.to_string()),
        };
        entries.push(StatusEntry {
            path: in_folder(path, prefix),
            status,
            code: code.to_string(),
            old_path: source.map(|source| in_folder(&source, prefix)),
            head_object: head_path.filter(|_| has_head).map(|path| format!("HEAD:{path}")),
        });
    }
    Ok(Listing { branch, entries, truncated })
}

/// `main...origin/main [ahead 1]`, `No commits yet on main`, `HEAD (no branch)`.
fn branch_name(header: &str) -> Option<String> {
    if header.starts_with("HEAD (no branch)") {
        return None;
    }
    let name = header
        .strip_prefix("No commits yet on ")
        .or_else(|| header.strip_prefix("Initial commit on "))
        .unwrap_or(header);
    let name = name.split("...").next().unwrap_or(name).split(' ').next().unwrap_or(name);
    Some(name.to_string()).filter(|name| !name.is_empty())
}

fn status_of(code: &str) -> GitStatus {
    let (x, y) = (code.as_bytes()[0], code.as_bytes()[1]);
    match (x, y) {
        (b'?', b'?') => GitStatus::Untracked,
        (b'U', _) | (_, b'U') | (b'A', b'A') | (b'D', b'D') => GitStatus::Conflicted,
        (b'R', _) => GitStatus::Renamed,
        (b'C', _) => GitStatus::Copied,
        (b'D', _) | (_, b'D') => GitStatus::Deleted,
        (b'A', _) => GitStatus::Added,
        (b'T', _) | (_, b'T') => GitStatus::TypeChanged,
        _ => GitStatus::Modified,
    }
}

/// A path from the repository root, relative to the folder when it is inside.
fn in_folder(path: &str, prefix: &str) -> String {
    path.strip_prefix(prefix).unwrap_or(path).to_string()
}

/// What `HEAD` holds under an object name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HeadBlob {
    /// Nothing there (or git could not be asked).
    Absent,
    TooLarge,
    /// Within the size for one file, but past what one answer may read.
    OverBudget,
    /// Not a file's content (a submodule's commit).
    Other,
    Bytes(Vec<u8>),
}

/// What `HEAD` holds for each object name: blobs of at most `max` bytes are
/// read, up to `total` bytes in all. Two `git cat-file` runs: sizes first,
/// then only the blobs wanted.
pub async fn head_blobs(
    folder: &Path,
    names: &[Option<String>],
    max: usize,
    total: usize,
) -> Result<Vec<HeadBlob>, GitError> {
    let mut blobs = vec![HeadBlob::Absent; names.len()];
    // A name with a newline cannot go through cat-file's line-based input.
    let asked: Vec<(usize, &str)> = names
        .iter()
        .enumerate()
        .filter_map(|(index, name)| Some((index, name.as_deref()?)))
        .filter(|(_, name)| !name.contains('\n'))
        .collect();
    if asked.is_empty() {
        return Ok(blobs);
    }
    let input: String = asked.iter().map(|(_, name)| format!("{name}\n")).collect();
    let Some(Printed { bytes: checked, .. }) =
        run(folder, &["cat-file", "--batch-check"], Some(input.into_bytes()), MAX_CHECK_BYTES).await?
    else {
        return Ok(blobs);
    };
    let mut wanted = Vec::new();
    let mut left = total;
    for (line, &(index, _)) in String::from_utf8_lossy(&checked).lines().zip(&asked) {
        // `<name> missing`: the name may hold spaces, so it is read from the end.
        if line.ends_with(" missing") || line.ends_with(" ambiguous") {
            continue;
        }
        let mut words = line.split(' ');
        match (words.next(), words.next(), words.next().and_then(|size| size.parse::<usize>().ok())) {
            (Some(oid), Some("blob"), Some(size)) if size <= max && size <= left => {
                left -= size;
                wanted.push((index, oid.to_string()));
            }
            (_, Some("blob"), Some(size)) if size <= max => blobs[index] = HeadBlob::OverBudget,
            (_, Some("blob"), Some(_)) => blobs[index] = HeadBlob::TooLarge,
            _ => blobs[index] = HeadBlob::Other,
        }
    }
    if wanted.is_empty() {
        return Ok(blobs);
    }
    let input: String = wanted.iter().map(|(_, oid)| format!("{oid}\n")).collect();
    // The blobs with their header lines (at most 100 bytes each), however many.
    let cap = (total - left) + 100 * wanted.len();
    let Some(Printed { bytes: contents, .. }) =
        run(folder, &["cat-file", "--batch"], Some(input.into_bytes()), cap).await?
    else {
        return Ok(blobs);
    };
    let mut rest = contents.as_slice();
    for (index, _) in wanted {
        let (content, after) = next_blob(rest).ok_or_else(|| GitError::Unreadable("cat-file --batch".into()))?;
        blobs[index] = HeadBlob::Bytes(content.to_vec());
        rest = after;
    }
    Ok(blobs)
}

/// One `<oid> blob <size>\n<content>\n` of `git cat-file --batch`, and what follows.
fn next_blob(output: &[u8]) -> Option<(&[u8], &[u8])> {
    let end = output.iter().position(|&byte| byte == b'\n')?;
    let header = std::str::from_utf8(&output[..end]).ok()?;
    let size: usize = header.rsplit(' ').next()?.parse().ok()?;
    let content = output.get(end + 1..end + 1 + size)?;
    Some((content, output.get(end + 2 + size..).unwrap_or_default()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn every_filter_driver_is_emptied_in_status() {
        let printed = b"filter.lfs.clean\ngit-lfs clean -- %f\0filter.lfs.process\ngit-lfs filter-process\0filter.a.b.smudge\nx\0";
        let drivers = driver_names(printed);
        assert_eq!(drivers, ["a.b", "lfs"]);
        let args = status_args(&drivers);
        for expected in [
            "filter.lfs.clean=",
            "filter.lfs.smudge=",
            "filter.lfs.process=",
            "filter.a.b.clean=",
            "filter.lfs.required=false",
        ] {
            assert!(args.iter().any(|arg| arg == expected), "{expected} in {args:?}");
        }
        assert_eq!(
            args.iter().position(|arg| arg == "status"),
            Some(args.len() - 8),
            "overrides come before the command"
        );
        assert!(driver_names(b"").is_empty());
    }

    use super::*;

    #[test]
    fn status_lines_read_as_entries() {
        let output = b"## main...origin/main [ahead 1]\0 M src/a.rs\0?? src/new.txt\0R  src/b.rs\0src/old.rs\0D  src/gone.rs\0A  src/added.rs\0UU src/both.rs\0";
        let listing = parse_status(output, "src/", true).unwrap();
        assert_eq!(listing.branch.as_deref(), Some("main"));
        let rows: Vec<_> = listing
            .entries
            .iter()
            .map(|e| (e.path.as_str(), e.status, e.old_path.as_deref(), e.head_object.as_deref()))
            .collect();
        assert_eq!(
            rows,
            [
                ("a.rs", GitStatus::Modified, None, Some("HEAD:src/a.rs")),
                ("new.txt", GitStatus::Untracked, None, None),
                ("b.rs", GitStatus::Renamed, Some("old.rs"), Some("HEAD:src/old.rs")),
                ("gone.rs", GitStatus::Deleted, None, Some("HEAD:src/gone.rs")),
                ("added.rs", GitStatus::Added, None, None),
                ("both.rs", GitStatus::Conflicted, None, Some("HEAD:src/both.rs")),
            ]
        );
        assert!(!listing.truncated);
    }

    #[test]
    fn branch_headers() {
        let rows = [
            ("main", Some("main")),
            ("main...origin/main [behind 2]", Some("main")),
            ("No commits yet on trunk", Some("trunk")),
            ("Initial commit on trunk", Some("trunk")),
            ("HEAD (no branch)", None),
        ];
        for (header, expected) in rows {
            assert_eq!(branch_name(header).as_deref(), expected, "{header}");
        }
    }

    #[test]
    fn a_repository_without_commits_has_no_head_side_and_long_listings_are_cut() {
        let mut output = b"## No commits yet on main\0".to_vec();
        for n in 0..MAX_FILES + 2 {
            output.extend_from_slice(format!("A  f{n}\0").as_bytes());
        }
        output.extend_from_slice(b" M tracked\0");
        let listing = parse_status(&output, "", false).unwrap();
        assert_eq!(listing.entries.len(), MAX_FILES);
        assert!(listing.truncated);
        assert!(listing.entries.iter().all(|entry| entry.head_object.is_none()));
    }

    #[test]
    fn batch_output_splits_by_sizes() {
        let output = b"aaaa blob 3\nab\n\nbbbb blob 0\n\n";
        let (first, rest) = next_blob(output).unwrap();
        assert_eq!(first, b"ab\n");
        let (second, rest) = next_blob(rest).unwrap();
        assert_eq!((second, rest), (&b""[..], &b""[..]));
        assert!(next_blob(b"cccc blob 10\nshort\n").is_none());
    }
}
