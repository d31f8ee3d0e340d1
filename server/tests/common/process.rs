//! The real `agent-hub` binary as a child process, with HTTP helpers.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::Value;

pub const PROCESS_TOKEN: &str = "process-test-token";

pub struct HubProcess {
    child: Child,
    pub base: String,
    client: reqwest::Client,
}

impl Drop for HubProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl HubProcess {
    /// Starts the hub on a free port with its data in `data_dir`; returns once it listens.
    pub fn start(data_dir: &Path, args: &[&str]) -> Self {
        Self::start_logging(data_dir, args, "warn")
    }

    /// [`HubProcess::start`] with the hub's `RUST_LOG` (its log goes to the test's stderr).
    pub fn start_logging(data_dir: &Path, args: &[&str], log: &str) -> Self {
        Self::start_with_env(data_dir, args, log, &[])
    }

    /// [`HubProcess::start_logging`] with these variables set for the hub.
    pub fn start_with_env(data_dir: &Path, args: &[&str], log: &str, vars: &[(&str, &str)]) -> Self {
        // Before the child exists, so a failure here leaves no process behind.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::new();
        let mut child = Command::new(env!("CARGO_BIN_EXE_agent-hub"))
            .args(["--port", "0", "--token", PROCESS_TOKEN, "--data-dir"])
            .arg(data_dir)
            .args(args)
            .env("RUST_LOG", log)
            // The tester's own ~/.gemini/policies must not decide what a test sees.
            .env("HUB_USER_POLICIES", "/nonexistent/agent-hub-test-user-policies")
            // Nor their agents file (~/.config/agent-hub/agents.json).
            .env("XDG_CONFIG_HOME", "/nonexistent/agent-hub-test-config")
            .env_remove("HUB_AGENTS_FILE")
            .env_remove("HUB_AGENT")
            .env_remove("HUB_ACP_COMMAND")
            .envs(vars.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("the hub binary starts");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let url =
            line.trim().strip_prefix("Agent Hub listening on ").unwrap_or_else(|| panic!("launch line: {line:?}"));
        let base = url.split("/?").next().unwrap().to_string();
        Self { child, base, client }
    }

    /// Ends the process as Ctrl-C would, and waits for its exit.
    pub fn stop(mut self) {
        send_signal(&self.child, libc::SIGTERM);
        self.child.wait().unwrap();
    }

    /// Ends the process the hard way: no shutdown code runs.
    pub fn kill_9(mut self) {
        self.child.kill().unwrap(); // SIGKILL on Unix
        self.child.wait().unwrap();
    }

    pub async fn get(&self, path: &str) -> Value {
        let response = self.client.get(format!("{}{path}", self.base)).bearer_auth(PROCESS_TOKEN).send().await.unwrap();
        assert!(response.status().is_success(), "GET {path}: {}", response.status());
        serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
    }

    /// A GET or POST answered with NDJSON, as its events.
    pub async fn lines(&self, method: &str, path: &str, body: Option<Value>) -> Vec<Value> {
        let url = format!("{}{path}", self.base);
        let mut request = match method {
            "GET" => self.client.get(url),
            _ => self.client.post(url).header("content-type", "application/json"),
        };
        if let Some(body) = body {
            request = request.body(body.to_string());
        }
        let response = request.bearer_auth(PROCESS_TOKEN).send().await.unwrap();
        assert!(response.status().is_success(), "{method} {path}: {}", response.status());
        let text = response.text().await.unwrap();
        text.lines().map(|line| serde_json::from_str(line).unwrap()).collect()
    }

    /// A GET answered with text (CSV, TOML).
    pub async fn text(&self, path: &str) -> String {
        let (status, text) = self.request("GET", path, None).await;
        assert!((200..300).contains(&status), "GET {path}: {status} {text}");
        text
    }

    /// Any request, answered with its status and body text.
    pub async fn request(&self, method: &str, path: &str, body: Option<Value>) -> (u16, String) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let mut request = self.client.request(method, format!("{}{path}", self.base)).bearer_auth(PROCESS_TOKEN);
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body.to_string());
        }
        let response = request.send().await.unwrap();
        (response.status().as_u16(), response.text().await.unwrap())
    }
}

/// Sends `signal` to a hub started by a test.
pub fn send_signal(child: &Child, signal: libc::c_int) {
    // SAFETY: kill only sends a signal to our own child.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
}

/// The exit status, if the process ends within `within`.
pub async fn exit_within(child: &mut Child, within: std::time::Duration) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + within;
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return Some(status);
        }
        if std::time::Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
}

/// A request whose body never comes holds the hub's graceful shutdown up (the
/// server waits for the request to finish), as a hung shutdown would.
pub fn hold_the_shutdown(base: &str, token: &str) -> std::net::TcpStream {
    use std::io::Write;
    let authority = base.trim_start_matches("http://");
    let mut stream = std::net::TcpStream::connect(authority).unwrap();
    write!(
        stream,
        "POST /api/chat/config HTTP/1.1\r\nHost: {authority}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{{\"folderPath\":"
    )
    .unwrap();
    stream.flush().unwrap();
    stream
}
