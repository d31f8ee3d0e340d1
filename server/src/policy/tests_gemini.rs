//! The same files and commands through Gemini CLI's own loader and engine (the
//! bundle `./scripts/test` installs into end2end/gemini-cli) and through the hub's:
//! Gemini CLI loads the hub's export without an error, and each row pins both
//! answers, so where the hub differs on purpose the row says so.
//! Skipped, with a note, where Node.js or the bundle is missing.

use std::path::PathBuf;
use std::process::Command;

use protocol::api::{PolicyDecision, RuleTier};
use serde_json::{json, Value};

use super::{export_toml, parse_policy_file, Mode, PolicySet, Rule, ToolCall};

use PolicyDecision::{Allow, AskUser, Deny};

const TEAM: &str = r#"
[[rule]]
toolName = "run_shell_command"
commandPrefix = ["git status", "git log", "ls", "echo", "cargo test"]
decision = "allow"
priority = 100

[[rule]]
toolName = "run_shell_command"
commandPrefix = "git push --force"
decision = "deny"
priority = 100
denyMessage = "no force pushes"

[[rule]]
toolName = "run_shell_command"
commandRegex = "npm (install|ci)"
decision = "ask_user"
priority = 50

[[rule]]
toolName = "run_shell_command"
commandPrefix = "cat"
decision = "allow"
priority = 100
allowRedirection = true
"#;

const D: Mode = Mode::Default;
const Y: Mode = Mode::Yolo;

/// (command, mode, Gemini CLI's decision, the hub's). The hub's None is "no rule
/// spoke": its caller then asks (default) or runs (YOLO), as Gemini CLI would.
const ROWS: &[(&str, Mode, &str, Option<PolicyDecision>)] = &[
    ("git status", D, "allow", Some(Allow)),
    ("git status", Y, "allow", Some(Allow)),
    ("git status; rm -rf ~", D, "ask_user", None),
    ("git status; rm -rf ~", Y, "allow", None),
    ("git status > out", D, "ask_user", Some(AskUser)),
    ("git status > out", Y, "allow", None),
    ("echo hi && git push --force origin main", D, "deny", Some(Deny)),
    ("echo hi && git push --force origin main", Y, "deny", Some(Deny)),
    ("ls | wc -l", D, "ask_user", None),
    ("npm install left-pad", D, "ask_user", Some(AskUser)),
    ("npm ci", Y, "ask_user", Some(AskUser)),
    ("make build", D, "allow", Some(Allow)),
    ("cat < in > out", D, "allow", Some(Allow)),
    ("cargo test && ls", D, "allow", Some(Allow)),
    ("bash -c 'git push --force'", D, "deny", Some(Deny)),
    ("rm -rf /", D, "ask_user", None),
    // Differences on purpose. Gemini CLI checks no part in YOLO when no rule
    // matches the whole line; the hub's deny holds in every mode.
    ("bash -c 'git push --force'", Y, "allow", Some(Deny)),
    // Gemini CLI matches `FOO=1 git push …` as written; the hub from the name on.
    ("FOO=1 git push --force", D, "ask_user", Some(Deny)),
    // `2>&1` writes no file: the hub does not count it as a redirection.
    ("git status 2>&1", D, "ask_user", Some(Allow)),
];

fn bundle() -> Option<PathBuf> {
    let dir =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../end2end/gemini-cli/node_modules/@google/gemini-cli/bundle");
    let node = Command::new("node").arg("--version").output().is_ok_and(|out| out.status.success());
    (node && dir.is_dir()).then_some(dir)
}

#[test]
fn gemini_cli_loads_the_export_and_answers_as_the_rows_say() {
    let saved = [
        Rule::saved(1, "run_shell_command", Some("make build"), 0).unwrap(),
        Rule::saved(2, "write_file", None, 0).unwrap(),
    ];
    let exported = export_toml(&saved);
    let mut rules = Vec::new();
    for (name, text) in [("team.toml", TEAM), ("hub-export.toml", exported.as_str())] {
        let (loaded, problems) = parse_policy_file(text, name, RuleTier::Workspace, name);
        assert!(problems.is_empty(), "{problems:?}");
        rules.extend(loaded);
    }
    let set = PolicySet::new(rules, Vec::new());
    for (command, mode, _, ours) in ROWS {
        let verdict =
            set.evaluate(&ToolCall { name: "run_shell_command", args: &json!({ "command": command }) }, *mode);
        assert_eq!(verdict.decision, *ours, "the hub on {command:?} in {mode:?}: {verdict:?}");
    }

    let Some(bundle) = bundle() else {
        eprintln!("skipped the comparison with Gemini CLI: no node or no end2end/gemini-cli install");
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let policies = dir.path().join("policies");
    std::fs::create_dir(&policies).unwrap();
    std::fs::write(policies.join("team.toml"), TEAM).unwrap();
    std::fs::write(policies.join("hub-export.toml"), &exported).unwrap();
    let cases: Vec<Value> =
        ROWS.iter().map(|(command, mode, ..)| json!({ "command": command, "mode": mode.as_str() })).collect();
    std::fs::write(dir.path().join("cases.json"), serde_json::to_vec(&cases).unwrap()).unwrap();
    let script = dir.path().join("gemini_check.mjs");
    std::fs::write(&script, include_str!("gemini_check.mjs")).unwrap();
    let out = Command::new("node")
        .arg(&script)
        .arg(&bundle)
        .arg(&policies)
        .arg(dir.path().join("cases.json"))
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout.lines().find_map(|line| line.strip_prefix("RESULT:"));
    let Some(line) = line else {
        panic!("Gemini CLI's engine did not answer: {}\n{}", out.status, String::from_utf8_lossy(&out.stderr));
    };
    let summary: Value = serde_json::from_str(line).unwrap();
    assert_eq!(summary["errors"], json!([]), "Gemini CLI refused a file");
    // Arrays expand to one Gemini CLI rule per tool name and prefix: 5 + 1 + 1 + 1 + 2.
    assert_eq!(summary["rules"], 10);
    for (row, result) in ROWS.iter().zip(summary["results"].as_array().unwrap()) {
        let (command, mode, theirs, _) = row;
        assert_eq!(result["decision"], *theirs, "Gemini CLI on {command:?} in {mode:?}");
    }
}
