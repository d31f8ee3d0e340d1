//! The server's module graph, read from its sources: the hub owns its agents,
//! never the other way round. `agent/` reaches the hub only through its narrow
//! port (`agent::port::HubPort`), and the settings watcher only through a
//! callback, so neither imports `hub` (tests inside them may).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Every `.rs` file of a top-level module (`src/x.rs` and `src/x/**`).
fn files_of(src: &Path, module: &str) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let single = src.join(format!("{module}.rs"));
    if single.is_file() {
        files.push(single);
    }
    let mut dirs = vec![src.join(module)];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else { continue };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|ext| ext == "rs") {
                files.push(path);
            }
        }
    }
    files
}

/// The top-level modules a file's non-test code names as `crate::<module>`.
fn imports(text: &str) -> BTreeSet<String> {
    // Test modules sit at the end of each file, after `#[cfg(test)]`.
    let code = text.split("#[cfg(test)]").next().unwrap_or_default();
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::") {
        let name: String =
            code[at + "crate::".len()..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
        if !name.is_empty() {
            found.insert(name);
        }
    }
    found
}

fn graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules: BTreeSet<String> = BTreeSet::new();
    for entry in std::fs::read_dir(&src).unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().trim_end_matches(".rs").to_string();
        if name != "lib" && name != "main" {
            modules.insert(name);
        }
    }
    modules
        .iter()
        .map(|module| {
            let mut deps: BTreeSet<String> = files_of(&src, module)
                .iter()
                .flat_map(|file| imports(&std::fs::read_to_string(file).unwrap()))
                .collect();
            deps.remove(module);
            deps.retain(|dep| modules.contains(dep));
            (module.clone(), deps)
        })
        .collect()
}

#[test]
fn the_agents_and_the_watcher_never_import_the_hub() {
    let graph = graph();
    assert!(graph["hub"].contains("agent"), "the scan sees the hub's own imports: {graph:?}");
    for module in ["agent", "watcher"] {
        assert!(!graph[module].contains("hub"), "{module} imports the hub: {:?}", graph[module]);
    }
}

#[test]
fn the_scan_finds_an_import_and_leaves_tests_out() {
    let text =
        "use crate::policy::Rule;\nfn f() { crate::tools::x(); }\n#[cfg(test)]\nmod tests { use crate::hub::Hub; }";
    let expected: BTreeSet<String> = ["policy", "tools"].into_iter().map(String::from).collect();
    assert_eq!(imports(text), expected);
}
