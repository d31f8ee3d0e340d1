//! What every process the hub starts for an agent shares (the built-in agent's
//! commands, ACP agents): it runs without the hub's secrets, in a process group
//! of its own, and that group is ended as a whole: SIGTERM, then SIGKILL after
//! a short grace for whatever is still there.

use std::ffi::{OsStr, OsString};
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};

/// How long a group has to end after SIGTERM before SIGKILL.
pub(crate) const KILL_GRACE: Duration = Duration::from_secs(2);
/// How often the group is looked at during the grace: once it is gone, its id
/// is never signalled again.
const CHECK_EVERY: Duration = Duration::from_millis(20);

/// The hub's own secrets and settings, which nothing it starts gets: the model's
/// API key and every `HUB_*` variable (the launch token `HUB_TOKEN` among them).
/// `OPENAI_BASE_URL` stays: it names an endpoint and is no secret, and a user's
/// own tools may read it as well.
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

/// Removes the hub's secrets from what `command` inherits.
pub(crate) fn scrub_env(command: &mut tokio::process::Command) {
    remove_hub_variables(command, std::env::vars_os().map(|(name, _)| name));
}

fn remove_hub_variables(command: &mut tokio::process::Command, names: impl IntoIterator<Item = OsString>) {
    for name in names {
        if is_hub_variable(&name) {
            command.env_remove(name);
        }
    }
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
    // 0 would be our own group: never.
    let Some(group) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else {
        return false;
    };
    // ESRCH: nothing left (EPERM cannot happen for a group we started).
    if kill_process_group(group, Signal::TERM).is_err() {
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

/// Owns a process group and ends it (`terminate_group`) when dropped: when its
/// call finished, timed out, or was dropped mid-way by Stop.
pub(crate) struct GroupGuard(Option<u32>);

impl GroupGuard {
    pub(crate) fn new(pgid: Option<u32>) -> Self {
        Self(pgid)
    }

    /// Ends the group now; whether anything of it was still there.
    pub(crate) fn end(&mut self) -> bool {
        self.0.take().is_some_and(terminate_group)
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

    #[test]
    fn only_the_hubs_variables_are_removed() {
        let rows = [
            ("OPENAI_API_KEY", true),
            ("HUB_TOKEN", true),
            ("HUB_MODEL", true),
            ("HUB_ACP_COMMAND", true),
            ("HUB_FOO", true),
            ("OPENAI_BASE_URL", false),
            ("GEMINI_API_KEY", false),
            ("PATH", false),
            ("HOME", false),
            ("hub_token", false),
            ("GITHUB_TOKEN", false),
        ];
        let mut command = tokio::process::Command::new("true");
        remove_hub_variables(&mut command, rows.iter().map(|(name, _)| OsString::from(name)));
        let removed: Vec<String> = command
            .as_std()
            .get_envs()
            .filter(|(_, value)| value.is_none())
            .map(|(name, _)| name.to_string_lossy().into_owned())
            .collect();
        for (name, hidden) in rows {
            assert_eq!(removed.contains(&name.to_string()), hidden, "{name}");
        }
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
