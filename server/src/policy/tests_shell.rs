//! The shell splitter and the proposed prefix.

use proptest::prelude::*;

use super::shell::{split, Inner, Unparsed};
use super::{default_prefix, too_broad};

fn texts(command: &str) -> Vec<String> {
    split(command)
        .unwrap_or_else(|why| panic!("{command:?} did not split: {why:?}"))
        .into_iter()
        .map(|p| p.text)
        .collect()
}

#[test]
fn commands_split_into_their_simple_commands() {
    let table: &[(&str, &[&str])] = &[
        ("git status", &["git status"]),
        ("git status; rm -rf ~", &["git status", "rm -rf ~"]),
        ("a && b || c", &["a", "b", "c"]),
        ("ls | wc -l", &["ls", "wc -l"]),
        ("sleep 1 & echo hi", &["sleep 1", "echo hi"]),
        ("git status\nrm -rf ~", &["git status", "rm -rf ~"]),
        ("echo $(rm -rf ~)", &["echo $(rm -rf ~)", "rm -rf ~"]),
        ("echo `id`", &["echo `id`", "id"]),
        ("(cd x; make)", &["cd x", "make"]),
        ("diff <(ls a) <(ls b)", &["diff <(ls a) <(ls b)", "ls a", "ls b"]),
        ("if true; then rm x; fi", &["true", "rm x"]),
        ("for f in *; do rm \"$f\"; done", &["rm \"$f\""]),
        ("while read l; do echo $l; done < in", &["read l", "echo $l"]),
        ("f() { rm x; }; f", &["rm x", "f"]),
        ("export A=$(whoami)", &["export A=$(whoami)", "whoami"]),
        ("[ -f x ] && cat x", &["[ -f x ]", "cat x"]),
        ("unset X", &["unset X"]),
        ("FOO=1 BAR=2 rm -rf /", &["rm -rf /"]),
        ("echo \"$(whoami)\"", &["echo \"$(whoami)\"", "whoami"]),
        ("cat <<'EOF'\n$(rm -rf ~)\nEOF", &["cat"]),
    ];
    for (command, expected) in table {
        assert_eq!(texts(command), *expected, "{command:?}");
    }
}

#[test]
fn redirections_are_seen_in_the_command_and_around_it() {
    let table: &[(&str, &[bool])] = &[
        ("git status > out", &[true]),
        ("git status >> out", &[true]),
        ("cat < in", &[true]),
        ("cat <<EOF\nx\nEOF", &[true]),
        ("cat <<< x", &[true]),
        ("ls &> out", &[true]),
        ("&>out ls", &[true]),
        ("{ a; b; } > out", &[true, true]),
        ("a > out; b", &[true, false]),
        ("ls 2>&1", &[false]),
        ("ls >&2", &[false]),
        ("ls 2>/dev/null", &[false]),
        ("echo $(git log) > out", &[true, false]),
        ("ls; > file", &[false, true]),
    ];
    for (command, expected) in table {
        let redirected: Vec<bool> = split(command).unwrap().into_iter().map(|p| p.redirected).collect();
        assert_eq!(redirected, *expected, "{command:?}");
    }
}

#[test]
fn wrappers_and_spellings_of_a_name_become_variants() {
    let variants = |command: &str| split(command).unwrap().remove(0).variants;
    assert_eq!(variants("sudo -u bob rm -rf /"), ["-u bob rm -rf /", "rm -rf /"].map(String::from).to_vec()[1..]);
    assert!(variants("env FOO=1 nohup rm -rf x").contains(&"rm -rf x".to_string()));
    assert!(variants("env sudo rm x").contains(&"sudo rm x".to_string()));
    assert_eq!(variants("\"rm\" -rf /"), vec!["rm -rf /".to_string()]);
    assert_eq!(variants("\\rm -rf /"), vec!["rm -rf /".to_string()]);
    assert_eq!(variants("/bin/rm -rf /"), vec!["rm -rf /".to_string()]);
    assert_eq!(variants("timeout 5 git push -f"), vec!["git push -f".to_string()]);
    assert!(variants("git status").is_empty());
}

#[test]
fn scripts_run_by_a_shell_or_eval_are_found() {
    let inner = |command: &str| split(command).unwrap().remove(0).inner;
    let script = |text: &str| Some(Inner::Script(text.to_string()));
    assert_eq!(inner("bash -c 'rm -rf /'"), script("rm -rf /"));
    assert_eq!(inner("sh -c \"ls \\\"a b\\\"; rm x\""), script("ls \"a b\"; rm x"));
    assert_eq!(inner("/bin/bash -lc 'ls'"), script("ls"));
    assert_eq!(inner("bash -e -o pipefail -c 'ls'"), script("ls"));
    assert_eq!(inner("zsh -c ls"), script("ls"));
    assert_eq!(inner("env bash -c 'ls'"), script("ls"));
    assert_eq!(inner("eval \"rm -rf ~\""), script("rm -rf ~"));
    assert_eq!(inner("bash -c \"$CMD\""), script("$CMD"));
    assert_eq!(inner("bash script.sh"), None);
    assert_eq!(inner("bash script.sh -c x"), Some(Inner::Dynamic));
    assert_eq!(inner("bash --rcfile x -c 'rm -rf /'"), script("rm -rf /"));
    assert_eq!(inner("bash --init-file x -c 'ls'"), script("ls"));
    assert_eq!(inner("bash --rcfile x --norc -c"), Some(Inner::Dynamic));
    assert_eq!(inner("bash -c $CMD"), Some(Inner::Dynamic));
}

#[test]
fn what_cannot_be_split_says_why() {
    assert_eq!(split("echo 'unterminated"), Err(Unparsed::Syntax));
    assert_eq!(split("if then fi"), Err(Unparsed::Syntax));
    assert_eq!(split("   "), Err(Unparsed::NoCommand));
    assert_eq!(split("# a comment"), Err(Unparsed::NoCommand));
    assert_eq!(split("echo ${x@P}"), Err(Unparsed::PromptTransform));
    assert_eq!(split("cat <<EOF\n`touch /tmp/pwn`\nEOF"), Err(Unparsed::HereDocument));
    assert_eq!(split("cat <<EOF\n$(rm -rf ~)\nEOF"), Err(Unparsed::HereDocument));
    assert_eq!(split("cat <<-EOF\n${x}\nEOF"), Err(Unparsed::HereDocument));
    assert!(split("cat <<\"EOF\"\n`id`\nEOF").is_ok());
    assert!(split("cat <<\\EOF\n`id`\nEOF").is_ok());
    assert!(split("cat <<EOF\n$HOME\nEOF").is_ok());
}

#[test]
fn the_proposed_prefix_is_the_program_and_its_subcommand() {
    let table = [
        ("git status --short", "git status"),
        ("cargo test -p x", "cargo test"),
        ("ls -la", "ls"),
        ("./run.sh a", "./run.sh"),
        ("FOO=1 npm run build", "npm run"),
        ("git status > out.txt", "git status"),
        ("git status; rm -rf ~", "git status"),
        ("make", "make"),
        ("make test", "make test"),
        ("npm run build", "npm run"),
        ("git log --oneline", "git log"),
        ("find . -name '*.rs'", "find . -name '*.rs'"),
        ("find . -exec rm {} +", "find . -exec rm {} +"),
        ("find", "find"),
        // Issue 24, item 11: an interpreter or a runner runs what its arguments say.
        ("python script.py", "python script.py"),
        ("python3 -c 'import os'", "python3 -c 'import os'"),
        ("/usr/bin/python3.12 -m pytest -q", "/usr/bin/python3.12 -m pytest -q"),
        ("node -e 'x'", "node -e 'x'"),
        ("awk '{print $1}' f", "awk '{print $1}' f"),
        ("perl -pi -e s/a/b/ f", "perl -pi -e s/a/b/ f"),
        ("ruby x.rb", "ruby x.rb"),
        ("sed -n 1p f", "sed -n 1p f"),
        ("npx prettier --check .", "npx prettier --check ."),
        ("xargs -n1 echo < list", "xargs -n1 echo"),
        ("npm exec -- cowsay hi", "npm exec -- cowsay hi"),
        ("uv run pytest", "uv run pytest"),
        // git: options before the subcommand, or a subcommand that runs commands.
        ("git -c core.pager=cat log", "git -c core.pager=cat log"),
        ("git -C sub status", "git -C sub status"),
        ("git --exec-path=/tmp status", "git --exec-path=/tmp status"),
        ("git config alias.x '!sh'", "git config alias.x '!sh'"),
        ("git rebase -x 'make test' main", "git rebase -x 'make test' main"),
        ("git fetch --upload-pack=x origin", "git fetch --upload-pack=x origin"),
        ("bash -c 'ls'", "bash -c 'ls'"),
        ("/bin/sh x.sh", "/bin/sh x.sh"),
        ("bash -c 'ls\nrm x'", "bash -c"),
        ("env FOO=1 ls", "env FOO=1 ls"),
        ("sudo apt install x", "sudo apt install x"),
        ("eval \"ls\"", "eval \"ls\""),
        ("echo 'unterminated", "echo"),
        ("", ""),
    ];
    for (command, expected) in table {
        assert_eq!(default_prefix(command), expected, "{command:?}");
    }
}

/// A prefix rule allows every command that starts with the prefix: these would
/// allow anything, so "Always in this folder" refuses to save them.
#[test]
fn too_broad_prefixes_are_the_ones_that_would_allow_anything() {
    let table = [
        ("", true),
        ("python3", true),
        ("python3 -c", true),
        ("/usr/bin/python3.12", true),
        ("node -e", true),
        ("awk -F:", true),
        ("perl", true),
        ("sed -n", true),
        ("find", true),
        ("find -L", true),
        ("xargs", true),
        ("npx", true),
        ("env", true),
        ("env FOO=1", true),
        ("timeout 10", true),
        ("sudo", true),
        ("bash", true),
        ("bash -x", true),
        ("git", true),
        ("git -c", true),
        ("git -C sub", true),
        ("git config", true),
        ("git rebase", true),
        ("npm exec", true),
        ("uv run", true),
        // Narrow enough: what runs is named.
        ("python3 script.py", false),
        ("python3 -m pytest", false),
        ("awk '{print $1}'", false),
        ("find . -name '*.rs'", false),
        ("xargs rm", false),
        ("env FOO=1 ls", false),
        ("timeout 10 cargo", false),
        ("bash -c", false),
        ("bash -lc", false),
        ("bash build.sh", false),
        ("git status", false),
        ("git -C sub status", false),
        ("git config user.name", false),
        ("npm run", false),
        ("npm exec eslint", false),
        ("cargo test", false),
        ("ls", false),
        ("make", false),
    ];
    for (prefix, broad) in table {
        assert_eq!(too_broad(prefix), broad, "{prefix:?}");
    }
}

/// What "Always in this folder" proposes by default can be saved, except for a
/// bare interpreter or runner with nothing after it.
#[test]
fn the_proposed_prefix_is_never_too_broad_when_the_command_names_what_runs() {
    for command in [
        "git -c core.pager=cat log",
        "git status --short",
        "python3 -c 'print(1)'",
        "find . -delete",
        "env FOO=1 ls",
        "xargs rm < list",
        "npx prettier .",
        "bash -c 'ls\nrm x'",
        "sudo apt install x",
        "git rebase -i main",
    ] {
        let prefix = default_prefix(command);
        assert!(!too_broad(&prefix), "{command:?} proposes {prefix:?}");
    }
    for command in ["python3", "git", "find", "env"] {
        assert!(too_broad(&default_prefix(command)), "{command:?}");
    }
}

proptest! {
    /// Joining commands with any operator never hides one: each simple command of
    /// each side is found in the whole.
    #[test]
    fn joined_commands_keep_every_part(
        a in "[a-z]{1,6}( [a-z0-9./-]{1,6}){0,2}",
        b in "[a-z]{1,6}( [a-z0-9./-]{1,6}){0,2}",
        op in prop::sample::select(vec![";", "&&", "||", "|", "&", "\n"]),
    ) {
        let joined = format!("{a} {op} {b}");
        if let (Ok(left), Ok(right), Ok(both)) = (split(&a), split(&b), split(&joined)) {
            let both: Vec<String> = both.into_iter().map(|p| p.text).collect();
            for part in left.into_iter().chain(right) {
                prop_assert!(both.contains(&part.text), "{:?} lost {:?}", joined, part.text);
            }
        }
    }
}

#[test]
fn assignments_and_arithmetic_on_variables_are_parts_no_rule_allows() {
    let parts = |command: &str| -> Vec<(String, bool)> {
        split(command).unwrap().into_iter().map(|p| (p.text, p.dynamic)).collect()
    };
    let own =
        |pairs: &[(&str, bool)]| -> Vec<(String, bool)> { pairs.iter().map(|(t, d)| (t.to_string(), *d)).collect() };
    assert_eq!(parts("FOO=1"), own(&[("FOO=1", true)]));
    assert_eq!(parts("a=1 b=2; ls"), own(&[("a=1 b=2", true), ("ls", false)]));
    assert_eq!(
        parts("a='x[$(touch /tmp/pwn)]'; git status $((a))"),
        own(&[("a='x[$(touch /tmp/pwn)]'", true), ("git status $((a))", true)])
    );
    assert_eq!(parts("((a)); git status"), own(&[("((a))", true), ("git status", false)]));
    assert_eq!(parts("echo $[a]"), own(&[("echo $[a]", true)]));
    assert_eq!(parts("echo ${x[i]}"), own(&[("echo ${x[i]}", true)]));
    assert_eq!(parts("echo ${x[1]} ${x[@]} $((1+2))"), own(&[("echo ${x[1]} ${x[@]} $((1+2))", false)]));
    assert_eq!(parts("[[ $a -eq 1 ]]"), own(&[("[[ $a -eq 1 ]]", true)]));
    assert_eq!(parts("[[ -f x ]]"), own(&[("[[ -f x ]]", false)]));
    assert!(parts("for ((i=0; i<n; i++)); do ls; done")
        .iter()
        .any(|(text, dynamic)| text.starts_with("for ((i=0; i<n; i++))") && *dynamic));
}

#[test]
fn long_commands_are_not_split() {
    let chain = vec!["true"; 2000].join(" && ");
    assert_eq!(split(&chain), Err(Unparsed::TooLong));
    assert_eq!(split(&format!("echo {}", "x".repeat(17 * 1024))), Err(Unparsed::TooLong));
    let chain = vec!["true"; 400].join(" && ");
    assert_eq!(split(&chain).map(|parts| parts.len()), Ok(400));
    // Redirection around a long chain reaches every part.
    let redirected = format!("{{ {}; }} > out", vec!["true"; 400].join(" && "));
    assert!(split(&redirected).unwrap().iter().all(|part| part.redirected));
}
