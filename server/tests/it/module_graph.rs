//! The server's module graph, read from its sources: no two top-level modules
//! import each other, however far round; the hub owns its agents, never the
//! other way round. `agent/` reaches the hub only through its narrow
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

/// The top-level modules a file's code names as `crate::<module>`: comments
/// are left out, and so is the test module at a file's end.
fn imports(text: &str) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]\nmod tests").next().unwrap_or_default();
    let mut found = BTreeSet::new();
    for line in code.lines().filter(|line| !line.trim_start().starts_with("//")) {
        for (at, _) in line.match_indices("crate::") {
            let name: String =
                line[at + "crate::".len()..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            if !name.is_empty() {
                found.insert(name);
            }
        }
        // `use crate::{a::X, b};`
        if let Some(group) = line.split("crate::{").nth(1) {
            for item in group.split(',') {
                let name: String = item.trim().chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
                if !name.is_empty() {
                    found.insert(name);
                }
            }
        }
    }
    found
}

/// Files compiled for tests only: modules declared right after `#[cfg(test)]`,
/// and everything beneath them.
fn test_only(files: &[PathBuf]) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(file).unwrap();
        let lines: Vec<&str> = text.lines().map(str::trim).collect();
        let stem = file.file_stem().unwrap().to_string_lossy();
        let dir = match stem.as_ref() {
            "mod" | "lib" | "main" => file.parent().unwrap().to_path_buf(),
            _ => file.with_extension(""),
        };
        for pair in lines.windows(2) {
            let declared = pair[1].trim_start_matches("pub(crate) ").trim_start_matches("pub ");
            let Some(name) = declared.strip_prefix("mod ").and_then(|rest| rest.strip_suffix(';')) else { continue };
            if pair[0] == "#[cfg(test)]" {
                found.push(dir.join(format!("{name}.rs")));
                found.push(dir.join(name));
            }
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
    let every_file: Vec<PathBuf> = modules.iter().flat_map(|module| files_of(&src, module)).collect();
    let tests = test_only(&every_file);
    modules
        .iter()
        .map(|module| {
            let mut deps: BTreeSet<String> = files_of(&src, module)
                .iter()
                .filter(|file| !tests.iter().any(|test| file.starts_with(test)))
                .flat_map(|file| imports(&std::fs::read_to_string(file).unwrap()))
                .collect();
            deps.remove(module);
            deps.retain(|dep| modules.contains(dep));
            (module.clone(), deps)
        })
        .collect()
}

/// The import circles of `graph`: each a list of modules, each importing the next.
fn circles(graph: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    fn walk(
        graph: &BTreeMap<String, BTreeSet<String>>,
        path: &mut Vec<String>,
        done: &mut BTreeSet<String>,
        found: &mut Vec<Vec<String>>,
    ) {
        let here = path.last().unwrap().clone();
        for next in &graph[&here] {
            if let Some(at) = path.iter().position(|module| module == next) {
                found.push(path[at..].to_vec());
            } else if !done.contains(next) {
                path.push(next.clone());
                walk(graph, path, done, found);
                path.pop();
            }
        }
        done.insert(here);
    }
    let (mut done, mut found) = (BTreeSet::new(), Vec::new());
    for module in graph.keys() {
        if !done.contains(module) {
            walk(graph, &mut vec![module.clone()], &mut done, &mut found);
        }
    }
    found
}

#[test]
fn the_servers_modules_import_each_other_in_no_circle() {
    let graph = graph();
    assert!(graph["http"].contains("hub") && graph["hub"].contains("agent"), "the scan sees imports: {graph:?}");
    assert_eq!(circles(&graph), Vec::<Vec<String>>::new(), "import circles in server/src: {graph:#?}");
}

#[test]
fn a_circle_is_found() {
    let edges = |pairs: &[(&str, &[&str])]| -> BTreeMap<String, BTreeSet<String>> {
        pairs.iter().map(|(from, to)| (from.to_string(), to.iter().map(|m| m.to_string()).collect())).collect()
    };
    let line = edges(&[("a", &["b"]), ("b", &["c"]), ("c", &[])]);
    assert!(circles(&line).is_empty());
    let circle = edges(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"])]);
    assert_eq!(circles(&circle), vec![vec!["a".to_string(), "b".into(), "c".into()]]);
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
    let text = "use crate::policy::Rule;\nuse crate::{store::Store, audit};\n/// See [`crate::registry`].\n\
                fn f() { crate::tools::x(); }\n#[cfg(test)]\nmod tests { use crate::hub::Hub; }";
    let expected: BTreeSet<String> = ["audit", "policy", "store", "tools"].into_iter().map(String::from).collect();
    assert_eq!(imports(text), expected);
}
