//! Every relative link in README.md and docs/*.md leads somewhere: the file
//! exists, and a `#anchor` names a heading of the target, slugged as GitHub
//! slugs it. External links (http, https, mailto) are not fetched.
//! Self-contained on purpose (no tests/common): it reads files, nothing more.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

fn repository_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("server/ has a parent").to_path_buf()
}

/// The pages a newcomer reads: the README and every page under docs/.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages = vec![root.join("README.md")];
    let docs = std::fs::read_dir(root.join("docs")).expect("docs/ is readable");
    let mut found: Vec<PathBuf> = docs
        .map(|entry| entry.expect("a docs/ entry").path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "md"))
        .collect();
    found.sort();
    pages.extend(found);
    pages
}

/// The lines that are prose, numbered from 1: fenced code blocks are left out,
/// and so are inline code spans (a `[x](y)` in code is no link).
fn prose_lines(text: &str) -> Vec<(usize, String)> {
    let mut in_fence = false;
    let mut lines = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        if !in_fence {
            lines.push((index + 1, without_code_spans(line)));
        }
    }
    lines
}

fn without_code_spans(line: &str) -> String {
    line.split('`').step_by(2).collect::<Vec<_>>().join(" ")
}

/// The targets of the line's inline links and images: what is between the
/// parentheses after `](`, without an optional "title".
fn link_targets(line: &str) -> Vec<String> {
    let mut targets = Vec::new();
    let mut rest = line;
    while let Some(start) = rest.find("](") {
        let after = &rest[start + 2..];
        let mut depth = 1;
        let end = after.char_indices().find_map(|(at, c)| {
            match c {
                '(' => depth += 1,
                ')' => depth -= 1,
                _ => {}
            }
            (depth == 0).then_some(at)
        });
        let Some(end) = end else { break };
        let target = after[..end].split_whitespace().next().unwrap_or("");
        targets.push(target.trim_start_matches('<').trim_end_matches('>').to_string());
        rest = &after[end + 1..];
    }
    targets
}

/// GitHub's anchor for a heading: lowercase; letters, digits, `-` and `_` kept,
/// other punctuation dropped; each space a `-`. Link text stands for the link.
fn slug(heading: &str) -> String {
    let text = link_texts(heading);
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == '-' || *c == '_' || *c == ' ')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// `[text](target)` as `text`.
fn link_texts(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(open) = rest.find('[') {
        let Some(close) = rest[open..].find("](").map(|at| open + at) else { break };
        let Some(end) = rest[close..].find(')').map(|at| close + at) else { break };
        out.push_str(&rest[..open]);
        out.push_str(&rest[open + 1..close]);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    out
}

/// The anchors of a Markdown file's headings; a repeated one gets `-1`, `-2`…
/// as on GitHub.
fn anchors(text: &str) -> Vec<String> {
    let mut seen: HashMap<String, usize> = HashMap::new();
    let mut in_fence = false;
    let mut anchors = Vec::new();
    for line in text.lines() {
        let trimmed = line.trim_start();
        if trimmed.starts_with("```") || trimmed.starts_with("~~~") {
            in_fence = !in_fence;
            continue;
        }
        let level = trimmed.bytes().take_while(|b| *b == b'#').count();
        if in_fence || !(1..=6).contains(&level) || !trimmed[level..].starts_with(' ') {
            continue;
        }
        let base = slug(trimmed[level..].trim().trim_end_matches('#'));
        let count = seen.entry(base.clone()).or_insert(0);
        anchors.push(if *count == 0 { base.clone() } else { format!("{base}-{count}") });
        *count += 1;
    }
    anchors
}

fn is_external(target: &str) -> bool {
    ["http://", "https://", "mailto:"].iter().any(|scheme| target.starts_with(scheme))
}

/// `a/../b` as `b`, so a target's place can be checked against the root.
fn normalized(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

/// Every broken link of the pages, as `page:line: target: why`.
fn broken_links(root: &Path, pages: &[PathBuf]) -> Vec<String> {
    let mut broken = Vec::new();
    for page in pages {
        let text = std::fs::read_to_string(page).unwrap_or_else(|err| panic!("{}: {err}", page.display()));
        let shown = page.strip_prefix(root).unwrap_or(page).display().to_string();
        for (number, line) in prose_lines(&text) {
            for target in link_targets(&line) {
                if is_external(&target) {
                    continue;
                }
                let (file, anchor) = match target.split_once('#') {
                    Some((file, anchor)) => (file, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let why = if target.is_empty() {
                    Some("an empty target".to_string())
                } else {
                    let path = if file.is_empty() {
                        page.clone()
                    } else {
                        normalized(&page.parent().expect("a page is in a folder").join(file))
                    };
                    if !path.starts_with(root) {
                        Some("outside the repository".to_string())
                    } else if !path.exists() {
                        Some("no such file".to_string())
                    } else {
                        anchor.and_then(|anchor| missing_anchor(&path, anchor))
                    }
                };
                if let Some(why) = why {
                    broken.push(format!("{shown}:{number}: {target}: {why}"));
                }
            }
        }
    }
    broken
}

/// Why `anchor` is not a heading of the file at `path`, if it is not.
fn missing_anchor(path: &Path, anchor: &str) -> Option<String> {
    if path.extension().is_none_or(|ext| ext != "md") {
        return Some("an anchor into a file that is not Markdown".to_string());
    }
    let text = std::fs::read_to_string(path).ok()?;
    let known = anchors(&text);
    (!known.iter().any(|known| known == anchor))
        .then(|| format!("no heading with this anchor (it has: {})", known.join(", ")))
}

#[test]
fn every_relative_link_of_the_readme_and_docs_resolves() {
    let root = repository_root();
    let pages = pages(&root);
    assert!(pages.len() > 2, "the README and the docs pages: {pages:?}");
    let broken = broken_links(&root, &pages);
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn every_docs_page_is_linked_from_the_readme() {
    let root = repository_root();
    let readme = std::fs::read_to_string(root.join("README.md")).unwrap();
    let linked: Vec<String> = prose_lines(&readme).iter().flat_map(|(_, line)| link_targets(line)).collect();
    for page in pages(&root).iter().skip(1) {
        let name = format!("docs/{}", page.file_name().unwrap().to_string_lossy());
        assert!(
            linked.iter().any(|target| target.split('#').next() == Some(name.as_str())),
            "{name} is not linked from README.md"
        );
    }
}

#[test]
fn slugs_follow_githubs_rules() {
    assert_eq!(slug("Two commands"), "two-commands");
    assert_eq!(slug("Agent Hub — HTTP contract"), "agent-hub--http-contract");
    assert_eq!(slug("Agents: `GET /api/agents` (issue 18)"), "agents-get-apiagents-issue-18");
    assert_eq!(slug("Weight: `bench/first-load [--previous DIR]`"), "weight-benchfirst-load---previous-dir");
    assert_eq!(slug("snake_case and [a link](x.md)"), "snake_case-and-a-link");
    assert_eq!(anchors("# A\n## A\n```\n# not a heading\n```\n### A"), ["a", "a-1", "a-2"]);
}

#[test]
fn a_broken_file_or_anchor_is_found_and_code_is_not_read_as_links() {
    let root = std::env::temp_dir().join(format!("docs-links-{}", std::process::id()));
    std::fs::create_dir_all(root.join("docs")).unwrap();
    std::fs::write(root.join("docs/page.md"), "# A page\n\n## Its part\n").unwrap();
    let readme = "# Read me\n\
        [good](docs/page.md) [good anchor](docs/page.md#its-part) [here](#read-me) [web](https://example.com/x)\n\
        [missing file](docs/nope.md) [missing anchor](docs/page.md#nope) [out](../elsewhere.md)\n\
        `[in code](docs/nope.md)`\n\
        ```\n[in a fence](docs/nope.md)\n```\n";
    std::fs::write(root.join("README.md"), readme).unwrap();
    let broken = broken_links(&root, &pages(&root));
    std::fs::remove_dir_all(&root).unwrap();
    assert_eq!(broken.len(), 3, "{broken:#?}");
    assert!(broken[0].starts_with("README.md:3: docs/nope.md: no such file"), "{broken:#?}");
    assert!(broken[1].starts_with("README.md:3: docs/page.md#nope: no heading"), "{broken:#?}");
    assert!(broken[2].starts_with("README.md:3: ../elsewhere.md: outside the repository"), "{broken:#?}");
}
