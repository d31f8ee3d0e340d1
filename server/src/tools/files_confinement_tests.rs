//! The file tools kept inside the folder, end to end: each refusal comes from
//! the precheck (before a card) and holds again, by the kernel, at the write.

use std::os::unix::fs::symlink;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use serde_json::json;

use super::*;

struct Project {
    _dir: tempfile::TempDir,
    root: PathBuf,
    folder: Folder,
    outside: tempfile::TempDir,
}

impl Project {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        std::fs::create_dir_all(root.join("src")).unwrap();
        std::fs::write(root.join("src/lib.rs"), "pub fn one() {}\n").unwrap();
        let folder = Folder::open(&root).unwrap();
        Self { _dir: dir, root, folder, outside: tempfile::tempdir().unwrap() }
    }

    fn nothing_outside(&self) {
        let left: Vec<_> = std::fs::read_dir(self.outside.path()).unwrap().map(|e| e.unwrap().path()).collect();
        assert!(left.is_empty(), "written outside the folder: {left:?}");
    }
}

fn write(file_path: &str) -> WriteArgs {
    WriteArgs { file_path: file_path.into(), content: "pwned".into() }
}

fn kind<T: std::fmt::Debug>(result: Result<T, ToolFailure>) -> String {
    result.map_or_else(|err| err.kind, |ok| format!("ok: {ok:?}"))
}

/// Failed on the code before `beneath.rs`: the precheck showed a new file
/// inside and the write created `outside/x`.
#[test]
fn a_dangling_symlink_out_is_refused_before_the_card() {
    let p = Project::new();
    let target = p.outside.path().join("x");
    symlink(&target, p.root.join("dangle.txt")).unwrap();
    assert_eq!(kind(write_diff(&p.folder, &write("dangle.txt"), None)), "path_outside_folder");
    let ran = run(&p.folder, Tool::WriteFile, &json!({"file_path": "dangle.txt", "content": "pwned"}));
    assert_eq!(kind(ran), "path_outside_folder");
    let user = apply_user_content(&p.folder, Tool::WriteFile, &json!({"file_path": "dangle.txt", "content": ""}), "x");
    assert_eq!(kind(user), "path_outside_folder");
    assert!(!target.exists());
    p.nothing_outside();
}

#[test]
fn a_directory_swapped_for_a_link_after_the_precheck_is_refused_at_the_write() {
    let p = Project::new();
    std::fs::create_dir(p.root.join("work")).unwrap();
    let diff = write_diff(&p.folder, &write("work/new.txt"), None).unwrap();
    assert_eq!(diff.path, "work/new.txt");
    std::fs::remove_dir(p.root.join("work")).unwrap();
    symlink(p.outside.path(), p.root.join("work")).unwrap();
    assert_eq!(kind(apply(&p.folder, diff, false)), "path_outside_folder");
    p.nothing_outside();
}

/// The race itself: a directory turns into a link out and back while writes
/// run. The kernel judges each open as it happens, so none lands outside.
#[test]
fn writes_racing_a_swapped_directory_never_land_outside() {
    let p = Project::new();
    let stop = Arc::new(AtomicBool::new(false));
    let swapper = {
        let (work, outside, stop) = (p.root.join("work"), p.outside.path().to_path_buf(), stop.clone());
        std::thread::spawn(move || {
            let (dir_stash, link_stash) = (work.with_file_name("work.dir"), work.with_file_name("work.link"));
            let _ = std::fs::create_dir(&dir_stash);
            let _ = symlink(&outside, &link_stash);
            while !stop.load(Ordering::Relaxed) {
                let _ = std::fs::rename(&dir_stash, &work);
                std::thread::sleep(std::time::Duration::from_micros(50));
                let _ = std::fs::rename(&work, &dir_stash);
                let _ = std::fs::rename(&link_stash, &work);
                std::thread::sleep(std::time::Duration::from_micros(50));
                let _ = std::fs::rename(&work, &link_stash);
            }
        })
    };
    let args = json!({"file_path": "work/new.txt", "content": "pwned"});
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_millis(300) {
        let _ = run(&p.folder, Tool::WriteFile, &args);
    }
    stop.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    p.nothing_outside();
}

#[test]
fn escapes_and_hidden_characters_are_refused_by_every_file_tool() {
    let p = Project::new();
    symlink(p.outside.path(), p.root.join("escape")).unwrap();
    std::fs::write(p.outside.path().join("secret"), "s").unwrap();
    let outside_file = p.outside.path().join("secret").display().to_string();
    let requests = [
        "../x",
        "src/../../x",
        "/etc/passwd",
        outside_file.as_str(),
        "escape/secret",
        "escape/new/deeper.txt",
        "src/\u{202E}sr.bil",
        "src/\u{200B}lib.rs",
        "src/\u{7}lib.rs",
        "\u{2024}\u{2024}/x",
        "\u{FF0E}\u{FF0E}/x",
        "src\u{FF0F}lib.rs",
        "src\u{2215}lib.rs",
        "src\u{2044}lib.rs",
    ];
    for requested in requests {
        let shown = requested.escape_debug().to_string();
        for tool in [Tool::ReadFile, Tool::WriteFile, Tool::Replace] {
            // Each tool's own arguments: an unknown key is refused before any path is looked at.
            let file = match tool {
                Tool::ReadFile => json!({"file_path": requested}),
                Tool::WriteFile => json!({"file_path": requested, "content": "x"}),
                _ => json!({"file_path": requested, "old_string": "one", "new_string": "two"}),
            };
            let checked = match tool {
                Tool::WriteFile => write_diff(&p.folder, &write(requested), None).map(drop),
                Tool::Replace => replace_diff(&p.folder, &parse(&file).unwrap()).map(drop),
                _ => check_read(&p.folder, tool, &file),
            };
            assert_eq!(kind(checked), "path_outside_folder", "{tool:?} precheck {shown}");
            assert_eq!(kind(run(&p.folder, tool, &file)), "path_outside_folder", "{tool:?} run {shown}");
        }
        for tool in [Tool::ListDirectory, Tool::SearchFileContent] {
            let dir = match tool {
                Tool::ListDirectory => json!({"path": requested}),
                _ => json!({"path": requested, "pattern": "."}),
            };
            assert_eq!(kind(check_read(&p.folder, tool, &dir)), "path_outside_folder", "{tool:?} precheck {shown}");
            assert_eq!(kind(run(&p.folder, tool, &dir)), "path_outside_folder", "{tool:?} run {shown}");
        }
    }
    assert_eq!(std::fs::read_to_string(p.outside.path().join("secret")).unwrap(), "s");
}

#[test]
fn paths_that_stay_inside_keep_working() {
    let p = Project::new();
    symlink("src", p.root.join("alias")).unwrap();
    symlink("lib.rs", p.root.join("src/link.rs")).unwrap();
    symlink("src/new-target.rs", p.root.join("pending.rs")).unwrap();
    let absolute = p.root.join("src/lib.rs").display().to_string();
    for requested in ["src/../src/lib.rs", "alias/lib.rs", "src/link.rs", absolute.as_str()] {
        let read = run(&p.folder, Tool::ReadFile, &json!({"file_path": requested}));
        assert_eq!(read, Ok("pub fn one() {}\n".to_string()), "{requested}");
    }
    run(&p.folder, Tool::WriteFile, &json!({"file_path": "alias/made/new.rs", "content": "a"})).unwrap();
    run(&p.folder, Tool::Replace, &json!({"file_path": "src/link.rs", "old_string": "one", "new_string": "two"}))
        .unwrap();
    run(&p.folder, Tool::WriteFile, &json!({"file_path": "pending.rs", "content": "b"})).unwrap();
    assert_eq!(std::fs::read_to_string(p.root.join("src/made/new.rs")).unwrap(), "a");
    assert_eq!(std::fs::read_to_string(p.root.join("src/lib.rs")).unwrap(), "pub fn two() {}\n");
    assert_eq!(std::fs::read_to_string(p.root.join("src/new-target.rs")).unwrap(), "b", "a dangling link inside");
    assert!(p.root.join("src/link.rs").is_symlink(), "writing through a link keeps the link");
    let listed = run(&p.folder, Tool::ListDirectory, &json!({"path": "alias"})).unwrap();
    assert_eq!(listed, "Directory alias:\nlib.rs\nlink.rs\nmade/\nnew-target.rs");
    let found = run(&p.folder, Tool::SearchFileContent, &json!({"pattern": "two", "path": "alias"})).unwrap();
    assert_eq!(found, "alias/lib.rs:1: pub fn two() {}");
    let in_one_file = run(&p.folder, Tool::SearchFileContent, &json!({"pattern": "two", "path": "alias/lib.rs"}));
    assert_eq!(in_one_file, Ok("alias/lib.rs:1: pub fn two() {}".to_string()));
}

#[test]
fn search_does_not_read_through_links_out() {
    let p = Project::new();
    std::fs::write(p.outside.path().join("secret.txt"), "password\n").unwrap();
    symlink(p.outside.path(), p.root.join("escape")).unwrap();
    symlink(p.outside.path().join("secret.txt"), p.root.join("src/secret.txt")).unwrap();
    let found = run(&p.folder, Tool::SearchFileContent, &json!({"pattern": "password"})).unwrap();
    assert_eq!(found, "No matches for /password/.");
}

#[test]
fn a_big_file_is_read_only_as_far_as_shown_and_its_size_said() {
    let p = Project::new();
    let size = 10 * 1024 * 1024;
    std::fs::write(p.root.join("big.txt"), "é".repeat(size / 2)).unwrap();
    let out = run(&p.folder, Tool::ReadFile, &json!({"file_path": "big.txt"})).unwrap();
    assert!(out.len() <= MAX_OUTPUT, "{}", out.len());
    let shown = out.find('\n').unwrap();
    assert!(out.ends_with(&format!("\n[output truncated: showing {shown} of {size} bytes]")), "{}", &out[shown..]);
    assert_eq!(super::super::cap_output(out.clone()), out, "the capped read is not capped again");
}

#[test]
fn reading_stops_at_the_cap_plus_a_char() {
    struct Counting(usize);
    impl Read for Counting {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            buf.fill(b'a');
            self.0 += buf.len();
            Ok(buf.len())
        }
    }
    let mut endless = Counting(0);
    let bytes = read_prefix(&mut endless, MAX_OUTPUT + READ_SLACK).unwrap();
    assert_eq!((bytes.len(), endless.0), (MAX_OUTPUT + READ_SLACK, MAX_OUTPUT + READ_SLACK));
}

#[test]
fn text_cut_inside_a_char_is_text_and_binary_is_binary() {
    let mut cut = "a".repeat(MAX_OUTPUT + 2).into_bytes();
    cut.extend_from_slice(&"é".as_bytes()[..1]);
    let out = capped_text(cut, 1_000_000, "f").unwrap();
    assert!(
        out.ends_with(&format!("showing {} of 1000000 bytes]", MAX_OUTPUT - NOTICE_ROOM)),
        "{}",
        &out[out.len() - 60..]
    );
    let odd = format!("a{}", "é".repeat(MAX_OUTPUT / 2));
    let out = capped_text(odd.into_bytes(), 2_000_000, "f").unwrap();
    let end = MAX_OUTPUT - NOTICE_ROOM - 1;
    assert!(out.ends_with(&format!("showing {end} of 2000000 bytes]")), "cut before a split é: {}", &out[end..]);
    assert_eq!(kind(capped_text(b"ab\xFFcd".to_vec(), 5, "f")), "binary_file");
    assert_eq!(kind(capped_text(b"ab\xC3".to_vec(), 3, "f")), "binary_file", "a whole file ending mid-char");
    assert_eq!(capped_text("ok é".into(), 5, "f"), Ok("ok é".to_string()));
}

#[test]
fn fifos_and_directories_are_not_read() {
    let p = Project::new();
    let fifo = p.root.join("pipe");
    assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
    assert_eq!(kind(run(&p.folder, Tool::ReadFile, &json!({"file_path": "pipe"}))), "io_error");
    assert_eq!(kind(run(&p.folder, Tool::WriteFile, &json!({"file_path": "pipe", "content": "x"}))), "io_error");
    assert_eq!(kind(run(&p.folder, Tool::ReadFile, &json!({"file_path": "src"}))), "is_a_directory");
    assert_eq!(kind(write_diff(&p.folder, &write("src"), None)), "is_a_directory");
    let diff = FileDiff { path: "src".into(), old_text: String::new(), new_text: "x".into() };
    assert_eq!(kind(apply(&p.folder, diff, false)), "is_a_directory");
}

#[test]
fn files_too_large_to_review_are_not_edited() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let big = std::fs::File::create(root.join("big.log")).unwrap();
    big.set_len(MAX_EDITED_FILE + 1).unwrap();
    let folder = Folder::open(&root).unwrap();
    let replace = ReplaceArgs { file_path: "big.log".into(), old_string: "a".into(), new_string: "b".into() };
    assert_eq!(kind(replace_diff(&folder, &replace)), "file_too_large");
    assert_eq!(kind(write_diff(&folder, &write("big.log"), None)), "file_too_large");
    std::fs::write(root.join("small.txt"), "a").unwrap();
    let replace = ReplaceArgs { file_path: "small.txt".into(), old_string: "a".into(), new_string: "b".into() };
    assert!(replace_diff(&folder, &replace).is_ok());
}

#[test]
fn glob_does_not_follow_links_so_loops_and_links_out_list_nothing_more() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let outside = tempfile::tempdir().unwrap();
    std::fs::write(outside.path().join("secret.rs"), "").unwrap();
    std::fs::create_dir_all(root.join("src/deep")).unwrap();
    std::fs::write(root.join("src/main.rs"), "").unwrap();
    std::fs::write(root.join("src/deep/lib.rs"), "").unwrap();
    symlink(&root, root.join("a")).unwrap();
    symlink(&root, root.join("b")).unwrap();
    symlink(outside.path(), root.join("out")).unwrap();
    let folder = Folder::open(&root).unwrap();
    let found = glob(&folder, "**/*.rs").unwrap();
    assert_eq!(found, "src/deep/lib.rs\nsrc/main.rs", "loops are not walked, links out not listed");
    assert_eq!(glob(&folder, "src/*.rs").unwrap(), "src/main.rs", "* stays within a directory");
    assert!(glob(&folder, "*.none").unwrap().starts_with("No files match"));
    assert_eq!(glob(&folder, "./src/*.rs").unwrap(), "src/main.rs", "a leading ./ means the folder");
    assert_eq!(glob(&folder, "src/deep/").unwrap(), "src/deep");
    assert!(glob(&folder, "out/*.rs").unwrap().starts_with("No files match"), "a link out is not walked");
}
