//! Relay benchmark: how much the hub costs a streaming reply.
//!
//! A scripted model streams 20,000 deltas as fast as it can. In one run, the
//! same client reads them straight from the model and through the hub's
//! `POST /api/chat/prompt` (a real socket, real gates), alternating, and the
//! throughput ratio is printed (goal ≥ 0.95). Then many one-delta replies give
//! the first-token latency the hub adds, paired sample by sample (goal ≤ 2 ms p99).
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
use clap::Parser;
use fake_model::{text, FakeModel};
use serde_json::json;

const TOKEN: &str = "bench-token-123";
const DELTAS: usize = 20_000;
const RUNS: usize = 7;
const LATENCY_SAMPLES: usize = 400;

struct Timing {
    first_token: Duration,
    total: Duration,
    deltas: usize,
}

/// Reads a streamed body line by line, timing the first line that holds a
/// delta and counting them all.
async fn timed(request: reqwest::RequestBuilder, is_delta: impl Fn(&[u8]) -> bool) -> Timing {
    let start = Instant::now();
    let mut response = request.send().await.expect("request");
    assert!(response.status().is_success(), "{}", response.status());
    let mut first_token = None;
    let mut deltas = 0;
    let mut partial: Vec<u8> = Vec::new();
    while let Some(chunk) = response.chunk().await.expect("body") {
        partial.extend_from_slice(&chunk);
        let Some(end) = partial.iter().rposition(|&b| b == b'\n') else { continue };
        for line in partial[..end].split(|&b| b == b'\n') {
            if is_delta(line) {
                deltas += 1;
                first_token.get_or_insert_with(|| start.elapsed());
            }
        }
        partial.drain(..=end);
    }
    Timing { first_token: first_token.expect("no delta arrived"), total: start.elapsed(), deltas }
}

fn contains(line: &[u8], needle: &[u8]) -> bool {
    line.windows(needle.len()).any(|window| window == needle)
}

struct Bench {
    client: reqwest::Client,
    model: FakeModel,
    hub_url: String,
    folder: tempfile::TempDir,
}

impl Bench {
    async fn direct(&self) -> Timing {
        let body = json!({"model": "bench", "messages": [{"role": "user", "content": "go"}], "stream": true});
        let request = self.client.post(format!("{}/chat/completions", self.model.base_url)).json(&body);
        timed(request, |line| line.starts_with(b"data: {") && contains(line, b"\"content\":\"")).await
    }

    async fn through_hub(&self, session: &str) -> Timing {
        let body = json!({"folderPath": self.folder.path(), "sessionId": session, "message": "go"});
        let request = self
            .client
            .post(format!("{}/api/chat/prompt", self.hub_url))
            .bearer_auth(TOKEN)
            .header("content-type", "application/json")
            .body(body.to_string());
        timed(request, |line| contains(line, b"\"role\":\"assistant\"")).await
    }
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
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let hub = Hub::new(HubOptions {
        model: Some(ModelConfig { base_url: model.base_url.clone(), model: "bench".into(), api_key: None }),
        ..HubOptions::default()
    });
    let gate = Arc::new(Gate::new(TOKEN.into(), addr.port(), &[]));
    let router = agent_hub::app(hub, gate, agent_hub::leptos_options(&Cli::parse_from(["agent-hub"])));
    tokio::spawn(async move { axum::serve(agent_hub::without_delay(listener), router).await.unwrap() });
    let bench = Bench {
        client: reqwest::Client::new(),
        model,
        hub_url: format!("http://{addr}"),
        folder: tempfile::tempdir().unwrap(),
    };
    let pieces: Vec<String> = (0..DELTAS).map(|i| format!("tok{i} ")).collect();
    let long_reply = || fake_model::Reply::Text(pieces.clone());

    // Warm up connections and code paths.
    bench.model.push(text(&["warm"]));
    bench.direct().await;
    bench.model.push(text(&["warm"]));
    bench.through_hub("warm-up").await;

    println!("relay of {DELTAS} deltas, {RUNS} runs each, alternating (2-core machine figures in README)");
    let mut ratios = Vec::new();
    let (mut direct_best, mut hub_best) = (Duration::MAX, Duration::MAX);
    for run in 0..RUNS {
        bench.model.push(long_reply());
        let direct = bench.direct().await;
        bench.model.push(long_reply());
        let relayed = bench.through_hub(&format!("throughput-{run}")).await;
        assert_eq!((direct.deltas, relayed.deltas), (DELTAS, DELTAS), "every delta arrives");
        let ratio = direct.total.as_secs_f64() / relayed.total.as_secs_f64();
        println!(
            "  run {run}: direct {:7.1} ms ({:>9.0} deltas/s)   through hub {:7.1} ms ({:>9.0} deltas/s)   ratio {ratio:.3}",
            ms(direct.total),
            DELTAS as f64 / direct.total.as_secs_f64(),
            ms(relayed.total),
            DELTAS as f64 / relayed.total.as_secs_f64(),
        );
        direct_best = direct_best.min(direct.total);
        hub_best = hub_best.min(relayed.total);
        ratios.push(ratio);
    }
    ratios.sort_by(f64::total_cmp);
    let median = percentile(&ratios, 0.5);
    println!(
        "throughput ratio (direct time / hub time): median {median:.3}, best-of-runs {:.3}  (goal >= 0.95: {})",
        direct_best.as_secs_f64() / hub_best.as_secs_f64(),
        if median >= 0.95 { "met" } else { "NOT met" }
    );

    let mut added = Vec::with_capacity(LATENCY_SAMPLES);
    let (mut direct_first, mut hub_first) = (Vec::new(), Vec::new());
    for _ in 0..LATENCY_SAMPLES {
        bench.model.push(text(&["hi"]));
        let direct = bench.direct().await;
        bench.model.push(text(&["hi"]));
        let relayed = bench.through_hub("latency").await;
        direct_first.push(ms(direct.first_token));
        hub_first.push(ms(relayed.first_token));
        added.push(ms(relayed.first_token) - ms(direct.first_token));
    }
    for list in [&mut added, &mut direct_first, &mut hub_first] {
        list.sort_by(f64::total_cmp);
    }
    println!(
        "first token, {LATENCY_SAMPLES} samples: direct p50 {:.3} ms p99 {:.3} ms; through hub p50 {:.3} ms p99 {:.3} ms",
        percentile(&direct_first, 0.5),
        percentile(&direct_first, 0.99),
        percentile(&hub_first, 0.5),
        percentile(&hub_first, 0.99),
    );
    let p99 = percentile(&added, 0.99);
    println!(
        "latency the hub adds to the first token: p50 {:.3} ms, p99 {p99:.3} ms  (goal <= 2 ms p99: {})",
        percentile(&added, 0.5),
        if p99 <= 2.0 { "met" } else { "NOT met" }
    );
}
