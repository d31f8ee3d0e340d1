//! The judge against real bash (issue 39, "what runs is what was judged"):
//! 12,000 generated commands, built from the tricks that got past the text rules
//! (escapes before `#`, `\` at a line's start, partly quoted here-document
//! delimiters, ANSI-C quoting, runners such as `find -exec`, `xargs`, `env -S`,
//! `bash -c`, aliases, functions). Each is judged in YOLO with `rm` and `touch`
//! denied; each that would run without a card is run by bash, both as written
//! (what an ACP agent runs) and as the hub's rendering (what the hub runs), in a
//! throwaway folder whose PATH holds only recording shims. Every program bash
//! ran must be one the hub judged, none may be a denied one, and the two runs
//! must run the same programs with the same arguments.

use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use protocol::api::{PolicyDecision, RuleTier};
use serde_json::json;

use super::render::faithful;
use super::shell::{self, Inner};
use super::{parse_policy_file, Mode, PolicySet, ToolCall};

const COMMANDS: usize = 12_000;
const DENIED: [&str; 2] = ["rm", "touch"];
/// Programs that only record their call.
const RECORDED: [&str; 6] = ["alpha", "beta", "rm", "touch", "git", "sudo"];
/// Programs that record their call, then run the real one (they run others).
const PASSED_ON: [&str; 9] = ["find", "xargs", "env", "cat", "bash", "sh", "nice", "timeout", "nohup"];

/// A small deterministic generator (xorshift), so a failure names its command.
struct Dice(u64);

impl Dice {
    fn below(&mut self, n: usize) -> usize {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 % n as u64) as usize
    }

    fn pick<'a>(&mut self, from: &[&'a str]) -> &'a str {
        from[self.below(from.len())]
    }
}

const NAMES: [&str; 20] = [
    "alpha",
    "beta",
    "git",
    "alpha",
    "beta",
    "git",
    "cat",
    "\\beta",
    "'git'",
    "al\"p\"ha",
    "$'beta'",
    "rm",
    "touch",
    "'rm'",
    "\"touch\"",
    "r\\m",
    "\\rm",
    "$'\\x72m'",
    "to''uch",
    "\\alpha",
];
const ARGS: [&str; 26] = [
    "x",
    "'a b'",
    "\"q r\"",
    "$'\\x72m'",
    "a\\ b",
    "\\#x",
    "'#'",
    "\"$HOME\"",
    "$(alpha)",
    "*",
    "~",
    "x#y",
    "\\\t#",
    "\\ #",
    "'it'\\''s'",
    "--flag=v",
    "A=1",
    "\"\"",
    "\\rm",
    "-c",
    "#z",
    "'\\n'",
    "\\\nrm",
    "fi",
    "then",
    "'if'",
];
const JOINS: [&str; 14] =
    ["; ", " && ", " || ", " | ", "\n", " & ", "\n\\", " \\\n", ";#c\n", " # c\n", "\\\t#;", "\\ #;", "\n\\\n", ";\n"];

fn simple(dice: &mut Dice) -> String {
    let mut words = vec![dice.pick(&NAMES).to_string()];
    for _ in 0..dice.below(4) {
        words.push(dice.pick(&ARGS).to_string());
    }
    words.join(" ")
}

fn runner(dice: &mut Dice) -> String {
    let name = dice.pick(&["alpha", "rm", "touch", "beta"]);
    match dice.below(26) {
        0 => format!("find . -name a -exec {name} {{}} +"),
        1 => format!("find . -maxdepth 0 -execdir {name} x \\;"),
        2 => format!("printf 'x\\n' | xargs {name}"),
        3 => format!("env {name} x"),
        4 => format!("env -S '{name} x'"),
        5 => format!("bash -c '{name} x'"),
        6 => format!("sh -c \"{name} y\""),
        7 => format!("eval '{name} x'"),
        8 => format!("nice {name} x"),
        9 => format!("timeout 5 {name} x"),
        10 => format!("nohup {name} x >/dev/null 2>&1"),
        11 => format!("command {name} x"),
        12 => format!("shopt -s expand_aliases\nalias r={name}\nr x"),
        13 => format!("f() {{ {name} x; }}; f"),
        14 => format!("bash -c \"alpha; {name} z\""),
        // From the hostile review of the first version.
        16 => format!("\r#;{name} x"),
        17 => format!("\\ #;{name} x"),
        18 => format!("command -- trap '{name} t' EXIT; alpha"),
        19 => format!("let 'a[$({name} l)]'"),
        20 => format!("printf -v 'a[$({name} p)]' y"),
        21 => format!("sh -c \"alpha \\$'\\\\'' #'; {name} s\""),
        22 => format!("env -vS'{name} e'"),
        23 => format!("alpha &\\\n> {name}"),
        24 => format!("eval $'alpha \\#;{name} v'"),
        25 => "$'\\562\\555' o".to_string(),
        _ => format!("env A=1 {name}"),
    }
}

fn here_document(dice: &mut Dice) -> String {
    let start = dice.pick(&["EOF", "'EOF'", "\"EOF\"", "E\"O\"F", "\\EOF", "-EOF", "E'O'F"]);
    let body = dice.pick(&["rm x", "$(rm x)", "`touch y`", "plain text", "EOF", "a $b"]);
    let end = dice.pick(&["EOF", "E\"O\"F", "\tEOF", "EOF "]);
    let after = dice.pick(&["", "\nrm z", "\nalpha", "\nE\"O\"F\ntouch w"]);
    let head = dice.pick(&["cat", "cat > out", "grep a", "alpha"]);
    format!("{head} <<{start}\n{body}\n{end}{after}")
}

fn statement(dice: &mut Dice, depth: usize) -> String {
    let inner = |dice: &mut Dice| if depth < 2 { statement(dice, depth + 1) } else { simple(dice) };
    match dice.below(12) {
        0..=4 => simple(dice),
        5 | 6 => runner(dice),
        7 => here_document(dice),
        8 => format!("( {} )", inner(dice)),
        9 => format!("{{ {}; }}", inner(dice)),
        10 => format!("if alpha; then {}; fi", inner(dice)),
        _ => format!("for i in a b; do {}; done", inner(dice)),
    }
}

fn generated(dice: &mut Dice) -> String {
    let mut text = statement(dice, 0);
    for _ in 0..dice.below(3) {
        text.push_str(dice.pick(&JOINS));
        text.push_str(&statement(dice, 0));
    }
    text
}

/// Every program name the hub judged in `command`: each part's name, through
/// wrappers, and the parts of the scripts it runs (`bash -c`, `find -exec`, `eval`).
fn judged_names(command: &str, into: &mut HashSet<String>) {
    let Ok(parts) = shell::split(command) else { return };
    for part in parts {
        for text in std::iter::once(&part.text).chain(&part.variants) {
            if let Some(first) = shell_words::split(text).ok().and_then(|words| words.into_iter().next()) {
                into.insert(first.rsplit('/').next().unwrap_or(&first).to_string());
            }
        }
        if let Some(Inner::Script(script)) = &part.inner {
            judged_names(script, into);
        }
    }
}

struct Place {
    root: PathBuf,
}

impl Place {
    fn new() -> Place {
        let root = std::env::temp_dir().join(format!("hub-differential-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        let shims = root.join("shims");
        std::fs::create_dir_all(&shims).unwrap();
        std::fs::create_dir_all(root.join("work/sub")).unwrap();
        std::fs::write(root.join("work/a"), "a\n").unwrap();
        // One write per call: the calls of a pipeline record at the same time.
        let record = r#"line="${0##*/}"; for a in "$@"; do line="$line [$a]"; done; printf '%s\n' "$line" >> "$LOG""#;
        for name in RECORDED {
            std::fs::write(shims.join(name), format!("#!/bin/sh\n{record}\n")).unwrap();
        }
        for name in PASSED_ON {
            let real = ["/usr/bin", "/bin"].iter().map(|dir| Path::new(dir).join(name)).find(|path| path.exists());
            let real = real.unwrap_or_else(|| panic!("no {name} on this machine"));
            std::fs::write(shims.join(name), format!("#!/bin/sh\n{record}\nexec {} \"$@\"\n", real.display())).unwrap();
        }
        for entry in std::fs::read_dir(&shims).unwrap() {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(entry.unwrap().path(), std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        Place { root }
    }

    /// The programs bash ran for `text` (sorted lines "name [arg]…"), once
    /// every process it started has ended (`&` leaves some running).
    fn run(&self, text: &str, log: &Path) -> Vec<String> {
        use std::os::unix::process::CommandExt;
        let _ = std::fs::remove_file(log);
        let mut child = Command::new("/bin/bash")
            .args(["-c", text])
            .env_clear()
            .env("PATH", self.root.join("shims"))
            .env("HOME", self.root.join("work"))
            .env("LOG", log)
            .current_dir(self.root.join("work"))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .expect("bash runs");
        let group = child.id() as i32;
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while child.try_wait().expect("bash is waited on").is_none() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        // The group is empty once kill(-group, 0) finds no one.
        while unsafe { libc::kill(-group, 0) } == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if std::time::Instant::now() >= deadline {
            unsafe { libc::kill(-group, libc::SIGKILL) };
            let _ = child.wait();
            panic!("{text:?} did not end");
        }
        let mut ran: Vec<String> =
            std::fs::read_to_string(log).unwrap_or_default().lines().map(str::to_string).collect();
        ran.sort();
        ran
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.root);
    }
}

#[derive(Default)]
struct Counts {
    ran_unseen: usize,
    asked_or_denied: usize,
    /// Asked about (no deny rule saw it), and bash would have run a denied program from the text.
    caught: usize,
}

fn check(place: &Place, set: &PolicySet, commands: &[String], log: &Path) -> Counts {
    let mut counts = Counts::default();
    for (i, command) in commands.iter().enumerate() {
        let args = json!({ "command": command });
        let verdict = set.evaluate(&ToolCall { name: "run_shell_command", args: &args }, Mode::Yolo);
        let denied = |ran: &[String]| {
            ran.iter().find(|line| DENIED.contains(&line.split(' ').next().unwrap_or_default())).cloned()
        };
        if matches!(verdict.decision, Some(PolicyDecision::Deny | PolicyDecision::AskUser)) {
            counts.asked_or_denied += 1;
            // Only where no deny spoke, one in four (for time): would the text have run a denied program?
            let asked = verdict.decision == Some(PolicyDecision::AskUser) && i % 4 == 0;
            if asked && denied(&place.run(command, log)).is_some() {
                counts.caught += 1;
            }
            continue;
        }
        counts.ran_unseen += 1;
        let as_written = place.run(command, log);
        assert_eq!(denied(&as_written), None, "{command:?} ran a denied program unseen ({verdict:?})");
        let mut judged = HashSet::new();
        judged_names(command, &mut judged);
        for line in &as_written {
            let name = line.split(' ').next().unwrap_or_default();
            assert!(judged.contains(name), "{command:?} ran {line:?}, which the hub did not judge ({judged:?})");
        }
        let rendered = faithful(command).unwrap_or_else(|why| panic!("{command:?} ran unseen, unrendered: {why}"));
        let as_rendered = place.run(&rendered, log);
        assert_eq!(as_written, as_rendered, "{command:?} and its rendering {rendered:?} ran different programs");
    }
    counts
}

#[test]
fn every_program_bash_runs_unseen_is_one_the_hub_judged() {
    let text = DENIED
        .iter()
        .map(|name| format!("[[rule]]\ntoolName = \"run_shell_command\"\ncommandPrefix = \"{name}\"\ndecision = \"deny\"\npriority = 500\n"))
        .collect::<String>();
    let (rules, problems) = parse_policy_file(&text, "/deny.toml", RuleTier::Workspace, "deny");
    assert!(problems.is_empty(), "{problems:?}");
    let set = PolicySet::new(rules, Vec::new());
    let place = Place::new();
    let mut dice = Dice(0x9e37_79b9_7f4a_7c15);
    let commands: Vec<String> = (0..COMMANDS).map(|_| generated(&mut dice)).collect();
    assert!(commands.iter().collect::<HashSet<_>>().len() > COMMANDS / 2, "the generator repeats itself");
    // Two workers (the machines have two cores), each with its own log.
    let halves: Vec<&[String]> = commands.chunks(COMMANDS.div_ceil(2)).collect();
    let counts: Vec<Counts> = std::thread::scope(|scope| {
        let workers: Vec<_> = halves
            .iter()
            .enumerate()
            .map(|(i, half)| {
                let (place, set) = (&place, &set);
                scope.spawn(move || check(place, set, half, &place.root.join(format!("log{i}"))))
            })
            .collect();
        workers.into_iter().map(|worker| worker.join().unwrap()).collect()
    });
    let total = |f: fn(&Counts) -> usize| counts.iter().map(f).sum::<usize>();
    let (unseen, stopped, caught) = (total(|c| c.ran_unseen), total(|c| c.asked_or_denied), total(|c| c.caught));
    eprintln!("{COMMANDS} commands: {unseen} ran unseen, {stopped} asked or denied, {caught} of those asked (no deny saw them; one in four run) where bash would have run rm or touch");
    // The generator reaches both sides, and the tricks are real: bash runs a denied program in many it stopped.
    assert!(unseen > COMMANDS / 10, "only {unseen} commands ran unseen");
    assert!(caught > COMMANDS / 200, "only {caught} asked commands would have run a denied program");
}
