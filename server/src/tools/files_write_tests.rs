//! Writes are whole or not at all: the new text goes to a file beside the old
//! one and is renamed over it, so a reader, a crash or a full disk never sees
//! (or leaves) half of it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::json;

use super::*;

fn project() -> (tempfile::TempDir, PathBuf, Folder) {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    std::fs::write(root.join("keep.txt"), "original\n".repeat(100)).unwrap();
    let folder = Folder::open(&root).unwrap();
    (dir, root, folder)
}

/// The names in `dir`, sorted: no temporary file may be left there.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<_> = std::fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Set for the copy of this test binary that runs under a file size limit.
const STOPPED_WRITE_ROOT: &str = "HUB_TEST_STOPPED_WRITE_ROOT";

/// Failed on the code that truncated then wrote in place: the file was left
/// cut to the size limit. The write runs in a copy of the test binary under
/// `ulimit -f` (SIGXFSZ ignored, so the write fails with EFBIG as on a full
/// disk) and is stopped after 8 KiB of the 64 KiB.
#[test]
fn a_write_stopped_midway_leaves_the_file_as_it_was() {
    if let Some(root) = std::env::var_os(STOPPED_WRITE_ROOT) {
        let args = json!({"file_path": "keep.txt", "content": "new\n".repeat(16 * 1024)});
        println!("result: {}", kind_of(run(&Folder::open(Path::new(&root)).unwrap(), Tool::WriteFile, &args)));
        return;
    }
    let (_dir, root, _folder) = project();
    let name =
        format!("{}::a_write_stopped_midway_leaves_the_file_as_it_was", module_path!().split_once("::").unwrap().1);
    let out = std::process::Command::new("bash")
        .args(["-c", "trap '' XFSZ; ulimit -f 8; exec \"$0\" \"$@\""])
        .arg(std::env::current_exe().unwrap())
        .args(["--exact", &name, "--nocapture", "--test-threads=1"])
        .env(STOPPED_WRITE_ROOT, &root)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(said.contains("result: io_error"), "the write fails: {said}\n{}", String::from_utf8_lossy(&out.stderr));
    let kept = std::fs::read_to_string(root.join("keep.txt")).unwrap();
    assert!(kept == "original\n".repeat(100), "the file is as it was, not {} bytes of {:?}", kept.len(), kept.get(..8));
    assert_eq!(names(&root), ["keep.txt"], "the temporary file is removed");
}

fn kind_of(result: ToolResult) -> String {
    result.map_or_else(|err| err.kind, |_| "ok".to_string())
}

/// Failed on the code that truncated then wrote in place: a reader caught the
/// file empty or half written.
#[test]
fn readers_see_the_old_text_or_the_new_never_a_part() {
    let (_dir, root, folder) = project();
    let (a, b) = ("a".repeat(1 << 20), "b".repeat(1 << 20));
    std::fs::write(root.join("big.txt"), &a).unwrap();
    let done = Arc::new(AtomicBool::new(false));
    let reader = {
        let (path, done, a, b) = (root.join("big.txt"), done.clone(), a.clone(), b.clone());
        std::thread::spawn(move || {
            let mut reads = 0;
            while !done.load(Ordering::Relaxed) {
                let text = std::fs::read_to_string(&path).unwrap();
                assert!(text == a || text == b, "a read saw {} bytes, not a whole text", text.len());
                reads += 1;
            }
            reads
        })
    };
    for round in 0..20 {
        let content = if round % 2 == 0 { &b } else { &a };
        run(&folder, Tool::WriteFile, &json!({"file_path": "big.txt", "content": content})).unwrap();
    }
    done.store(true, Ordering::Relaxed);
    assert!(reader.join().unwrap() > 0);
    assert_eq!(names(&root), ["big.txt", "keep.txt"]);
}

#[test]
fn a_rewritten_file_keeps_its_permissions_and_a_new_one_gets_the_usual() {
    let (_dir, root, folder) = project();
    std::fs::write(root.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::fs::set_permissions(root.join("run.sh"), std::fs::Permissions::from_mode(0o750)).unwrap();
    run(&folder, Tool::WriteFile, &json!({"file_path": "run.sh", "content": "#!/bin/sh\necho hi\n"})).unwrap();
    let replace = json!({"file_path": "run.sh", "old_string": "hi", "new_string": "ho"});
    run(&folder, Tool::Replace, &replace).unwrap();
    assert_eq!(std::fs::read_to_string(root.join("run.sh")).unwrap(), "#!/bin/sh\necho ho\n");
    assert_eq!(std::fs::metadata(root.join("run.sh")).unwrap().permissions().mode() & 0o7777, 0o750);
    run(&folder, Tool::WriteFile, &json!({"file_path": "new.txt", "content": "x"})).unwrap();
    let made = std::fs::metadata(root.join("new.txt")).unwrap().permissions().mode() & 0o7777;
    assert_eq!(made & 0o600, 0o600, "readable and writable by its owner: {made:o}");
    assert_eq!(made & 0o111, 0, "not executable: {made:o}");
    assert_eq!(names(&root), ["keep.txt", "new.txt", "run.sh"]);
}

#[test]
fn a_write_refused_at_the_last_moment_leaves_nothing_behind() {
    let (_dir, root, folder) = project();
    std::fs::create_dir(root.join("dir")).unwrap();
    let diff = FileDiff { path: "dir".into(), old_text: String::new(), new_text: "x".into() };
    assert_eq!(apply(&folder, diff, false).unwrap_err().kind, "is_a_directory");
    assert!(root.join("dir").is_dir());
    assert_eq!(names(&root), ["dir", "keep.txt"]);
}
