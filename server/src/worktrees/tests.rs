//! Worktrees on real repositories in temporary directories: made outside the
//! folder on a branch of their own, applied all or nothing, conflicts named,
//! committed, discarded, removed (the branch kept when it has commits), and
//! a hostile repository's hooks and filters never run.

use std::path::{Path, PathBuf};
use std::process::Command;

use super::*;

/// Plain git for the test's own setup (the user's git, as a user would run it).
fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_AUTHOR_NAME", "User")
        .env("GIT_AUTHOR_EMAIL", "user@example.com")
        .env("GIT_COMMITTER_NAME", "User")
        .env("GIT_COMMITTER_EMAIL", "user@example.com")
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

struct Setup {
    _dir: tempfile::TempDir,
    folder: PathBuf,
    worktrees: Worktrees,
}

/// A repository with one commit (`notes.txt`, `keep.txt`) and a data dir beside it.
fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let folder = root.join("project");
    std::fs::create_dir(&folder).unwrap();
    git(&folder, &["init", "-q", "-b", "main"]);
    std::fs::write(folder.join("notes.txt"), "one\ntwo\nthree\n").unwrap();
    std::fs::write(folder.join("keep.txt"), "keep\n").unwrap();
    git(&folder, &["add", "-A"]);
    git(&folder, &["commit", "-q", "-m", "first"]);
    let worktrees = Worktrees::new(root.join("data/worktrees"));
    Setup { _dir: dir, folder, worktrees }
}

fn read(dir: &Path, rel: &str) -> String {
    std::fs::read_to_string(dir.join(rel)).unwrap()
}

/// What the user's repository holds besides files: HEAD, the index, refs.
fn repo_state(folder: &Path) -> (String, Vec<u8>, String) {
    (
        git(folder, &["rev-parse", "HEAD"]),
        std::fs::read(folder.join(".git/index")).unwrap(),
        git(folder, &["status", "--porcelain"]),
    )
}

#[test]
fn a_worktree_is_made_outside_the_folder_on_a_new_branch_from_head() {
    let setup = setup();
    let head = git(&setup.folder, &["rev-parse", "HEAD"]);
    let made = setup.worktrees.create(&setup.folder, "0123456789abcdef", Some("Fix notes")).unwrap();
    assert_eq!(made.branch, "agent-hub/fix-notes-01234567");
    assert_eq!(made.base, head);
    assert!(made.path.starts_with(setup.worktrees.root()) && !made.path.starts_with(&setup.folder));
    assert_eq!(read(&made.root(), "notes.txt"), "one\ntwo\nthree\n");
    assert_eq!(git(&setup.folder, &["rev-parse", "refs/heads/agent-hub/fix-notes-01234567"]), head);
    assert_eq!(git(&setup.folder, &["symbolic-ref", "HEAD"]), "refs/heads/main", "the folder's HEAD stays");
    // The same session id again: its branch exists, nothing more is made.
    let again = setup.worktrees.create(&setup.folder, "0123456789abcdef", Some("Fix notes"));
    assert!(matches!(again, Err(WorktreeError::Invalid(_))), "{again:?}");
}

#[test]
fn a_folder_without_git_or_without_a_commit_is_refused_and_nothing_is_made() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().canonicalize().unwrap().join("plain");
    std::fs::create_dir(&plain).unwrap();
    let worktrees = Worktrees::new(dir.path().join("data/worktrees"));
    assert_eq!(worktrees.create(&plain, "abc", None), Err(WorktreeError::NotARepository));
    let empty = dir.path().canonicalize().unwrap().join("empty");
    std::fs::create_dir(&empty).unwrap();
    git(&empty, &["init", "-q"]);
    assert_eq!(worktrees.create(&empty, "abc", None), Err(WorktreeError::NoCommit));
    assert!(!worktrees.can_isolate(&plain) && !worktrees.can_isolate(&empty));
    let made: Vec<_> = std::fs::read_dir(worktrees.root()).map(|dir| dir.flatten().collect()).unwrap_or_default();
    assert!(made.is_empty(), "nothing under the worktrees dir: {made:?}");
    assert_eq!(git(&empty, &["branch", "--list"]), "", "no branch made");
}

#[test]
fn apply_brings_committed_and_uncommitted_work_into_the_working_tree_only() {
    let setup = setup();
    let made = setup.worktrees.create(&setup.folder, "aaaa1111", Some("work")).unwrap();
    let root = made.root();
    std::fs::write(root.join("notes.txt"), "one\nTWO\nthree\n").unwrap();
    setup.worktrees.commit(&made, "two in capitals").unwrap();
    std::fs::write(root.join("added.txt"), "new\n").unwrap();
    std::fs::remove_file(root.join("keep.txt")).unwrap();
    let own_index = std::fs::read(made.git_dir.join("index")).unwrap();
    let files = setup.worktrees.files(&made).unwrap();
    let mut listed: Vec<(String, String)> = files.into_iter().map(|file| (file.path, file.status)).collect();
    listed.sort();
    assert_eq!(
        listed,
        [("added.txt", "added"), ("keep.txt", "deleted"), ("notes.txt", "modified")]
            .map(|(path, status)| (path.to_string(), status.to_string()))
    );
    let (head, index, _) = repo_state(&setup.folder);
    let mut applied = setup.worktrees.apply(&made).unwrap();
    applied.sort();
    assert_eq!(applied, ["added.txt", "keep.txt", "notes.txt"]);
    assert_eq!(read(&setup.folder, "notes.txt"), "one\nTWO\nthree\n");
    assert_eq!(read(&setup.folder, "added.txt"), "new\n");
    assert!(!setup.folder.join("keep.txt").exists());
    let (head_after, index_after, _) = repo_state(&setup.folder);
    assert_eq!((head_after, index_after), (head, index), "HEAD and the index are the user's, untouched");
    assert_eq!(std::fs::read(made.git_dir.join("index")).unwrap(), own_index, "the worktree's index too");
    let left: Vec<_> = std::fs::read_dir(made.path.parent().unwrap())
        .unwrap()
        .flatten()
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".index"))
        .collect();
    assert!(left.is_empty(), "no temporary index is left: {left:?}");
}

#[test]
fn a_conflicting_apply_names_the_files_and_leaves_the_folder_as_it_was() {
    let setup = setup();
    let first = setup.worktrees.create(&setup.folder, "first111", None).unwrap();
    let second = setup.worktrees.create(&setup.folder, "second22", None).unwrap();
    std::fs::write(first.root().join("notes.txt"), "one\nFIRST\nthree\n").unwrap();
    std::fs::write(second.root().join("notes.txt"), "one\nSECOND\nthree\n").unwrap();
    // The second also changes a file nobody else touched: all or nothing.
    std::fs::write(second.root().join("keep.txt"), "kept by second\n").unwrap();
    std::fs::write(second.root().join("fresh.txt"), "fresh\n").unwrap();
    setup.worktrees.apply(&first).unwrap();
    let before = repo_state(&setup.folder);
    let refused = setup.worktrees.apply(&second);
    assert_eq!(refused, Err(WorktreeError::Conflict(vec!["notes.txt".to_string()])));
    assert_eq!(read(&setup.folder, "notes.txt"), "one\nFIRST\nthree\n");
    assert_eq!(read(&setup.folder, "keep.txt"), "keep\n");
    assert!(!setup.folder.join("fresh.txt").exists());
    assert_eq!(repo_state(&setup.folder), before);
}

#[test]
fn discard_drops_what_is_not_committed_and_commit_keeps_the_branch_on_remove() {
    let setup = setup();
    let made = setup.worktrees.create(&setup.folder, "bbbb2222", Some("keep me")).unwrap();
    std::fs::write(made.root().join("notes.txt"), "changed\n").unwrap();
    std::fs::write(made.root().join("stray.txt"), "stray\n").unwrap();
    setup.worktrees.discard(&made).unwrap();
    assert_eq!(read(&made.root(), "notes.txt"), "one\ntwo\nthree\n");
    assert!(!made.root().join("stray.txt").exists());
    assert_eq!(setup.worktrees.commit(&made, "  "), Err(WorktreeError::Invalid("a commit needs a message".into())));
    assert!(matches!(setup.worktrees.commit(&made, "nothing"), Err(WorktreeError::Invalid(_))), "nothing to commit");
    std::fs::write(made.root().join("notes.txt"), "committed\n").unwrap();
    let commit = setup.worktrees.commit(&made, "the session's work").unwrap();
    assert_eq!(git(&setup.folder, &["log", "-1", "--format=%s", &made.branch]), "the session's work");
    assert_eq!(git(&setup.folder, &["rev-parse", &made.branch]), commit);
    let removed = setup.worktrees.remove(&made).unwrap();
    assert_eq!(removed, Removed { branch_kept: Some(made.branch.clone()), was_missing: false });
    assert!(!made.path.exists());
    assert_eq!(git(&setup.folder, &["rev-parse", &made.branch]), commit, "the branch with commits stays");
    assert_eq!(git(&setup.folder, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1);
}

#[test]
fn a_worktree_deleted_by_hand_is_pruned_and_its_empty_branch_removed() {
    let setup = setup();
    let made = setup.worktrees.create(&setup.folder, "cccc3333", None).unwrap();
    std::fs::remove_dir_all(&made.path).unwrap();
    assert!(!made.exists());
    assert_eq!(setup.worktrees.apply(&made), Err(WorktreeError::Missing(made.path.clone())));
    let removed = setup.worktrees.remove(&made).unwrap();
    assert_eq!(removed, Removed { branch_kept: None, was_missing: true });
    assert_eq!(git(&setup.folder, &["branch", "--list", &made.branch]), "");
    assert_eq!(git(&setup.folder, &["worktree", "list", "--porcelain"]).matches("worktree ").count(), 1);
}

#[test]
fn a_folder_below_the_repositorys_top_works_in_its_place_in_the_worktree() {
    let setup = setup();
    let sub = setup.folder.join("sub");
    std::fs::create_dir(&sub).unwrap();
    std::fs::write(sub.join("inner.txt"), "inner\n").unwrap();
    git(&setup.folder, &["add", "-A"]);
    git(&setup.folder, &["commit", "-q", "-m", "sub"]);
    let made = setup.worktrees.create(&sub, "dddd4444", None).unwrap();
    assert_eq!(made.prefix, "sub");
    assert_eq!(made.root(), made.path.join("sub"));
    std::fs::write(made.root().join("inner.txt"), "INNER\n").unwrap();
    // Outside the folder's part: not the session's to apply.
    std::fs::write(made.path.join("notes.txt"), "outside\n").unwrap();
    assert_eq!(setup.worktrees.apply(&made).unwrap(), ["sub/inner.txt"]);
    assert_eq!(read(&sub, "inner.txt"), "INNER\n");
    assert_eq!(read(&setup.folder, "notes.txt"), "one\ntwo\nthree\n");
}

/// Sets a file's modification time (its content untouched).
fn set_mtime(path: &Path, at: std::time::SystemTime) {
    std::fs::File::options().write(true).open(path).unwrap().set_modified(at).unwrap();
}

#[test]
fn a_same_size_edit_at_the_instant_the_worktrees_index_was_written_is_seen() {
    // The flake of the test above made certain. Git trusts an entry's cached
    // stat only when the file is older than the index file itself; a file as
    // new is "racily clean" and hashed again. Here the file, its entry and the
    // worktree's index share one instant and the edit keeps the size and that
    // mtime: only that check can see it, and only if the temporary index has
    // the worktree index's mtime.
    let setup = setup();
    // ctime cannot be set from user space and every write here sets it anew;
    // in the flake it matched because all of it fell within one clock tick.
    // Not compared, so that the mtime check is what is tested.
    git(&setup.folder, &["config", "core.trustctime", "false"]);
    let made = setup.worktrees.create(&setup.folder, "ffff6666", None).unwrap();
    let notes = made.root().join("notes.txt");
    let instant = std::time::UNIX_EPOCH + std::time::Duration::new(1_700_000_000, 123_456_789);
    set_mtime(&notes, instant);
    // The entry caches that instant (same content: only its stat changes) ...
    git(&made.path, &["update-index", "-q", "--refresh"]);
    // ... and the index is written at it.
    set_mtime(&made.git_dir.join("index"), instant);
    std::fs::write(&notes, "one\nTWO\nthree\n").unwrap();
    set_mtime(&notes, instant);
    let entry = git(&made.path, &["ls-files", "--debug", "notes.txt"]);
    assert!(entry.contains("mtime: 1700000000:123456789") && entry.contains("size: 14\t"), "stat as cached: {entry}");
    assert_eq!(git(&made.path, &["diff-files", "--name-only"]), "notes.txt", "the worktree's own index sees it");

    let files = setup.worktrees.files(&made).unwrap();
    assert_eq!(files, [WorktreeFile { path: "notes.txt".into(), status: "modified".into() }]);
    assert_eq!(setup.worktrees.apply(&made).unwrap(), ["notes.txt"]);
    assert_eq!(read(&setup.folder, "notes.txt"), "one\nTWO\nthree\n");
}

#[test]
fn a_hostile_repositorys_hooks_filters_and_external_diff_never_run() {
    let setup = setup();
    let marker = setup.folder.parent().unwrap().join("ran");
    let hooks = setup.folder.parent().unwrap().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    let script = format!("#!/bin/sh\necho \"$0\" >> '{}'\ncat\n", marker.display());
    for hook in ["post-checkout", "pre-commit", "commit-msg", "post-commit", "reference-transaction"] {
        let path = hooks.join(hook);
        std::fs::write(&path, &script).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    // The attributes are committed first, then the repository turns hostile.
    std::fs::write(setup.folder.join(".gitattributes"), "* filter=evil diff=evil\n").unwrap();
    git(&setup.folder, &["add", ".gitattributes"]);
    git(&setup.folder, &["commit", "-q", "-m", "attributes"]);
    let run = format!("sh -c 'echo filter >> {}; cat'", marker.display());
    let attributes = setup.folder.parent().unwrap().join("attributes").display().to_string();
    std::fs::write(&attributes, "notes.txt filter=a=b\n").unwrap();
    git(&setup.folder, &["config", "core.hooksPath", hooks.to_str().unwrap()]);
    for (key, value) in [
        ("filter.evil.smudge", &run),
        ("filter.evil.clean", &run),
        // `-c filter.a=b.clean=` would set `filter.a`, not empty this one.
        ("filter.a=b.smudge", &run),
        ("filter.a=b.clean", &run),
        ("core.attributesFile", &attributes),
        ("filter.evil.process", &run),
        ("diff.external", &run),
        ("core.fsmonitor", &run),
        ("diff.evil.textconv", &run),
        ("diff.evil.command", &run),
    ] {
        git(&setup.folder, &["config", key, value]);
    }
    std::fs::write(setup.folder.join(".git/info/attributes"), "*.txt filter=evil\n*.md filter=a=b\n").unwrap();
    let _ = std::fs::remove_file(&marker);

    let made = setup.worktrees.create(&setup.folder, "eeee5555", Some("hostile")).unwrap();
    std::fs::write(made.root().join("notes.txt"), "one\nhostile\nthree\n").unwrap();
    std::fs::write(made.root().join("doc.md"), "a filter named a=b\n").unwrap();
    setup.worktrees.files(&made).unwrap();
    setup.worktrees.commit(&made, "hostile commit").unwrap();
    std::fs::write(made.root().join("notes.txt"), "one\nhostile again\nthree\n").unwrap();
    setup.worktrees.apply(&made).unwrap();
    setup.worktrees.discard(&made).unwrap();
    setup.worktrees.remove(&made).unwrap();
    assert_eq!(read(&setup.folder, "notes.txt"), "one\nhostile again\nthree\n", "the bytes as written");
    assert!(!marker.exists(), "something of the repository ran: {:?}", std::fs::read_to_string(&marker));
}

#[test]
fn a_folder_not_in_the_last_commit_is_refused_and_nothing_is_made() {
    let setup = setup();
    let untracked = setup.folder.join("untracked/proj");
    std::fs::create_dir_all(&untracked).unwrap();
    std::fs::write(untracked.join("a.txt"), "a\n").unwrap();
    let branches = git(&setup.folder, &["branch", "--list"]);
    let refused = setup.worktrees.create(&untracked, "aaaa1111", Some("x"));
    assert!(matches!(&refused, Err(WorktreeError::Invalid(why)) if why.contains("last commit")), "{refused:?}");
    assert_eq!(git(&setup.folder, &["branch", "--list"]), branches, "no branch made");
    assert!(git(&setup.folder, &["worktree", "list"]).lines().count() == 1, "no worktree made");
}

#[test]
fn removing_one_worktree_leaves_the_users_other_worktrees_be_locked_or_gone() {
    let setup = setup();
    // The user's own worktree, on a drive not mounted now (its directory gone).
    let theirs = tempfile::tempdir().unwrap();
    let their_path = theirs.path().join("elsewhere");
    git(&setup.folder, &["worktree", "add", "-q", "-b", "theirs", their_path.to_str().unwrap()]);
    std::fs::remove_dir_all(&their_path).unwrap();
    // The session's worktree: locked by its agent (`git worktree lock`), then deleted by hand.
    let made = setup.worktrees.create(&setup.folder, "bbbb2222", Some("locked")).unwrap();
    git(&made.path, &["worktree", "lock", "--reason", "agent", made.path.to_str().unwrap()]);
    setup.worktrees.remove(&made).unwrap();
    assert!(!made.path.exists());
    let listed = git(&setup.folder, &["worktree", "list", "--porcelain"]);
    assert!(listed.contains(their_path.to_str().unwrap()), "the user's stale entry stays: {listed}");
    assert!(!listed.contains(made.path.to_str().unwrap()), "{listed}");
    // Deleted by hand (missing), it goes from the repository too, alone.
    let gone = setup.worktrees.create(&setup.folder, "cccc3333", Some("gone")).unwrap();
    std::fs::remove_dir_all(&gone.path).unwrap();
    setup.worktrees.remove(&gone).unwrap();
    let listed = git(&setup.folder, &["worktree", "list", "--porcelain"]);
    assert!(listed.contains(their_path.to_str().unwrap()) && !listed.contains(gone.path.to_str().unwrap()), "{listed}");
}

#[test]
fn a_relative_root_is_made_absolute() {
    let worktrees = Worktrees::new(PathBuf::from("data/worktrees"));
    assert!(worktrees.root().is_absolute());
    assert!(worktrees.root().ends_with("data/worktrees"));
}

#[test]
fn two_applies_at_once_into_one_folder_never_both_write() {
    let setup = std::sync::Arc::new(setup());
    let one = setup.worktrees.create(&setup.folder, "dddd4444", Some("one")).unwrap();
    let two = setup.worktrees.create(&setup.folder, "eeee5555", Some("two")).unwrap();
    std::fs::write(one.root().join("notes.txt"), "one\nTWO by one\nthree\n").unwrap();
    std::fs::write(two.root().join("notes.txt"), "one\nTWO by two\nthree\n").unwrap();
    let start = std::sync::Arc::new(std::sync::Barrier::new(2));
    let applies: Vec<_> = [one, two]
        .into_iter()
        .map(|worktree| {
            let (setup, start) = (setup.clone(), start.clone());
            std::thread::spawn(move || {
                start.wait();
                setup.worktrees.apply(&worktree)
            })
        })
        .collect();
    let results: Vec<_> = applies.into_iter().map(|apply| apply.join().unwrap()).collect();
    let applied = results.iter().filter(|result| result.is_ok()).count();
    let refused = results.iter().filter(|result| matches!(result, Err(WorktreeError::Conflict(_)))).count();
    assert_eq!((applied, refused), (1, 1), "{results:?}");
    let notes = read(&setup.folder, "notes.txt");
    assert!(notes == "one\nTWO by one\nthree\n" || notes == "one\nTWO by two\nthree\n", "{notes}");
}
