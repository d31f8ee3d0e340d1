//! The agent's process: started in its sandbox in the folder, in a process
//! group of its own, without the hub's secrets, ended with everything it
//! started when the session lets go of it or the hub exits (see `groups`; on
//! Linux the hub's direct child, bwrap or the agent, is also killed when the
//! hub dies: a sandboxed agent then runs on to its own end), its last stderr
//! lines kept to explain a crash.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::path::Path;
use std::process::Stdio;
use std::sync::{mpsc, Arc, Mutex, OnceLock};

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::sandbox::{Placeholders, Prepared, Reach, Request, Terms};

/// How much of the agent's stderr is kept to explain a crash.
const STDERR_LINES: usize = 12;
/// How much of one stderr line is kept.
const STDERR_LINE_CHARS: usize = 2000;

/// How an ACP agent is started.
#[derive(Debug, Clone)]
pub struct Launch {
    /// The program and its arguments (never empty).
    pub command: Vec<String>,
    /// Variables of the hub's environment the agent is given although the hub
    /// keeps them from what it starts (`--acp-env`).
    pub passed_env: Vec<String>,
    /// Variables set for the agent (the agents file's `env`).
    pub env: Vec<(String, String)>,
}

/// Starts the agent in the sandbox `terms` give (network on: it talks to its
/// model); the stand-ins it needs must live as long as the process.
pub(super) fn spawn(
    launch: &Launch,
    folder: &Path,
    terms: &Terms,
) -> std::io::Result<(tokio::process::Child, Placeholders)> {
    let Some((program, args)) = launch.command.split_first() else {
        return Err(std::io::Error::other("the agent's command is empty"));
    };
    let mut env: Vec<(OsString, OsString)> =
        launch.env.iter().map(|(name, value)| (OsString::from(name), OsString::from(value))).collect();
    for name in &launch.passed_env {
        if let Some(value) = std::env::var_os(name) {
            env.push((name.into(), value));
        }
    }
    // The root held open and bound by its descriptor: a path swapped for a link
    // since the session began (another session's command can do that to a
    // subfolder) binds nothing else. It must be the directory itself.
    let held = hold_root(folder)?;
    let request = Request {
        root: folder,
        root_fd: Some(std::os::fd::AsRawFd::as_raw_fd(&held)),
        reach: Reach::Agent,
        network: true,
        hide_agent_config: terms.hide_agent_config,
        env: &env,
        agent: crate::sandbox::agent_of(&launch.command),
        masks: &terms.masks,
    };
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let Prepared { command: mut process, placeholders, sandboxed, held: held_paths } =
        terms.sandbox.command(&request, &program.into(), &args)?;
    process.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    // No kill_on_drop: it would SIGKILL the agent alone at once; `ProcessGroup`
    // ends the whole group and gives the agent a grace to save its session.
    crate::tools::process::scrub_env(&mut process);
    process.envs(env);
    #[cfg(target_os = "linux")]
    // SAFETY: prctl is async-signal-safe; it only asks the kernel to kill the
    // agent if the hub dies first (even by SIGKILL). It reaches the direct
    // child only: the rest of its group is ended by `groups::end_all` at the
    // hub's exit. The kernel watches the spawning *thread*, so the spawn runs
    // on a thread that lives as long as the process (`on_keeper`).
    unsafe {
        process.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    // `held` stays open until bwrap has it (the spawn returned).
    let child = on_keeper(move || super::groups::spawn_registered(|| process.spawn(), sandboxed))?;
    drop((held, held_paths));
    let mut placeholders = placeholders;
    if let Some(pgid) = child.id() {
        placeholders.started(pgid);
    }
    Ok((child, placeholders))
}

/// The session's root, opened without following a link in its last part
/// (a subfolder another session's command swapped for a link to the home
/// fails here, rather than the home being bound writable).
fn hold_root(folder: &Path) -> std::io::Result<std::os::fd::OwnedFd> {
    use rustix::fs::{Mode, OFlags};
    let flags = OFlags::PATH | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    rustix::fs::open(folder, flags, Mode::empty()).map_err(|err| {
        std::io::Error::other(format!("{} is not a directory the agent can start in ({err})", folder.display()))
    })
}

type Job = Box<dyn FnOnce() + Send>;

/// Runs `spawn` on a thread that lives as long as the hub's process, in the
/// caller's runtime. A tokio worker would not do: the runtime's shutdown ends
/// its workers before the exit's grace (`groups::end_all`), and PDEATHSIG would
/// SIGKILL each agent the moment the worker that started it ended.
fn on_keeper(
    spawn: impl FnOnce() -> std::io::Result<tokio::process::Child> + Send + 'static,
) -> std::io::Result<tokio::process::Child> {
    static KEEPER: OnceLock<Option<mpsc::Sender<Job>>> = OnceLock::new();
    let keeper = KEEPER.get_or_init(|| {
        let (jobs, received) = mpsc::channel::<Job>();
        // The sender stays in the static: the loop never ends, nor does the thread.
        let started = std::thread::Builder::new().name("agent-spawner".into()).spawn(move || {
            for job in received {
                job();
            }
        });
        started.ok().map(|_| jobs)
    });
    let runtime = tokio::runtime::Handle::current();
    let (reply, answer) = mpsc::channel();
    let job: Job = Box::new(move || {
        let _entered = runtime.enter();
        let _ = reply.send(spawn());
    });
    let Some(jobs) = keeper else {
        return Err(std::io::Error::other("the thread that starts agents could not be started"));
    };
    jobs.send(job).map_err(|_| std::io::Error::other("no agent spawner"))?;
    // A fork and an exec: a few milliseconds at most.
    answer.recv().map_err(|_| std::io::Error::other("the agent spawner failed"))?
}

/// Ends the agent's whole process group (its shells and helpers too) when
/// dropped: SIGTERM, then SIGKILL after a grace, as for the built-in agent's
/// commands (at the hub's exit, `groups::end_all` does it). Its sandbox's
/// stand-ins go once nothing of the group runs.
pub(super) struct ProcessGroup(pub(super) u32, pub(super) Option<Placeholders>);

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        super::groups::release(self.0);
        if let Some(placeholders) = self.1.take() {
            placeholders.release_when_gone(self.0);
        }
    }
}

pub(super) async fn keep_last_words(
    stderr: tokio::process::ChildStderr,
    last_words: Arc<Mutex<VecDeque<String>>>,
    session: String,
) {
    // Bytes, not text: one invalid UTF-8 byte must not stop the reading (the
    // agent would then die writing to a closed pipe); a line's length is capped.
    let mut reader = BufReader::new(stderr);
    let mut buffer = Vec::new();
    loop {
        buffer.clear();
        match reader.read_until(b'\n', &mut buffer).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let mut line = String::from_utf8_lossy(&buffer).trim_end().to_string();
        if line.trim().is_empty() {
            continue;
        }
        if line.len() > STDERR_LINE_CHARS {
            let cut = (0..=STDERR_LINE_CHARS).rev().find(|&at| line.is_char_boundary(at)).unwrap_or(0);
            line.truncate(cut);
            line.push('…');
        }
        tracing::debug!(session = %session, "agent: {line}");
        let mut words = last_words.lock().unwrap_or_else(|p| p.into_inner());
        if words.len() == STDERR_LINES {
            words.pop_front();
        }
        words.push_back(line);
    }
}
