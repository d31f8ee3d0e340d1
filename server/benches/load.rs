//! Load run: the real `agent-hub` binary under many sessions and concurrent streams.
//!
//! The hub runs as a child process (the binary Cargo built with this bench's
//! profile, or `LOAD_HUB_BIN`), keeping its data in SQLite under a temp dir and
//! talking to a scripted model in this process that answers every completion with
//! the same short text reply, rendered once (`LOAD_TOKENS` deltas, 300 by default).
//! Everything is on 127.0.0.1.
//!
//! 1. Sessions: `LOAD_SESSIONS` (1,000) sessions over `LOAD_FOLDERS` (50) folders,
//!    each given one prompt that completes, so each has a conversation and events
//!    in the store. The hub's RSS (`VmRSS` of /proc/<pid>/status) is read before
//!    (after a warm-up) and after: the difference per session is printed. How many
//!    of them the hub keeps in memory is its own business; the figure shows it.
//! 2. Streams: `LOAD_ROUNDS` (5) rounds of `LOAD_STREAMS` (100) prompts sent at
//!    once, to sessions created in phase 1, spread over the folders (with the
//!    defaults, two per folder in each round and no session twice). Each stream is
//!    timed from the request to its `result` line; p50/p99/max, the first
//!    assistant text, throughput and RSS after are printed.
//!
//! Then the hub gets SIGTERM, and its shutdown is timed.
//!
//! `cargo bench -p agent-hub-server --bench load`
//! (quick run: `LOAD_SESSIONS=100 LOAD_STREAMS=20 LOAD_ROUNDS=2 cargo bench ...`)

#[path = "../tests/common/fake_model.rs"]
#[allow(dead_code)]
mod fake_model;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::response::Response;
use axum::routing::post;
use axum::Router;
use futures::StreamExt;
use serde_json::{json, Value};

const TOKEN: &str = "load-bench-token";
/// Prompts at once while the sessions are created.
const CREATE_CONCURRENCY: usize = 16;
/// Sessions given a prompt before the first RSS reading, in their own folder.
const WARM_UP: usize = 16;
/// No stream may take longer; the run fails rather than hangs.
const STREAM_TIMEOUT: Duration = Duration::from_secs(60);

struct Knobs {
    sessions: usize,
    folders: usize,
    streams: usize,
    rounds: usize,
    tokens: usize,
}

impl Knobs {
    fn from_env() -> Self {
        let knob = |name: &str, default: usize| match std::env::var(name) {
            Ok(value) => value.parse().unwrap_or_else(|_| panic!("{name} must be a number, not {value:?}")),
            Err(_) => default,
        };
        let knobs = Self {
            sessions: knob("LOAD_SESSIONS", 1000),
            folders: knob("LOAD_FOLDERS", 50),
            streams: knob("LOAD_STREAMS", 100),
            rounds: knob("LOAD_ROUNDS", 5),
            tokens: knob("LOAD_TOKENS", 300),
        };
        assert!(knobs.folders >= 1 && knobs.sessions >= knobs.folders, "at least one session per folder");
        assert!(knobs.streams >= 1 && knobs.rounds >= 1 && knobs.tokens >= 1, "something to measure");
        // A session busy with one stream answers another with 409 session_busy.
        assert!(knobs.streams <= knobs.sessions, "LOAD_STREAMS must not exceed LOAD_SESSIONS");
        knobs
    }
}

/// The scripted model: every completion gets the same reply, rendered once.
struct Model {
    base_url: String,
    requests: Arc<AtomicUsize>,
}

#[derive(Clone)]
struct ModelState {
    reply: Bytes,
    requests: Arc<AtomicUsize>,
}

async fn complete(State(state): State<ModelState>, body: Bytes) -> Response {
    assert!(contains(&body, b"\"stream\":true"), "the hub streams");
    state.requests.fetch_add(1, Ordering::Relaxed);
    Response::builder().header("content-type", "text/event-stream").body(Body::from(state.reply.clone())).unwrap()
}

/// Starts the model on its own thread and runtime, as a separate server would be.
fn start_model(tokens: usize) -> Model {
    let pieces = (0..tokens).map(|i| format!("tok{i} ")).collect();
    let reply = fake_model::render(&fake_model::Reply::Text(pieces));
    let requests = Arc::new(AtomicUsize::new(0));
    let state = ModelState { reply, requests: requests.clone() };
    let runtime = runtime(&mut tokio::runtime::Builder::new_current_thread());
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0")).expect("the model listens");
    let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
    let app = Router::new().route("/v1/chat/completions", post(complete)).with_state(state);
    std::thread::spawn(move || runtime.block_on(async { axum::serve(listener, app).await.unwrap() }));
    Model { base_url, requests }
}

/// The hub binary as a child process; killed if the run ends early.
struct HubProcess {
    child: Child,
    base: String,
    binary: PathBuf,
}

impl Drop for HubProcess {
    fn drop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

impl HubProcess {
    fn start(data_dir: &Path, model_url: &str) -> Self {
        // `LOAD_HUB_BIN` runs another build (say, before a change) under the same load.
        let binary = std::env::var_os("LOAD_HUB_BIN")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_agent-hub")));
        let mut child = Command::new(&binary)
            .args(["--host", "127.0.0.1", "--port", "0", "--token", TOKEN, "--model", "load-bench", "--model-url"])
            .arg(model_url)
            .arg("--data-dir")
            .arg(data_dir)
            .env("RUST_LOG", "warn")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap_or_else(|err| panic!("cannot start {}: {err}", binary.display()));
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).expect("the launch line");
        let Some(url) = line.trim().strip_prefix("Agent Hub listening on ") else {
            let _ = child.kill();
            let _ = child.wait();
            panic!("unexpected launch line: {line:?}");
        };
        let base = url.split("/?").next().unwrap().to_string();
        Self { child, base, binary }
    }

    /// `(VmRSS, VmHWM)` in KiB: resident now, and the peak so far.
    fn memory_kib(&self) -> (u64, u64) {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).expect("/proc/<pid>/status");
        let field = |name: &str| {
            let line = status.lines().find(|line| line.starts_with(name)).unwrap_or_else(|| panic!("no {name}"));
            line[name.len()..].trim().trim_end_matches("kB").trim().parse::<u64>().expect("a size in kB")
        };
        (field("VmRSS:"), field("VmHWM:"))
    }

    /// SIGTERM, as Ctrl-C would; the time until the process has exited.
    fn stop(mut self) -> Duration {
        let start = Instant::now();
        // SAFETY: kill(2) on our own child's pid, which `wait` has not reaped yet.
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
        while start.elapsed() < Duration::from_secs(20) {
            if let Ok(Some(status)) = self.child.try_wait() {
                assert!(status.success(), "the hub exited with {status}");
                return start.elapsed();
            }
            std::thread::sleep(Duration::from_millis(2));
        }
        panic!("the hub did not exit within 20 s of SIGTERM");
    }
}

/// One prompt's stream, as the client saw it.
struct Stream {
    /// From sending the request to the `result` line.
    total: Duration,
    /// From sending the request to the first assistant text.
    first_text: Duration,
}

struct Client {
    http: reqwest::Client,
    base: String,
}

impl Client {
    /// One prompt to `session` in `folder`, read to its end; the turn must succeed.
    async fn prompt(&self, folder: &Path, session: String, message: &str) -> Result<Stream, String> {
        let attempt = self.stream(folder, &session, message);
        match tokio::time::timeout(STREAM_TIMEOUT, attempt).await {
            Ok(result) => result.map_err(|err| format!("session {session}: {err}")),
            Err(_) => Err(format!("session {session}: no result within {STREAM_TIMEOUT:?}")),
        }
    }

    async fn stream(&self, folder: &Path, session: &str, message: &str) -> Result<Stream, String> {
        let body = json!({"folderPath": folder, "sessionId": session, "message": message});
        let start = Instant::now();
        let mut response = self
            .http
            .post(format!("{}/api/chat/prompt", self.base))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body.to_string())
            .send()
            .await
            .map_err(|err| err.to_string())?;
        if !response.status().is_success() {
            let status = response.status();
            return Err(format!("{status}: {}", response.text().await.unwrap_or_default()));
        }
        let (mut first_text, mut total) = (None, None);
        let mut partial: Vec<u8> = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|err| err.to_string())? {
            partial.extend_from_slice(&chunk);
            let Some(end) = partial.iter().rposition(|&b| b == b'\n') else { continue };
            for line in partial[..end].split(|&b| b == b'\n') {
                // Only the result is decoded: the client should cost the run little.
                if first_text.is_none() && contains(line, b"\"role\":\"assistant\"") {
                    first_text = Some(start.elapsed());
                } else if contains(line, b"\"type\":\"result\"") {
                    total = Some(start.elapsed());
                    let result: Value = serde_json::from_slice(line).map_err(|err| err.to_string())?;
                    if result["status"] != "success" {
                        return Err(format!("the turn ended with {result}"));
                    }
                }
            }
            partial.drain(..=end);
        }
        match (total, first_text) {
            (Some(total), Some(first_text)) => Ok(Stream { total, first_text }),
            (None, _) => Err("the stream ended without a result".into()),
            (_, None) => Err("no assistant text in the stream".into()),
        }
    }

    async fn get(&self, path: &str) -> Value {
        let response =
            self.http.get(format!("{}{path}", self.base)).bearer_auth(TOKEN).send().await.expect("a GET answered");
        assert!(response.status().is_success(), "GET {path}: {}", response.status());
        serde_json::from_slice(&response.bytes().await.expect("a body")).expect("JSON")
    }
}

fn contains(line: &[u8], needle: &[u8]) -> bool {
    line.windows(needle.len()).any(|window| window == needle)
}

/// Session `k` lives in folder `k % folders`: consecutive sessions go to different folders.
fn session_id(k: usize) -> String {
    format!("load-{k:05}")
}

fn runtime(builder: &mut tokio::runtime::Builder) -> tokio::runtime::Runtime {
    builder.enable_all().build().expect("a tokio runtime")
}

fn main() {
    let knobs = Knobs::from_env();
    // reqwest is built without a default TLS provider; plain HTTP still wants one installed.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let model = start_model(knobs.tokens);
    let data = tempfile::tempdir().expect("a temp data dir");
    let work = tempfile::tempdir().expect("a temp dir for the folders");
    let folders: Vec<PathBuf> = (0..knobs.folders)
        .map(|index| {
            let folder = work.path().join(format!("project-{index:02}"));
            std::fs::create_dir(&folder).unwrap();
            std::fs::write(folder.join("README.md"), format!("# Project {index}\n")).unwrap();
            folder.canonicalize().unwrap()
        })
        .collect();
    let warm_up_folder = work.path().join("warm-up");
    std::fs::create_dir(&warm_up_folder).unwrap();

    let hub = HubProcess::start(data.path(), &model.base_url);
    println!("load run: hub {} (pid {})", hub.binary.display(), hub.child.id());
    println!(
        "{} sessions over {} folders, then {} rounds of {} concurrent streams; each reply {} text deltas",
        knobs.sessions, knobs.folders, knobs.rounds, knobs.streams, knobs.tokens
    );
    let run_start = Instant::now();
    let client = Client { http: reqwest::Client::new(), base: hub.base.clone() };
    let summary = runtime(&mut tokio::runtime::Builder::new_current_thread()).block_on(measure(
        &knobs,
        &client,
        &hub,
        &folders,
        &warm_up_folder,
    ));
    // Its idle keep-alive connections go first: the hub's shutdown need not close them.
    drop(client);
    let shutdown = hub.stop();
    let run_time = run_start.elapsed();
    let on_disk = disk_usage(data.path());
    let expected_requests = WARM_UP + knobs.sessions + knobs.streams * knobs.rounds;
    let requests = model.requests.load(Ordering::Relaxed);
    assert_eq!(requests, expected_requests, "one model request per prompt");

    println!();
    println!("==== load run summary ====");
    println!("{summary}");
    println!("hub shutdown after SIGTERM {:.0} ms; store on disk {:.1} MiB", ms(shutdown), mib(on_disk / 1024));
    println!("model requests {requests}; whole run {:.1} s", run_time.as_secs_f64());
    println!("==========================");
}

async fn measure(knobs: &Knobs, client: &Client, hub: &HubProcess, folders: &[PathBuf], warm_up: &Path) -> String {
    // Warm-up: connections, code paths, the allocator's arenas, the store's first writes.
    let warm: Vec<_> = (0..WARM_UP).map(|i| client.prompt(warm_up, format!("warm-up-{i}"), "hello")).collect();
    for result in futures::future::join_all(warm).await {
        result.unwrap_or_else(|err| panic!("warm-up: {err}"));
    }
    settle().await;
    let (rss_before, _) = hub.memory_kib();

    // Phase 1: the sessions, each with one completed prompt.
    let start = Instant::now();
    let created: Vec<Result<Stream, String>> = futures::stream::iter(0..knobs.sessions)
        .map(|k| client.prompt(&folders[k % folders.len()], session_id(k), "Describe this project."))
        .buffer_unordered(CREATE_CONCURRENCY)
        .collect()
        .await;
    let create_time = start.elapsed();
    let mut create_times = times(created, |stream| stream.total);
    settle().await;
    let (rss_sessions, _) = hub.memory_kib();
    let per_session = (rss_sessions as f64 - rss_before as f64) / knobs.sessions as f64;
    println!(
        "phase 1: {} sessions in {:.1} s ({CREATE_CONCURRENCY} at a time; stream p50 {:.1} ms, p99 {:.1} ms)",
        knobs.sessions,
        create_time.as_secs_f64(),
        percentile(&mut create_times, 0.5),
        percentile(&mut create_times, 0.99),
    );
    println!(
        "  RSS before {:.1} MiB, after {:.1} MiB: {:.1} KiB per session",
        mib(rss_before),
        mib(rss_sessions),
        per_session
    );

    // Every session is listed, whether in memory or only in the store.
    let start = Instant::now();
    let projects = client.get("/api/projects").await;
    let listing = start.elapsed();
    let listed: usize = projects["projects"]
        .as_array()
        .expect("projects")
        .iter()
        .map(|project| project["sessions"].as_array().map_or(0, Vec::len))
        .sum();
    assert!(listed >= knobs.sessions + WARM_UP, "{listed} sessions listed");
    let (rss_listed, _) = hub.memory_kib();
    println!("  GET /api/projects: {listed} sessions in {:.1} ms; RSS after {:.1} MiB", ms(listing), mib(rss_listed));

    // Phase 2: rounds of concurrent streams, each round to sessions not used yet
    // (while there are some), consecutive ones in different folders.
    let mut totals = Vec::new();
    let mut first_texts = Vec::new();
    let mut busy = Duration::ZERO;
    for round in 0..knobs.rounds {
        let streams: Vec<_> = (0..knobs.streams)
            .map(|i| {
                let k = (round * knobs.streams + i) % knobs.sessions;
                client.prompt(&folders[k % folders.len()], session_id(k), "Now summarize it again.")
            })
            .collect();
        let start = Instant::now();
        let results = futures::future::join_all(streams).await;
        let round_time = start.elapsed();
        busy += round_time;
        let mut round_totals = Vec::new();
        for result in results {
            let stream = result.unwrap_or_else(|err| panic!("round {round}: {err}"));
            round_totals.push(ms(stream.total));
            first_texts.push(ms(stream.first_text));
        }
        let (rss, _) = hub.memory_kib();
        println!(
            "phase 2, round {round}: {} streams in {:.0} ms; stream p50 {:.1} ms, max {:.1} ms; RSS {:.1} MiB",
            knobs.streams,
            ms(round_time),
            percentile(&mut round_totals, 0.5),
            percentile(&mut round_totals, 1.0),
            mib(rss)
        );
        totals.extend(round_totals);
    }
    settle().await;
    let (rss_after, peak) = hub.memory_kib();
    let count = totals.len();
    let throughput = count as f64 / busy.as_secs_f64();

    let mut summary = String::new();
    summary += &format!(
        "sessions: {} over {} folders, created in {:.1} s\n",
        knobs.sessions,
        knobs.folders,
        create_time.as_secs_f64()
    );
    summary += &format!(
        "RSS: before {:.1} MiB, with the sessions {:.1} MiB -> {:.1} KiB per session\n",
        mib(rss_before),
        mib(rss_sessions),
        per_session
    );
    summary += &format!(
        "streams: {count} ({} rounds of {} at once), {} text deltas each\n",
        knobs.rounds, knobs.streams, knobs.tokens
    );
    summary += &format!(
        "stream time, request to result: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms\n",
        percentile(&mut totals, 0.5),
        percentile(&mut totals, 0.99),
        percentile(&mut totals, 1.0)
    );
    summary += &format!(
        "first assistant text: p50 {:.1} ms, p99 {:.1} ms\n",
        percentile(&mut first_texts, 0.5),
        percentile(&mut first_texts, 0.99)
    );
    summary += &format!("throughput: {throughput:.0} streams/s ({:.0} tokens/s)\n", throughput * knobs.tokens as f64);
    summary += &format!("RSS after the streams {:.1} MiB, peak {:.1} MiB", mib(rss_after), mib(peak));
    summary
}

/// Lets the store's writer commit and checkpoint (it does after 500 ms idle).
async fn settle() {
    tokio::time::sleep(Duration::from_millis(1000)).await;
}

/// The times of streams that must all have succeeded.
fn times(results: Vec<Result<Stream, String>>, of: impl Fn(&Stream) -> Duration) -> Vec<f64> {
    results.into_iter().map(|result| ms(of(&result.unwrap_or_else(|err| panic!("{err}"))))).collect()
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    values.sort_by(f64::total_cmp);
    values[((values.len() - 1) as f64 * p).round() as usize]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

fn mib(kib: u64) -> f64 {
    kib as f64 / 1024.0
}

/// Bytes in the files under `dir`.
fn disk_usage(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .map(|entry| match entry.metadata() {
                    Ok(meta) if meta.is_dir() => disk_usage(&entry.path()),
                    Ok(meta) => meta.len(),
                    Err(_) => 0,
                })
                .sum()
        })
        .unwrap_or(0)
}
