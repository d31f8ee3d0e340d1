//! Relay benchmark: how much the hub costs a streaming reply.
//!
//! A scripted model streams 20,000 tokens as fast as it can. In one run, the
//! same client reads them straight from the model and through the hub's
//! `POST /api/chat/prompt` (a real socket, real gates), alternating, and the
//! throughput ratio is printed (goal ≥ 0.95). The hub runs twice: in memory, and
//! saving every event to SQLite (goal: persistence costs at most 5%). Then many
//! one-delta replies, each the first prompt of a new session, give the
//! first-token latency the hub adds, paired sample by sample (goal ≤ 2 ms p99).
//!
//! `cargo bench -p agent-hub-server --bench relay`

#[path = "../tests/common/fake_model.rs"]
#[allow(dead_code)]
mod fake_model;

use std::sync::Arc;
use std::time::{Duration, Instant};

use agent_hub::agent::model::ModelConfig;
use agent_hub::cli::Cli;
use agent_hub::gates::Gate;
use agent_hub::hub::{Hub, HubOptions};
use agent_hub::store::Store;
use clap::Parser;
use fake_model::{text, FakeModel};
use serde_json::json;

const TOKEN: &str = "bench-token-123";
const TOKENS: usize = 20_000;
// Each run is ~0.1 s a side on a noisy 2-core VM: many runs for a stable median.
const RUNS: usize = 25;
const LATENCY_SAMPLES: usize = 400;

struct Timing {
    first_token: Duration,
    total: Duration,
    tokens: usize,
}

/// Reads a streamed body line by line, timing the first line that holds a
/// token and counting the tokens (the hub may carry several in one delta).
async fn timed(request: reqwest::RequestBuilder, is_delta: impl Fn(&[u8]) -> bool) -> Timing {
    let start = Instant::now();
    let mut response = request.send().await.expect("request");
    assert!(response.status().is_success(), "{}", response.status());
    let mut first_token = None;
    let mut tokens = 0;
    let mut partial: Vec<u8> = Vec::new();
    while let Some(chunk) = response.chunk().await.expect("body") {
        partial.extend_from_slice(&chunk);
        let Some(end) = partial.iter().rposition(|&b| b == b'\n') else { continue };
        for line in partial[..end].split(|&b| b == b'\n') {
            if is_delta(line) {
                tokens += occurrences(line, b"tok");
                first_token.get_or_insert_with(|| start.elapsed());
            }
        }
        partial.drain(..=end);
    }
    Timing { first_token: first_token.expect("no delta arrived"), total: start.elapsed(), tokens }
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
    async fn direct(&self) -> Timing {
        let body = json!({"model": "bench", "messages": [{"role": "user", "content": "go"}], "stream": true});
        let request = self
            .client
            .post(format!("{}/chat/completions", self.model.base_url))
            .header("content-type", "application/json")
            .body(body.to_string());
        timed(request, |line| line.starts_with(b"data: {") && contains(line, b"\"content\":\"")).await
    }

    async fn through(&self, hub_url: &str, session: &str) -> Timing {
        let body = json!({"folderPath": self.folder.path(), "sessionId": session, "message": "go"});
        let request = self
            .client
            .post(format!("{hub_url}/api/chat/prompt"))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body.to_string());
        timed(request, |line| contains(line, b"\"role\":\"assistant\"")).await
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
    let gate = Arc::new(Gate::new(TOKEN.into(), addr.port(), &[]));
    let router = agent_hub::app(hub, gate, agent_hub::leptos_options(&Cli::parse_from(["agent-hub"])));
    tokio::spawn(async move { axum::serve(agent_hub::without_delay(listener), router).await.unwrap() });
    format!("http://{addr}")
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1000.0
}

#[tokio::main]
async fn main() {
    let model = FakeModel::start(Vec::new()).await;
    let data = tempfile::tempdir().unwrap();
    let memory_hub = start_hub(&model, None).await;
    let stored_hub = start_hub(&model, Some(Store::open(data.path()).unwrap())).await;
    let bench = Bench { client: reqwest::Client::new(), model, folder: tempfile::tempdir().unwrap() };
    let pieces: Vec<String> = (0..TOKENS).map(|i| format!("tok{i} ")).collect();
    let long_reply = || fake_model::Reply::Text(pieces.clone());

    // Warm up connections and code paths.
    for hub in [&memory_hub, &stored_hub] {
        bench.model.push(text(&["tok"]));
        bench.direct().await;
        bench.model.push(text(&["tok"]));
        bench.through(hub, "warm-up").await;
    }

    println!("relay of {TOKENS} tokens, {RUNS} runs, each run: direct, hub in memory, hub with SQLite");
    let (mut memory_ratios, mut stored_ratios) = (Vec::new(), Vec::new());
    for run in 0..RUNS {
        bench.model.push(long_reply());
        let direct = bench.direct().await;
        bench.model.push(long_reply());
        let memory = bench.through(&memory_hub, &format!("throughput-{run}")).await;
        bench.model.push(long_reply());
        let stored = bench.through(&stored_hub, &format!("throughput-{run}")).await;
        assert_eq!((direct.tokens, memory.tokens, stored.tokens), (TOKENS, TOKENS, TOKENS), "every token arrives");
        let rate = |timing: &Timing| TOKENS as f64 / timing.total.as_secs_f64();
        println!(
            "  run {run}: direct {:6.1} ms ({:>7.0}/s)   hub {:6.1} ms ({:>7.0}/s)   hub+SQLite {:6.1} ms ({:>7.0}/s)",
            ms(direct.total),
            rate(&direct),
            ms(memory.total),
            rate(&memory),
            ms(stored.total),
            rate(&stored),
        );
        memory_ratios.push(direct.total.as_secs_f64() / memory.total.as_secs_f64());
        stored_ratios.push(direct.total.as_secs_f64() / stored.total.as_secs_f64());
    }
    for list in [&mut memory_ratios, &mut stored_ratios] {
        list.sort_by(f64::total_cmp);
    }
    let (memory, stored) = (percentile(&memory_ratios, 0.5), percentile(&stored_ratios, 0.5));
    println!(
        "throughput ratio spread (p25..p75): in memory {:.3}..{:.3}, with SQLite {:.3}..{:.3}",
        percentile(&memory_ratios, 0.25),
        percentile(&memory_ratios, 0.75),
        percentile(&stored_ratios, 0.25),
        percentile(&stored_ratios, 0.75),
    );
    let verdict = |met: bool| if met { "met" } else { "NOT met" };
    println!("throughput ratio, direct time / hub time (median): in memory {memory:.3}, with SQLite {stored:.3}  (goal >= 0.95: {})", verdict(stored >= 0.95));
    let loss = 1.0 - stored / memory;
    println!("throughput lost to persistence: {:.1}%  (goal <= 5%: {})", loss * 100.0, verdict(loss <= 0.05));

    let mut added = Vec::with_capacity(LATENCY_SAMPLES);
    let (mut direct_first, mut hub_first) = (Vec::new(), Vec::new());
    for sample in 0..LATENCY_SAMPLES {
        bench.model.push(text(&["tok"]));
        let direct = bench.direct().await;
        bench.model.push(text(&["tok"]));
        // A fresh session each time: in one long session every prompt carries the
        // whole conversation to the model, which the direct request does not.
        let relayed = bench.through(&stored_hub, &format!("latency-{sample}")).await;
        direct_first.push(ms(direct.first_token));
        hub_first.push(ms(relayed.first_token));
        added.push(ms(relayed.first_token) - ms(direct.first_token));
    }
    for list in [&mut added, &mut direct_first, &mut hub_first] {
        list.sort_by(f64::total_cmp);
    }
    println!(
        "first token, {LATENCY_SAMPLES} samples (hub with SQLite): direct p50 {:.3} ms p99 {:.3} ms; through hub p50 {:.3} ms p99 {:.3} ms",
        percentile(&direct_first, 0.5),
        percentile(&direct_first, 0.99),
        percentile(&hub_first, 0.5),
        percentile(&hub_first, 0.99),
    );
    let p99 = percentile(&added, 0.99);
    println!(
        "latency the hub adds to the first token: p50 {:.3} ms, p99 {p99:.3} ms  (goal <= 2 ms p99: {})",
        percentile(&added, 0.5),
        verdict(p99 <= 2.0)
    );
}
