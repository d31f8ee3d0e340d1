//! Relay benchmark: how much the hub costs a streaming reply.
//!
//! A scripted model streams 20,000 tokens as fast as it can (the reply is
//! rendered beforehand, so the fake model costs nothing per token). In one run,
//! the same client reads them straight from the model and through the hub's
//! `POST /api/chat/prompt` (a real socket, real gates), alternating, and the
//! throughput ratio is printed (goal ≥ 0.95). The client decodes every event it
//! gets, as any consumer of either stream must to have the text; a client that
//! only counts bytes is measured too, as the harshest reference. The hub runs
//! twice: in memory, and saving every event to SQLite (goal: persistence costs at
//! most 5%). Then many one-delta replies, each the first prompt of a new session,
//! give the first-token latency each hub adds, paired sample by sample with a
//! direct request (goal ≤ 2 ms p99 with SQLite).
//!
//! `cargo bench -p agent-hub-server --bench relay`
//! (`RELAY_ONLY=throughput` or `RELAY_ONLY=first-token` runs one part.)

#[path = "../tests/common/fake_model.rs"]
#[allow(dead_code)]
mod fake_model;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_hub::agents::builtin::model::ModelConfig;
use agent_hub::cli::Cli;
use agent_hub::http::access::Access;
use agent_hub::hub::{Hub, HubOptions};
use agent_hub::store::Store;
use clap::Parser;
use fake_model::{text, FakeModel};
use serde::Deserialize;
use serde_json::json;

const TOKEN: &str = "bench-token-123";
const TOKENS: usize = 20_000;
// Each run is ~0.1 s a side on a noisy 2-core VM: many runs for a stable median.
const RUNS: usize = 25;
const LATENCY_SAMPLES: usize = 400;

struct Timing {
    first_token: Duration,
    /// After the last token: the turn's end (`result`), or the model's `[DONE]`.
    tail: Duration,
    total: Duration,
    tokens: usize,
    /// Lines that carried tokens.
    deltas: usize,
}

/// Reads a streamed body line by line; `tokens` counts a line's tokens (the hub
/// may carry several in one delta). The first line with any is the first token.
async fn timed(request: reqwest::RequestBuilder, tokens_in: impl Fn(&[u8]) -> usize) -> Timing {
    let start = Instant::now();
    let mut response = request.send().await.expect("request");
    assert!(response.status().is_success(), "{}", response.status());
    let (mut first_token, mut last_token) = (None, Duration::ZERO);
    let (mut tokens, mut deltas) = (0, 0);
    let mut partial: Vec<u8> = Vec::new();
    while let Some(chunk) = response.chunk().await.expect("body") {
        partial.extend_from_slice(&chunk);
        let Some(end) = partial.iter().rposition(|&b| b == b'\n') else { continue };
        for line in partial[..end].split(|&b| b == b'\n') {
            let found = tokens_in(line);
            if found > 0 {
                tokens += found;
                deltas += 1;
                last_token = start.elapsed();
                first_token.get_or_insert(last_token);
            }
        }
        partial.drain(..=end);
    }
    let total = start.elapsed();
    Timing { first_token: first_token.expect("no delta arrived"), tail: total - last_token, total, tokens, deltas }
}

/// How the client reads each line.
#[derive(Clone, Copy)]
enum Client {
    /// Decodes the JSON and counts the tokens in the text, as a consumer does.
    Decodes,
    /// Counts tokens in the raw bytes without decoding anything.
    CountsBytes,
}

/// A chunk of the model's stream, as a client decodes it.
#[derive(Deserialize)]
struct ModelChunk<'a> {
    #[serde(borrow)]
    choices: Vec<ModelChoice<'a>>,
}

#[derive(Deserialize)]
struct ModelChoice<'a> {
    #[serde(borrow)]
    delta: ModelDelta<'a>,
}

#[derive(Deserialize)]
struct ModelDelta<'a> {
    #[serde(default)]
    content: Option<&'a str>,
}

/// A line of the hub's stream, as a client decodes it.
#[derive(Deserialize)]
struct HubLine<'a> {
    #[serde(rename = "type")]
    kind: &'a str,
    #[serde(default)]
    role: Option<&'a str>,
    #[serde(default)]
    content: Option<&'a str>,
}

fn model_line_tokens(client: Client, line: &[u8]) -> usize {
    let Some(data) = line.strip_prefix(b"data: ").filter(|data| data.starts_with(b"{")) else { return 0 };
    match client {
        Client::Decodes => {
            let chunk: ModelChunk<'_> = serde_json::from_slice(data).expect("a chunk the client can read");
            chunk.choices.iter().filter_map(|choice| choice.delta.content).map(|text| text.matches("tok").count()).sum()
        }
        Client::CountsBytes if contains(data, b"\"content\":\"") => occurrences(data, b"tok"),
        Client::CountsBytes => 0,
    }
}

fn hub_line_tokens(client: Client, line: &[u8]) -> usize {
    match client {
        Client::Decodes => {
            let event: HubLine<'_> = serde_json::from_slice(line).expect("an event the client can read");
            match (event.kind, event.role, event.content) {
                ("message", Some("assistant"), Some(text)) => text.matches("tok").count(),
                _ => 0,
            }
        }
        Client::CountsBytes if contains(line, b"\"role\":\"assistant\"") => occurrences(line, b"tok"),
        Client::CountsBytes => 0,
    }
}

fn contains(line: &[u8], needle: &[u8]) -> bool {
    line.windows(needle.len()).any(|window| window == needle)
}

fn occurrences(line: &[u8], needle: &[u8]) -> usize {
    line.windows(needle.len()).filter(|window| *window == needle).count()
}

struct Bench {
    client: reqwest::Client,
    model: FakeModel,
    folder: tempfile::TempDir,
}

impl Bench {
    async fn direct(&self, client: Client) -> Timing {
        let body = json!({"model": "bench", "messages": [{"role": "user", "content": "go"}], "stream": true});
        let request = self
            .client
            .post(format!("{}/chat/completions", self.model.base_url))
            .header("content-type", "application/json")
            .body(body.to_string());
        timed(request, |line| model_line_tokens(client, line)).await
    }

    async fn through(&self, hub_url: &str, session: &str, client: Client) -> Timing {
        let body = json!({"folderPath": self.folder.path(), "sessionId": session, "message": "go"});
        let request = self
            .client
            .post(format!("{hub_url}/api/chat/prompt"))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body.to_string());
        timed(request, |line| hub_line_tokens(client, line)).await
    }
}

/// A hub on a real socket, talking to `model`, keeping its data in `store`.
async fn start_hub(model: &FakeModel, store: Option<Arc<Store>>) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hub = Hub::new(HubOptions {
        model: Some(ModelConfig { base_url: model.base_url.clone(), model: "bench".into(), api_key: None }),
        store,
        ..HubOptions::default()
    });
    let gate = Arc::new(Access::new(TOKEN.into(), addr.port(), &[]));
    let devices = agent_hub::remote::devices::Devices::load(None, None).unwrap();
    let router = agent_hub::app(hub, gate, devices, agent_hub::leptos_options(&Cli::parse_from(["agent-hub"])));
    tokio::spawn(async move { axum::serve(agent_hub::without_delay(listener), router).await.unwrap() });
    format!("http://{addr}")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

/// The model, the hub and the client each get their own runtime and threads, as
/// separate processes would: in one shared runtime, where tokio happened to
/// place the client's and the model's tasks made runs differ by half.
fn main() {
    let model_runtime = runtime(&mut tokio::runtime::Builder::new_current_thread());
    let model = model_runtime.block_on(FakeModel::start(Vec::new()));
    std::thread::spawn(move || model_runtime.block_on(std::future::pending::<()>()));
    // As the hub binary runs: a worker per core.
    let hub_runtime = runtime(&mut tokio::runtime::Builder::new_multi_thread());
    let data = tempfile::tempdir().unwrap();
    let (memory_hub, stored_hub) = hub_runtime.block_on(async {
        (start_hub(&model, None).await, start_hub(&model, Some(Store::open(data.path()).unwrap())).await)
    });
    let bench = Bench { client: reqwest::Client::new(), model, folder: tempfile::tempdir().unwrap() };
    runtime(&mut tokio::runtime::Builder::new_current_thread()).block_on(measure(bench, memory_hub, stored_hub));
}

fn runtime(builder: &mut tokio::runtime::Builder) -> tokio::runtime::Runtime {
    builder.enable_all().build().expect("a tokio runtime")
}

async fn measure(bench: Bench, memory_hub: String, stored_hub: String) {
    // Warm up connections and code paths.
    for hub in [&memory_hub, &stored_hub] {
        bench.model.push(text(&["tok"]));
        bench.direct(Client::Decodes).await;
        bench.model.push(text(&["tok"]));
        bench.through(hub, "warm-up", Client::Decodes).await;
    }
    let only = std::env::var("RELAY_ONLY").unwrap_or_default();
    if only != "first-token" {
        throughput(&bench, &memory_hub, &stored_hub).await;
    }
    if only != "throughput" {
        first_token(&bench, &memory_hub, &stored_hub).await;
    }
}

/// Long replies relayed in full, each path in turn within every run.
async fn throughput(bench: &Bench, memory_hub: &str, stored_hub: &str) {
    let pieces: Vec<String> = (0..TOKENS).map(|i| format!("tok{i} ")).collect();
    // Rendered once: the fake model's own JSON building stays out of the timing.
    let rendered = fake_model::render(&fake_model::Reply::Text(pieces));
    let long_reply = || fake_model::Reply::Rendered(rendered.clone());

    println!("relay of {TOKENS} tokens, {RUNS} runs; each run: a decoding client direct, through the hub in memory,");
    println!("through the hub with SQLite; a client counting bytes direct, through the hub in memory");
    println!("(ms: total, and in brackets the first token and the tail after the last one)");
    let (mut memory_ratios, mut stored_ratios, mut bytes_ratios) = (Vec::new(), Vec::new(), Vec::new());
    // Where a decoding client's time goes, per path: first token, the stream, the tail.
    let mut phases: [Vec<[f64; 3]>; 3] = Default::default();
    for run in 0..RUNS {
        let time = async |hub: Option<&str>, name: &str, client: Client| {
            bench.model.push(long_reply());
            let timing = match hub {
                None => bench.direct(client).await,
                Some(hub) => bench.through(hub, &format!("{name}-{run}"), client).await,
            };
            assert_eq!(timing.tokens, TOKENS, "every token arrives");
            timing
        };
        let direct = time(None, "", Client::Decodes).await;
        let memory = time(Some(memory_hub), "decoded", Client::Decodes).await;
        let stored = time(Some(stored_hub), "decoded", Client::Decodes).await;
        let direct_bytes = time(None, "", Client::CountsBytes).await;
        let memory_bytes = time(Some(memory_hub), "bytes", Client::CountsBytes).await;
        let show = |timing: &Timing| {
            format!("{:5.1} ({:4.1} {:3.1})", ms(timing.total), ms(timing.first_token), ms(timing.tail))
        };
        println!(
            "  run {run:2}: decoding: direct {}  hub {}  hub+SQLite {}   bytes: direct {}  hub {}   hub deltas {}",
            show(&direct),
            show(&memory),
            show(&stored),
            show(&direct_bytes),
            show(&memory_bytes),
            memory.deltas,
        );
        let ratio = |direct: &Timing, hub: &Timing| direct.total.as_secs_f64() / hub.total.as_secs_f64();
        for (list, timing) in phases.iter_mut().zip([&direct, &memory, &stored]) {
            let (first, tail) = (ms(timing.first_token), ms(timing.tail));
            list.push([first, ms(timing.total) - first - tail, tail]);
        }
        memory_ratios.push(ratio(&direct, &memory));
        stored_ratios.push(ratio(&direct, &stored));
        bytes_ratios.push(ratio(&direct_bytes, &memory_bytes));
    }
    for list in [&mut memory_ratios, &mut stored_ratios, &mut bytes_ratios] {
        list.sort_by(f64::total_cmp);
    }
    let spread = |list: &[f64]| {
        format!("{:.3} ({:.3}..{:.3})", percentile(list, 0.5), percentile(list, 0.25), percentile(list, 0.75))
    };
    println!("throughput ratio, direct time / hub time, median (p25..p75 of the runs):");
    println!("  decoding client: hub in memory {}, hub with SQLite {}", spread(&memory_ratios), spread(&stored_ratios));
    println!("  client counting bytes: hub in memory {}", spread(&bytes_ratios));
    let medians = |list: &mut Vec<[f64; 3]>| {
        let column = |index: usize| {
            let mut values: Vec<f64> = list.iter().map(|phases| phases[index]).collect();
            values.sort_by(f64::total_cmp);
            percentile(&values, 0.5)
        };
        format!("{:.2} + {:.2} + {:.2}", column(0), column(1), column(2))
    };
    let [direct, memory, stored] = &mut phases;
    println!(
        "medians, first token + stream + tail (ms), decoding client: direct {}, hub in memory {}, hub with SQLite {}",
        medians(direct),
        medians(memory),
        medians(stored)
    );
    let (memory, stored) = (percentile(&memory_ratios, 0.5), percentile(&stored_ratios, 0.5));
    println!("throughput ratio with SQLite, decoding client: {stored:.3}  (goal >= 0.95: {})", verdict(stored >= 0.95));
    let loss = 1.0 - stored / memory;
    println!("throughput lost to persistence: {:.1}%  (goal <= 5%: {})", loss * 100.0, verdict(loss <= 0.05));
}

/// Many one-delta replies, each the first prompt of a new session, paired
/// sample by sample with the same request made straight to the model.
async fn first_token(bench: &Bench, memory_hub: &str, stored_hub: &str) {
    let (mut direct_first, mut memory_added, mut stored_added) = (Vec::new(), Vec::new(), Vec::new());
    for sample in 0..LATENCY_SAMPLES {
        bench.model.push(text(&["tok"]));
        let direct = ms(bench.direct(Client::Decodes).await.first_token);
        // A fresh session each time: in one long session every prompt carries the
        // whole conversation to the model, which the direct request does not.
        let relayed = async |hub: &str| {
            bench.model.push(text(&["tok"]));
            ms(bench.through(hub, &format!("latency-{sample}"), Client::Decodes).await.first_token)
        };
        // Each hub goes first every other sample, so neither inherits the other's wake.
        let (memory, stored) = if sample % 2 == 0 {
            (relayed(memory_hub).await, relayed(stored_hub).await)
        } else {
            let stored = relayed(stored_hub).await;
            (relayed(memory_hub).await, stored)
        };
        direct_first.push(direct);
        memory_added.push(memory - direct);
        stored_added.push(stored - direct);
    }
    for list in [&mut direct_first, &mut memory_added, &mut stored_added] {
        list.sort_by(f64::total_cmp);
    }
    let spread = |list: &[f64]| {
        format!(
            "p50 {:.3} p90 {:.3} p99 {:.3} max {:.3}",
            percentile(list, 0.5),
            percentile(list, 0.9),
            percentile(list, 0.99),
            list[list.len() - 1]
        )
    };
    println!("first token, {LATENCY_SAMPLES} samples, ms: direct {}", spread(&direct_first));
    println!("  added by the hub in memory: {}", spread(&memory_added));
    println!("  added by the hub with SQLite: {}", spread(&stored_added));
    let p99 = percentile(&stored_added, 0.99);
    println!(
        "latency the hub with SQLite adds to the first token: p50 {:.3} ms, p99 {p99:.3} ms  (goal <= 2 ms p99: {})",
        percentile(&stored_added, 0.5),
        verdict(p99 <= 2.0)
    );
}

fn verdict(met: bool) -> &'static str {
    if met {
        "met"
    } else {
        "NOT met"
    }
}
