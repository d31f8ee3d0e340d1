//! The file system half of folder confinement: every open, create and mkdir
//! goes through one fd of the folder root, and no path resolution may leave
//! it. On Linux the kernel enforces this (`openat2` with `RESOLVE_BENEATH`),
//! so a symlink swapped in after a check cannot lead a write out. Where
//! `openat2` is missing, a walk one component at a time with `O_NOFOLLOW`
//! does the same, following only symlinks that stay inside.
//!
//! The root fd is opened once per folder and held (`Folder::held`): a folder
//! renamed away, with a symlink to elsewhere put at its path, does not move
//! the tools there.

use std::collections::{BTreeMap, VecDeque};
use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::Write;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use rustix::fd::{AsFd, BorrowedFd, OwnedFd};
use rustix::fs::{
    fchmod, fstat, fsync, mkdirat, openat, readlinkat, renameat, statat, unlinkat, AtFlags, FileType, Mode, OFlags,
};
use rustix::io::Errno;

/// A directory to stand on: `O_PATH` where it exists (no read permission
/// needed, nothing can be read through it).
#[cfg(any(target_os = "linux", target_os = "android"))]
const DIR: OFlags = OFlags::PATH.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const DIR: OFlags = OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC);

/// Just looking whether something is there.
#[cfg(any(target_os = "linux", target_os = "android"))]
const PROBE: OFlags = OFlags::PATH.union(OFlags::CLOEXEC);
#[cfg(not(any(target_os = "linux", target_os = "android")))]
const PROBE: OFlags = OFlags::RDONLY.union(OFlags::NONBLOCK).union(OFlags::CLOEXEC);

/// Reading: `NONBLOCK` so a FIFO planted in the folder cannot hang the tool
/// (the caller then refuses anything but a regular file).
const READ: OFlags = OFlags::RDONLY.union(OFlags::NONBLOCK).union(OFlags::NOCTTY).union(OFlags::CLOEXEC);

/// Opening the file a write replaces, only to see that it may be written.
const WRITE_EXISTING: OFlags =
    OFlags::WRONLY.union(OFlags::NOFOLLOW).union(OFlags::NONBLOCK).union(OFlags::NOCTTY).union(OFlags::CLOEXEC);

/// The file a write is made in before it is renamed over the target: a new
/// name (`EXCL`, which never follows a link either).
const TEMP: OFlags = OFlags::WRONLY
    .union(OFlags::CREATE)
    .union(OFlags::EXCL)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::NOCTTY)
    .union(OFlags::CLOEXEC);

/// The bits a replaced file keeps. Set-id bits are not kept: the kernel
/// clears them too when another user writes a file.
const PERMISSIONS: Mode = Mode::RWXU.union(Mode::RWXG).union(Mode::RWXO).union(Mode::SVTX);

/// New files and directories: 0o666 and 0o777, narrowed by the umask.
const FILE_MODE: Mode =
    Mode::RUSR.union(Mode::WUSR).union(Mode::RGRP).union(Mode::WGRP).union(Mode::ROTH).union(Mode::WOTH);
const DIR_MODE: Mode = Mode::RWXU.union(Mode::RWXG).union(Mode::RWXO);

/// Symlinks followed in one resolution before giving up, as the kernel does.
const MAX_LINKS: usize = 40;

/// The project folder, opened once; paths given to it are relative
/// (`paths::relative_in_folder`), an empty one meaning the folder itself.
#[derive(Debug)]
pub struct Folder {
    fd: OwnedFd,
    openat2: bool,
    /// The path it was opened at, to read absolute paths in requests; never
    /// opened again.
    root: PathBuf,
}

impl Folder {
    /// Opens `root` (canonical: a symlink there is refused).
    pub fn open(root: &Path) -> std::io::Result<Self> {
        let fd = rustix::fs::open(root, DIR | OFlags::NOFOLLOW, Mode::empty())?;
        let openat2 = openat2_works(&fd);
        Ok(Self { fd, openat2, root: root.to_path_buf() })
    }

    /// The folder at `root`, opened the first time it is asked for and held
    /// from then on, wherever it is moved: the path is opened again only once
    /// the folder held there is deleted.
    pub fn held(root: &Path) -> std::io::Result<Arc<Self>> {
        static HELD: Mutex<BTreeMap<PathBuf, Arc<Folder>>> = Mutex::new(BTreeMap::new());
        let mut held = HELD.lock().unwrap_or_else(PoisonError::into_inner);
        held.retain(|_, folder| folder.exists());
        if let Some(folder) = held.get(root) {
            return Ok(folder.clone());
        }
        let folder = Arc::new(Self::open(root)?);
        held.insert(root.to_path_buf(), folder.clone());
        Ok(folder)
    }

    /// Whether the directory is still linked somewhere (not deleted).
    fn exists(&self) -> bool {
        fstat(&self.fd).is_ok_and(|stat| stat.st_nlink > 0)
    }

    /// The path the folder was opened at (it may have moved since).
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The same folder, resolved by the fallback walk (to test it on Linux).
    #[cfg(test)]
    pub fn open_without_openat2(root: &Path) -> std::io::Result<Self> {
        Ok(Self { openat2: false, ..Self::open(root)? })
    }

    /// A file (or directory) to read; the caller checks what it got.
    pub fn open_read(&self, rel: &Path) -> Result<File, Errno> {
        self.open_at(rel, READ, Mode::empty()).map(File::from)
    }

    /// A directory to list.
    pub fn open_dir(&self, rel: &Path) -> Result<OwnedFd, Errno> {
        self.open_at(rel, OFlags::RDONLY.union(OFlags::DIRECTORY).union(OFlags::CLOEXEC), Mode::empty())
    }

    /// Whether `rel`, or for a path not there yet its nearest existing
    /// ancestor, is inside: what a precheck can say before anything is written.
    pub fn check(&self, rel: &Path) -> Result<(), Errno> {
        let mut path = rel;
        loop {
            match self.open_at(path, PROBE, Mode::empty()) {
                Err(Errno::NOENT) => match path.parent() {
                    Some(parent) => path = parent,
                    None => return Err(Errno::NOENT),
                },
                other => return other.map(drop),
            }
        }
    }

    /// Replaces the file at `rel` with `bytes`, or creates it (and its missing
    /// directories), whole or not at all: the bytes go to a new file beside it,
    /// are synced, and that file is renamed over it. A reader sees the old text
    /// or the new, and a crash or a full disk midway leaves the old file as it
    /// was. Links inside the folder are followed to the file they name (the
    /// link stays a link); the file keeps its permission bits.
    pub fn replace(&self, rel: &Path, bytes: &[u8]) -> Result<(), WriteError> {
        self.replace_with(rel, bytes, true)
    }

    /// [`Folder::replace`], syncing the file and its directory only when
    /// `sync` (a rewind writes many files and keeps its own record).
    pub fn replace_with(&self, rel: &Path, bytes: &[u8], sync: bool) -> Result<(), WriteError> {
        self.replace_judged(rel, bytes, sync, |_| false)
    }

    /// [`Folder::replace`], refused ([`WriteError::Kept`]) where `kept` says
    /// so of the place the write really lands, relative to the folder with
    /// links followed: judged first on the nearest directory there is (before
    /// any is made), then on the directory the write holds open, so a link
    /// swapped in later cannot move it.
    pub fn replace_unless(&self, rel: &Path, bytes: &[u8], kept: impl Fn(&Path) -> bool) -> Result<(), WriteError> {
        self.replace_judged(rel, bytes, true, kept)
    }

    fn replace_judged(
        &self,
        rel: &Path,
        bytes: &[u8],
        sync: bool,
        kept: impl Fn(&Path) -> bool,
    ) -> Result<(), WriteError> {
        let mut existing = rel.parent().unwrap_or(Path::new(""));
        let mut missing = vec![rel.file_name().ok_or(Errno::ISDIR)?];
        let nearest = loop {
            match self.open_dir(existing) {
                Ok(dir) => break dir,
                Err(Errno::NOENT) => {
                    missing.push(existing.file_name().ok_or(Errno::NOENT)?);
                    existing = existing.parent().unwrap_or(Path::new(""));
                }
                Err(err) => return Err(err.into()),
            }
        };
        let planned = missing.iter().rev().fold(self.real_place(&nearest)?, |path, name| path.join(name));
        if kept(&planned) {
            return Err(WriteError::Kept(planned));
        }
        if let Some(parent) = rel.parent() {
            self.make_dirs(parent)?;
        }
        let (dir, name) = self.final_place(rel)?;
        let landing = self.real_place(&dir)?.join(&name);
        if kept(&landing) {
            return Err(WriteError::Kept(landing));
        }
        let kept = match openat(&dir, &name, WRITE_EXISTING, Mode::empty()) {
            // Opened for writing: a file that may not be written is refused as before.
            Ok(file) => {
                let stat = fstat(&file)?;
                if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
                    return Err(WriteError::NotRegular);
                }
                Some(Mode::from_raw_mode(stat.st_mode) & PERMISSIONS)
            }
            Err(Errno::NOENT) => None,
            Err(err) => return Err(err.into()),
        };
        let mut temp = TempFile::create(&dir, &name, kept.unwrap_or(FILE_MODE))?;
        temp.fill(bytes, kept, sync)?;
        temp.rename_over(&name)?;
        // The rename is durable once the directory is. Some file systems refuse
        // to sync a directory (EINVAL); the new text is in place either way.
        if sync {
            let _ = fsync(&dir);
        }
        Ok(())
    }

    /// What is at `rel` itself (a last link is not followed); `None`: nothing.
    pub fn kind_at(&self, rel: &Path) -> Result<Option<FileType>, Errno> {
        let (dir, name) = self.parent_of(rel)?;
        match statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(stat) => Ok(Some(FileType::from_raw_mode(stat.st_mode))),
            Err(Errno::NOENT) => Ok(None),
            Err(err) => Err(err),
        }
    }

    /// Removes the file or link at `rel` (never what a link names); nothing
    /// there is no error.
    pub fn remove(&self, rel: &Path) -> Result<(), Errno> {
        let (dir, name) = self.parent_of(rel)?;
        match unlinkat(&dir, &name, AtFlags::empty()) {
            Ok(()) | Err(Errno::NOENT) => Ok(()),
            Err(err) => Err(err),
        }
    }

    /// Removes the directory at `rel` if it is empty.
    pub fn remove_empty_dir(&self, rel: &Path) -> Result<(), Errno> {
        let (dir, name) = self.parent_of(rel)?;
        unlinkat(&dir, &name, AtFlags::REMOVEDIR)
    }

    /// Makes a symlink at `rel` to `target` (made, never followed), and the
    /// directories it needs.
    pub fn symlink(&self, rel: &Path, target: &OsStr) -> Result<(), Errno> {
        if let Some(parent) = rel.parent() {
            self.make_dirs(parent)?;
        }
        let (dir, name) = self.parent_of(rel)?;
        rustix::fs::symlinkat(target, &dir, &name)
    }

    /// Sets or clears the executable bits of the regular file at `rel`.
    pub fn set_executable(&self, rel: &Path, executable: bool) -> Result<(), Errno> {
        let (dir, name) = self.parent_of(rel)?;
        let file = openat(&dir, &name, READ | OFlags::NOFOLLOW, Mode::empty())?;
        let stat = fstat(&file)?;
        if FileType::from_raw_mode(stat.st_mode) != FileType::RegularFile {
            return Err(Errno::INVAL);
        }
        let mode = Mode::from_raw_mode(stat.st_mode) & PERMISSIONS;
        let exec = Mode::XUSR | Mode::XGRP | Mode::XOTH;
        // Execute for whoever may read, as git checks a file out.
        let wanted = if executable {
            let readers = Mode::from_raw_mode((mode.bits() & 0o444) >> 2);
            mode | (readers & exec)
        } else {
            mode - exec
        };
        if wanted != mode {
            fchmod(&file, wanted)?;
        }
        Ok(())
    }

    /// The directory holding `rel` (opened beneath the root) and its name there.
    /// Where the directory `dir` (opened beneath the folder) really is,
    /// relative to the folder as it now is.
    fn real_place(&self, dir: &OwnedFd) -> Result<PathBuf, Errno> {
        let path_of =
            |fd: BorrowedFd<'_>| std::fs::read_link(format!("/proc/self/fd/{}", std::os::fd::AsRawFd::as_raw_fd(&fd)));
        let (Ok(real), Ok(root)) = (path_of(dir.as_fd()), path_of(self.fd.as_fd())) else { return Err(Errno::NOENT) };
        real.strip_prefix(&root).map(Path::to_path_buf).map_err(|_| Errno::XDEV)
    }

    fn parent_of(&self, rel: &Path) -> Result<(OwnedFd, OsString), Errno> {
        let name = rel.file_name().ok_or(Errno::INVAL)?.to_owned();
        let dir = self.open_at(rel.parent().unwrap_or(Path::new("")), DIR, Mode::empty())?;
        Ok((dir, name))
    }

    /// Where a write to `rel` lands: the directory holding it and its name
    /// there, after the links the name leads through. Those are followed as
    /// the kernel would, from the directory they sit in, judged beneath the
    /// root (an absolute target is refused, as `RESOLVE_BENEATH` does). What
    /// is found is a regular file, or nothing yet; anything else is refused.
    fn final_place(&self, rel: &Path) -> Result<(OwnedFd, OsString), WriteError> {
        let mut rel = rel.to_path_buf();
        for _ in 0..=MAX_LINKS {
            // No name: the root itself or a path ending in `..`, a directory.
            let Some(name) = rel.file_name().map(ToOwned::to_owned) else { return Err(Errno::ISDIR.into()) };
            let parent = rel.parent().unwrap_or(Path::new("")).to_path_buf();
            let dir = self.open_dir(&parent)?;
            let stat = match statat(&dir, &name, AtFlags::SYMLINK_NOFOLLOW) {
                Ok(stat) => stat,
                Err(Errno::NOENT) => return Ok((dir, name)),
                Err(err) => return Err(err.into()),
            };
            match FileType::from_raw_mode(stat.st_mode) {
                FileType::RegularFile => return Ok((dir, name)),
                FileType::Directory => return Err(Errno::ISDIR.into()),
                FileType::Symlink => match readlinkat(&dir, &name, Vec::new()) {
                    Ok(target) => {
                        let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
                        if target.has_root() {
                            return Err(Errno::XDEV.into());
                        }
                        rel = parent.join(target);
                    }
                    // Changed since the stat: look again.
                    Err(Errno::INVAL | Errno::NOENT) => {}
                    Err(err) => return Err(err.into()),
                },
                _ => return Err(WriteError::NotRegular),
            }
        }
        Err(Errno::LOOP.into())
    }

    /// `mkdir -p` inside the folder: each directory is made in one opened
    /// beneath the root, then opened again from the root (so a symlink swapped
    /// in meanwhile is judged like any other).
    fn make_dirs(&self, rel: &Path) -> Result<(), Errno> {
        match self.open_at(rel, DIR, Mode::empty()) {
            Err(Errno::NOENT) => {}
            other => return other.map(drop),
        }
        let mut dir = self.open_at(Path::new(""), DIR, Mode::empty())?;
        let mut so_far = PathBuf::new();
        for name in rel.components() {
            so_far.push(name);
            dir = match self.open_at(&so_far, DIR, Mode::empty()) {
                Err(Errno::NOENT) => {
                    match mkdirat(&dir, name.as_os_str(), DIR_MODE) {
                        Ok(()) | Err(Errno::EXIST) => {}
                        Err(err) => return Err(err),
                    }
                    self.open_at(&so_far, DIR, Mode::empty())?
                }
                other => other?,
            };
        }
        Ok(())
    }

    fn open_at(&self, rel: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        if self.openat2 {
            #[cfg(any(target_os = "linux", target_os = "android"))]
            return open_beneath(self.fd.as_fd(), rel, flags, mode);
        }
        self.walk(rel, flags, mode)
    }

    /// The fallback: one component at a time from the root fd, never letting
    /// the kernel follow a symlink (`O_NOFOLLOW`, and a symlink swapped in
    /// after our `readlinkat` makes the open fail rather than be followed).
    /// Symlinks are followed by hand: absolute targets are refused (as
    /// `RESOLVE_BENEATH` does) and `..` may not climb above the root.
    fn walk(&self, rel: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
        let mut pending: VecDeque<OsString> = rel.components().map(|part| part.as_os_str().to_owned()).collect();
        // The directories walked into below the root, innermost last.
        let mut dirs: Vec<OwnedFd> = Vec::new();
        let mut links = 0;
        while let Some(name) = pending.pop_front() {
            if name == "." || name.is_empty() {
                continue;
            }
            if name == ".." {
                if dirs.pop().is_none() {
                    return Err(Errno::XDEV);
                }
                continue;
            }
            let dir = dirs.last().map_or(self.fd.as_fd(), AsFd::as_fd);
            if let Ok(target) = readlinkat(dir, name.as_os_str(), Vec::new()) {
                links += 1;
                if links > MAX_LINKS {
                    return Err(Errno::LOOP);
                }
                let target = PathBuf::from(OsString::from_vec(target.into_bytes()));
                for part in target.components().rev() {
                    match part {
                        Component::Normal(_) | Component::ParentDir | Component::CurDir => {
                            pending.push_front(part.as_os_str().to_owned());
                        }
                        Component::RootDir | Component::Prefix(_) => return Err(Errno::XDEV),
                    }
                }
                continue;
            }
            if pending.is_empty() {
                return openat(dir, name.as_os_str(), flags | OFlags::NOFOLLOW, mode);
            }
            let next = openat(dir, name.as_os_str(), DIR | OFlags::NOFOLLOW, Mode::empty())?;
            dirs.push(next);
        }
        // The path ends at a directory already open (the root, or after `..`).
        let dir = dirs.last().map_or(self.fd.as_fd(), AsFd::as_fd);
        openat(dir, ".", flags, mode)
    }
}

/// The folder's own directory, e.g. to run a command in.
impl AsFd for Folder {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

/// Why a file could not be replaced.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum WriteError {
    #[error(transparent)]
    Io(#[from] Errno),
    /// A FIFO, a device or a socket is there.
    #[error("not a regular file")]
    NotRegular,
    /// The write would land at this path of the folder, which the caller keeps.
    #[error("{} may not be written", .0.display())]
    Kept(PathBuf),
}

/// A file's new content until it is renamed over the file; removed if it is
/// dropped before (a failed write leaves nothing behind).
struct TempFile<'dir> {
    dir: BorrowedFd<'dir>,
    name: OsString,
    file: File,
    renamed: bool,
}

impl<'dir> TempFile<'dir> {
    /// A new file in `dir` (never one already there, nor through a link),
    /// named after `target`: `.<target>.hub-<pid>-<n>.tmp`.
    fn create(dir: &'dir OwnedFd, target: &OsStr, mode: Mode) -> Result<Self, Errno> {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        // Leaves room for the rest within a name's 255 bytes.
        let stem = &target.as_bytes()[..target.len().min(200)];
        let mut tries = 0;
        loop {
            let suffix = format!(".hub-{}-{}.tmp", std::process::id(), NEXT.fetch_add(1, Ordering::Relaxed));
            let name = OsString::from_vec([b".", stem, suffix.as_bytes()].concat());
            match openat(dir, &name, TEMP, mode) {
                Ok(fd) => return Ok(Self { dir: dir.as_fd(), name, file: File::from(fd), renamed: false }),
                // Left by an earlier process that had our pid.
                Err(Errno::EXIST) if tries < 100 => tries += 1,
                Err(err) => return Err(err),
            }
        }
    }

    /// Writes all of `bytes`, gives the file `mode` if said (exactly, not
    /// narrowed by the umask), and syncs it.
    fn fill(&mut self, bytes: &[u8], mode: Option<Mode>, sync: bool) -> Result<(), Errno> {
        self.file.write_all(bytes).map_err(|err| Errno::from_io_error(&err).unwrap_or(Errno::IO))?;
        if let Some(mode) = mode {
            fchmod(&self.file, mode)?;
        }
        if sync {
            fsync(&self.file)?;
        }
        Ok(())
    }

    fn rename_over(mut self, target: &OsStr) -> Result<(), Errno> {
        renameat(self.dir, &self.name, self.dir, target)?;
        self.renamed = true;
        Ok(())
    }
}

impl Drop for TempFile<'_> {
    fn drop(&mut self) {
        if !self.renamed {
            let _ = unlinkat(self.dir, &self.name, AtFlags::empty());
        }
    }
}

/// `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`: the kernel refuses
/// (`EXDEV`) any resolution that leaves `root`, symlinks and `..` included,
/// at the moment of the open.
#[cfg(any(target_os = "linux", target_os = "android"))]
fn open_beneath(root: rustix::fd::BorrowedFd<'_>, rel: &Path, flags: OFlags, mode: Mode) -> Result<OwnedFd, Errno> {
    use rustix::fs::{openat2, ResolveFlags};
    let rel = if rel.as_os_str().is_empty() { Path::new(".") } else { rel };
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    // EAGAIN: a rename elsewhere raced a `..` lookup; the kernel asks to retry.
    let mut tries = 0;
    loop {
        match openat2(root, rel, flags, mode, resolve) {
            Err(Errno::AGAIN | Errno::INTR) if tries < 16 => tries += 1,
            other => return other,
        }
    }
}

/// Whether the kernel has `openat2` (Linux 5.6+) and lets us call it (some
/// seccomp profiles answer `EPERM` or `ENOSYS` for syscalls they do not know).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn openat2_works(root: &OwnedFd) -> bool {
    static WORKS: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *WORKS.get_or_init(|| {
        !matches!(open_beneath(root.as_fd(), Path::new(""), PROBE, Mode::empty()), Err(Errno::NOSYS | Errno::PERM))
    })
}

#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn openat2_works(_root: &OwnedFd) -> bool {
    false
}

#[cfg(test)]
mod tests {
    use std::io::Read;
    use std::os::unix::fs::symlink;

    use super::*;

    const XDEV: WriteError = WriteError::Io(Errno::XDEV);

    struct Project {
        _dir: tempfile::TempDir,
        root: PathBuf,
        outside: tempfile::TempDir,
    }

    /// A folder with `src/main.rs`, next to a directory outside it, and links:
    /// `escape` -> outside, `dangle.txt` -> outside/x (missing), `up` ->
    /// `../<outside>` (relative), `alias` -> src, `src/sibling` -> `../docs`.
    fn project() -> Project {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::create_dir_all(root.join("docs")).unwrap();
        std::fs::write(root.join("src/main.rs"), "fn main() {}").unwrap();
        std::fs::write(root.join("docs/a.md"), "a").unwrap();
        symlink(outside.path(), root.join("escape")).unwrap();
        symlink(outside.path().join("x"), root.join("dangle.txt")).unwrap();
        let real_outside = outside.path().canonicalize().unwrap();
        let climb = "../".repeat(root.components().count() - 1);
        symlink(format!("{climb}{}/x", real_outside.strip_prefix("/").unwrap().display()), root.join("up")).unwrap();
        symlink("src", root.join("alias")).unwrap();
        symlink("../docs", root.join("src/sibling")).unwrap();
        Project { _dir: dir, root, outside }
    }

    fn both(root: &Path) -> [(&'static str, Folder); 2] {
        [("openat2", Folder::open(root).unwrap()), ("walk", Folder::open_without_openat2(root).unwrap())]
    }

    fn read(folder: &Folder, rel: &str) -> Result<String, Errno> {
        let mut text = String::new();
        folder.open_read(Path::new(rel))?.read_to_string(&mut text).map_err(|_| Errno::IO)?;
        Ok(text)
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn openat2_is_what_linux_uses() {
        let p = project();
        assert!(Folder::open(&p.root).unwrap().openat2, "this kernel should have openat2");
    }

    #[test]
    fn links_that_stay_inside_are_followed() {
        let p = project();
        for (how, folder) in both(&p.root) {
            assert_eq!(read(&folder, "alias/main.rs"), Ok("fn main() {}".into()), "{how}");
            assert_eq!(read(&folder, "src/sibling/a.md"), Ok("a".into()), "{how}");
            assert_eq!(read(&folder, "src/main.rs"), Ok("fn main() {}".into()), "{how}");
            assert!(folder.open_dir(Path::new("")).is_ok(), "{how}");
            assert_eq!(folder.check(Path::new("alias/new/deeper.rs")), Ok(()), "{how}");
            folder.replace(Path::new("alias/made/new.rs"), b"x").unwrap();
            assert_eq!(std::fs::read_to_string(p.root.join("src/made/new.rs")).unwrap(), "x", "{how}");
            std::fs::remove_dir_all(p.root.join("src/made")).unwrap();
        }
    }

    #[test]
    fn links_that_lead_out_are_refused_even_dangling() {
        let p = project();
        for (how, folder) in both(&p.root) {
            for rel in ["escape", "escape/new.txt", "dangle.txt", "up", "escape/../src/main.rs"] {
                let rel = Path::new(rel);
                assert_eq!(folder.check(rel), Err(Errno::XDEV), "{how} check {rel:?}");
                assert_eq!(folder.replace(rel, b"x"), Err(XDEV), "{how} write {rel:?}");
                assert_eq!(folder.open_read(rel).err(), Some(Errno::XDEV), "{how} read {rel:?}");
            }
            assert_eq!(folder.replace(Path::new("escape/sub/new.txt"), b"x"), Err(XDEV), "{how}");
            assert_eq!(folder.check(Path::new("../x")), Err(Errno::XDEV), "{how}: a raw `..` too");
        }
        let left: Vec<_> = std::fs::read_dir(p.outside.path()).unwrap().collect();
        assert!(left.is_empty(), "nothing was created outside: {left:?}");
    }

    #[test]
    fn a_directory_swapped_for_a_link_after_the_check_is_refused() {
        let p = project();
        for (how, folder) in both(&p.root) {
            std::fs::create_dir(p.root.join("work")).unwrap();
            assert_eq!(folder.check(Path::new("work/new.txt")), Ok(()), "{how}");
            std::fs::remove_dir(p.root.join("work")).unwrap();
            symlink(p.outside.path(), p.root.join("work")).unwrap();
            assert_eq!(folder.replace(Path::new("work/new.txt"), b"x"), Err(XDEV), "{how}");
            assert_eq!(folder.replace(Path::new("work/deeper/new.txt"), b"x"), Err(XDEV), "{how}");
            std::fs::remove_file(p.root.join("work")).unwrap();
        }
        assert!(std::fs::read_dir(p.outside.path()).unwrap().next().is_none());
    }

    #[test]
    fn missing_paths_and_loops_are_reported_as_such() {
        let p = project();
        symlink("loop", p.root.join("loop")).unwrap();
        for (how, folder) in both(&p.root) {
            assert_eq!(folder.open_read(Path::new("src/missing.rs")).err(), Some(Errno::NOENT), "{how}");
            assert_eq!(folder.check(Path::new("src/missing/deeper.rs")), Ok(()), "{how}");
            assert_eq!(folder.open_read(Path::new("loop")).err(), Some(Errno::LOOP), "{how}");
        }
    }
}
