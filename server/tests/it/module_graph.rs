//! The module graphs of the server and the UI, read from their sources: no
//! two modules import each other, however far round (in the UI each component
//! counts as a module of its own). The hub owns its agents, never the other
//! way round: `agents/` reaches the hub only through its narrow port
//! (`agents::port::HubPort`), and the settings watcher only through a callback,
//! so neither imports `hub` (tests inside them may).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

type Graph = BTreeMap<String, BTreeSet<String>>;

/// The server's top-level modules.
const SERVER: (&str, &[&str]) = ("src", &[]);
/// The UI's top-level modules, each component apart.
const UI: (&str, &[&str]) = ("../app/src", &["components"]);

/// Every `.rs` file under `dir`.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
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

/// The module a path of names belongs to: its first name, or its first two
/// where the first is a folder whose children count apart (`split`).
fn module_of(names: &[String], split: &[&str]) -> Option<String> {
    let first = names.first()?;
    match names.get(1) {
        Some(second) if split.contains(&first.as_str()) => Some(format!("{first}::{second}")),
        _ => Some(first.clone()),
    }
}

/// The paths a `use` tree names, `{…}` groups expanded: `a::{b::C, d}` is `a::b::C` and `a::d`.
fn paths(tree: &str) -> Vec<Vec<String>> {
    let tree = tree.trim();
    let Some(open) = tree.find('{') else {
        return vec![tree.split("::").map(|name| name.trim().to_string()).filter(|name| !name.is_empty()).collect()];
    };
    let prefix: Vec<String> =
        tree[..open].split("::").map(|name| name.trim().to_string()).filter(|name| !name.is_empty()).collect();
    let inner = &tree[open + 1..tree.rfind('}').unwrap_or(tree.len())];
    let (mut items, mut depth, mut start) = (Vec::new(), 0, 0);
    for (at, c) in inner.char_indices() {
        match c {
            '{' => depth += 1,
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&inner[start..at]);
                start = at + 1;
            }
            _ => {}
        }
    }
    items.push(&inner[start..]);
    items.into_iter().flat_map(paths).map(|rest| prefix.iter().cloned().chain(rest).collect()).collect()
}

/// The modules a file's code names through `crate::` or `super::` (resolved
/// from `here`, the file's own module path): comments are left out, and so is
/// the test module at a file's end.
fn imports(text: &str, here: &[String], split: &[&str]) -> BTreeSet<String> {
    let code = text.split("#[cfg(test)]\nmod tests {").next().unwrap_or_default();
    let code: String = code.lines().filter(|line| !line.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
    let mut found = BTreeSet::new();
    for (at, _) in code.match_indices("crate::").chain(code.match_indices("super::")) {
        // `crate::…` from the root; `super::super::…` from as many parents up.
        let mut rest = &code[at..];
        let mut base: Vec<String> = Vec::new();
        if let Some(after) = rest.strip_prefix("crate::") {
            rest = after;
        } else {
            if code[..at].ends_with("super::") || code[..at].ends_with("crate::") {
                continue; // counted from the path's first word
            }
            base = here.to_vec();
            while let Some(after) = rest.strip_prefix("super::") {
                base.pop();
                rest = after;
            }
        }
        // The path as far as it goes: names, `::`, and a brace group with what it holds.
        let (mut end, mut depth) = (0, 0);
        for (i, c) in rest.char_indices() {
            match c {
                '{' => depth += 1,
                '}' if depth == 0 => break,
                '}' => depth -= 1,
                c if depth > 0 || c.is_ascii_alphanumeric() || c == '_' || c == ':' => {}
                _ => break,
            }
            end = i + c.len_utf8();
        }
        for path in paths(&rest[..end]) {
            let full: Vec<String> = base.iter().cloned().chain(path).collect();
            found.extend(module_of(&full, split));
        }
    }
    found
}

/// Files compiled for tests only: modules declared under `#[cfg(test)]`
/// (other attributes between, a `#[path = "…"]` followed), and everything
/// beneath them.
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
        for (at, line) in lines.iter().enumerate() {
            if *line != "#[cfg(test)]" {
                continue;
            }
            let mut path = None;
            let mut next = at + 1;
            while let Some(attribute) = lines.get(next).filter(|line| line.starts_with("#[")) {
                if let Some(given) = attribute.strip_prefix("#[path = \"").and_then(|rest| rest.strip_suffix("\"]")) {
                    path = Some(file.parent().unwrap().join(given));
                }
                next += 1;
            }
            let Some(declared) = lines.get(next) else { continue };
            let declared = declared.trim_start_matches("pub(crate) ").trim_start_matches("pub ");
            let Some(name) = declared.strip_prefix("mod ").and_then(|rest| rest.strip_suffix(';')) else { continue };
            match path {
                Some(path) => found.push(path),
                None => {
                    found.push(dir.join(format!("{name}.rs")));
                    found.push(dir.join(name));
                }
            }
        }
    }
    found
}

/// Which modules each module of a crate imports.
fn graph((src, split): (&str, &[&str])) -> Graph {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join(src);
    let files = files_under(&src);
    let tests = test_only(&files);
    let mut graph = Graph::new();
    for file in files.iter().filter(|file| !tests.iter().any(|test| file.starts_with(test))) {
        let names: Vec<String> = file
            .strip_prefix(&src)
            .unwrap()
            .with_extension("")
            .iter()
            .map(|name| name.to_string_lossy().into_owned())
            .filter(|name| name != "mod")
            .collect();
        if names == ["lib"] || names == ["main"] {
            continue;
        }
        let Some(module) = module_of(&names, split) else { continue };
        let text = std::fs::read_to_string(file).unwrap();
        // `super::` in `a/b.rs` (module a::b) starts from `a`; in `a/mod.rs` (module a) from the root.
        graph.entry(module).or_default().extend(imports(&text, &names, split));
    }
    let modules: BTreeSet<String> = graph.keys().cloned().collect();
    for (module, deps) in graph.iter_mut() {
        // An item re-exported by a folder (`components::Item`) counts as the folder's.
        let resolved: BTreeSet<String> = deps
            .iter()
            .map(|dep| match modules.contains(dep) {
                true => dep.clone(),
                false => dep.split("::").next().unwrap_or_default().to_string(),
            })
            .filter(|dep| dep != module && modules.contains(dep))
            .collect();
        *deps = resolved;
    }
    graph
}

/// The import circles of `graph`: each a list of modules, each importing the next.
fn circles(graph: &Graph) -> Vec<Vec<String>> {
    fn walk(graph: &Graph, path: &mut Vec<String>, done: &mut BTreeSet<String>, found: &mut Vec<Vec<String>>) {
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
    let graph = graph(SERVER);
    assert!(graph["http"].contains("hub") && graph["hub"].contains("agents"), "the scan sees imports: {graph:?}");
    assert_eq!(circles(&graph), Vec::<Vec<String>>::new(), "import circles in server/src: {graph:#?}");
}

/// The session machine is plain data: neither it nor anything it imports,
/// however far round, reaches the store, the hub, the agents or any other
/// part of the hub that does IO, nor names an IO library itself.
#[test]
fn the_session_machine_imports_nothing_that_does_io() {
    let graph = graph(SERVER);
    assert!(graph["agents"].contains("session"), "the scan sees who uses it: {graph:?}");
    let (mut reached, mut next) = (BTreeSet::new(), vec!["session".to_string()]);
    while let Some(module) = next.pop() {
        if reached.insert(module.clone()) {
            next.extend(graph[&module].iter().cloned());
        }
    }
    let pure: BTreeSet<String> = ["session", "approval"].into_iter().map(String::from).collect();
    assert!(reached.is_subset(&pure), "session reaches {reached:?}");
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for module in &reached {
        let place = src.join(module);
        for file in
            files_under(&place).into_iter().chain([place.with_extension("rs")].into_iter().filter(|f| f.exists()))
        {
            let text = std::fs::read_to_string(&file).unwrap();
            for io in ["std::fs", "std::process", "std::net", "tokio", "rusqlite", "reqwest", "std::io"] {
                assert!(!text.contains(io), "{} names {io}", file.display());
            }
        }
    }
}

#[test]
fn the_uis_modules_and_components_import_each_other_in_no_circle() {
    let graph = graph(UI);
    assert!(graph["components::hub_page"].contains("components::folders"), "the scan sees imports: {graph:?}");
    assert!(graph["components::inbox"].contains("state"), "the scan sees imports: {graph:?}");
    assert_eq!(circles(&graph), Vec::<Vec<String>>::new(), "import circles in app/src: {graph:#?}");
}

#[test]
fn a_circle_is_found() {
    let edges = |pairs: &[(&str, &[&str])]| -> Graph {
        pairs.iter().map(|(from, to)| (from.to_string(), to.iter().map(|m| m.to_string()).collect())).collect()
    };
    let line = edges(&[("a", &["b"]), ("b", &["c"]), ("c", &[])]);
    assert!(circles(&line).is_empty());
    let circle = edges(&[("a", &["b"]), ("b", &["c"]), ("c", &["a"])]);
    assert_eq!(circles(&circle), vec![vec!["a".to_string(), "b".into(), "c".into()]]);
}

#[test]
fn the_agents_and_the_watcher_never_import_the_hub() {
    let graph = graph(SERVER);
    assert!(graph["hub"].contains("agents"), "the scan sees the hub's own imports: {graph:?}");
    for module in ["agents", "watcher"] {
        assert!(!graph[module].contains("hub"), "{module} imports the hub: {:?}", graph[module]);
    }
}

#[test]
fn the_scan_finds_an_import_and_leaves_tests_out() {
    let text = "use crate::policy::Rule;\nuse crate::{store::Store, audit};\n/// See [`crate::registry`].\n\
                fn f() { crate::tools::x(); }\n#[cfg(test)]\nmod tests { use crate::hub::Hub; }";
    let expected: BTreeSet<String> = ["audit", "policy", "store", "tools"].into_iter().map(String::from).collect();
    assert_eq!(imports(text, &[], &[]), expected);
    let ui = "use crate::components::{alert::Alert, folders::{a, b}};\nuse crate::state::HubState;";
    let expected: BTreeSet<String> =
        ["components::alert", "components::folders", "state"].into_iter().map(String::from).collect();
    assert_eq!(imports(ui, &[], &["components"]), expected);
    // A sibling named through `super::`, from a component's file.
    let here: Vec<String> = ["components", "alert"].into_iter().map(String::from).collect();
    let sibling = "use super::folders::FolderPanel;\nuse super::super::state::HubState;";
    let expected: BTreeSet<String> = ["components::folders", "state"].into_iter().map(String::from).collect();
    assert_eq!(imports(sibling, &here, &["components"]), expected);
    // `mod tests_eval;` is not the test module: what follows it is read.
    let declared =
        "#[cfg(test)]\nmod tests_eval;\nuse crate::store::Store;\n#[cfg(test)]\nmod tests {\nuse crate::hub::Hub;\n}";
    let expected: BTreeSet<String> = ["store"].into_iter().map(String::from).collect();
    assert_eq!(imports(declared, &[], &[]), expected);
}
