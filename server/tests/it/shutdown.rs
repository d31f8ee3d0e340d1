//! Ctrl-C and SIGTERM end the real binary promptly while pages are open: the
//! updates stream and a running turn's event streams end, the turn is stopped
//! the way Stop does it, and the store is flushed. A second signal, or a graceful
//! part that hangs, ends it at once.

use crate::common;

use std::io::{BufRead, BufReader, Read};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::fake_model::{call, text, FakeModel, Reply};
use common::project;
use futures::StreamExt;
use serde_json::{json, Value};

const TOKEN: &str = "shutdown-test-token";

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
    fn start(data: &Path, model: &FakeModel) -> Self {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let mut child = Command::new(env!("CARGO_BIN_EXE_agent-hub"))
            .env("XDG_CONFIG_HOME", "/nonexistent/agent-hub-test-config")
            .args(["--port", "0", "--token", TOKEN, "--model", "fake-model", "--model-url", &model.base_url])
            .arg("--data-dir")
            .arg(data)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url =
            line.trim().strip_prefix("Agent Hub listening on ").unwrap_or_else(|| panic!("launch line: {line:?}"));
        let base = url.split("/?").next().unwrap().to_string();
        Self { child, base, client: reqwest::Client::new() }
    }

    /// A JSON POST to the hub (sent by the caller, or by `open`).
    fn post(&self, path: &str, body: Value) -> reqwest::RequestBuilder {
        self.client
            .post(format!("{}{path}", self.base))
            .header("content-type", "application/json")
            .body(body.to_string())
    }

    fn signal(&self, signal: libc::c_int) {
        common::process::send_signal(&self.child, signal);
    }

    /// The exit status, if the process ends within `within`.
    async fn exit_within(&mut self, within: Duration) -> Option<ExitStatus> {
        common::process::exit_within(&mut self.child, within).await
    }

    /// What the process wrote to stderr (call once it has exited).
    fn stderr(&mut self) -> String {
        let mut text = String::new();
        let _ = self.child.stderr.take().unwrap().read_to_string(&mut text);
        text
    }

    /// A streamed response, read in a task of its own until it ends: `Ok(body)`
    /// when it ended cleanly, `Err` when the connection broke.
    async fn open(&self, request: reqwest::RequestBuilder) -> (tokio::sync::mpsc::UnboundedReceiver<Vec<u8>>, Reader) {
        let response = request.bearer_auth(TOKEN).send().await.unwrap();
        assert!(response.status().is_success(), "{}", response.status());
        let (chunks, received) = tokio::sync::mpsc::unbounded_channel();
        let reader = tokio::spawn(async move {
            let mut body = Vec::new();
            let mut stream = response.bytes_stream();
            while let Some(chunk) = stream.next().await {
                let chunk = chunk.map_err(|err| err.to_string())?;
                body.extend_from_slice(&chunk);
                let _ = chunks.send(chunk.to_vec());
            }
            Ok(String::from_utf8_lossy(&body).into_owned())
        });
        (received, reader)
    }

    async fn get(&self, path: &str) -> Value {
        let response = self.client.get(format!("{}{path}", self.base)).bearer_auth(TOKEN).send().await.unwrap();
        assert!(response.status().is_success(), "GET {path}: {}", response.status());
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
    }
}

type Reader = tokio::task::JoinHandle<Result<String, String>>;

/// The hub with a page open (the updates stream) and a turn running (held by
/// a slow model), its prompt stream and an events stream open.
struct Busy {
    hub: Hub,
    session: String,
    readers: Vec<(&'static str, Reader)>,
}

async fn busy_hub(data: &Path, folder: &Path, model: &FakeModel) -> Busy {
    let hub = Hub::start(data, model);
    let (_, updates) = hub.open(hub.client.get(format!("{}/api/updates", hub.base))).await;
    let prompt = hub.post("/api/chat/prompt", json!({"folderPath": folder, "message": "take your time"}));
    let (mut chunks, prompt) = hub.open(prompt).await;
    let mut first = Vec::new();
    while !first.contains(&b'\n') {
        first.extend(chunks.recv().await.expect("the prompt stream starts"));
    }
    let init: Value = serde_json::from_slice(first.split(|b| *b == b'\n').next().unwrap()).unwrap();
    let session = init["session_id"].as_str().expect("init first").to_string();
    let (_, events) = hub.open(hub.client.get(format!("{}/api/sessions/{session}/events?after=0", hub.base))).await;
    // The turn is running: the model has the request and holds it.
    let deadline = Instant::now() + Duration::from_secs(5);
    while model.requests().is_empty() {
        assert!(Instant::now() < deadline, "the model was never asked");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(hub.get(&format!("/api/sessions/{session}")).await["status"], "running");
    Busy { hub, session, readers: vec![("updates", updates), ("prompt", prompt), ("events", events)] }
}

fn slow_model_reply() -> Reply {
    Reply::Slow(Duration::from_secs(60), Box::new(text(&["too late"])))
}

/// One signal with pages open and a turn running: the hub exits within 2 s,
/// successfully, every stream ended cleanly, and the turn was stopped and kept.
async fn ends_promptly_on(signal: libc::c_int) {
    let model = FakeModel::start(vec![slow_model_reply()]).await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let Busy { mut hub, session, readers } = busy_hub(data.path(), &folder, &model).await;

    let sent = Instant::now();
    hub.signal(signal);
    let status = hub.exit_within(Duration::from_secs(2)).await;
    let took = sent.elapsed();
    let stderr = if status.is_some() { hub.stderr() } else { String::new() };
    let status = status.unwrap_or_else(|| panic!("the hub still runs {took:?} after signal {signal}"));
    println!("signal {signal}: the hub exited in {took:?} with {status}");
    assert!(status.success(), "{status}; stderr: {stderr}");
    for (name, reader) in readers {
        let ended = tokio::time::timeout(Duration::from_secs(1), reader).await;
        let body = ended.unwrap_or_else(|_| panic!("the {name} stream is still open")).unwrap();
        assert!(body.is_ok(), "the {name} stream broke instead of ending: {body:?}");
    }

    // Started again on the same data: the turn was stopped as by Stop and written down.
    let model = FakeModel::start(Vec::new()).await;
    let hub = Hub::start(data.path(), &model);
    let detail = hub.get(&format!("/api/sessions/{session}")).await;
    let last = detail["events"].as_array().unwrap().last().cloned().unwrap();
    assert_eq!((last["type"].as_str(), last["status"].as_str()), (Some("result"), Some("cancelled")), "{detail}");
    assert_eq!(detail["status"], "idle", "{detail}");
}

#[tokio::test]
async fn ctrl_c_ends_the_hub_within_2_s_with_pages_open_and_a_turn_running() {
    ends_promptly_on(libc::SIGINT).await;
}

#[tokio::test]
async fn sigterm_ends_the_hub_within_2_s_with_pages_open_and_a_turn_running() {
    ends_promptly_on(libc::SIGTERM).await;
}

#[tokio::test]
async fn ctrl_c_kills_a_running_command_as_stop_does() {
    let command = json!({"command": "echo $$ > pid; exec sleep 30.72"});
    let model = FakeModel::start(vec![call("s", "run_shell_command", command)]).await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let mut hub = Hub::start(data.path(), &model);
    let yolo = hub
        .post("/api/chat/config", json!({"folderPath": folder, "yoloMode": true}))
        .bearer_auth(TOKEN)
        .send()
        .await
        .unwrap();
    assert!(yolo.status().is_success(), "{}", yolo.status());
    let prompt = hub.post("/api/chat/prompt", json!({"folderPath": folder, "message": "sleep"}));
    let (_, prompt) = hub.open(prompt).await;
    let pid = command_pid(&folder, "30.72").await;
    assert!(common::process_alive(&pid.to_string()));

    let sent = Instant::now();
    hub.signal(libc::SIGINT);
    let status = hub.exit_within(Duration::from_secs(2)).await.expect("the hub ends within 2 s");
    println!("running command: the hub exited in {:?} with {status}", sent.elapsed());
    assert!(status.success(), "{status}");
    assert!(!common::process_alive(&pid.to_string()), "the command was killed, not left running");
    let body = tokio::time::timeout(Duration::from_secs(1), prompt).await.expect("the prompt stream ended").unwrap();
    assert!(body.is_ok(), "{body:?}");
}

#[tokio::test]
async fn ctrl_c_keeps_the_waiting_cards_and_ends_a_command_that_ignores_sigterm() {
    // `trap '' TERM` is inherited by `sleep`: only SIGKILL ends it, and the
    // thread that would send it after the grace dies with the hub.
    let stubborn = json!({"command": "echo $$ > pid; trap '' TERM; exec sleep 30.73"});
    let model = FakeModel::start(vec![common::fake_model::calls(&[
        ("a", "run_shell_command", stubborn),
        ("b", "run_shell_command", json!({"command": "echo b >> b.txt"})),
    ])])
    .await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let mut hub = Hub::start(data.path(), &model);
    let prompt = hub.post("/api/chat/prompt", json!({"folderPath": folder, "message": "two"}));
    let (_, first) = hub.open(prompt).await;
    let _ = tokio::time::timeout(Duration::from_secs(5), first).await.expect("the turn pauses");
    let session = hub.get("/api/projects").await["projects"][0]["sessions"][0]["id"].as_str().unwrap().to_string();
    let approve = hub.post(&format!("/api/sessions/{session}/approve"), json!({"toolId": "a", "decision": "approve"}));
    let (_, _approving) = hub.open(approve).await;
    let pid = command_pid(&folder, "30.73").await;

    hub.signal(libc::SIGINT);
    let status = hub.exit_within(Duration::from_secs(2)).await.expect("the hub ends within 2 s");
    assert!(status.success(), "{status}");
    let deadline = Instant::now() + Duration::from_millis(500);
    while common::process_alive(&pid.to_string()) {
        assert!(Instant::now() < deadline, "a command that ignores SIGTERM outlived the hub");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }

    let hub = Hub::start(data.path(), &model);
    let detail = hub.get(&format!("/api/sessions/{session}")).await;
    assert_eq!(detail["status"], "waiting_approval", "{detail}");
    assert_eq!(detail["pendingApproval"]["pending"], json!(["b"]), "b keeps its card across a clean shutdown");
    let events = detail["events"].as_array().unwrap();
    let a = events.iter().find(|e| e["type"] == "tool_result" && e["tool_id"] == "a").expect("a is reported");
    assert_eq!(a["error"]["type"], "interrupted", "{a}");
    assert!(!folder.join("b.txt").exists());
}

/// The host pid of the test's command (`sleep <secs>`) once it wrote `pid`
/// in the folder (the pid it wrote is its sandbox's).
async fn command_pid(folder: &Path, secs: &str) -> u32 {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        assert!(Instant::now() < deadline, "the command never started");
        if let Some(pid) = folder.join("pid").exists().then(|| common::sleeping(secs)).flatten() {
            return pid;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A request whose body never comes holds the graceful part up (the server
/// waits for the request to finish), as a hung shutdown would.
fn hold_the_shutdown(hub: &Hub) -> TcpStream {
    common::process::hold_the_shutdown(&hub.base, TOKEN)
}

#[tokio::test]
async fn two_ctrl_c_in_a_row_exit_at_once_even_when_the_shutdown_hangs() {
    let model = FakeModel::start(vec![slow_model_reply()]).await;
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    let Busy { mut hub, .. } = busy_hub(data.path(), &folder, &model).await;
    let _held = hold_the_shutdown(&hub);
    // Let the request reach its handler.
    tokio::time::sleep(Duration::from_millis(200)).await;

    hub.signal(libc::SIGINT);
    assert!(hub.exit_within(Duration::from_millis(500)).await.is_none(), "the held request keeps it running");
    let sent = Instant::now();
    hub.signal(libc::SIGINT);
    let status = hub.exit_within(Duration::from_secs(1)).await.expect("the second Ctrl-C ends the hub at once");
    println!("second Ctrl-C: the hub exited in {:?} with {status}", sent.elapsed());
    assert_eq!(status.code(), Some(130), "{}", hub.stderr());
}

#[tokio::test]
async fn a_shutdown_that_hangs_is_cut_short_after_5_s_and_says_what_was_cut() {
    let model = FakeModel::start(Vec::new()).await;
    let data = tempfile::tempdir().unwrap();
    let mut hub = Hub::start(data.path(), &model);
    let _held = hold_the_shutdown(&hub);
    tokio::time::sleep(Duration::from_millis(200)).await;

    let sent = Instant::now();
    hub.signal(libc::SIGTERM);
    let status = hub.exit_within(Duration::from_secs(8)).await.expect("the watchdog ends the hub");
    let took = sent.elapsed();
    println!("hung shutdown: the hub exited in {took:?} with {status}");
    assert!(took >= Duration::from_millis(4500) && took < Duration::from_secs(7), "{took:?}");
    assert!(!status.success());
    let stderr = hub.stderr();
    assert!(stderr.contains("open connections"), "what was cut short is said: {stderr}");
}
