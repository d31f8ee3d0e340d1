//! Checkpoints against real git and real files: each test changes a folder
//! the way a turn would (shell edits included), then checks what was
//! recorded and what a rewind puts back.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use protocol::checkpoints::{CheckpointFile, CheckpointKind, FileChange, LeftOutWhy};

use super::*;

struct Setup {
    _dirs: (tempfile::TempDir, tempfile::TempDir),
    folder: PathBuf,
    checkpoints: Checkpoints,
    data: PathBuf,
}

fn setup() -> Setup {
    let (work, data) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let folder = work.path().canonicalize().unwrap();
    let data_path = data.path().join("checkpoints");
    Setup { checkpoints: Checkpoints::new(data_path.clone()), folder, data: data_path, _dirs: (work, data) }
}

fn sh(folder: &Path, script: &str) {
    let status = Command::new("bash").arg("-c").arg(script).current_dir(folder).status().unwrap();
    assert!(status.success(), "{script}");
}

fn write(folder: &Path, rel: &str, text: &str) {
    let path = folder.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// Every file under `dir` (links as their targets), with its bytes.
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut found = BTreeMap::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(at) = dirs.pop() {
        for entry in std::fs::read_dir(&at).unwrap().flatten() {
            let path = entry.path();
            let rel = path.strip_prefix(dir).unwrap().display().to_string();
            let kind = entry.file_type().unwrap();
            if kind.is_symlink() {
                found.insert(rel, format!("-> {}", std::fs::read_link(&path).unwrap().display()).into_bytes());
            } else if kind.is_dir() {
                found.insert(format!("{rel}/"), Vec::new());
                dirs.push(path);
            } else {
                found.insert(rel, std::fs::read(&path).unwrap());
            }
        }
    }
    found
}

fn files(list: &[(&str, FileChange)]) -> Vec<CheckpointFile> {
    list.iter().map(|(path, change)| CheckpointFile { path: path.to_string(), change: *change }).collect()
}

fn sorted(mut files: Vec<CheckpointFile>) -> Vec<CheckpointFile> {
    files.sort_by(|a, b| a.path.cmp(&b.path));
    files
}

/// One turn: recorded before, `script` run, recorded after.
fn turn(setup: &Setup, session: &str, prompt: &str, script: &str) -> u64 {
    let start = TurnStart { prompt: Some(prompt.into()), seq: Some(1), conversation: None };
    let n = setup.checkpoints.before_turn(&setup.folder, session, start).unwrap();
    sh(&setup.folder, script);
    setup.checkpoints.after_turn(&setup.folder, session, n).unwrap();
    n
}

#[test]
fn shell_edits_deletes_and_new_directories_are_recorded_and_rewound() {
    let setup = setup();
    write(&setup.folder, "notes.txt", "one\ntwo\n");
    write(&setup.folder, "old.txt", "gone soon\n");
    write(&setup.folder, "src/main.rs", "fn main() {}\n");
    let before = contents(&setup.folder);
    let n = turn(
        &setup,
        "s1",
        "edit things",
        "sed -i 's/two/TWO/' notes.txt && rm old.txt && mkdir -p a/b && echo hi > a/b/c && chmod +x src/main.rs",
    );
    let list = setup.checkpoints.list(&setup.folder, "s1").unwrap();
    assert_eq!(list.len(), 1);
    assert_eq!((list[0].id, list[0].turn, list[0].kind, list[0].ended), (n, 1, CheckpointKind::Turn, true));
    assert_eq!(list[0].prompt.as_deref(), Some("edit things"));
    assert_eq!(
        sorted(list[0].files.clone()),
        files(&[
            ("a/b/c", FileChange::Added),
            ("notes.txt", FileChange::Modified),
            ("old.txt", FileChange::Deleted),
            ("src/main.rs", FileChange::Modified),
        ])
    );
    let diff = setup.checkpoints.diff(&setup.folder, "s1", n).unwrap();
    assert!(diff.patch.contains("-two\n+TWO"), "{}", diff.patch);
    assert!(diff.patch.contains("deleted file mode 100644"), "{}", diff.patch);

    let rewound = setup.checkpoints.rewind(&setup.folder, "s1", n, false).unwrap();
    assert_eq!(contents(&setup.folder), before, "the folder is as it was, the new directories gone");
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(setup.folder.join("src/main.rs")).unwrap().permissions().mode();
    assert_eq!(mode & 0o111, 0, "the executable bit the turn set is taken back");
    assert_eq!(
        (rewound.checkpoint.kind, rewound.checkpoint.rewound_to, rewound.turn),
        (CheckpointKind::Rewind, Some(n), 1)
    );
    assert_eq!(rewound.checkpoint.files.len(), 4);
}

#[test]
fn a_rewind_goes_back_over_later_turns_too_and_can_be_undone() {
    let setup = setup();
    write(&setup.folder, "a.txt", "v0\n");
    let first = turn(&setup, "s", "one", "echo v1 > a.txt");
    turn(&setup, "s", "two", "echo v2 > a.txt && echo new > b.txt");
    let after_two = contents(&setup.folder);
    let rewind = setup.checkpoints.rewind(&setup.folder, "s", first, false).unwrap();
    assert_eq!(std::fs::read_to_string(setup.folder.join("a.txt")).unwrap(), "v0\n");
    assert!(!setup.folder.join("b.txt").exists());
    // Undo: rewind to before the rewind.
    setup.checkpoints.rewind(&setup.folder, "s", rewind.checkpoint.id, false).unwrap();
    assert_eq!(contents(&setup.folder), after_two);
    let kinds: Vec<_> = setup.checkpoints.list(&setup.folder, "s").unwrap().iter().map(|cp| (cp.id, cp.kind)).collect();
    assert_eq!(
        kinds,
        [
            (1, CheckpointKind::Turn),
            (2, CheckpointKind::Turn),
            (3, CheckpointKind::Rewind),
            (4, CheckpointKind::Rewind)
        ]
    );
}

#[test]
fn a_file_changed_by_someone_else_stops_the_rewind_unless_forced() {
    let setup = setup();
    write(&setup.folder, "agent.txt", "a0\n");
    write(&setup.folder, "user.txt", "u0\n");
    let n = turn(&setup, "s", "edit both", "echo a1 > agent.txt && echo u1 > user.txt");
    // The user edits a file the turn changed, and one it did not.
    write(&setup.folder, "user.txt", "mine\n");
    write(&setup.folder, "elsewhere.txt", "also mine\n");
    let before = contents(&setup.folder);
    let refused = setup.checkpoints.rewind(&setup.folder, "s", n, false).unwrap_err();
    assert_eq!(refused, CheckpointError::Conflict(vec!["user.txt".into()]));
    assert_eq!(contents(&setup.folder), before, "nothing changed");
    assert_eq!(setup.checkpoints.list(&setup.folder, "s").unwrap().len(), 1, "no checkpoint for a refused rewind");
    setup.checkpoints.rewind(&setup.folder, "s", n, true).unwrap();
    assert_eq!(std::fs::read_to_string(setup.folder.join("user.txt")).unwrap(), "u0\n");
    assert_eq!(std::fs::read_to_string(setup.folder.join("agent.txt")).unwrap(), "a0\n");
    assert_eq!(
        std::fs::read_to_string(setup.folder.join("elsewhere.txt")).unwrap(),
        "also mine\n",
        "a file the rewind does not go back over is left as it is"
    );
}

#[test]
fn the_folders_own_git_is_untouched_byte_for_byte() {
    let setup = setup();
    sh(
        &setup.folder,
        "git init -q . && git -c user.name=u -c user.email=u@x commit -q --allow-empty -m init && \
         echo tracked > t.txt && git add t.txt && echo 'x' > .git/info/exclude",
    );
    let git_before = contents(&setup.folder.join(".git"));
    let n = turn(&setup, "s", "edit", "echo changed > t.txt && echo new > n.txt");
    setup.checkpoints.list(&setup.folder, "s").unwrap();
    setup.checkpoints.diff(&setup.folder, "s", n).unwrap();
    setup.checkpoints.rewind(&setup.folder, "s", n, false).unwrap();
    assert_eq!(
        contents(&setup.folder.join(".git")),
        git_before,
        "no ref, index, config or object of the user's changed"
    );
    assert_eq!(std::fs::read_to_string(setup.folder.join("t.txt")).unwrap(), "tracked\n");
    let recorded = &setup.checkpoints.list(&setup.folder, "s").unwrap()[0];
    assert!(recorded.files.iter().all(|file| !file.path.starts_with(".git")), "{:?}", recorded.files);
}

#[test]
fn ignored_and_large_files_are_left_out_and_said() {
    let setup = setup();
    write(&setup.folder, ".gitignore", "target/\n*.log\n");
    write(&setup.folder, "target/debug/app", "binary\n");
    write(&setup.folder, "run.log", "log\n");
    std::fs::write(setup.folder.join("big.bin"), vec![7u8; (MAX_FILE + 1) as usize]).unwrap();
    let n = turn(&setup, "s", "build", "echo more >> run.log && echo x > target/new && echo y > kept.txt");
    let cp = &setup.checkpoints.list(&setup.folder, "s").unwrap()[0];
    let said: Vec<(&str, LeftOutWhy)> = cp.left_out.iter().map(|left| (left.path.as_str(), left.why)).collect();
    assert!(said.contains(&("big.bin", LeftOutWhy::TooLarge)), "{said:?}");
    assert!(said.contains(&("target/", LeftOutWhy::Ignored)), "{said:?}");
    assert!(said.contains(&("run.log", LeftOutWhy::Ignored)), "{said:?}");
    assert_eq!(cp.files, files(&[("kept.txt", FileChange::Added)]));
    // A rewind leaves what was never recorded as it is.
    setup.checkpoints.rewind(&setup.folder, "s", n, false).unwrap();
    assert_eq!(std::fs::read_to_string(setup.folder.join("run.log")).unwrap(), "log\nmore\n");
    assert!(setup.folder.join("target/new").exists());
    assert_eq!(std::fs::metadata(setup.folder.join("big.bin")).unwrap().len(), MAX_FILE + 1);
    assert!(!setup.folder.join("kept.txt").exists());
}

#[test]
fn a_file_that_grows_past_the_limit_is_left_out_not_kept_stale() {
    let setup = setup();
    write(&setup.folder, "grows.bin", "small\n");
    let n = turn(&setup, "s", "grow", &format!("head -c {} /dev/zero > grows.bin", MAX_FILE + 10));
    let cp = &setup.checkpoints.list(&setup.folder, "s").unwrap()[0];
    assert_eq!(cp.files, files(&[("grows.bin", FileChange::Deleted)]), "gone from what is recorded");
    setup.checkpoints.rewind(&setup.folder, "s", n, false).unwrap();
    assert_eq!(std::fs::read_to_string(setup.folder.join("grows.bin")).unwrap(), "small\n");
}

#[test]
fn checkpoints_are_read_back_by_another_hub_and_sessions_keep_apart() {
    let setup = setup();
    write(&setup.folder, "a.txt", "0\n");
    let n = turn(&setup, "s1", "one", "echo 1 > a.txt");
    turn(&setup, "s2", "other", "echo other > b.txt");
    // A restart: a new store over the same directory.
    let again = Checkpoints::new(setup.data.clone());
    let listed = again.list(&setup.folder, "s1").unwrap();
    assert_eq!(listed, setup.checkpoints.list(&setup.folder, "s1").unwrap());
    assert_eq!(listed.len(), 1);
    assert_eq!(again.list(&setup.folder, "s2").unwrap()[0].files, files(&[("b.txt", FileChange::Added)]));
    assert_eq!(again.rewind(&setup.folder, "s1", 7, false).unwrap_err(), CheckpointError::NotFound(7));
    // s1's rewind sees b.txt as someone else's: it was not in s1's turn, so it stays.
    again.rewind(&setup.folder, "s1", n, false).unwrap();
    assert_eq!(std::fs::read_to_string(setup.folder.join("a.txt")).unwrap(), "0\n");
    assert!(setup.folder.join("b.txt").exists());
}

#[test]
fn a_turn_cut_by_a_kill_is_closed_by_the_next_checkpoint() {
    let setup = setup();
    write(&setup.folder, "a.txt", "0\n");
    let start = TurnStart { prompt: Some("cut".into()), seq: None, conversation: None };
    let n = setup.checkpoints.before_turn(&setup.folder, "s", start).unwrap();
    sh(&setup.folder, "echo 1 > a.txt");
    // No after_turn: the hub was killed. The next turn's start closes it.
    let listed = setup.checkpoints.list(&setup.folder, "s").unwrap();
    assert!(!listed[0].ended);
    let next = setup.checkpoints.before_turn(&setup.folder, "s", TurnStart::default()).unwrap();
    let listed = setup.checkpoints.list(&setup.folder, "s").unwrap();
    assert!(listed[0].ended);
    assert_eq!(listed[0].files, files(&[("a.txt", FileChange::Modified)]));
    // While the next turn has no end either, every path is a conflict.
    let refused = setup.checkpoints.rewind(&setup.folder, "s", n, false).unwrap_err();
    assert_eq!(refused, CheckpointError::Conflict(vec!["a.txt".into()]));
    setup.checkpoints.after_turn(&setup.folder, "s", next).unwrap();
    setup.checkpoints.rewind(&setup.folder, "s", n, false).unwrap();
    assert_eq!(std::fs::read_to_string(setup.folder.join("a.txt")).unwrap(), "0\n");
}

#[test]
fn a_symlink_planted_in_the_folder_cannot_lead_a_restore_outside() {
    let setup = setup();
    let outside = tempfile::tempdir().unwrap();
    write(&setup.folder, "dir/file.txt", "inside\n");
    write(&setup.folder, "link-target.txt", "t\n");
    sh(&setup.folder, "ln -s link-target.txt rel-link");
    let n = turn(
        &setup,
        "s",
        "swap",
        &format!("rm -r dir && ln -s {} dir && rm rel-link && echo file > rel-link", outside.path().display()),
    );
    setup.checkpoints.rewind(&setup.folder, "s", n, true).unwrap();
    assert!(std::fs::read_dir(outside.path()).unwrap().next().is_none(), "nothing was written outside");
    assert!(std::fs::symlink_metadata(setup.folder.join("dir")).unwrap().is_dir(), "the link is a directory again");
    assert_eq!(std::fs::read_to_string(setup.folder.join("dir/file.txt")).unwrap(), "inside\n");
    assert_eq!(std::fs::read_link(setup.folder.join("rel-link")).unwrap(), Path::new("link-target.txt"));
}

#[test]
fn git_gets_a_clean_environment_and_never_the_users_config() {
    let setup = setup();
    let repo = setup.checkpoints.repo(&setup.folder);
    let command = repo.command(["status"]);
    let envs: BTreeMap<String, Option<String>> = command
        .get_envs()
        .map(|(key, value)| (key.to_string_lossy().into_owned(), value.map(|v| v.to_string_lossy().into_owned())))
        .collect();
    assert_eq!(envs.get("GIT_CONFIG_NOSYSTEM"), Some(&Some("1".into())));
    assert_eq!(envs.get("GIT_CONFIG_GLOBAL"), Some(&Some("/dev/null".into())));
    assert_eq!(envs.get("GIT_DIR"), Some(&Some(repo.git_dir.display().to_string())));
    let args: Vec<String> = command.get_args().map(|arg| arg.to_string_lossy().into_owned()).collect();
    assert!(args.contains(&"core.hooksPath=/dev/null".to_string()));
    // Nothing inherited: `env_clear` leaves only what is set here.
    let inherited: Vec<&String> =
        envs.keys().filter(|key| key.starts_with("GIT_") && !repo_vars().contains(&key.as_str())).collect();
    assert!(inherited.is_empty(), "{inherited:?}");
    // And git sees no config but the command line's.
    write(&setup.folder, "a.txt", "x\n");
    repo.ensure().unwrap();
    let listed = repo.run(["config", "--list", "--show-origin"]).unwrap();
    let origins: Vec<String> = String::from_utf8_lossy(&listed)
        .lines()
        .filter_map(|line| line.split('\t').next().map(str::to_string))
        .filter(|origin| !origin.starts_with("command line") && !origin.contains(&repo.git_dir.display().to_string()))
        .collect();
    assert!(origins.is_empty(), "config read from {origins:?}");
}

fn repo_vars() -> [&'static str; 11] {
    [
        "GIT_CONFIG_NOSYSTEM",
        "GIT_CONFIG_GLOBAL",
        "GIT_TERMINAL_PROMPT",
        "GIT_OPTIONAL_LOCKS",
        "GIT_DIR",
        "GIT_INDEX_FILE",
        "GIT_WORK_TREE",
        "GIT_AUTHOR_NAME",
        "GIT_AUTHOR_EMAIL",
        "GIT_COMMITTER_NAME",
        "GIT_COMMITTER_EMAIL",
    ]
}

#[test]
fn a_users_edit_between_the_sessions_turns_stops_the_rewind() {
    let setup = setup();
    write(&setup.folder, "a.txt", "a0\n");
    let first = turn(&setup, "s", "one", "echo agent1 > a.txt");
    // The user edits a.txt between the turns.
    write(&setup.folder, "a.txt", "USER WORK\n");
    turn(&setup, "s", "two", "echo other > b.txt");
    let refused = setup.checkpoints.rewind(&setup.folder, "s", first, false).unwrap_err();
    assert_eq!(refused, CheckpointError::Conflict(vec!["a.txt".into()]));
    assert_eq!(std::fs::read_to_string(setup.folder.join("a.txt")).unwrap(), "USER WORK\n");
    assert!(setup.folder.join("b.txt").exists(), "nothing changed");
    setup.checkpoints.rewind(&setup.folder, "s", first, true).unwrap();
    assert_eq!(std::fs::read_to_string(setup.folder.join("a.txt")).unwrap(), "a0\n");
    assert!(!setup.folder.join("b.txt").exists());
}

#[test]
fn a_turn_cut_short_leaves_every_path_a_conflict_unless_forced() {
    let setup = setup();
    write(&setup.folder, "a.txt", "0\n");
    let start = TurnStart { prompt: Some("cut".into()), seq: None, conversation: None };
    let n = setup.checkpoints.before_turn(&setup.folder, "s", start).unwrap();
    sh(&setup.folder, "echo 1 > a.txt");
    // The hub is killed: no "after". The user edits a.txt, then rewinds.
    write(&setup.folder, "a.txt", "USER\n");
    let refused = setup.checkpoints.rewind(&setup.folder, "s", n, false).unwrap_err();
    assert_eq!(refused, CheckpointError::Conflict(vec!["a.txt".into()]));
    assert_eq!(std::fs::read_to_string(setup.folder.join("a.txt")).unwrap(), "USER\n");
    setup.checkpoints.rewind(&setup.folder, "s", n, true).unwrap();
    assert_eq!(std::fs::read_to_string(setup.folder.join("a.txt")).unwrap(), "0\n");
}

#[test]
fn a_users_file_where_a_restored_directory_belongs_is_never_removed() {
    let setup = setup();
    write(&setup.folder, "docs/a.md", "doc\n");
    let n = turn(&setup, "s", "x", "rm -r docs");
    write(&setup.folder, "docs", "USER FILE\n");
    let refused = setup.checkpoints.rewind(&setup.folder, "s", n, false).unwrap_err();
    assert_eq!(refused, CheckpointError::Conflict(vec!["docs/a.md".into()]));
    // Forced, the restore still refuses to remove a file that is not its own.
    let forced = setup.checkpoints.rewind(&setup.folder, "s", n, true).unwrap_err();
    assert!(matches!(forced, CheckpointError::Restore(_)), "{forced:?}");
    assert_eq!(std::fs::read_to_string(setup.folder.join("docs")).unwrap(), "USER FILE\n");
}

#[test]
fn a_file_left_out_before_the_turn_is_never_removed_by_a_rewind() {
    let setup = setup();
    write(&setup.folder, ".gitignore", ".env\n");
    write(&setup.folder, ".env", "SECRET=1\n");
    std::fs::write(setup.folder.join("data.bin"), vec![7u8; (MAX_FILE + 1) as usize]).unwrap();
    // The turn empties .gitignore (so .env is recorded after it) and shrinks data.bin.
    let n = turn(&setup, "s", "x", "echo > .gitignore && echo small > data.bin");
    let done = setup.checkpoints.rewind(&setup.folder, "s", n, false).unwrap();
    assert_eq!(std::fs::read_to_string(setup.folder.join(".env")).unwrap(), "SECRET=1\n");
    assert_eq!(std::fs::read_to_string(setup.folder.join(".gitignore")).unwrap(), ".env\n");
    assert!(setup.folder.join("data.bin").exists(), "the large file is not removed");
    let mut kept = done.kept.clone();
    kept.sort();
    assert_eq!(kept, vec![".env".to_string(), "data.bin".to_string()]);
}

#[test]
fn a_fifo_where_git_reads_its_rules_fails_the_checkpoint_in_time() {
    use std::os::unix::fs::OpenOptionsExt;
    for fifo in [".gitignore", ".gitattributes", ".git/info/exclude"] {
        let setup = setup();
        write(&setup.folder, "a.txt", "0\n");
        std::fs::create_dir_all(setup.folder.join(".git/info")).unwrap();
        let status = Command::new("mkfifo").arg(setup.folder.join(fifo)).status().unwrap();
        assert!(status.success());
        let (tx, rx) = std::sync::mpsc::channel();
        let (folder, data) = (setup.folder.clone(), setup.data.clone());
        std::thread::spawn(move || {
            let cps = Checkpoints::new(data).with_deadline(std::time::Duration::from_secs(2));
            let _ = tx.send(cps.before_turn(&folder, "s", TurnStart::default()).map(|_| ()));
        });
        let got = rx.recv_timeout(std::time::Duration::from_secs(30));
        // Whether git read past it or was stopped, the checkpoint has ended.
        assert!(got.is_ok(), "{fifo}: the checkpoint hung");
        // Unblocks a git still waiting, if any.
        let _ = std::fs::OpenOptions::new().write(true).custom_flags(libc::O_NONBLOCK).open(setup.folder.join(fifo));
    }
}

#[test]
fn the_hubs_data_dir_inside_the_folder_is_never_recorded_nor_restored() {
    let setup = setup();
    write(&setup.folder, "a.txt", "0\n");
    write(&setup.folder, ".hub/db.txt", "db0\n");
    let checkpoints = Checkpoints::new(setup.folder.join(".hub/checkpoints"));
    let start = TurnStart { prompt: Some("x".into()), seq: None, conversation: None };
    let n = checkpoints.before_turn(&setup.folder, "s", start).unwrap();
    sh(&setup.folder, "echo 1 > a.txt && echo db1 > .hub/db.txt");
    checkpoints.after_turn(&setup.folder, "s", n).unwrap();
    let files: Vec<String> =
        checkpoints.list(&setup.folder, "s").unwrap()[0].files.iter().map(|f| f.path.clone()).collect();
    assert_eq!(files, vec!["a.txt".to_string()]);
    checkpoints.rewind(&setup.folder, "s", n, false).unwrap();
    assert_eq!(std::fs::read_to_string(setup.folder.join("a.txt")).unwrap(), "0\n");
    assert_eq!(std::fs::read_to_string(setup.folder.join(".hub/db.txt")).unwrap(), "db1\n");
}

#[test]
fn force_with_the_paths_seen_overwrites_only_those() {
    let setup = setup();
    write(&setup.folder, "a.txt", "a0\n");
    write(&setup.folder, "b.txt", "b0\n");
    let n = turn(&setup, "s", "both", "echo a1 > a.txt && echo b1 > b.txt");
    write(&setup.folder, "a.txt", "mine\n");
    let seen = setup.checkpoints.rewind(&setup.folder, "s", n, false).unwrap_err();
    assert_eq!(seen, CheckpointError::Conflict(vec!["a.txt".into()]));
    // Meanwhile b.txt changes too: forcing over what was seen asks again.
    write(&setup.folder, "b.txt", "mine too\n");
    let shown = vec!["a.txt".to_string()];
    let again = setup.checkpoints.rewind_over(&setup.folder, "s", n, Some(Some(&shown))).unwrap_err();
    assert_eq!(again, CheckpointError::Conflict(vec!["b.txt".into()]));
    assert_eq!(std::fs::read_to_string(setup.folder.join("a.txt")).unwrap(), "mine\n", "nothing changed");
    let both = vec!["a.txt".to_string(), "b.txt".to_string()];
    setup.checkpoints.rewind_over(&setup.folder, "s", n, Some(Some(&both))).unwrap();
    assert_eq!(std::fs::read_to_string(setup.folder.join("a.txt")).unwrap(), "a0\n");
    assert_eq!(std::fs::read_to_string(setup.folder.join("b.txt")).unwrap(), "b0\n");
}

#[test]
fn a_checkpoints_diff_names_what_later_turns_changed_too() {
    let setup = setup();
    write(&setup.folder, "a.txt", "a0\n");
    let n = turn(&setup, "s", "one", "echo a1 > a.txt");
    turn(&setup, "s", "two", "echo a2 > a.txt && echo b > b.txt");
    let diff = setup.checkpoints.diff(&setup.folder, "s", n).unwrap();
    assert_eq!(diff.files, files(&[("a.txt", FileChange::Modified)]));
    assert_eq!(diff.later, files(&[("b.txt", FileChange::Added)]));
}

#[test]
fn the_checkpoints_directory_is_the_users_only() {
    use std::os::unix::fs::PermissionsExt;
    let setup = setup();
    write(&setup.folder, "a.txt", "0\n");
    turn(&setup, "s", "one", "echo 1 > a.txt");
    let mode = std::fs::metadata(&setup.data).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let repo = setup.checkpoints.repository_of(&setup.folder);
    assert_eq!(std::fs::metadata(repo).unwrap().permissions().mode() & 0o777, 0o700);
}

#[test]
fn the_locks_a_killed_git_left_are_cleared_and_checkpoints_go_on() {
    let setup = setup();
    write(&setup.folder, "a.txt", "0\n");
    let n = setup.checkpoints.before_turn(&setup.folder, "s", TurnStart::default()).unwrap();
    setup.checkpoints.after_turn(&setup.folder, "s", n).unwrap();
    // As a git killed mid-write (a deadline, a stop, kill -9 of the hub) leaves them.
    let repo = setup.checkpoints.repository_of(&setup.folder);
    std::fs::write(repo.join("hub-index.lock"), "").unwrap();
    std::fs::write(repo.join("refs/hub/s/2.lock"), "").unwrap();
    std::fs::create_dir_all(repo.join("refs/hub/s/2")).unwrap();
    std::fs::write(repo.join("refs/hub/s/2/before.lock"), "").unwrap();
    write(&setup.folder, "a.txt", "1\n");
    // The same hub: its last work went well, so it does not look (git refuses).
    let refused = setup.checkpoints.before_turn(&setup.folder, "s", TurnStart::default());
    assert!(matches!(&refused, Err(CheckpointError::Git(why)) if why.contains(".lock")), "{refused:?}");
    // After a failure (or in a new process) the locks are cleared first.
    let n = setup.checkpoints.before_turn(&setup.folder, "s", TurnStart::default()).unwrap();
    assert_eq!(n, 2);
    let restarted = Checkpoints::new(setup.data.clone());
    std::fs::write(repo.join("hub-index.lock"), "").unwrap();
    restarted.after_turn(&setup.folder, "s", n).unwrap();
    assert!(!repo.join("hub-index.lock").exists() && !repo.join("refs/hub/s/2/before.lock").exists());
}

#[test]
fn session_ids_git_would_refuse_in_a_ref_name_are_recorded_too() {
    let setup = setup();
    for (session, text) in [(".hidden", "1\n"), ("a..b", "2\n"), ("x.lock", "3\n"), ("plain", "4\n"), ("PLAIN", "5\n")]
    {
        write(&setup.folder, "a.txt", "0\n");
        let n = setup.checkpoints.before_turn(&setup.folder, session, TurnStart::default()).unwrap();
        write(&setup.folder, "a.txt", text);
        setup.checkpoints.after_turn(&setup.folder, session, n).unwrap();
        let listed = setup.checkpoints.list(&setup.folder, session).unwrap();
        assert_eq!(listed.len(), 1, "{session}: {listed:?}");
        assert_eq!(listed[0].files.len(), 1, "{session}");
    }
    setup.checkpoints.forget(&setup.folder, "a..b").unwrap();
    assert!(setup.checkpoints.list(&setup.folder, "a..b").unwrap().is_empty());
    assert_eq!(setup.checkpoints.list(&setup.folder, ".hidden").unwrap().len(), 1, "another session's stay");
    assert_eq!(setup.checkpoints.list(&setup.folder, "PLAIN").unwrap()[0].files.len(), 1);
    assert_eq!(setup.checkpoints.list(&setup.folder, "plain").unwrap()[0].files.len(), 1);
}

#[test]
fn a_left_out_list_is_named_as_git_names_it_so_an_unchanged_one_is_not_written_again() {
    use std::io::Write;
    for bytes in [&b""[..], b"target/\0big.bin\0", "é/ü\0".as_bytes()] {
        let scratch = tempfile::tempdir().unwrap();
        let mut git = Command::new("git")
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .current_dir(scratch.path())
            .args(["hash-object", "--stdin"])
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        git.stdin.take().unwrap().write_all(bytes).unwrap();
        let out = git.wait_with_output().unwrap();
        assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), blob_id(bytes));
    }
}
