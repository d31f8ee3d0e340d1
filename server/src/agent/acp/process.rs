//! The agent's process: started in the folder in a process group of its own,
//! without the hub's secrets, ended with everything it started when the session
//! lets go of it (and, on Linux, killed when the hub dies), its last stderr lines
//! kept to explain a crash.

use std::collections::VecDeque;
use std::path::Path;
use std::process::Stdio;
use std::sync::{Arc, Mutex};

use tokio::io::{AsyncBufReadExt, BufReader};

/// How much of the agent's stderr is kept to explain a crash.
const STDERR_LINES: usize = 12;

/// `passed_env`: variables the agent is given although the hub keeps them from
/// what it starts (`--acp-env`).
pub(super) fn spawn(
    command: &[String],
    folder: &Path,
    passed_env: &[String],
) -> std::io::Result<tokio::process::Child> {
    let mut process = tokio::process::Command::new(&command[0]);
    process
        .args(&command[1..])
        .current_dir(folder)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    // No kill_on_drop: it would SIGKILL the agent alone at once; `ProcessGroup`
    // ends the whole group and gives the agent a grace to save its session.
    crate::tools::process::scrub_env(&mut process);
    for name in passed_env {
        if let Some(value) = std::env::var_os(name) {
            process.env(name, value);
        }
    }
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe; it only asks the kernel to kill the
    // agent if the hub dies first (even by SIGKILL), so no agent outlives it.
    // The kernel watches the spawning *thread*: this runs on a tokio worker,
    // which lives as long as the runtime (never spawn it from spawn_blocking).
    unsafe {
        process.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    process.spawn()
}

/// Ends the agent's whole process group (its shells and helpers too) when
/// dropped: SIGTERM, then SIGKILL after a grace, as for the built-in agent's commands.
pub(super) struct ProcessGroup(pub(super) u32);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        crate::tools::shell::kill_group(self.0);
    }
}

pub(super) async fn keep_last_words(
    stderr: tokio::process::ChildStderr,
    last_words: Arc<Mutex<VecDeque<String>>>,
    session: String,
) {
    let mut lines = BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(session = %session, "agent: {line}");
        if line.trim().is_empty() {
            continue;
        }
        let mut words = last_words.lock().unwrap_or_else(|p| p.into_inner());
        if words.len() == STDERR_LINES {
            words.pop_front();
        }
        words.push_back(line);
    }
}
