//! What checkpoints cost on a folder of 50,000 files (500 directories of 100
//! small files, a `.gitignore`d `target/` beside them): the first checkpoint
//! (every file hashed), a later turn that changes a few files (its "before"
//! and "after"), a rewind of 100 files, and how much the hub's repository
//! grows. Real git, real files, on the disk the temporary directory is on.
//!
//! `cargo bench -p agent-hub-server --bench checkpoints` (`CHECKPOINT_FILES`
//! sets another number of files).

use std::path::Path;
use std::time::{Duration, Instant};

use agent_hub::checkpoints::{Checkpoints, TurnStart};

fn size_of(dir: &Path) -> u64 {
    let mut total = 0;
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(at) = dirs.pop() {
        for entry in std::fs::read_dir(&at).into_iter().flatten().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                dirs.push(entry.path());
            } else {
                total += meta.len();
            }
        }
    }
    total
}

fn ms(elapsed: Duration) -> String {
    format!("{:.1} ms", elapsed.as_secs_f64() * 1000.0)
}

fn timed<T>(work: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = work();
    (value, start.elapsed())
}

fn main() {
    let count: usize = std::env::var("CHECKPOINT_FILES").ok().and_then(|n| n.parse().ok()).unwrap_or(50_000);
    let work = tempfile::tempdir().unwrap();
    let data = tempfile::tempdir().unwrap();
    let folder = work.path().canonicalize().unwrap();
    let per_dir = 100;
    for index in 0..count {
        let dir = folder.join(format!("src/m{:04}", index / per_dir));
        if index % per_dir == 0 {
            std::fs::create_dir_all(&dir).unwrap();
        }
        std::fs::write(
            dir.join(format!("f{index}.rs")),
            format!("// file {index}\npub fn f{index}() -> u64 {{ {index} }}\n"),
        )
        .unwrap();
    }
    std::fs::write(folder.join(".gitignore"), "target/\n").unwrap();
    std::fs::create_dir_all(folder.join("target")).unwrap();
    for index in 0..1000 {
        std::fs::write(folder.join(format!("target/o{index}")), "ignored").unwrap();
    }
    let checkpoints = Checkpoints::new(data.path().join("checkpoints"));
    let repo = checkpoints.repository_of(&folder);
    let start = || TurnStart { prompt: Some("bench".into()), seq: None, conversation: None };
    println!("checkpoints of a folder of {count} files ({} bytes)", size_of(&folder));

    let (first, took) = timed(|| checkpoints.before_turn(&folder, "bench", start()).unwrap());
    println!("first checkpoint (every file hashed):        {}", ms(took));
    let first_size = size_of(&repo);
    println!("  the hub's repository:                      {:.1} MiB", first_size as f64 / 1048576.0);
    let (_, took) = timed(|| checkpoints.after_turn(&folder, "bench", first).unwrap());
    println!("its after, nothing changed:                  {}", ms(took));

    let mut befores = Vec::new();
    let mut afters = Vec::new();
    for round in 0..5 {
        let (n, before) = timed(|| checkpoints.before_turn(&folder, "bench", start()).unwrap());
        for file in 0..5 {
            let index = (round * 997 + file * 131) % count;
            let path = folder.join(format!("src/m{:04}/f{index}.rs", index / per_dir));
            std::fs::write(path, format!("// changed in round {round}\n")).unwrap();
        }
        let (_, after) = timed(|| checkpoints.after_turn(&folder, "bench", n).unwrap());
        befores.push(before);
        afters.push(after);
    }
    befores.sort();
    afters.sort();
    println!(
        "a later turn changing 5 files: before {} + after {} (medians of 5; worst {} + {})",
        ms(befores[2]),
        ms(afters[2]),
        ms(befores[4]),
        ms(afters[4])
    );
    let later_size = size_of(&repo);
    println!(
        "  repository growth over those 5 turns:      {:.1} KiB",
        later_size.saturating_sub(first_size) as f64 / 1024.0
    );

    let n = checkpoints.before_turn(&folder, "bench", start()).unwrap();
    for index in 0..100 {
        let index = index * (count / 100);
        let path = folder.join(format!("src/m{:04}/f{index}.rs", index / per_dir));
        std::fs::write(path, "// rewritten by the turn\n").unwrap();
    }
    checkpoints.after_turn(&folder, "bench", n).unwrap();
    let (done, took) = timed(|| checkpoints.rewind(&folder, "bench", n, false).unwrap());
    assert_eq!(done.checkpoint.files.len(), 100);
    println!("a rewind of 100 files:                       {}", ms(took));
    println!("  repository: {:.1} MiB in all", size_of(&repo) as f64 / 1048576.0);
}
