//! Several agents side by side (`GET /api/agents`, a session per agent), with
//! the real binary: an agents file names a scripted ACP agent (a real child
//! process) and one whose command is missing; the built-in agent talks to a
//! scripted model; `PATH` holds only what the test puts there.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::fake_model::{text, FakeModel};
use common::process::HubProcess;
use common::{assistant_text, project};
use serde_json::{json, Value};

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/scripted-acp-agent.mjs");

/// node, by its full path: the hub's `PATH` does not have it.
fn node() -> String {
    let path = std::env::var_os("PATH").unwrap();
    std::env::split_paths(&path)
        .map(|dir| dir.join("node"))
        .find(|candidate| candidate.is_file())
        .expect("node is installed")
        .display()
        .to_string()
}

struct Setup {
    data: tempfile::TempDir,
    /// The agents file and the hub's `PATH`.
    config: tempfile::TempDir,
    model: FakeModel,
}

impl Setup {
    async fn new() -> Self {
        let config = tempfile::tempdir().unwrap();
        let file = json!({
            "default": "scripted",
            "agent_servers": {
                "scripted": {
                    "name": "Scripted agent",
                    "command": node(),
                    "args": [SCRIPT, "plain", config.path().join("received.jsonl")],
                    "env": {"SCRIPTED_MARK": "from the agents file"}
                },
                "missing": {"command": "/nonexistent/agent-hub-missing-agent"}
            },
            // The flags give the model; the key's variable is a secret all the same.
            "builtin": {"base_url": "http://127.0.0.1:9/v1", "model": "unused", "api_key_env": "AGENT_HUB_TEST_KEY"}
        });
        std::fs::write(config.path().join("agents.json"), file.to_string()).unwrap();
        // `codex-acp` is installed (a script on PATH); Gemini CLI and Claude Code are not.
        let bin = config.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("codex-acp"), "#!/bin/sh\nexit 1\n").unwrap();
        std::fs::set_permissions(bin.join("codex-acp"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let model = FakeModel::with_responder(|_| text(&["from the model"])).await;
        Self { data: tempfile::tempdir().unwrap(), config, model }
    }

    fn hub(&self) -> HubProcess {
        let file = self.config.path().join("agents.json");
        let path = self.config.path().join("bin");
        HubProcess::start_with_env(
            self.data.path(),
            &["--agents-file", file.to_str().unwrap(), "--model-url", &self.model.base_url, "--model", "fake-model"],
            "warn",
            &[
                ("PATH", path.to_str().unwrap()),
                ("OPENAI_API_KEY", "sk-the-hubs-own"),
                ("AGENT_HUB_TEST_KEY", "sk-named-in-the-file"),
                ("HUB_SOMETHING", "the-hubs-own"),
            ],
        )
    }
}

/// The environment of the scripted agent started for `config`'s agents file.
fn agent_environ(config: &Path) -> Vec<String> {
    let mark = config.join("received.jsonl").display().to_string();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
        let words: Vec<String> = cmdline.split(|b| *b == 0).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
        if words.contains(&mark) && words.iter().any(|word| word.ends_with("scripted-acp-agent.mjs")) {
            let environ = std::fs::read(entry.path().join("environ")).unwrap();
            return environ.split(|b| *b == 0).map(|w| String::from_utf8_lossy(w).into_owned()).collect();
        }
    }
    panic!("the scripted agent is not running");
}

fn ids(agents: &Value) -> Vec<&str> {
    agents["agents"].as_array().unwrap().iter().map(|agent| agent["id"].as_str().unwrap()).collect()
}

fn agent<'a>(agents: &'a Value, id: &str) -> &'a Value {
    agents["agents"].as_array().unwrap().iter().find(|agent| agent["id"] == id).unwrap()
}

async fn create(hub: &HubProcess, folder: &Path, agent: Option<&str>) -> (u16, Value) {
    let mut body = json!({"folderPath": folder});
    if let Some(agent) = agent {
        body["agent"] = json!(agent);
    }
    let (status, text) = hub.request("POST", "/api/sessions", Some(body)).await;
    (status, serde_json::from_str(&text).unwrap())
}

async fn prompt(hub: &HubProcess, folder: &Path, session: &str, message: &str) -> Vec<Value> {
    let body = json!({"folderPath": folder, "sessionId": session, "message": message});
    hub.lines("POST", "/api/chat/prompt", Some(body)).await
}

fn sessions_of(projects: &Value, folder: &Path) -> Vec<(String, String)> {
    let folder = folder.to_str().unwrap();
    let project = projects["projects"].as_array().unwrap().iter().find(|p| p["folderPath"] == folder);
    let Some(project) = project else { return Vec::new() };
    let mut sessions: Vec<(String, String)> = project["sessions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["id"].as_str().unwrap().to_string(), s["agent"]["id"].as_str().unwrap().to_string()))
        .collect();
    sessions.sort();
    sessions
}

#[tokio::test]
async fn the_agents_are_listed_each_available_or_with_the_reason() {
    let setup = Setup::new().await;
    let hub = setup.hub();
    let agents = hub.get("/api/agents").await;
    assert_eq!(ids(&agents), ["builtin", "gemini", "claude-code", "codex", "missing", "scripted"]);
    assert_eq!(agents["default"], "scripted", "the file's default");

    let builtin = agent(&agents, "builtin");
    assert_eq!((builtin["available"].clone(), builtin["model"].clone()), (json!(true), json!("fake-model")));
    let scripted = agent(&agents, "scripted");
    assert_eq!((scripted["name"].clone(), scripted["available"].clone()), (json!("Scripted agent"), json!(true)));
    assert_eq!((scripted["kind"].clone(), scripted["source"].clone()), (json!("acp"), json!("file")));
    assert!(scripted["command"].as_str().unwrap().contains("scripted-acp-agent.mjs plain"), "{scripted}");

    let codex = agent(&agents, "codex");
    assert_eq!((codex["available"].clone(), codex["source"].clone()), (json!(true), json!("ready")), "found on PATH");
    let claude = agent(&agents, "claude-code");
    assert_eq!(claude["available"], false);
    assert_eq!(
        claude["reason"],
        "`claude-code-acp` is not installed (not found on PATH). Install it: npm install -g @zed-industries/claude-code-acp."
    );
    let missing = agent(&agents, "missing");
    assert_eq!(missing["available"], false);
    assert_eq!(missing["reason"], "`/nonexistent/agent-hub-missing-agent` is not an executable file.");
}

#[tokio::test]
async fn an_unknown_or_unavailable_agent_makes_no_session() {
    let setup = Setup::new().await;
    let hub = setup.hub();
    let (_dir, folder) = project(None);

    let (status, body) = create(&hub, &folder, Some("missing")).await;
    assert_eq!((status, body["error"].as_str().unwrap()), (409, "agent_unavailable"), "{body}");
    assert!(body["message"].as_str().unwrap().contains("is not an executable file"), "{body}");
    let (status, body) = create(&hub, &folder, Some("gemini")).await;
    assert_eq!((status, body["error"].as_str().unwrap()), (409, "agent_unavailable"), "{body}");
    let (status, body) = create(&hub, &folder, Some("nope")).await;
    assert_eq!((status, body["error"].as_str().unwrap()), (400, "unknown_agent"), "{body}");

    let body = json!({"folderPath": folder, "sessionId": "fresh", "message": "hi", "agent": "missing"});
    let (status, text) = hub.request("POST", "/api/chat/prompt", Some(body)).await;
    assert_eq!(status, 409, "{text}");
    assert!(sessions_of(&hub.get("/api/projects").await, &folder).is_empty(), "nothing was created");
}

#[tokio::test]
async fn sessions_in_one_folder_work_with_their_own_agents_and_keep_them_after_a_restart() {
    let setup = Setup::new().await;
    let hub = setup.hub();
    let (_dir, folder) = project(None);
    let folder_query = format!("/api/agents?folderPath={}", common::urlencoding(&folder));
    assert_eq!(hub.get(&folder_query).await["folderDefault"], "scripted", "a new folder gets the hub's default");

    let (status, builtin) = create(&hub, &folder, Some("builtin")).await;
    assert_eq!(status, 201, "{builtin}");
    assert_eq!(builtin["agent"], json!({"id": "builtin", "name": "Built-in agent"}));
    let (status, scripted) = create(&hub, &folder, Some("scripted")).await;
    assert_eq!(status, 201, "{scripted}");
    assert_eq!(scripted["agent"], json!({"id": "scripted", "name": "Scripted agent"}));
    let (builtin, scripted) = (builtin["id"].as_str().unwrap(), scripted["id"].as_str().unwrap());

    let from_model = prompt(&hub, &folder, builtin, "hello").await;
    assert_eq!(assistant_text(&from_model), "from the model");
    assert_eq!(from_model[0]["model"], "fake-model");
    let from_agent = prompt(&hub, &folder, scripted, "hello").await;
    assert_eq!(assistant_text(&from_agent), "done");
    assert_eq!(from_agent.last().unwrap()["status"], "success");
    let received = std::fs::read_to_string(setup.config.path().join("received.jsonl")).unwrap();
    assert!(received.contains("session/prompt"), "the scripted agent got the prompt: {received}");
    // Its environment: the file's variable, none of the hub's secrets.
    let environ = agent_environ(setup.config.path());
    assert!(environ.contains(&"SCRIPTED_MARK=from the agents file".to_string()), "{environ:?}");
    for secret in ["OPENAI_API_KEY", "AGENT_HUB_TEST_KEY", "HUB_SOMETHING"] {
        assert!(!environ.iter().any(|var| var.starts_with(&format!("{secret}="))), "{secret} leaked: {environ:?}");
    }
    assert_eq!(setup.model.requests().len(), 1, "only the built-in session asked the model");

    let config = hub.get(&format!("{}&sessionId={scripted}", common::config_path(&folder))).await;
    assert_eq!(
        (config["agent"]["id"].clone(), config["acceptsModifiedContent"].clone()),
        (json!("scripted"), json!(false))
    );
    let config = hub.get(&format!("{}&sessionId={builtin}", common::config_path(&folder))).await;
    assert_eq!(
        (config["agent"]["id"].clone(), config["acceptsModifiedContent"].clone()),
        (json!("builtin"), json!(true))
    );

    // An existing session keeps its agent.
    let body = json!({"folderPath": folder, "sessionId": scripted, "message": "again", "agent": "builtin"});
    let (status, text) = hub.request("POST", "/api/chat/prompt", Some(body)).await;
    assert_eq!(status, 400, "{text}");
    assert!(text.contains("works with Scripted agent"), "{text}");

    // The folder remembers the last choice: a session made without one gets it.
    assert_eq!(hub.get(&folder_query).await["folderDefault"], "scripted");
    let (_, third) = create(&hub, &folder, None).await;
    assert_eq!(third["agent"]["id"], "scripted");
    let (_, fourth) = create(&hub, &folder, Some("builtin")).await;
    assert_eq!(hub.get(&folder_query).await["folderDefault"], "builtin");
    let expected = {
        let mut all = vec![
            (builtin.to_string(), "builtin".to_string()),
            (scripted.to_string(), "scripted".to_string()),
            (third["id"].as_str().unwrap().to_string(), "scripted".to_string()),
            (fourth["id"].as_str().unwrap().to_string(), "builtin".to_string()),
        ];
        all.sort();
        all
    };
    assert_eq!(sessions_of(&hub.get("/api/projects").await, &folder), expected);

    hub.stop();
    let hub = setup.hub();
    assert_eq!(sessions_of(&hub.get("/api/projects").await, &folder), expected, "the agents are kept");
    assert_eq!(hub.get(&folder_query).await["folderDefault"], "builtin", "and the folder's last choice");
    let again = prompt(&hub, &folder, scripted, "after the restart").await;
    assert_eq!(assistant_text(&again), "done", "the scripted agent answers again");
}

/// Sessions stored before sessions had an agent (the `agent` column NULL) get
/// the one their kept state shows, whatever the launch's default now is.
#[tokio::test]
async fn sessions_from_before_agents_get_the_agent_their_state_shows() {
    let data = tempfile::tempdir().unwrap();
    let (_dir, folder) = project(None);
    drop(agent_hub::store::Store::open(data.path()).unwrap());
    {
        let db = rusqlite::Connection::open(data.path().join("agent-hub.db")).unwrap();
        let folder = folder.to_str().unwrap();
        for (id, state) in [
            (
                "was-acp",
                r#"{"messages":[],"paused":null,"allowed_tools":[],"completions":0,"acp":{"session_id":"s1"}}"#,
            ),
            (
                "was-builtin",
                r#"{"messages":[{"role":"user","content":"hi"}],"paused":null,"allowed_tools":[],"completions":1}"#,
            ),
        ] {
            db.execute(
                "INSERT INTO sessions (id, folder, status, yolo_override, pending_count, created_at_ms, updated_at_ms)
                 VALUES (?1, ?2, 'idle', NULL, 0, 1, 2)",
                [id, folder],
            )
            .unwrap();
            db.execute("INSERT INTO agent_state (session_id, state) VALUES (?1, ?2)", [id, state]).unwrap();
        }
    }
    let command = format!("{} {SCRIPT} plain /dev/null", node());
    let hub = HubProcess::start(data.path(), &["--agent", "acp", "--acp-command", &command]);
    let flags_agent = hub.get("/api/agents").await["default"].as_str().unwrap().to_string();
    assert!(flags_agent.starts_with("acp-"), "{flags_agent}");
    let expected = vec![("was-acp".to_string(), flags_agent), ("was-builtin".to_string(), "builtin".to_string())];
    assert_eq!(sessions_of(&hub.get("/api/projects").await, &folder), expected, "the ACP one is the flags' agent's");
    hub.stop();
    let hub = HubProcess::start(data.path(), &[]);
    assert_eq!(sessions_of(&hub.get("/api/projects").await, &folder), expected, "kept once given");
}
