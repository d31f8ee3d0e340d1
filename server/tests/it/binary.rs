//! The real `agent-hub` binary: launch line, loopback bind, folders from argv.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};

struct Running {
    child: Child,
    url: String,
    _data: tempfile::TempDir,
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(args: &[&str]) -> Running {
    let data = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-hub"))
        .env("XDG_CONFIG_HOME", "/nonexistent/agent-hub-test-config")
        .args(["--port", "0"])
        .args(args)
        .env("RUST_LOG", "warn")
        .env("HUB_DATA_DIR", data.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line
        .trim()
        .strip_prefix("Agent Hub listening on ")
        .unwrap_or_else(|| panic!("launch line: {line:?}"))
        .to_string();
    Running { child, url, _data: data }
}

/// A raw HTTP/1.1 GET; returns the status code and body.
fn get(url: &str, path: &str, token: &str) -> (u16, String) {
    let authority = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut stream = TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default();
    (status, body)
}

#[test]
fn prints_the_launch_line_and_binds_loopback_with_a_random_token() {
    let hub = start(&[]);
    let rest = hub.url.strip_prefix("http://127.0.0.1:").expect("loopback URL");
    let (port, token) = rest.split_once("/?token=").expect("token in URL");
    assert!(port.parse::<u16>().unwrap() > 0);
    assert_eq!(token.len(), 32);
    let other = start(&[]);
    assert_ne!(other.url.split_once("token=").unwrap().1, token, "a token per launch");
    assert_eq!(get(&hub.url, "/api/projects", token).0, 200);
    assert_eq!(get(&hub.url, "/api/projects", "wrong-token").0, 401);
}

#[test]
fn opens_the_folders_given_on_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let hub = start(&[dir.path().to_str().unwrap(), "--token", "given-token-1"]);
    assert!(hub.url.ends_with("/?token=given-token-1"));
    let (status, body) = get(&hub.url, "/api/projects", "given-token-1");
    assert_eq!(status, 200);
    let projects: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(projects["projects"][0]["folderPath"], dir.path().canonicalize().unwrap().to_str().unwrap());
}

#[test]
fn bad_launch_arguments_fail_with_a_clear_message() {
    let files = tempfile::tempdir().unwrap();
    let broken = files.path().join("broken.json");
    std::fs::write(&broken, "{\"agent_servers\": {\"x\": {\"command\": \"x\",}}}").unwrap();
    let broken = broken.to_str().unwrap();
    let missing = files.path().join("missing.json");
    let missing = missing.to_str().unwrap();
    for (args, expected) in [
        (vec!["--agents-file", broken], "broken.json: is not valid"),
        (vec!["--agents-file", missing], "missing.json: cannot be read"),
        (vec!["/no/such/folder"], "does not exist"),
        (vec!["--token", "short"], "--token must be"),
        (vec!["--agent", "acp", "--acp-command", " "], "--acp-command is empty"),
        (vec!["--agent", "acp", "--acp-command", "gemini 'unclosed"], "cannot be split into words"),
        (vec!["--agent", "acp", "--model-url", "http://127.0.0.1:9/v1"], "an ACP agent uses its own"),
        (
            vec!["--command-env", "NPM_TOKEN,HUB_TOKEN"],
            "--command-env HUB_TOKEN: HUB_TOKEN is one of the hub's own secrets",
        ),
    ] {
        let data = tempfile::tempdir().unwrap();
        let output = Command::new(env!("CARGO_BIN_EXE_agent-hub"))
            .env("XDG_CONFIG_HOME", "/nonexistent/agent-hub-test-config")
            .args(["--port", "0"])
            .args(&args)
            .env("HUB_DATA_DIR", data.path())
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "no launch line for a failed start");
    }
}

/// `OPENAI_BASE_URL` in the environment is there for the ACP agent (Qwen Code,
/// Codex read it): with `--agent acp` the hub neither refuses to start over it
/// (no model is set) nor keeps it from the agent.
#[test]
fn an_acp_agents_model_variables_are_not_the_hubs_settings() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-hub"))
        .env("XDG_CONFIG_HOME", "/nonexistent/agent-hub-test-config")
        .args(["--port", "0", "--token", "env-test-token", "--agent", "acp"])
        .args(["--acp-command", "sh -c 'env > seen-env.txt; exit 3'"])
        .env("RUST_LOG", "warn")
        .env("HUB_DATA_DIR", data.path())
        .env("OPENAI_BASE_URL", "http://127.0.0.1:9/for-the-agent/v1")
        .env_remove("HUB_MODEL")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
    let url = line.trim().strip_prefix("Agent Hub listening on ").map(str::to_string);
    let hub = Running {
        url: url.unwrap_or_else(|| {
            let _ = child.wait();
            let mut stderr = String::new();
            let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
            panic!("the hub did not start: {stderr}")
        }),
        child,
        _data: data,
    };
    assert_eq!(get(&hub.url, "/api/projects", "env-test-token").0, 200);

    let folder = folder.path().canonicalize().unwrap();
    let body = serde_json::json!({"folderPath": folder, "message": "hello"}).to_string();
    let (status, _) = post(&hub.url, "/api/chat/prompt", "env-test-token", &body);
    assert_eq!(status, 200);
    let seen = std::fs::read_to_string(folder.join("seen-env.txt")).unwrap();
    assert!(seen.contains("OPENAI_BASE_URL=http://127.0.0.1:9/for-the-agent/v1"), "the agent got it: {seen}");
}

/// A raw HTTP/1.1 JSON POST, read to its end; returns the status code and body.
fn post(url: &str, path: &str, token: &str, body: &str) -> (u16, String) {
    let authority = url.trim_start_matches("http://").split('/').next().unwrap();
    let mut stream = TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "POST {path} HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\nConnection: close\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    (status, response.split_once("\r\n\r\n").map(|(_, body)| body.to_string()).unwrap_or_default())
}

/// Issue 24, item 13c: sessions that cannot be read keep the hub from
/// starting (it said nothing and started empty), and the message names the
/// database and why.
#[test]
fn a_database_whose_sessions_cannot_be_read_stops_the_start_with_a_clear_error() {
    let data = tempfile::tempdir().unwrap();
    let database = data.path().join("agent-hub.db");
    {
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let store = agent_hub::store::Store::open(data.path()).unwrap();
        runtime.block_on(store.flush()).unwrap();
    }
    // A row the hub cannot read back: a time that is not a number.
    rusqlite::Connection::open(&database)
        .unwrap()
        .execute(
            "INSERT INTO sessions (id, folder, status, pending_count, created_at_ms, updated_at_ms)
             VALUES ('broken', '/tmp', 'idle', 0, 'yesterday', 0)",
            [],
        )
        .unwrap();
    let mut output = Command::new(env!("CARGO_BIN_EXE_agent-hub"))
        .env("XDG_CONFIG_HOME", "/nonexistent/agent-hub-test-config")
        .args(["--port", "0"])
        .env("RUST_LOG", "off")
        .env("HUB_DATA_DIR", data.path())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // A hub that starts anyway would serve forever: it is stopped after a while.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while output.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = output.kill();
    let output = output.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(!output.status.success(), "it must not start: {stdout} {stderr}");
    assert!(!stdout.contains("listening"), "{stdout}");
    assert!(stderr.contains("could not be read"), "{stderr}");
    assert!(stderr.contains(&database.display().to_string()), "names the database: {stderr}");
    assert!(stderr.contains("created_at_ms") || stderr.contains("Invalid column type"), "says why: {stderr}");
}
