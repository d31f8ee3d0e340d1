//! Every live ACP agent's process group, so that the hub's exit ends them all,
//! wrappers and all, however it exits.
//!
//! A session lets go of its agent's group (its session ended, or the agent's
//! direct child died) by dropping its `ProcessGroup`: the group is ended then,
//! with a grace (SIGTERM, then SIGKILL). But the exits that cannot wait (a
//! second Ctrl-C, the shutdown watchdog) drop nothing, and `PR_SET_PDEATHSIG`
//! reaches only the direct child: behind a wrapper (`npx …`, `sh -c …`) the
//! agent and what it started would outlive the hub. So each group is known here
//! from its spawn until its session lets go of it, and the exit ends what is
//! known: [`end_all`].

use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use rustix::process::{kill_process_group, test_kill_process_group, Pid, Signal};

/// How long agents get after SIGTERM to save and exit when the hub exits
/// gracefully; it is over as soon as they are all gone.
pub const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How often the groups are looked at during that grace.
const CHECK_EVERY: Duration = Duration::from_millis(10);

struct Live {
    /// Each group, and whether its leader is a sandbox (spared the SIGTERM:
    /// its end would end the agent at once, without its grace).
    groups: BTreeMap<u32, bool>,
    /// The hub is exiting: no agent starts, and a group let go of stays here for [`end_all`].
    closed: bool,
}

static LIVE: Mutex<Live> = Mutex::new(Live { groups: BTreeMap::new(), closed: false });

fn live() -> MutexGuard<'static, Live> {
    LIVE.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts a process in a group of its own (its pid is the group's id) and
/// registers the group in the same breath, so [`end_all`] cannot miss one that
/// was just started; once the hub exits, nothing starts any more.
pub(super) fn spawn_registered(
    spawn: impl FnOnce() -> std::io::Result<tokio::process::Child>,
    sandboxed: bool,
) -> std::io::Result<tokio::process::Child> {
    let mut live = live();
    if live.closed {
        return Err(std::io::Error::other("the hub is shutting down"));
    }
    let child = spawn()?;
    if let Some(pgid) = child.id() {
        live.groups.insert(pgid, sandboxed);
    }
    Ok(child)
}

/// The session let go of the group: it ends now (SIGTERM, then SIGKILL after a
/// grace). While the hub exits it is left to [`end_all`], which waits out the grace.
pub(super) fn release(pgid: u32) {
    let mut live = live();
    if live.closed {
        return;
    }
    let sandboxed = live.groups.remove(&pgid).unwrap_or(false);
    drop(live);
    crate::tools::process::terminate_group_sparing(pgid, sandboxed);
}

/// The hub is exiting: no agent starts any more, and the groups its sessions
/// let go of from now on (as the runtime drops them) wait for [`end_all`].
pub fn close() {
    live().closed = true;
}

/// Ends every agent group still known: SIGTERM, then SIGKILL to what is left
/// once all are gone or `grace` has passed (at once with no grace). Blocks
/// for the grace at most; closes the registry as [`close`] does. Returns how
/// many groups were still there.
pub fn end_all(grace: Duration) -> usize {
    let groups = {
        let mut live = live();
        live.closed = true;
        std::mem::take(&mut live.groups)
    };
    let first = if grace.is_zero() { Signal::KILL } else { Signal::TERM };
    // 0 would be the hub's own group: never. ESRCH: that group is gone already.
    let mut left: Vec<Pid> = groups
        .into_iter()
        .filter_map(|(pgid, sandboxed)| Some((i32::try_from(pgid).ok().and_then(Pid::from_raw)?, sandboxed)))
        .filter(|(group, sandboxed)| crate::tools::process::signal_group(*group, first, *sandboxed))
        .map(|(group, _)| group)
        .collect();
    let ended = left.len();
    if first == Signal::KILL {
        return ended;
    }
    let deadline = Instant::now() + grace;
    while !left.is_empty() && Instant::now() < deadline {
        std::thread::sleep(CHECK_EVERY);
        left.retain(|group| test_kill_process_group(*group).is_ok());
    }
    for group in left {
        let _ = kill_process_group(group, Signal::KILL);
    }
    ended
}
