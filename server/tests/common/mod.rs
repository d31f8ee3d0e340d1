//! An in-process hub behind its real gates, and request helpers.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;

use agent_hub::cli::Cli;
use agent_hub::http::access::Access;
use agent_hub::hub::{Hub, HubOptions};
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Router;
use clap::Parser;
use http_body_util::BodyExt;
use serde_json::Value;
use tower::ServiceExt;

pub const TOKEN: &str = "test-token-1234";
pub const PORT: u16 = 7744;
pub const HOST: &str = "127.0.0.1:7744";

pub struct TestHub {
    pub hub: Arc<Hub>,
    router: Router,
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: HeaderMap,
    pub body: Bytes,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|err| panic!("not JSON ({err}): {:?}", self.body))
    }
    /// Asserts the contract's error shape and returns the code.
    pub fn error_code(&self) -> String {
        let json = self.json();
        assert!(json["message"].as_str().is_some_and(|m| !m.is_empty()), "error without message: {json}");
        json["error"].as_str().expect("error code").to_string()
    }
}

impl TestHub {
    pub fn new() -> Self {
        Self::with_options(HubOptions::default())
    }

    pub fn with_options(options: HubOptions) -> Self {
        let cli = Cli::parse_from(["agent-hub"]);
        let hub = Hub::new(options);
        let gate = Arc::new(Access::new(TOKEN.to_string(), PORT, &[]));
        let devices = agent_hub::remote::devices::Devices::load(None, None).unwrap();
        let router = agent_hub::app(hub.clone(), gate, devices, agent_hub::leptos_options(&cli));
        Self { hub, router }
    }

    pub async fn send(&self, request: Request<Body>) -> Reply {
        let response = self.router.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        Reply { status, headers, body }
    }

    pub async fn get(&self, path: &str) -> Reply {
        self.send(authorized(Request::get(path)).body(Body::empty()).unwrap()).await
    }

    pub async fn post(&self, path: &str, body: impl Into<String>) -> Reply {
        let request = authorized(Request::post(path)).header("content-type", "application/json");
        self.send(request.body(Body::from(body.into())).unwrap()).await
    }

    /// Opens the folder's default session, making it on first use (`POST
    /// /api/chat/open`; `GET /api/chat/config` only reads since issue 24).
    pub async fn config(&self, folder: &Path) -> Reply {
        self.post("/api/chat/open", serde_json::json!({"folderPath": folder}).to_string()).await
    }

    /// `GET /api/chat/config`: reads, makes nothing.
    pub async fn read_config(&self, folder: &Path) -> Reply {
        self.get(&config_path(folder)).await
    }

    pub async fn set_yolo(&self, folder: &Path, on: bool) -> Reply {
        self.post("/api/chat/config", serde_json::json!({"folderPath": folder, "yoloMode": on}).to_string()).await
    }

    pub fn router(&self) -> Router {
        self.router.clone()
    }
}

pub fn authorized(builder: axum::http::request::Builder) -> axum::http::request::Builder {
    builder.header("host", HOST).header("authorization", format!("Bearer {TOKEN}"))
}

pub fn config_path(folder: &Path) -> String {
    format!("/api/chat/config?folderPath={}", urlencoding(folder))
}

pub fn urlencoding(path: &Path) -> String {
    form_urlencoded::byte_serialize(path.to_str().unwrap().as_bytes()).collect()
}

/// A temporary project folder, canonical, optionally with settings text.
pub fn project(settings: Option<&str>) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().canonicalize().unwrap();
    if let Some(text) = settings {
        write_settings(&path, text);
    }
    (dir, path)
}

pub fn write_settings(folder: &Path, text: &str) {
    std::fs::create_dir_all(folder.join(".gemini")).unwrap();
    std::fs::write(folder.join(".gemini/settings.json"), text).unwrap();
}

pub mod fake_model;
pub mod process;

impl Reply {
    /// The NDJSON lines of a streamed reply.
    pub fn lines(&self) -> Vec<Value> {
        assert_eq!(self.headers["content-type"], "application/x-ndjson", "{:?}", self.body);
        String::from_utf8_lossy(&self.body).lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }
}

/// The `type` of each event, for compact assertions.
pub fn types(events: &[Value]) -> Vec<String> {
    events.iter().map(|event| event["type"].as_str().unwrap().to_string()).collect()
}

fn is_assistant_delta(event: &Value) -> bool {
    event["type"] == "message" && event["role"] == "assistant"
}

/// `types`, with each run of assistant text counted once, and each run of a
/// command's live output: how many pieces a reply or an output takes varies.
pub fn shape(events: &[Value]) -> Vec<String> {
    let mut shape: Vec<String> = Vec::new();
    for (index, event) in events.iter().enumerate() {
        if index > 0 && is_assistant_delta(event) && is_assistant_delta(&events[index - 1]) {
            continue;
        }
        if index > 0 && event["type"] == "tool_output" && events[index - 1]["type"] == "tool_output" {
            continue;
        }
        shape.push(if is_assistant_delta(event) { "text".into() } else { event["type"].as_str().unwrap().into() });
    }
    shape
}

/// All the assistant text of `events`, joined.
pub fn assistant_text(events: &[Value]) -> String {
    events.iter().filter(|e| is_assistant_delta(e)).map(|e| e["content"].as_str().unwrap()).collect()
}

impl TestHub {
    pub async fn prompt(&self, folder: &Path, message: &str) -> Reply {
        self.post("/api/chat/prompt", serde_json::json!({"folderPath": folder, "message": message}).to_string()).await
    }

    /// Trusts the folder: its own `.gemini` files may loosen what the hub does.
    pub async fn trust(&self, folder: &Path) {
        let reply = self.post("/api/folders/trust", serde_json::json!({ "folderPath": folder }).to_string()).await;
        assert_eq!(reply.status, StatusCode::OK, "{}", String::from_utf8_lossy(&reply.body));
    }

    pub async fn decide(&self, session: &str, body: Value) -> Reply {
        self.post(&format!("/api/sessions/{session}/approve"), body.to_string()).await
    }

    pub fn with_model(fake: &fake_model::FakeModel) -> Self {
        Self::with_options(model_options(fake))
    }
}

/// Hub options for the built-in agent against the scripted model.
pub fn model_options(fake: &fake_model::FakeModel) -> HubOptions {
    HubOptions {
        model: Some(agent_hub::agents::builtin::model::ModelConfig {
            base_url: fake.base_url.clone(),
            model: "fake-model".into(),
            api_key: None,
        }),
        shell_timeout: std::time::Duration::from_secs(20),
        ..HubOptions::default()
    }
}

/// Hub options for the scripted ACP agent (`tests/fixtures/scripted-acp-agent.mjs`,
/// answering plainly and logging what it receives to `received.jsonl` in its
/// cwd), with its database in `data`.
pub fn scripted_acp_options(data: &std::path::Path) -> HubOptions {
    const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/scripted-acp-agent.mjs");
    let command = format!("node '{SCRIPT}' plain received.jsonl");
    HubOptions {
        acp: Some(std::sync::Arc::new(agent_hub::agents::acp::AcpAgent::new(&command).unwrap())),
        store: Some(agent_hub::store::Store::open(data).unwrap()),
        ..HubOptions::default()
    }
}

/// The host pid of the running `sleep <secs>` (a unique duration marks a
/// test's command): a command's own `$$` is its sandbox's PID namespace's.
pub fn sleeping(secs: &str) -> Option<u32> {
    let wanted = format!("sleep\0{secs}\0");
    std::fs::read_dir("/proc").ok()?.flatten().find_map(|entry| {
        let pid: u32 = entry.file_name().to_str()?.parse().ok()?;
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
        (cmdline == wanted.as_bytes() && process_alive(&pid.to_string())).then_some(pid)
    })
}

/// Whether a process runs (a zombie waiting to be reaped does not count).
pub fn process_alive(pid: &str) -> bool {
    std::fs::read_to_string(format!("/proc/{}/stat", pid.trim()))
        .is_ok_and(|stat| stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()) != Some("Z"))
}

/// Writes a policy file into the folder's `.gemini/policies`.
pub fn policy(folder: &Path, name: &str, text: &str) {
    std::fs::create_dir_all(folder.join(".gemini/policies")).unwrap();
    std::fs::write(folder.join(".gemini/policies").join(name), text).unwrap();
}

/// A hub with the scripted model and a database in `data`.
pub fn hub_with_store(model: &fake_model::FakeModel, data: &tempfile::TempDir) -> TestHub {
    let store = agent_hub::store::Store::open(data.path()).unwrap();
    TestHub::with_options(HubOptions { store: Some(store), ..model_options(model) })
}

/// The session a turn's events belong to (its `init`).
pub fn session_of(events: &[Value]) -> String {
    events[0]["session_id"].as_str().unwrap().to_string()
}

/// A scripted reply calling the shell tool.
pub fn shell(id: &str, command: &str) -> fake_model::Reply {
    fake_model::call(id, "run_shell_command", serde_json::json!({ "command": command }))
}
