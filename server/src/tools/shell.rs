//! run_shell_command: bash in the project folder, in its own process group, with
//! an allow-listed environment (`process::command_env`): none of the hub's secrets. The call ends when bash does; then, as on a timeout or when
//! Stop drops the call, the whole group is ended (SIGTERM, SIGKILL after a grace).
//! [`start`] is shared with the terminals ACP agents open (`terminal`).
//! So nothing a command starts keeps running unseen, at a price: `server &` in a
//! command is stopped when the call ends.

use std::ffi::OsString;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd};
use std::process::Stdio;
use std::time::Duration;

use protocol::events::OutputStream;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};

use super::process::{command_env, GroupGuard};
use super::Folder;
use super::{ToolFailure, ToolResult, MAX_OUTPUT};
use crate::sandbox::{Prepared, Reach, Request, Terms};

/// How long output is still read once bash has exited: what is already in the
/// pipes is taken in, but a background child holding them open does not hold
/// the call (it would until the timeout).
const READ_AFTER_EXIT: Duration = Duration::from_millis(150);

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShellArgs {
    command: String,
    #[allow(dead_code)] // shown to the user on the card; the shell does not need it
    #[serde(default)]
    description: Option<String>,
}

/// At most `MAX_OUTPUT` bytes of a stream, and how many there were.
#[derive(Default)]
struct Captured {
    kept: Vec<u8>,
    total: usize,
}

/// Where a command's output goes as it comes (the page's live view), besides
/// its result; an empty piece says it has ended.
pub(crate) type Live = std::sync::Arc<dyn Fn(OutputStream, &[u8]) + Send + Sync>;

/// Reads the stream to its end, handing each piece to `take`; what came stays
/// taken if the read is given up on.
pub(crate) async fn drain(mut stream: impl AsyncRead + Unpin, mut take: impl FnMut(&[u8])) {
    let mut buffer = [0u8; 8192];
    while let Ok(n) = stream.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        take(&buffer[..n]);
    }
}

impl Captured {
    fn take(&mut self, piece: &[u8]) {
        self.total += piece.len();
        let room = MAX_OUTPUT.saturating_sub(self.kept.len());
        self.kept.extend_from_slice(&piece[..piece.len().min(room)]);
    }
}

/// A command started in the sandbox: its process, its group (ended, with
/// everything in it, when this is dropped) and the root it runs in.
pub(crate) struct Started {
    pub child: tokio::process::Child,
    pub group: GroupGuard,
    pub sandboxed: bool,
    root: std::path::PathBuf,
}

/// Starts `program args…` in `folder`, the directory itself rather than its
/// path (a folder renamed and replaced by a symlink does not move the
/// command), inside the sandbox `terms` give (bound by the held directory
/// too), with the commands' allow-listed environment and piped output.
pub(crate) fn start(folder: &Folder, program: &str, args: &[OsString], terms: &Terms) -> Result<Started, ToolFailure> {
    let dir = folder.as_fd().as_raw_fd();
    // Where the held directory is now (the path it was opened at may since
    // name something else): the sandbox binds it there.
    let here =
        std::fs::read_link(format!("/proc/self/fd/{dir}")).ok().filter(|path| path.is_absolute() && path.is_dir());
    let root = here.clone().unwrap_or_else(|| folder.root().to_path_buf());
    let request = Request {
        root: &root,
        root_fd: Some(dir),
        reach: Reach::Command,
        network: terms.network,
        hide_agent_config: false,
        env: &[],
        agent: None,
        masks: &terms.masks,
    };
    let could_not =
        |err: &dyn std::fmt::Display| ToolFailure::new("spawn_failed", format!("Could not start {program}: {err}."));
    // `_held`: the writable paths bwrap binds by descriptor, open until the spawn.
    let Prepared { mut command, placeholders, sandboxed, held: _held } =
        terms.sandbox.command(&request, &program.into(), args).map_err(|err| could_not(&err))?;
    command.stdin(Stdio::null()).stdout(Stdio::piped()).stderr(Stdio::piped());
    command_env(&mut command);
    // SAFETY: fchdir is async-signal-safe. `dir` stays open in the hub until
    // the spawn returns (borrowed for this call); the child's copy is closed at
    // exec (CLOEXEC), or by bwrap once bound. On Linux it is an O_PATH fd, which fchdir takes.
    unsafe {
        command.pre_exec(move || Ok(rustix::process::fchdir(BorrowedFd::borrow_raw(dir))?));
    }
    // No kill_on_drop: it would SIGKILL bash alone; the guard ends the group.
    let child = command.spawn().map_err(|err| could_not(&err))?;
    // From here on, however the call ends, its group ends with it, and the
    // stand-ins go once nothing of it runs.
    let mut placeholders = placeholders;
    if let Some(pgid) = child.id() {
        placeholders.started(pgid);
    }
    let group = GroupGuard::new(child.id()).holding(placeholders);
    Ok(Started { child, group, sandboxed, root })
}

impl Started {
    /// What the sandbox has to say once the command has ended, a line each:
    /// a planted git file it removed, a write or connection the kernel refused
    /// (`output`: what the command printed).
    pub(crate) fn notes(&self, output: &str) -> String {
        let mut notes = String::new();
        if !self.sandboxed {
            return notes;
        }
        if let Some(removed) = crate::sandbox::tidy_git(&self.root) {
            notes.push_str(&removed);
            notes.push('\n');
        }
        if let Some(what) = crate::sandbox::refusal_in(output) {
            notes.push_str(&format!("{} {what}]\n", crate::sandbox::REFUSED_NOTE));
        }
        notes
    }
}

/// Runs the command with bash in `folder`, in the sandbox `terms` give;
/// `live` gets the output as it comes.
pub async fn run(folder: &Folder, args: ShellArgs, timeout: Duration, terms: &Terms, live: Option<Live>) -> ToolResult {
    if args.command.trim().is_empty() {
        return Err(ToolFailure::new("invalid_arguments", "The command is empty."));
    }
    // `--`: a command starting with `-` or `+` is a command, not bash's options.
    let mut started = start(folder, "bash", &["-c".into(), "--".into(), args.command.clone().into()], terms)?;
    let child = &mut started.child;
    let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
        return Err(ToolFailure::new("io_error", "The command's output could not be read."));
    };
    let (mut out, mut err) = (Captured::default(), Captured::default());
    let finished = {
        let show = |stream: OutputStream, piece: &[u8]| {
            if let Some(live) = &live {
                live(stream, piece);
            }
        };
        let reading = async {
            tokio::join!(
                drain(stdout, |piece| {
                    out.take(piece);
                    show(OutputStream::Stdout, piece);
                }),
                drain(stderr, |piece| {
                    err.take(piece);
                    show(OutputStream::Stderr, piece);
                })
            );
        };
        let mut reading = std::pin::pin!(reading);
        let ended = async {
            tokio::select! {
                status = child.wait() => {
                    let _ = tokio::time::timeout(READ_AFTER_EXIT, &mut reading).await;
                    status
                }
                () = &mut reading => child.wait().await,
            }
        };
        tokio::time::timeout(timeout, ended).await
    };
    // Its output is all in: what the live view gathered goes out.
    if let Some(live) = &live {
        live(OutputStream::Stdout, &[]);
    }
    let Ok(status) = finished else {
        return Err(ToolFailure::new(
            "timeout",
            format!("The command did not finish within {} s and was stopped.", timeout.as_secs()),
        ));
    };
    let status = status.map_err(|err| ToolFailure::new("io_error", err.to_string()))?;
    // bash is reaped. Unsandboxed, what is still in the group was left behind. In the sandbox
    // the kernel ends its PID namespace with bash (bwrap's own init may still
    // be going when this looks), so there is nothing to tell apart.
    let left_behind = started.group.end_waiting(Duration::from_secs(2)).await && !started.sandboxed;
    let mut text = String::new();
    push_stream(&mut text, "", &out);
    push_stream(&mut text, "stderr:\n", &err);
    if left_behind {
        text.push_str("[processes the command left running were stopped when it ended]\n");
    }
    let code = status.code().map_or_else(|| "killed by a signal".to_string(), |code| code.to_string());
    let notes = started.notes(&text);
    text.push_str(&notes);
    text.push_str(&format!("Exit code: {code}"));
    Ok(text)
}

fn push_stream(text: &mut String, label: &str, captured: &Captured) {
    let Captured { kept, total } = captured;
    if *total == 0 {
        return;
    }
    text.push_str(label);
    text.push_str(&String::from_utf8_lossy(kept));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if *total > kept.len() {
        text.push_str(&format!("[output truncated: showing {} of {total} bytes]\n", kept.len()));
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    /// The directory a command runs in, opened as the workspace holds it.
    fn at(path: &Path) -> std::sync::Arc<Folder> {
        Folder::held(&path.canonicalize().unwrap()).unwrap()
    }

    /// The sandbox as this machine has it, network off.
    fn terms() -> crate::sandbox::Terms {
        crate::sandbox::Terms::on_this_machine()
    }

    fn args(command: &str) -> ShellArgs {
        ShellArgs { command: command.into(), description: None }
    }

    #[tokio::test]
    async fn runs_in_the_folder_and_reports_exit_code_and_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(&at(dir.path()), args("pwd; echo oops >&2; exit 3"), Duration::from_secs(10), &terms(), None)
            .await
            .unwrap();
        let root = dir.path().canonicalize().unwrap();
        assert!(out.starts_with(&format!("{}\n", root.display())), "{out}");
        assert!(out.contains("stderr:\noops\n") && out.ends_with("Exit code: 3"), "{out}");
        assert!(!out.contains("left running"), "nothing was left behind: {out}");
    }

    #[tokio::test]
    async fn huge_output_is_capped_with_the_total_said() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(
            &at(dir.path()),
            args("head -c 3000000 /dev/zero | tr '\\0' x"),
            Duration::from_secs(20),
            &terms(),
            None,
        )
        .await
        .unwrap();
        assert!(out.len() < MAX_OUTPUT + 200, "{}", out.len());
        assert!(out.contains("of 3000000 bytes]"), "{}", &out[out.len() - 120..]);
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let command = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let err = run(&at(dir.path()), args(&command), Duration::from_millis(300), &terms(), None).await.unwrap_err();
        assert_eq!(err.kind, "timeout");
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert!(!marker.exists(), "a background child outlived the timeout");
    }

    /// State and process group of a process, from /proc/<pid>/stat.
    fn stat(pid: &str) -> Option<(String, u32)> {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        // The command name may hold spaces and parentheses: the fields start after the last ')'.
        let mut fields = stat.rsplit(')').next()?.split_whitespace();
        let state = fields.next()?.to_string();
        let pgid = fields.nth(1)?.parse().ok()?;
        Some((state, pgid))
    }

    fn pids() -> Vec<String> {
        let entries = std::fs::read_dir("/proc").unwrap();
        entries
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter(|name| name.bytes().all(|b| b.is_ascii_digit()))
            .collect()
    }

    /// Live (not zombie) processes of a group.
    fn live_in_group(pgid: u32) -> Vec<String> {
        pids()
            .into_iter()
            .filter(|pid| matches!(stat(pid), Some((state, group)) if group == pgid && state != "Z"))
            .collect()
    }

    /// The groups of live processes whose command line is exactly `argv`.
    fn groups_running(argv: &[&str]) -> Vec<u32> {
        let wanted: Vec<u8> = argv.iter().flat_map(|arg| arg.bytes().chain([0])).collect();
        pids()
            .into_iter()
            .filter(|pid| std::fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|line| line == wanted))
            .filter_map(|pid| stat(&pid).filter(|(state, _)| state != "Z").map(|(_, group)| group))
            .collect()
    }

    /// Waits until a process runs `argv`; its group.
    async fn started(argv: &[&str]) -> u32 {
        for _ in 0..500 {
            if let Some(&pgid) = groups_running(argv).first() {
                return pgid;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{argv:?} never started");
    }

    /// Polls `done` for up to `limit`; how long it took, or None.
    fn within(limit: Duration, mut done: impl FnMut() -> bool) -> Option<Duration> {
        let start = std::time::Instant::now();
        while start.elapsed() < limit {
            if done() {
                return Some(start.elapsed());
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        None
    }

    /// Stop drops the call's future: the command and everything it started end
    /// (a foreground child, a background one), not only bash.
    #[tokio::test]
    async fn stop_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let command = "sleep 600.101 & sleep 600.102; echo done";
        let (cwd, terms) = (at(dir.path()), terms());
        let pgid = tokio::select! {
            result = run(&cwd, args(command), Duration::from_secs(120), &terms, None) => panic!("finished: {result:?}"),
            pgid = started(&["sleep", "600.102"]) => pgid,
        };
        // The call's future is dropped here, as Stop drops the turn.
        let took = within(Duration::from_secs(3), || live_in_group(pgid).is_empty());
        println!("stop: the group was gone after {took:?}");
        assert!(took.is_some(), "still running after Stop: {:?}", live_in_group(pgid));
    }

    /// A command that ignores SIGTERM is killed after the grace.
    #[tokio::test]
    async fn stop_kills_a_group_that_ignores_sigterm() {
        let dir = tempfile::tempdir().unwrap();
        let command = "trap '' TERM; sleep 600.103; echo done";
        let (cwd, terms) = (at(dir.path()), terms());
        let pgid = tokio::select! {
            result = run(&cwd, args(command), Duration::from_secs(120), &terms, None) => panic!("finished: {result:?}"),
            pgid = started(&["sleep", "600.103"]) => pgid,
        };
        let took = within(Duration::from_secs(5), || live_in_group(pgid).is_empty());
        println!("stop, SIGTERM ignored: the group was gone after {took:?}");
        assert!(took.is_some(), "still running after Stop: {:?}", live_in_group(pgid));
    }

    /// The future may be dropped where no runtime runs (a thread of its own).
    #[test]
    fn stop_works_when_the_call_is_dropped_outside_a_runtime() {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().to_path_buf();
        let mut call = Box::pin(async move {
            run(&at(&root), args("sleep 600.104; echo done"), Duration::from_secs(120), &terms(), None).await
        });
        let pgid = runtime.block_on(async {
            tokio::select! {
                result = &mut call => panic!("finished: {result:?}"),
                pgid = started(&["sleep", "600.104"]) => pgid,
            }
        });
        std::thread::spawn(move || drop(call)).join().unwrap();
        let took = within(Duration::from_secs(3), || live_in_group(pgid).is_empty());
        assert!(took.is_some(), "still running after Stop: {:?}", live_in_group(pgid));
    }

    /// The call ends when bash does: a background child holding the output pipe
    /// open does not keep it waiting, and it does not outlive the call either
    /// (nor does one that let go of the pipe).
    #[tokio::test]
    async fn background_children_neither_hold_the_call_nor_outlive_it() {
        let dir = tempfile::tempdir().unwrap();
        for (command, marker) in
            [("sleep 600.105 & echo hi", "600.105"), ("sleep 600.106 >/dev/null 2>&1 & echo hi", "600.106")]
        {
            let start = std::time::Instant::now();
            let out = run(&at(dir.path()), args(command), Duration::from_secs(10), &terms(), None).await;
            let took = start.elapsed();
            println!("{command}: returned after {took:?}");
            let out = out.unwrap();
            assert!(out.starts_with("hi\n") && out.ends_with("Exit code: 0"), "{out}");
            assert!(took < Duration::from_secs(2), "{command}: took {took:?}");
            // Unsandboxed, the hub finds them in the call's group and says so; in the
            // sandbox they are in its PID namespace, which the kernel ends with bash.
            if !terms().sandbox.enforced() {
                assert!(out.contains("[processes the command left running were stopped when it ended]\n"), "{out}");
            }
            let gone = within(Duration::from_secs(3), || groups_running(&["sleep", marker]).is_empty());
            assert!(gone.is_some(), "{command}: the background sleep outlived the call");
        }
    }

    /// Run as a child of `env_seen_by_a_command`, with the secrets in its
    /// environment and `SHELL_ENV_PROBE_PASS` as `--command-env`; on its own it
    /// does nothing.
    #[tokio::test]
    async fn env_probe() {
        if std::env::var_os("SHELL_ENV_PROBE").is_none() {
            return;
        }
        if let Ok(names) = std::env::var("SHELL_ENV_PROBE_PASS") {
            let names: Vec<String> = names.split(',').map(str::to_string).collect();
            crate::tools::pass_to_commands(&names).unwrap();
        }
        let dir = tempfile::tempdir().unwrap();
        println!("{}", run(&at(dir.path()), args("env"), Duration::from_secs(10), &terms(), None).await.unwrap());
    }

    /// `env` as a command sees, run in a child test process whose environment
    /// holds `vars` on top of this one's (each test binary shares one environment).
    fn env_seen_by_a_command(vars: &[(&str, &str)]) -> String {
        let output = std::process::Command::new(std::env::current_exe().unwrap())
            .args(["tools::shell::tests::env_probe", "--exact", "--nocapture", "--test-threads=1"])
            .env("SHELL_ENV_PROBE", "1")
            .envs(vars.iter().copied())
            .output()
            .unwrap();
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        assert!(output.status.success(), "{stdout}");
        assert!(stdout.contains("Exit code: 0"), "the probe ran `env`: {stdout}");
        stdout
    }

    /// Issue 24, item 10: `env > env.txt` in a command showed GITHUB_TOKEN and
    /// ANTHROPIC_API_KEY. A command gets what building takes, nothing else.
    #[test]
    fn commands_do_not_inherit_the_hubs_secrets() {
        let seen = env_seen_by_a_command(&[
            ("OPENAI_API_KEY", "sk-probe-secret"),
            ("HUB_TOKEN", "probe-token-secret"),
            ("HUB_FOO", "probe-foo-secret"),
            ("GITHUB_TOKEN", "ghp-probe-secret"),
            ("ANTHROPIC_API_KEY", "sk-ant-probe-secret"),
            ("AWS_SECRET_ACCESS_KEY", "aws-probe-secret"),
            ("SSH_AUTH_SOCK", "/tmp/probe-agent.sock"),
            ("LC_TIME", "C"),
        ]);
        for secret in [
            "sk-probe-secret",
            "probe-token-secret",
            "probe-foo-secret",
            "ghp-probe-secret",
            "sk-ant-probe-secret",
            "aws-probe-secret",
            "probe-agent.sock",
        ] {
            assert!(!seen.contains(secret), "{secret} reached the command: {seen}");
        }
        let path = std::env::var("PATH").unwrap();
        assert!(seen.lines().any(|line| line == format!("PATH={path}")), "PATH is kept: {seen}");
        if let Ok(home) = std::env::var("HOME") {
            assert!(seen.lines().any(|line| line == format!("HOME={home}")), "HOME is kept: {seen}");
        }
        assert!(seen.lines().any(|line| line == "LC_TIME=C"), "the locale is kept: {seen}");
    }

    #[test]
    fn a_variable_named_by_command_env_reaches_commands() {
        let seen = env_seen_by_a_command(&[
            ("SHELL_ENV_PROBE_PASS", "NPM_TOKEN, PROBE_UNSET"),
            ("NPM_TOKEN", "npm-probe-given"),
            ("GITHUB_TOKEN", "ghp-probe-secret"),
        ]);
        assert!(seen.lines().any(|line| line == "NPM_TOKEN=npm-probe-given"), "{seen}");
        assert!(!seen.contains("PROBE_UNSET") && !seen.contains("ghp-probe-secret"), "{seen}");
        assert!(seen.lines().any(|line| line.starts_with("PATH=")), "{seen}");
    }

    #[tokio::test]
    async fn empty_command_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(
            run(&at(dir.path()), args("  "), Duration::from_secs(1), &terms(), None).await.unwrap_err().kind,
            "invalid_arguments"
        );
    }
}
