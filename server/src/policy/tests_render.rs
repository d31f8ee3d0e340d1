//! The rendering and the faithfulness check, case by case; `tests_differential`
//! checks them against real bash.

use super::render::{faithful, render};

#[track_caller]
fn renders(command: &str, expected: &str) {
    assert_eq!(faithful(command).as_deref(), Ok(expected), "{command:?}");
}

#[track_caller]
fn asks(command: &str) {
    assert!(faithful(command).is_err(), "{command:?} was taken as faithful: {:?}", faithful(command));
}

#[test]
fn everyday_commands_render_as_themselves_or_requoted() {
    renders("git status", "git status");
    renders("cargo test 2>&1 | tail -20", "cargo test 2>&1 | tail -20");
    renders("cd sub && npm test", "cd sub && npm test");
    renders("git commit -m \"fix the bug\"", "git commit -m 'fix the bug'");
    renders("echo $'a\\tb' x\"y\"z it\\'s", "echo 'a\tb' 'xyz' 'it'\\''s'");
    renders("ls -la; echo done &", "ls -la\necho done &");
    renders("(cd a; ls) && { echo hi; echo there; } >> f", "( cd a\nls\n) && { echo hi\necho there\n} >> f");
    renders("FOO=1 BAR=\"x y\" env", "FOO=1 BAR='x y' env");
    renders(
        "if true; then echo a; elif false; then echo b; else echo c; fi",
        "if true\nthen echo a\nelif false\nthen echo b\nelse echo c\nfi",
    );
    renders("for f in a b \"c d\"; do echo x; done", "for f in a b 'c d'\ndo echo x\ndone");
    renders("cat > f <<'EOF'\nhello $x\nEOF\necho done", "cat > f <<'EOF'\nhello $x\nEOF\necho done");
    renders("cat <<EOF | grep a && echo y\na\nEOF", "cat <<'EOF' | grep a && echo y\na\nEOF");
    renders("echo a b \\\n  c # note", "echo a b c");
    renders("set -euo pipefail; make", "set -euo pipefail\nmake");
    renders("! git diff --quiet", "! git diff --quiet");
    renders("cd ~/src && ls ~", "cd ~/src && ls ~");
    renders("echo $$ > pid; exec sleep 1", "echo $$ > pid\nexec sleep 1");
}

#[test]
fn what_bash_reads_otherwise_asks() {
    // The cases: an escaped blank before `#`, a line starting with `\`.
    asks("git status \\\t#;touch x");
    asks("git status \\ #;touch x");
    asks("git status\n\\touch x");
    // A partly quoted here-document delimiter: bash ends the body at `EOF`.
    asks("cat <<E\"O\"F\nrm x\nEOF\nE\"O\"F");
    asks("cat <<-EOF\n\trm x\n\tEOF");
    // What changes what later text runs.
    asks("shopt -s expand_aliases\nalias r=rm\nr x");
    asks("source ./env.sh; make");
    asks(". ./env.sh");
    asks("hash -p /tmp/evil ls; ls");
    asks("trap 'rm x' EXIT; true");
    asks("set -k; env A=1");
    asks("builtin alias r=rm");
    asks("f() { rm x; }; f");
    // Expansions, globs and braces are known only when they run.
    asks("echo $HOME");
    asks("echo $$x");
    asks("echo \"$$\"");
    asks("ls *.rs");
    asks("echo {a,b}");
    asks("cd ~bob/src");
    asks("[ -f x ] && ls");
}

#[test]
fn rendering_is_read_by_bash_as_written() {
    // A rendering is faithful to itself: the hub can run it again.
    for command in ["git status", "cat <<EOF | grep a && echo y\na\nEOF", "echo 'it'\\''s' \"a b\""] {
        let rendered = render(command).unwrap();
        assert_eq!(faithful(&rendered).as_deref(), Ok(rendered.as_str()));
    }
}
