//! A terminal an ACP agent opens (`terminal/create`): a command the hub runs in
//! the command sandbox, exactly as the built-in agent's commands (one
//! [`shell::start`]), its output kept within the agent's byte limit (cut from
//! the start, as ACP says) and handed on live, until the agent releases it.
//! Dropping the terminal ends its process group.

use std::ffi::OsString;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use protocol::events::OutputStream;
use tokio::sync::watch;

use super::shell::{self, drain, Live};
use super::{Folder, ToolFailure};
use crate::sandbox::Terms;

/// How long output is still read once the command has exited (as for the
/// built-in agent's commands: a background child holding the pipes open does
/// not hold the terminal).
const READ_AFTER_EXIT: Duration = Duration::from_millis(150);

/// The largest output a terminal keeps, whatever limit the agent asks for.
pub const MAX_KEPT: usize = 1024 * 1024;

/// How a terminal's command ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Exit {
    pub code: Option<u32>,
    pub signal: Option<String>,
}

impl Exit {
    /// As the result line says it.
    pub fn describe(&self) -> String {
        match (&self.code, &self.signal) {
            (Some(code), _) => format!("Exit code: {code}"),
            (None, Some(signal)) => format!("Exit code: killed by {signal}"),
            (None, None) => "Exit code: killed by a signal".to_string(),
        }
    }
}

/// What a terminal printed, stdout and stderr in the order they came.
struct Output {
    kept: Vec<u8>,
    limit: usize,
    truncated: bool,
    live: Option<Live>,
}

impl Output {
    fn take(&mut self, stream: OutputStream, piece: &[u8]) {
        self.kept.extend_from_slice(piece);
        if self.kept.len() > self.limit {
            let mut cut = self.kept.len() - self.limit;
            // Whole characters only: skip the rest of one cut in two.
            while cut < self.kept.len() && (self.kept[cut] & 0xC0) == 0x80 {
                cut += 1;
            }
            self.kept.drain(..cut);
            self.truncated = true;
        }
        if let Some(live) = &self.live {
            live(stream, piece);
        }
    }
}

pub struct Terminal {
    output: Arc<Mutex<Output>>,
    exit: watch::Receiver<Option<Exit>>,
    pgid: Option<u32>,
    task: tokio::task::JoinHandle<()>,
}

impl Terminal {
    /// Starts `program args…` in `folder` in the sandbox `terms` give, keeping
    /// at most `limit` bytes of output.
    pub fn start(
        folder: &Folder,
        program: &str,
        args: &[OsString],
        terms: &Terms,
        limit: usize,
    ) -> Result<Arc<Self>, ToolFailure> {
        let mut started = shell::start(folder, program, args, terms)?;
        let pgid = started.child.id();
        let (Some(stdout), Some(stderr)) = (started.child.stdout.take(), started.child.stderr.take()) else {
            return Err(ToolFailure::new("io_error", "The command's output could not be read."));
        };
        let output =
            Arc::new(Mutex::new(Output { kept: Vec::new(), limit: limit.min(MAX_KEPT), truncated: false, live: None }));
        let (exited, exit) = watch::channel(None);
        let task = tokio::spawn({
            let output = output.clone();
            async move {
                let take = |stream| {
                    let output = output.clone();
                    move |piece: &[u8]| lock(&output).take(stream, piece)
                };
                let reading = async {
                    tokio::join!(drain(stdout, take(OutputStream::Stdout)), drain(stderr, take(OutputStream::Stderr)));
                };
                let mut reading = std::pin::pin!(reading);
                let child = &mut started.child;
                let status = tokio::select! {
                    status = child.wait() => {
                        let _ = tokio::time::timeout(READ_AFTER_EXIT, &mut reading).await;
                        status
                    }
                    () = &mut reading => child.wait().await,
                };
                // What it left running goes with it, as with the built-in agent's commands.
                started.group.end_waiting(Duration::from_secs(2)).await;
                let printed = String::from_utf8_lossy(&lock(&output).kept).into_owned();
                let notes = started.notes(&printed);
                if !notes.is_empty() {
                    lock(&output).take(OutputStream::Stderr, notes.as_bytes());
                }
                if let Some(live) = &lock(&output).live {
                    live(OutputStream::Stdout, &[]);
                }
                let exit = match status {
                    Ok(status) => {
                        use std::os::unix::process::ExitStatusExt;
                        Exit {
                            code: status.code().and_then(|code| u32::try_from(code).ok()),
                            signal: status.signal().map(signal_name),
                        }
                    }
                    Err(_) => Exit { code: None, signal: None },
                };
                let _ = exited.send(Some(exit));
            }
        });
        Ok(Arc::new(Self { output, exit, pgid, task }))
    }

    /// From now on the output goes to `live` as it comes, starting with what
    /// it printed so far.
    pub fn show_live(&self, live: Live) {
        let mut output = lock(&self.output);
        if !output.kept.is_empty() {
            live(OutputStream::Stdout, &output.kept);
        }
        output.live = Some(live);
    }

    /// What it printed (within the limit), whether the start was cut, and how
    /// it ended if it has.
    pub fn output(&self) -> (String, bool, Option<Exit>) {
        let output = lock(&self.output);
        (String::from_utf8_lossy(&output.kept).into_owned(), output.truncated, self.exit.borrow().clone())
    }

    /// Waits until the command has ended.
    pub async fn wait(&self) -> Exit {
        Self::wait_on(self.exit_watch()).await
    }

    /// What [`Terminal::wait_on`] waits on: holding it does not keep the
    /// terminal (and its command) alive.
    pub fn exit_watch(&self) -> watch::Receiver<Option<Exit>> {
        self.exit.clone()
    }

    /// Waits until the command of the terminal `exit` watches has ended (or
    /// the terminal is gone, which ends it).
    pub async fn wait_on(mut exit: watch::Receiver<Option<Exit>>) -> Exit {
        let ended = exit.wait_for(Option::is_some).await.map(|exit| exit.clone());
        match ended {
            Ok(exit) => exit.unwrap_or(Exit { code: None, signal: None }),
            // The task is gone (aborted): so is the command.
            Err(_) => Exit { code: None, signal: Some("SIGKILL".into()) },
        }
    }

    /// Ends the command and everything it started; the terminal stays
    /// readable.
    pub fn kill(&self) {
        if self.exit.borrow().is_some() {
            return;
        }
        if let Some(pgid) = self.pgid {
            super::process::terminate_group(pgid);
        }
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        // The task owns the process group's guard: aborting it ends the group.
        self.task.abort();
    }
}

fn lock(output: &Mutex<Output>) -> std::sync::MutexGuard<'_, Output> {
    output.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

fn signal_name(number: i32) -> String {
    match number {
        1 => "SIGHUP".into(),
        2 => "SIGINT".into(),
        9 => "SIGKILL".into(),
        13 => "SIGPIPE".into(),
        15 => "SIGTERM".into(),
        other => format!("signal {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn terms() -> crate::sandbox::Terms {
        crate::sandbox::Terms::on_this_machine()
    }

    fn bash(folder: &Folder, script: &str, limit: usize) -> Arc<Terminal> {
        Terminal::start(folder, "bash", &["-c".into(), script.into()], &terms(), limit).unwrap()
    }

    #[tokio::test]
    async fn output_and_exit_are_kept_and_shown_live_from_the_start() {
        let dir = tempfile::tempdir().unwrap();
        let folder = Folder::held(&dir.path().canonicalize().unwrap()).unwrap();
        let terminal = bash(&folder, "echo one; while [ ! -e go ]; do sleep 0.02; done; echo two >&2; exit 4", 4096);
        // Shown live from the start: what came before `show_live`, then what comes after.
        while terminal.output().0.is_empty() {
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        let seen = Arc::new(Mutex::new(Vec::<(OutputStream, String)>::new()));
        let shown = seen.clone();
        terminal.show_live(Arc::new(move |stream, piece: &[u8]| {
            shown.lock().unwrap().push((stream, String::from_utf8_lossy(piece).into_owned()));
        }));
        std::fs::write(dir.path().join("go"), "").unwrap();
        let exit = terminal.wait().await;
        assert_eq!(exit, Exit { code: Some(4), signal: None });
        let (text, truncated, ended) = terminal.output();
        assert_eq!(text, "one\ntwo\n");
        assert!(!truncated);
        assert_eq!(ended, Some(exit));
        let seen = seen.lock().unwrap().clone();
        let end = (OutputStream::Stdout, String::new());
        assert_eq!(
            seen,
            [(OutputStream::Stdout, "one\n".into()), (OutputStream::Stderr, "two\n".into()), end],
            "the end said last"
        );
    }

    #[tokio::test]
    async fn the_start_is_cut_to_the_limit_on_a_character_boundary() {
        let dir = tempfile::tempdir().unwrap();
        let folder = Folder::held(&dir.path().canonicalize().unwrap()).unwrap();
        let terminal = bash(&folder, "printf 'aaaaééééé'", 5);
        terminal.wait().await;
        let (text, truncated, _) = terminal.output();
        assert!(truncated);
        assert_eq!(text, "éé", "5 bytes at most, cut where a character starts");
    }

    #[tokio::test]
    async fn kill_ends_the_command_and_what_it_started() {
        let dir = tempfile::tempdir().unwrap();
        let folder = Folder::held(&dir.path().canonicalize().unwrap()).unwrap();
        let marker = dir.path().join("survived");
        let script = format!("(sleep 1; touch {}) & sleep 60", marker.display());
        let terminal = bash(&folder, &script, 4096);
        tokio::time::sleep(Duration::from_millis(200)).await;
        terminal.kill();
        let exit = tokio::time::timeout(Duration::from_secs(10), terminal.wait()).await.expect("ended");
        assert_eq!(exit.code, None, "{exit:?}");
        tokio::time::sleep(Duration::from_millis(1500)).await;
        assert!(!marker.exists(), "a child outlived the kill");
    }

    #[tokio::test]
    async fn a_dropped_terminal_ends_its_command_though_someone_still_waits() {
        let dir = tempfile::tempdir().unwrap();
        let folder = Folder::held(&dir.path().canonicalize().unwrap()).unwrap();
        let marker = dir.path().join("survived");
        let terminal = bash(&folder, &format!("sleep 1; touch {}", marker.display()), 4096);
        // As the agent's `terminal/wait_for_exit` does.
        let waiting = tokio::spawn(Terminal::wait_on(terminal.exit_watch()));
        tokio::time::sleep(Duration::from_millis(200)).await;
        drop(terminal);
        let exit = tokio::time::timeout(Duration::from_secs(5), waiting).await.expect("the wait ends").unwrap();
        assert_eq!(exit.code, None, "{exit:?}");
        tokio::time::sleep(Duration::from_millis(2000)).await;
        assert!(!marker.exists(), "the command outlived its terminal");
    }
}
