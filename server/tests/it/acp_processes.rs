//! An ACP agent's whole process tree, wrapper and all, ends with the hub and
//! when its wrapper dies. The real binary runs the agent behind a wrapper
//! (`sh -c '… & wait'`, as `npx` would), so the agent is the hub's grandchild,
//! and the agent starts a helper of its own: three processes in one group.

use crate::common;

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::{process_alive, project};
use serde_json::{json, Value};

const TOKEN: &str = "processes-test-token";

/// The wrapper keeps its stdin for the agent (a background job's stdin would
/// be /dev/null) and waits for it, as a wrapper does. The folder, an argument
/// the agent ignores, marks this test's processes: in the sandbox the pids the
/// agent sees are its PID namespace's, so the test finds its family by it.
fn wrapped_agent(folder: &Path) -> String {
    format!("sh -c 'exec 3<&0; node {AGENT} {} <&3 3<&- & wait'", folder.display())
}

const AGENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/family-acp-agent.mjs");

struct Hub {
    child: Child,
    base: String,
    client: reqwest::Client,
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Hub {
    fn start(data: &Path, folder: &Path) -> Self {
        Self::running(data, &wrapped_agent(folder))
    }

    fn running(data: &Path, acp_command: &str) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut child = Command::new(env!("CARGO_BIN_EXE_agent-hub"))
            .args(["--port", "0", "--token", TOKEN, "--agent", "acp", "--acp-command", acp_command])
            .arg("--data-dir")
            .arg(data)
            .env("RUST_LOG", "warn")
            .env("HUB_USER_POLICIES", "/nonexistent/agent-hub-test-user-policies")
            .env("XDG_CONFIG_HOME", "/nonexistent/agent-hub-test-config")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url =
            line.trim().strip_prefix("Agent Hub listening on ").unwrap_or_else(|| panic!("launch line: {line:?}"));
        let base = url.split("/?").next().unwrap().to_string();
        Self { child, base, client: reqwest::Client::new() }
    }

    /// One prompt, to its end; the agent (started on the first) answers it.
    async fn prompt(&self, folder: &Path) -> Vec<Value> {
        let response = self
            .client
            .post(format!("{}/api/chat/prompt", self.base))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(json!({"folderPath": folder, "message": "hello"}).to_string())
            .send()
            .await
            .unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        let events: Vec<Value> =
            response.text().await.unwrap().lines().map(|line| serde_json::from_str(line).unwrap()).collect();
        let said = events.iter().any(|e| e["type"] == "message" && e["content"] == "hello from the family");
        assert!(said && events.last().unwrap()["status"] == "success", "the agent did not answer: {events:?}");
        events
    }

    fn signal(&self, signal: libc::c_int) {
        common::process::send_signal(&self.child, signal);
    }

    async fn exit_within(&mut self, within: Duration) -> Option<ExitStatus> {
        common::process::exit_within(&mut self.child, within).await
    }

    /// A request whose body never comes holds the graceful shutdown up.
    fn hold_the_shutdown(&self) -> TcpStream {
        common::process::hold_the_shutdown(&self.base, TOKEN)
    }
}

/// The agent's process tree, from the pids it wrote. Whatever of it a failing
/// test leaves behind is killed when this is dropped.
struct Family {
    /// The agent's parent: its wrapper, or the hub when it has none.
    wrapper: u32,
    agent: u32,
    helper: u32,
    /// The group the hub started: the wrapper's, else the agent's.
    group: u32,
}

impl Family {
    async fn of(folder: &Path) -> Self {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            // Written once the agent runs; its pids are not used (see `wrapped_agent`).
            if folder.join("agent.pids").exists() {
                let marked = marked_by(folder);
                let agent = marked.iter().copied().find(|pid| cmdline(*pid).starts_with("node"));
                // Without a wrapper, the agent's parent is the hub (or the sandbox): none to name.
                let wrapper = marked.iter().copied().find(|pid| cmdline(*pid).starts_with("sh")).or(agent);
                let helper = agent.and_then(|agent| {
                    processes()
                        .into_iter()
                        .find(|pid| parent(*pid) == Some(agent) && cmdline(*pid).starts_with("sleep"))
                });
                if let (Some(wrapper), Some(agent), Some(helper)) = (wrapper, agent, helper) {
                    let group = pgid(agent).expect("the agent runs");
                    let family = Self { wrapper, agent, helper, group };
                    assert_eq!(pgid(helper), Some(group), "the helper is in the agent's group");
                    assert!(family.alive().len() >= 2, "the family runs: {:?}", family.alive());
                    return family;
                }
            }
            assert!(Instant::now() < deadline, "the agent's family was not found");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Every process of the family still running: the three it named, and
    /// anything else in their process group.
    fn alive(&self) -> Vec<u32> {
        let named = [self.wrapper, self.agent, self.helper]
            .into_iter()
            .filter(|pid| *pid == self.group || *pid != self.wrapper);
        let mut alive: Vec<u32> = named.filter(|pid| process_alive(&pid.to_string())).collect();
        for entry in std::fs::read_dir("/proc").unwrap().flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|name| name.parse::<u32>().ok()) else { continue };
            if pgid(pid) == Some(self.group) && process_alive(&pid.to_string()) && !alive.contains(&pid) {
                alive.push(pid);
            }
        }
        alive
    }

    /// Asserts that nothing of the family is left within `within`.
    async fn gone_within(&self, within: Duration, after: &str) {
        let deadline = Instant::now() + within;
        loop {
            let alive = self.alive();
            if alive.is_empty() {
                return;
            }
            assert!(Instant::now() < deadline, "{alive:?} of the agent's tree still run {within:?} after {after}");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

impl Drop for Family {
    fn drop(&mut self) {
        if !self.alive().is_empty() {
            // SAFETY: killpg only sends a signal, to the group the test saw running.
            unsafe { libc::killpg(self.group as libc::pid_t, libc::SIGKILL) };
        }
    }
}

fn processes() -> Vec<u32> {
    let entries = std::fs::read_dir("/proc").unwrap().flatten();
    entries.filter_map(|entry| entry.file_name().to_str()?.parse().ok()).collect()
}

/// A process's command line, its words joined by spaces.
fn cmdline(pid: u32) -> String {
    let raw = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&raw).replace('\0', " ")
}

/// The processes whose command line names the agent and this test's folder.
fn marked_by(folder: &Path) -> Vec<u32> {
    let (agent, folder) = (AGENT.to_string(), folder.display().to_string());
    processes().into_iter().filter(|pid| cmdline(*pid).contains(&agent) && cmdline(*pid).contains(&folder)).collect()
}

fn parent(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    stat.rsplit_once(')')?.1.split_whitespace().nth(1)?.parse().ok()
}

/// A process's group, from `/proc/<pid>/stat` (`None` once it is gone).
fn pgid(pid: u32) -> Option<u32> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // pid (comm) state ppid pgrp …; comm may hold spaces and parentheses.
    stat.rsplit_once(')')?.1.split_whitespace().nth(2)?.parse().ok()
}

/// One signal: the hub gives the agent its SIGTERM and a grace (it saves),
/// and exits with nothing of the agent's tree left.
async fn one_signal_ends_the_agents_tree(signal: libc::c_int) {
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let mut hub = Hub::start(data.path(), &folder);
    hub.prompt(&folder).await;
    let family = Family::of(&folder).await;
    assert_eq!(Some(family.group), pgid(family.wrapper), "the agent runs in its wrapper's group");
    assert!(family.alive().len() >= 3, "wrapper, agent and helper run: {:?}", family.alive());

    hub.signal(signal);
    let status = hub.exit_within(Duration::from_secs(5)).await.expect("the hub exits");
    assert!(status.success(), "{status}");
    family.gone_within(Duration::from_secs(3), "the hub's exit").await;
    assert!(folder.join("agent.saved").exists(), "the agent got SIGTERM and the grace to save before anything harder");
}

#[tokio::test]
async fn sigterm_ends_the_agents_whole_tree_after_its_grace() {
    one_signal_ends_the_agents_tree(libc::SIGTERM).await;
}

#[tokio::test]
async fn ctrl_c_ends_the_agents_whole_tree_after_its_grace() {
    one_signal_ends_the_agents_tree(libc::SIGINT).await;
}

#[tokio::test]
async fn a_second_ctrl_c_that_exits_at_once_still_ends_the_agents_tree() {
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let mut hub = Hub::start(data.path(), &folder);
    hub.prompt(&folder).await;
    let family = Family::of(&folder).await;
    let _held = hub.hold_the_shutdown();
    tokio::time::sleep(Duration::from_millis(200)).await;

    hub.signal(libc::SIGINT);
    assert!(hub.exit_within(Duration::from_millis(500)).await.is_none(), "the held request keeps it running");
    hub.signal(libc::SIGINT);
    let status = hub.exit_within(Duration::from_secs(1)).await.expect("the second Ctrl-C ends the hub at once");
    assert_eq!(status.code(), Some(130));
    family.gone_within(Duration::from_secs(2), "the second Ctrl-C").await;
}

#[tokio::test]
async fn when_the_wrapper_dies_the_rest_of_the_agents_tree_is_ended() {
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let mut hub = Hub::start(data.path(), &folder);
    hub.prompt(&folder).await;
    let first = Family::of(&folder).await;
    std::fs::remove_file(folder.join("agent.pids")).unwrap();

    // SAFETY: kill only sends a signal, to the wrapper the agent named.
    assert_eq!(unsafe { libc::kill(first.wrapper as libc::pid_t, libc::SIGKILL) }, 0);
    first.gone_within(Duration::from_secs(5), "its wrapper died").await;

    // The hub stays up; the next prompt starts a new tree, which ends with the hub.
    hub.prompt(&folder).await;
    let second = Family::of(&folder).await;
    assert_ne!(second.agent, first.agent);
    hub.signal(libc::SIGTERM);
    assert!(hub.exit_within(Duration::from_secs(5)).await.expect("the hub exits").success());
    second.gone_within(Duration::from_secs(3), "the hub's exit").await;
}

#[tokio::test]
async fn an_agent_started_without_a_wrapper_gets_its_grace_too() {
    // The hub's direct child: the kernel kills it when the thread that started
    // it ends (PDEATHSIG), so that thread must outlast the exit's grace.
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let mut hub = Hub::running(data.path(), &format!("node {AGENT} {}", folder.display()));
    hub.prompt(&folder).await;
    let family = Family::of(&folder).await;
    // The agent itself, or the sandbox it runs in.
    assert_eq!(parent(family.group), Some(hub.child.id()), "the hub's own child leads the agent's group");

    hub.signal(libc::SIGTERM);
    assert!(hub.exit_within(Duration::from_secs(5)).await.expect("the hub exits").success());
    family.gone_within(Duration::from_secs(3), "the hub's exit").await;
    assert!(folder.join("agent.saved").exists(), "the agent got SIGTERM and the grace to save");
}

/// Deleting a session ends its agent's whole tree, though no turn runs: an
/// ACP agent's process lives on between turns.
#[tokio::test]
async fn deleting_a_session_ends_its_agents_whole_tree() {
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let hub = Hub::start(data.path(), &folder);
    let events = hub.prompt(&folder).await;
    let session = events[0]["session_id"].as_str().expect("the init event names the session").to_string();
    let family = Family::of(&folder).await;

    let url = format!("{}/api/sessions/{session}", hub.base);
    let deleted = hub.client.delete(&url).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(deleted.status(), 204);
    family.gone_within(Duration::from_secs(4), "the session was deleted").await;
    let projects = hub.client.get(format!("{}/api/projects", hub.base)).bearer_auth(TOKEN).send().await.unwrap();
    let projects: Value = serde_json::from_str(&projects.text().await.unwrap()).unwrap();
    assert_eq!(projects["projects"], json!([]), "{projects}");
    let gone = hub.client.get(&url).bearer_auth(TOKEN).send().await.unwrap();
    assert_eq!(gone.status(), 404);
}
