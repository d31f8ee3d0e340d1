//! What every process the hub starts for an agent shares (the built-in agent's
//! commands, ACP agents): it gets an allow-listed part of the hub's environment
//! (never the hub's secrets), runs in a process group of its own, and that group
//! is ended as a whole: SIGTERM, then SIGKILL after a short grace for whatever
//! is still there.

use std::ffi::{OsStr, OsString};
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};

/// How long a group has to end after SIGTERM before SIGKILL.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);
/// How often the group is looked at during the grace: once it is gone, its id
/// is never signalled again.
const CHECK_EVERY: Duration = Duration::from_millis(20);

/// What a process the hub starts inherits from the hub's environment: what
/// finding programs and files and reading the user's settings take, nothing that
/// grants access. A key, a token or an agent's socket (`SSH_AUTH_SOCK`, which
/// signs with the user's keys) is passed only when the user names it
/// (`--command-env`, `--acp-env`). A toolchain's home is a path, no secret, and
/// without it a toolchain installed elsewhere than the default is not found
/// (`rustup` proxies, `cargo`, `go`, a JDK, nvm's node). Proxies are left out:
/// their URLs may hold a password. `PWD` is not passed on: bash sets it to the
/// folder it runs in.
const INHERITED: [&str; 17] = [
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LANGUAGE",
    "TZ",
    "TMPDIR",
    "CARGO_HOME",
    "RUSTUP_HOME",
    "GOPATH",
    "GOROOT",
    "JAVA_HOME",
    "NVM_DIR",
    "PYENV_ROOT",
];

/// Families of variables inherited as well: the locale (`LC_ALL`, `LC_TIME`…)
/// and the user's directories (`XDG_CONFIG_HOME`, `XDG_RUNTIME_DIR`…).
const INHERITED_FAMILIES: [&str; 2] = ["LC_", "XDG_"];

/// ACP agents also get the ready agents' settings that are no secrets: the
/// endpoint and model Qwen Code and Codex read (`OPENAI_BASE_URL`,
/// `OPENAI_MODEL`; with `--agent acp` they are there for the agent) and where
/// Codex and Claude Code keep their configuration.
const INHERITED_BY_AGENTS: [&str; 4] = ["OPENAI_BASE_URL", "OPENAI_MODEL", "CODEX_HOME", "CLAUDE_CONFIG_DIR"];

fn is_inherited(name: &OsStr) -> bool {
    let bytes = name.as_encoded_bytes();
    INHERITED.iter().any(|allowed| allowed.as_bytes() == bytes)
        || INHERITED_FAMILIES.iter().any(|family| bytes.starts_with(family.as_bytes()))
}

/// The hub's own secrets and settings, which nothing it starts gets unless
/// `--acp-env` names them for an agent: the model's API key, the variable the
/// agents file names as the built-in agent's (`api_key_env`) and every `HUB_*`
/// variable (the launch token `HUB_TOKEN` among them). `--command-env` cannot
/// give them to commands.
fn is_hub_variable(name: &OsStr) -> bool {
    let bytes = name.as_encoded_bytes();
    bytes == b"OPENAI_API_KEY" || bytes.starts_with(b"HUB_") || more_secrets().iter().any(|secret| secret == name)
}

/// Variables the agents file names as the built-in agent's API key
/// (`api_key_env`): secrets of the hub like `OPENAI_API_KEY`.
static MORE_SECRETS: std::sync::RwLock<Vec<OsString>> = std::sync::RwLock::new(Vec::new());

fn more_secrets() -> std::sync::RwLockReadGuard<'static, Vec<OsString>> {
    MORE_SECRETS.read().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Keeps the variable `name` from everything the hub starts from now on.
pub fn keep_secret(name: &str) {
    let mut secrets = MORE_SECRETS.write().unwrap_or_else(|poisoned| poisoned.into_inner());
    if !secrets.iter().any(|secret| secret == name) {
        secrets.push(name.into());
    }
}

/// The variables `--command-env` passes on to commands besides [`INHERITED`].
static COMMAND_ENV: std::sync::RwLock<Vec<OsString>> = std::sync::RwLock::new(Vec::new());

/// `--command-env` named one of the hub's own secrets.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "--command-env {0}: {0} is one of the hub's own secrets (OPENAI_API_KEY, HUB_*, the agents file's \
     api_key_env) and is never given to the agent's commands"
)]
pub struct SecretForCommands(pub String);

/// Commands get these variables of the hub's environment too (`--command-env`);
/// called once the agents file's `api_key_env` is known (`keep_secret`). Refuses
/// (and passes on none) if one of them is a secret of the hub's.
pub fn pass_to_commands(names: &[String]) -> Result<(), SecretForCommands> {
    let names: Vec<&str> = names.iter().map(|name| name.trim()).filter(|name| !name.is_empty()).collect();
    if let Some(secret) = names.iter().find(|name| is_hub_variable(OsStr::new(name))) {
        return Err(SecretForCommands(secret.to_string()));
    }
    *COMMAND_ENV.write().unwrap_or_else(|poisoned| poisoned.into_inner()) =
        names.into_iter().map(OsString::from).collect();
    Ok(())
}

/// What a command of the built-in agent's shell tool gets: [`INHERITED`] and
/// the variables named by `--command-env` (never a secret of the hub's, even if
/// one was named since).
pub(crate) fn command_env(command: &mut tokio::process::Command) {
    let named = COMMAND_ENV.read().unwrap_or_else(|poisoned| poisoned.into_inner());
    let given = |name: &OsStr| named.iter().any(|passed| passed == name) && !is_hub_variable(name);
    allow_listed(command, std::env::vars_os(), given);
}

/// What an ACP agent gets before its own variables (`--acp-env`'s and its
/// entry's `env`, which its launch adds): [`INHERITED`] and `OPENAI_BASE_URL`.
pub(crate) fn scrub_env(command: &mut tokio::process::Command) {
    let for_agents =
        |name: &OsStr| INHERITED_BY_AGENTS.iter().any(|allowed| allowed.as_bytes() == name.as_encoded_bytes());
    allow_listed(command, std::env::vars_os(), for_agents);
}

/// What the hub's own helpers (git for the changes panel) get: [`INHERITED`] only.
pub(crate) fn inherited_env(command: &mut tokio::process::Command) {
    allow_listed(command, std::env::vars_os(), |_| false);
}

/// Starts `command` from an empty environment with the inherited variables of
/// `vars` and those `also` accepts. Call it before setting the command's own
/// variables: it clears them.
fn allow_listed(
    command: &mut tokio::process::Command,
    vars: impl IntoIterator<Item = (OsString, OsString)>,
    also: impl Fn(&OsStr) -> bool,
) {
    command.env_clear();
    for (name, value) in vars {
        if is_inherited(&name) || also(&name) {
            command.env(name, value);
        }
    }
}

/// Groups sent SIGTERM whose grace has not run out. The thread waiting out a
/// grace dies with the hub, so at its exit these get SIGKILL at once
/// ([`kill_remaining_groups`]): a command that ignores SIGTERM does not
/// outlive the hub.
static ENDING: std::sync::Mutex<std::collections::BTreeSet<u32>> =
    std::sync::Mutex::new(std::collections::BTreeSet::new());

fn ending() -> std::sync::MutexGuard<'static, std::collections::BTreeSet<u32>> {
    ENDING.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The hub is exiting: every group still in its grace gets SIGKILL now.
/// Returns how many were still there.
pub fn kill_remaining_groups() -> usize {
    let groups = std::mem::take(&mut *ending());
    groups
        .into_iter()
        .filter_map(|pgid| i32::try_from(pgid).ok().and_then(Pid::from_raw))
        .filter(|group| kill_process_group(*group, Signal::KILL).is_ok())
        .count()
}

/// Sends SIGTERM to the group and, if any of it is still there after
/// `KILL_GRACE`, SIGKILL. Returns at once (a thread waits out the grace, so this
/// works in `Drop`, in or out of a runtime); `true` when anything was signalled.
///
/// Linux never hands out a pid still in use as a group id, so the id can only
/// be recycled once the group is gone. The thread checks every `CHECK_EVERY`
/// and stops as soon as it is gone: the SIGKILL reaches a recycled group only if
/// the whole pid space wrapped within those 20 ms, which is accepted.
pub(crate) fn terminate_group(pgid: u32) -> bool {
    terminate_group_sparing(pgid, false)
}

/// [`terminate_group`]; with `spare_leader` the SIGTERM goes to every member
/// but the group's leader: a sandbox's bwrap, whose end would end everything
/// in it at once (SIGKILL), before an agent could use its grace to save.
pub(crate) fn terminate_group_sparing(pgid: u32, spare_leader: bool) -> bool {
    // 0 would be our own group: never.
    let Some(group) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else {
        return false;
    };
    // ESRCH: nothing left (EPERM cannot happen for a group we started).
    if !signal_group(group, Signal::TERM, spare_leader) {
        return false;
    }
    ending().insert(pgid);
    let waiting = std::thread::Builder::new().name("end-process-group".into()).spawn(move || {
        let deadline = Instant::now() + KILL_GRACE;
        while Instant::now() < deadline {
            std::thread::sleep(CHECK_EVERY);
            if test_kill_process_group(group).is_err() {
                ending().remove(&pgid);
                return;
            }
        }
        // Only if the exit has not taken it already (its id may be free by now).
        if ending().remove(&pgid) {
            let _ = kill_process_group(group, Signal::KILL);
        }
    });
    if waiting.is_err() {
        // No thread to wait with: no grace either, rather than no end.
        ending().remove(&pgid);
        let _ = kill_process_group(group, Signal::KILL);
    }
    true
}

/// Signals the group; with `spare_leader`, its members but the leader (the
/// leader too when it is all that is left). Whether anything was signalled.
pub(crate) fn signal_group(group: Pid, signal: Signal, spare_leader: bool) -> bool {
    if !spare_leader {
        return kill_process_group(group, signal).is_ok();
    }
    let leader = group.as_raw_nonzero().get();
    let members: Vec<Pid> = crate::sandbox::group_members(leader as u32)
        .into_iter()
        .filter_map(|member| Pid::from_raw(i32::try_from(member.pid).ok()?))
        .filter(|pid| pid.as_raw_nonzero().get() != leader)
        .collect();
    if members.is_empty() {
        return kill_process_group(group, signal).is_ok();
    }
    // Every member is signalled (no short cut after the first).
    let sent = members.into_iter().filter(|member| rustix::process::kill_process(*member, signal).is_ok()).count();
    sent > 0
}

/// Owns a process group and ends it (`terminate_group`) when dropped: when its
/// call finished, timed out, or was dropped mid-way by Stop. A sandbox's
/// stand-ins go with it, once nothing of the group runs.
pub(crate) struct GroupGuard(Option<u32>, Option<crate::sandbox::Placeholders>);

impl GroupGuard {
    pub(crate) fn new(pgid: Option<u32>) -> Self {
        Self(pgid, None)
    }

    pub(crate) fn holding(mut self, placeholders: crate::sandbox::Placeholders) -> Self {
        self.1 = Some(placeholders);
        self
    }

    /// Ends the group and waits (up to `limit`) until nothing of it runs, so
    /// its stand-ins are gone before the call's result is (a checkpoint taken
    /// then does not see them); whether anything of it was still there.
    pub(crate) async fn end_waiting(&mut self, limit: Duration) -> bool {
        if self.1.is_none() {
            return self.end();
        }
        let Some(pgid) = self.0 else { return false };
        let signalled = terminate_group(pgid);
        self.0 = None;
        let deadline = Instant::now() + limit;
        while crate::sandbox::group_runs(pgid) && Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        if let Some(placeholders) = self.1.take() {
            placeholders.release_when_gone(pgid);
        }
        signalled
    }

    /// Ends the group now; whether anything of it was still there.
    pub(crate) fn end(&mut self) -> bool {
        let Some(pgid) = self.0.take() else { return false };
        let signalled = terminate_group(pgid);
        if let Some(placeholders) = self.1.take() {
            placeholders.release_when_gone(pgid);
        }
        signalled
    }
}

impl Drop for GroupGuard {
    fn drop(&mut self) {
        self.end();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_variable_named_as_a_secret_is_kept_from_what_the_hub_starts() {
        assert!(!is_hub_variable(OsStr::new("AGENT_HUB_TEST_OTHER_KEY")));
        keep_secret("AGENT_HUB_TEST_OTHER_KEY");
        assert!(is_hub_variable(OsStr::new("AGENT_HUB_TEST_OTHER_KEY")));
        assert!(is_hub_variable(OsStr::new("HUB_TOKEN")) && !is_hub_variable(OsStr::new("PATH")));
    }

    /// The environment a command and an ACP agent start with, from the hub's
    /// `vars` (before `--command-env`, `--acp-env` and an entry's own `env`).
    fn started_with(vars: &[&str], also: impl Fn(&OsStr) -> bool) -> Vec<String> {
        let mut command = tokio::process::Command::new("true");
        command.env("SET_BEFORE", "x");
        let vars = vars.iter().map(|name| (OsString::from(name), OsString::from("v")));
        allow_listed(&mut command, vars, also);
        let std = command.as_std();
        assert!(std.get_envs().all(|(_, value)| value.is_some()), "nothing is removed: it is never there");
        std.get_envs().map(|(name, _)| name.to_string_lossy().into_owned()).collect()
    }

    #[test]
    fn only_what_building_takes_is_inherited() {
        let rows = [
            ("PATH", true),
            ("HOME", true),
            ("USER", true),
            ("LANG", true),
            ("LC_ALL", true),
            ("LC_TIME", true),
            ("XDG_CONFIG_HOME", true),
            ("XDG_RUNTIME_DIR", true),
            ("TMPDIR", true),
            ("CARGO_HOME", true),
            ("RUSTUP_HOME", true),
            ("GOPATH", true),
            ("JAVA_HOME", true),
            ("TERM", true),
            ("GITHUB_TOKEN", false),
            ("ANTHROPIC_API_KEY", false),
            ("AWS_SECRET_ACCESS_KEY", false),
            ("GEMINI_API_KEY", false),
            ("SSH_AUTH_SOCK", false),
            ("HTTPS_PROXY", false),
            ("OPENAI_API_KEY", false),
            ("OPENAI_BASE_URL", false),
            ("HUB_TOKEN", false),
            ("PWD", false),
            ("GIT_DIR", false),
            ("path", false),
            ("XDG", false),
        ];
        let names: Vec<&str> = rows.iter().map(|(name, _)| *name).collect();
        let kept = started_with(&names, |_| false);
        assert!(!kept.contains(&"SET_BEFORE".to_string()), "the environment starts empty");
        for (name, inherited) in rows {
            assert_eq!(kept.contains(&name.to_string()), inherited, "{name}");
        }
        let for_agents =
            started_with(&names, |name| INHERITED_BY_AGENTS.iter().any(|agents| OsStr::new(agents) == name));
        assert!(
            for_agents.contains(&"OPENAI_BASE_URL".to_string()) && !for_agents.contains(&"GITHUB_TOKEN".to_string())
        );
    }

    #[test]
    fn commands_may_be_given_anything_but_the_hubs_secrets() {
        keep_secret("AGENT_HUB_TEST_API_KEY_ENV");
        for secret in ["HUB_TOKEN", "HUB_ANYTHING", "OPENAI_API_KEY", "AGENT_HUB_TEST_API_KEY_ENV"] {
            let names = vec!["GITHUB_TOKEN".to_string(), format!(" {secret} ")];
            assert_eq!(pass_to_commands(&names), Err(SecretForCommands(secret.into())), "{secret}");
        }
        assert!(COMMAND_ENV.read().unwrap().is_empty(), "a refused list passes on none of its names");
    }

    #[test]
    fn a_group_that_is_gone_or_invalid_is_left_alone() {
        assert!(!terminate_group(0), "0 would be the hub's own group");
        assert!(!terminate_group(u32::MAX));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!terminate_group(pid));
    }

    #[test]
    fn groups_in_their_grace_are_killed_at_the_hubs_exit() {
        use std::os::unix::process::CommandExt;
        let mut child = std::process::Command::new("sh")
            .args(["-c", "trap '' TERM; exec sleep 30"])
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id();
        std::thread::sleep(Duration::from_millis(100));
        assert!(terminate_group(pgid));
        std::thread::sleep(Duration::from_millis(100));
        assert!(child.try_wait().unwrap().is_none(), "it ignores SIGTERM, so it is in its grace");
        assert!(kill_remaining_groups() >= 1);
        let deadline = Instant::now() + Duration::from_secs(1);
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "not killed at the exit");
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
