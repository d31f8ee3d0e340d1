//! Policy files: the loader's problems, the directories and their cache, export.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use protocol::api::{PolicyDecision, RuleOrigin, RuleTier};
use serde_json::json;

use super::{
    export_toml, guard_rails, parse_policy_file, Mode, PolicyDirs, PolicyFiles, PolicySet, Rule, ToolCall, Verdict,
};

fn shell(set: &PolicySet, command: &str) -> Verdict {
    set.evaluate(&ToolCall { name: "run_shell_command", args: &json!({ "command": command }) }, Mode::Default)
}

fn write(dir: &Path, name: &str, text: &str) {
    fs::create_dir_all(dir).unwrap();
    fs::write(dir.join(name), text).unwrap();
}

const BAD_RULES: &str = r#"
[[rule]]
toolName = "run_shell_command"
commandPrefix = "ls"
decision = "allow"
priority = 10

[[rule]]
toolName = "run_shell_command"
commandPrefix = "cat"
decision = "permit"
priority = 10

[[rule]]
toolName = "run_shell_command"
commandRegex = "git (push"
decision = "deny"
priority = 10

[[rule]]
toolName = "run_shell_command"
commandPrefix = "make"
decision = "allow"
priority = 1000

[[rule]]
toolName = "run_shell_command"
commandPrefix = "npm"
commandRegex = "npm .*"
decision = "allow"
priority = 10

[[rule]]
toolName = "run_shell_command"
argsPattern = "(a+)+"
decision = "deny"
priority = 10

[[rule]]
toolName = "run_shell_command"
commandPrefix = "rm"
decision = "deny"
priority = 10

[[rule]]
commandPrefix = "cargo"
decision = "allow"
priority = 10.0

[[rule]]
toolName = "write_file"
decision = "allow"
priority = "high"

[[rule]]
toolName = "write_file"
decision = "allow"
priority = 1
modes = ["sometimes"]

[[rule]]
decision = "allow"
priority = 1

[[rule]]
toolName = "write_file"
commandPrefix = "x"
decision = "allow"
priority = 1
"#;

#[test]
fn a_bad_rule_is_reported_with_its_file_and_number_and_the_rest_applies() {
    let (rules, problems) =
        parse_policy_file(BAD_RULES, "/w/.gemini/policies/team.toml", RuleTier::Workspace, "file-x");
    let reported: Vec<(Option<usize>, &str)> = problems.iter().map(|p| (p.rule, p.message.as_str())).collect();
    let expected_fragments = [
        (2, "unknown decision \"permit\""),
        (3, "not a valid regular expression"),
        (4, "priority must be <= 999"),
        (5, "commandPrefix and commandRegex cannot be used together"),
        (6, "ReDoS"),
        (9, "priority must be a number"),
        (10, "unknown mode \"sometimes\""),
        (11, "toolName is required"),
        (12, "can only be used with toolName = \"run_shell_command\""),
    ];
    assert_eq!(reported.len(), expected_fragments.len(), "{reported:#?}");
    for ((rule, message), (number, fragment)) in reported.iter().zip(expected_fragments) {
        assert_eq!(*rule, Some(number));
        assert!(message.contains(fragment) && message.ends_with("the rule is ignored"), "rule {number}: {message}");
    }
    assert!(problems.iter().all(|p| p.file == "/w/.gemini/policies/team.toml"));
    let loaded: Vec<(&str, &str)> = rules.iter().map(|r| (r.id.as_str(), r.source.as_str())).collect();
    assert_eq!(
        loaded,
        [
            ("file-x-1", "/w/.gemini/policies/team.toml, rule 1"),
            ("file-x-7", "/w/.gemini/policies/team.toml, rule 7"),
            ("file-x-8", "/w/.gemini/policies/team.toml, rule 8"),
        ]
    );
    // commandPrefix alone implies the shell tool; priority 10.0 is the integer 10.
    assert_eq!((rules[2].tool_names.as_slice(), rules[2].priority), (&["run_shell_command".to_string()][..], 10));
    let set = PolicySet::new(rules, problems);
    assert_eq!(shell(&set, "ls").decision, Some(PolicyDecision::Allow));
    assert_eq!(shell(&set, "rm x").decision, Some(PolicyDecision::Deny));
    assert_eq!(shell(&set, "cargo build").decision, Some(PolicyDecision::Allow));
    assert_eq!(shell(&set, "cat x").decision, None);
}

#[test]
fn a_file_that_is_not_toml_is_one_problem_and_gives_no_rules() {
    let (rules, problems) = parse_policy_file("[[rule]\ntoolName = 'x'", "/p/broken.toml", RuleTier::User, "f");
    assert!(rules.is_empty());
    assert_eq!(problems.len(), 1);
    assert_eq!((problems[0].file.as_str(), problems[0].rule), ("/p/broken.toml", None));
    assert!(problems[0].message.starts_with("not valid TOML"), "{}", problems[0].message);
    let (_, problems) = parse_policy_file("[rule]\ndecision = 'allow'", "/p/table.toml", RuleTier::User, "f");
    assert!(problems[0].message.contains("array of tables"));
    let (rules, problems) = parse_policy_file("# nothing yet\n", "/p/empty.toml", RuleTier::User, "f");
    assert!(rules.is_empty() && problems.is_empty());
}

fn dirs(root: &Path) -> PolicyDirs {
    PolicyDirs { user: Some(root.join("user")), admin: Some(root.join("admin")), admin_checked: false }
}

#[test]
fn folders_get_guard_rails_admin_user_workspace_and_saved_rules() {
    let root = tempfile::tempdir().unwrap();
    let folder = root.path().join("project");
    let policies = folder.join(".gemini/policies");
    write(
        &root.path().join("admin"),
        "org.toml",
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"curl\"\ndecision = \"deny\"\npriority = 1\n",
    );
    write(&root.path().join("user"), "me.toml", "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = [\"curl\", \"ls\"]\ndecision = \"allow\"\npriority = 999\n");
    write(&policies, "b.toml", "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"ls\"\ndecision = \"deny\"\npriority = 999\n\n[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"make\"\ndecision = \"deny\"\npriority = 5\n");
    write(&policies, "a.toml", "this is = = not toml");
    write(&policies, "notes.md", "[[rule]] ignored: not a .toml file");
    fs::create_dir_all(policies.join("dir.toml")).unwrap();
    std::os::unix::fs::symlink(policies.join("b.toml"), policies.join("link.toml")).unwrap();

    let files = PolicyFiles::new(dirs(root.path()));
    let saved = Rule::saved(4, "run_shell_command", Some("make"), 99).unwrap();
    let set = files.for_folder(&folder, vec![saved], true);
    assert_eq!(shell(&set, "curl x").rule_id.as_deref().map(|id| id.starts_with("file-")), Some(true));
    assert_eq!(shell(&set, "curl x").decision, Some(PolicyDecision::Deny), "admin beats user");
    assert_eq!(shell(&set, "ls").decision, Some(PolicyDecision::Allow), "user beats workspace");
    assert_eq!(shell(&set, "make").rule_id.as_deref(), Some("hub-4"), "saved at 3.950 beats the file's 3.005");
    let sources: Vec<String> = set.rules().iter().map(|r| r.source.clone()).collect();
    let b = policies.join("b.toml").display().to_string();
    assert!(sources.contains(&format!("{b}, rule 2")), "{sources:?}");
    assert_eq!(set.rules().iter().filter(|r| r.origin == RuleOrigin::BuiltIn).count(), guard_rails().len());
    let problem_files: Vec<(String, Option<usize>)> =
        set.problems().iter().map(|p| (p.file.rsplit('/').next().unwrap().to_string(), p.rule)).collect();
    assert_eq!(problem_files, [("a.toml".to_string(), None), ("link.toml".to_string(), None)]);
}

#[test]
fn an_edited_file_applies_to_the_next_call_and_an_unchanged_one_is_not_parsed_again() {
    let root = tempfile::tempdir().unwrap();
    let folder = root.path().join("project");
    let policies = folder.join(".gemini/policies");
    let files = PolicyFiles::new(dirs(root.path()));
    assert_eq!(shell(&files.for_folder(&folder, Vec::new(), true), "ls").decision, None);

    write(
        &policies,
        "p.toml",
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"ls\"\ndecision = \"allow\"\npriority = 1\n",
    );
    let first = files.for_folder(&folder, Vec::new(), true);
    assert_eq!(shell(&first, "ls").decision, Some(PolicyDecision::Allow));
    assert_eq!(files.parse_count(), 1);
    let id = shell(&first, "ls").rule_id.unwrap();

    for _ in 0..3 {
        let again = files.for_folder(&folder, Vec::new(), true);
        assert_eq!(shell(&again, "ls").rule_id.as_deref(), Some(id.as_str()), "ids are stable");
    }
    assert_eq!(files.parse_count(), 1, "an unchanged file is not parsed again");

    // Same length, same second: only the content tells.
    write(
        &policies,
        "p.toml",
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"ls\"\ndecision = \"deny \"\npriority = 1\n",
    );
    let edited = files.for_folder(&folder, Vec::new(), true);
    assert_eq!(files.parse_count(), 2);
    assert_eq!(edited.problems().len(), 1, "{:?}", edited.problems());
    assert_eq!(shell(&edited, "ls").decision, None);

    write(
        &policies,
        "p.toml",
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"ls\"\ndecision = \"deny\"\npriority = 1\n",
    );
    let fixed = files.for_folder(&folder, Vec::new(), true);
    assert_eq!(shell(&fixed, "ls").decision, Some(PolicyDecision::Deny));
    assert_ne!(shell(&fixed, "ls").rule_id.unwrap(), id);

    fs::remove_file(policies.join("p.toml")).unwrap();
    assert_eq!(shell(&files.for_folder(&folder, Vec::new(), true), "ls").decision, None);
}

#[test]
fn an_admin_directory_writable_by_others_is_ignored_with_a_problem() {
    let root = tempfile::tempdir().unwrap();
    let admin = root.path().join("admin");
    write(
        &admin,
        "org.toml",
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"ls\"\ndecision = \"deny\"\npriority = 1\n",
    );
    let checked = PolicyDirs { user: None, admin: Some(admin.clone()), admin_checked: true };
    let folder = root.path().join("project");

    fs::set_permissions(&admin, fs::Permissions::from_mode(0o777)).unwrap();
    let set = PolicyFiles::new(checked.clone()).for_folder(&folder, Vec::new(), true);
    assert_eq!(shell(&set, "ls").decision, None);
    assert_eq!(set.problems().len(), 1);
    assert_eq!(set.problems()[0].file, admin.display().to_string());
    assert!(set.problems()[0].message.contains("writable by group or others"), "{:?}", set.problems());

    fs::set_permissions(&admin, fs::Permissions::from_mode(0o755)).unwrap();
    let set = PolicyFiles::new(checked).for_folder(&folder, Vec::new(), true);
    let owned_by_root = std::fs::metadata(&admin).map(|m| std::os::unix::fs::MetadataExt::uid(&m) == 0).unwrap();
    if owned_by_root {
        assert_eq!(shell(&set, "ls").decision, Some(PolicyDecision::Deny));
        assert!(set.problems().is_empty());
    } else {
        assert!(set.problems()[0].message.contains("not root"));
    }
}

#[test]
fn exported_rules_load_back_the_same() {
    let mut rules = vec![
        Rule::saved(1, "run_shell_command", Some("git status"), 5).unwrap(),
        Rule::saved(2, "write_file", None, 6).unwrap(),
        Rule::saved(3, "run_shell_command", Some("echo \"hi\" \\ 'there' \u{7f}"), 7).unwrap(),
    ];
    let (file_rules, problems) = parse_policy_file(
        "[[rule]]\ntoolName = [\"a\", \"b\"]\nargsPattern = '\"x\":\\d+'\ndecision = \"deny\"\npriority = 3\nmodes = [\"yolo\", \"plan\"]\ndenyMessage = \"no\"\n\n[[rule]]\ntoolName = \"run_shell_command\"\ncommandRegex = \"git (a|b)\"\ndecision = \"ask_user\"\npriority = 0\nallowRedirection = true\ninteractive = true\n",
        "/x.toml",
        RuleTier::Workspace,
        "f",
    );
    assert!(problems.is_empty());
    rules.extend(file_rules);
    let text = export_toml(&rules);
    assert!(text.starts_with("# "));
    assert!(
        text.contains(
            "toolName = \"run_shell_command\"\ncommandPrefix = \"git status\"\ndecision = \"allow\"\npriority = 950\n"
        ),
        "{text}"
    );
    let (back, problems) = parse_policy_file(&text, "/export.toml", RuleTier::Workspace, "e");
    assert!(problems.is_empty(), "{problems:?}\n{text}");
    assert_eq!(back.len(), rules.len());
    for (a, b) in rules.iter().zip(&back) {
        assert_eq!(
            (&a.tool_names, &a.command_prefixes, &a.command_regex, &a.args_pattern, a.decision, a.priority),
            (&b.tool_names, &b.command_prefixes, &b.command_regex, &b.args_pattern, b.decision, b.priority)
        );
        assert_eq!(
            (&a.modes, &a.deny_message, a.allow_redirection, a.interactive),
            (&b.modes, &b.deny_message, b.allow_redirection, b.interactive)
        );
    }
}

#[test]
fn a_file_over_one_mib_is_a_problem_and_not_read() {
    let root = tempfile::tempdir().unwrap();
    let folder = root.path().join("project");
    let policies = folder.join(".gemini/policies");
    let rule =
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"ls\"\ndecision = \"allow\"\npriority = 1\n";
    write(&policies, "big.toml", &format!("{rule}{}", "# padding\n".repeat(110_000)));
    let files = PolicyFiles::new(dirs(root.path()));
    let set = files.for_folder(&folder, Vec::new(), true);
    assert_eq!(shell(&set, "ls").decision, None);
    assert_eq!(files.parse_count(), 0);
    assert_eq!(set.problems().len(), 1, "{:?}", set.problems());
    assert!(set.problems()[0].message.starts_with("too large"), "{:?}", set.problems());
    // Shrunk back under the limit, it applies.
    write(&policies, "big.toml", rule);
    assert_eq!(shell(&files.for_folder(&folder, Vec::new(), true), "ls").decision, Some(PolicyDecision::Allow));
}

#[test]
fn files_are_read_and_parsed_without_the_cache_locked() {
    let root = tempfile::tempdir().unwrap();
    let folder = root.path().join("project");
    let rule =
        "[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"ls\"\ndecision = \"allow\"\npriority = 1\n";
    write(&folder.join(".gemini/policies"), "p.toml", rule);
    write(&root.path().join("user"), "u.toml", rule);
    let files = PolicyFiles::new(dirs(root.path()));
    assert_eq!(shell(&files.for_folder(&folder, Vec::new(), true), "ls").decision, Some(PolicyDecision::Allow));
    assert!(!files.io_under_lock.load(std::sync::atomic::Ordering::Relaxed));
    // Many folders at once see the same rules.
    std::thread::scope(|scope| {
        for _ in 0..8 {
            scope.spawn(|| {
                assert_eq!(
                    shell(&files.for_folder(&folder, Vec::new(), true), "ls").decision,
                    Some(PolicyDecision::Allow)
                )
            });
        }
    });
}
