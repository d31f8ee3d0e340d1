//! run_shell_command: bash in the project folder, in its own process group so a
//! timeout ends the whole tree, with output capped while it is read.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};
use tokio::process::Command;

use super::{ToolFailure, ToolResult, MAX_OUTPUT};

#[derive(Deserialize)]
pub struct ShellArgs {
    command: String,
    #[allow(dead_code)] // shown to the user on the card; the shell does not need it
    #[serde(default)]
    description: Option<String>,
}

/// Collects at most `MAX_OUTPUT` bytes while counting all of them.
async fn drain(mut stream: impl AsyncRead + Unpin) -> (Vec<u8>, usize) {
    let mut kept = Vec::new();
    let mut total = 0;
    let mut buffer = [0u8; 8192];
    while let Ok(n) = stream.read(&mut buffer).await {
        if n == 0 {
            break;
        }
        total += n;
        let room = MAX_OUTPUT.saturating_sub(kept.len());
        kept.extend_from_slice(&buffer[..n.min(room)]);
    }
    (kept, total)
}

pub async fn run(root: &Path, args: ShellArgs, timeout: Duration) -> ToolResult {
    if args.command.trim().is_empty() {
        return Err(ToolFailure::new("invalid_arguments", "The command is empty."));
    }
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(&args.command)
        .current_dir(root)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true)
        .spawn()
        .map_err(|err| ToolFailure::new("spawn_failed", format!("Could not start bash: {err}.")))?;
    let pgid = child.id();
    let stdout = drain(child.stdout.take().expect("piped stdout"));
    let stderr = drain(child.stderr.take().expect("piped stderr"));
    let finished = tokio::time::timeout(timeout, async {
        let ((out, out_total), (err, err_total)) = tokio::join!(stdout, stderr);
        (child.wait().await, out, out_total, err, err_total)
    })
    .await;
    let Ok((status, out, out_total, err, err_total)) = finished else {
        if let Some(pgid) = pgid {
            kill_group(pgid);
        }
        return Err(ToolFailure::new(
            "timeout",
            format!("The command did not finish within {} s and was stopped.", timeout.as_secs()),
        ));
    };
    let status = status.map_err(|err| ToolFailure::new("io_error", err.to_string()))?;
    let mut text = String::new();
    push_stream(&mut text, "", &out, out_total);
    push_stream(&mut text, "stderr:\n", &err, err_total);
    let code = status.code().map_or_else(|| "killed by a signal".to_string(), |code| code.to_string());
    text.push_str(&format!("Exit code: {code}"));
    Ok(text)
}

fn push_stream(text: &mut String, label: &str, kept: &[u8], total: usize) {
    if total == 0 {
        return;
    }
    text.push_str(label);
    text.push_str(&String::from_utf8_lossy(kept));
    if !text.ends_with('\n') {
        text.push('\n');
    }
    if total > kept.len() {
        text.push_str(&format!("[output truncated: showing {} of {total} bytes]\n", kept.len()));
    }
}

/// Ends the command and everything it started.
pub(crate) fn kill_group(pgid: u32) {
    // SAFETY: killpg only sends a signal; a stale id at worst fails with ESRCH.
    unsafe {
        libc::killpg(pgid as libc::pid_t, libc::SIGKILL);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(command: &str) -> ShellArgs {
        ShellArgs { command: command.into(), description: None }
    }

    #[tokio::test]
    async fn runs_in_the_folder_and_reports_exit_code_and_stderr() {
        let dir = tempfile::tempdir().unwrap();
        let out = run(dir.path(), args("pwd; echo oops >&2; exit 3"), Duration::from_secs(10)).await.unwrap();
        let root = dir.path().canonicalize().unwrap();
        assert!(out.starts_with(&format!("{}\n", root.display())), "{out}");
        assert!(out.contains("stderr:\noops\n") && out.ends_with("Exit code: 3"), "{out}");
    }

    #[tokio::test]
    async fn huge_output_is_capped_with_the_total_said() {
        let dir = tempfile::tempdir().unwrap();
        let out =
            run(dir.path(), args("head -c 3000000 /dev/zero | tr '\\0' x"), Duration::from_secs(20)).await.unwrap();
        assert!(out.len() < MAX_OUTPUT + 200, "{}", out.len());
        assert!(out.contains("of 3000000 bytes]"), "{}", &out[out.len() - 120..]);
    }

    #[tokio::test]
    async fn timeout_kills_the_whole_process_group() {
        let dir = tempfile::tempdir().unwrap();
        let marker = dir.path().join("survived");
        let command = format!("(sleep 2; touch {}) & sleep 30", marker.display());
        let err = run(dir.path(), args(&command), Duration::from_millis(300)).await.unwrap_err();
        assert_eq!(err.kind, "timeout");
        tokio::time::sleep(Duration::from_millis(2500)).await;
        assert!(!marker.exists(), "a background child outlived the timeout");
    }

    #[tokio::test]
    async fn empty_command_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(run(dir.path(), args("  "), Duration::from_secs(1)).await.unwrap_err().kind, "invalid_arguments");
    }
}
