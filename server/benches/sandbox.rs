//! What the sandbox costs: a command (`bash -c true`, as the built-in agent's
//! shell tool starts it) and an agent's start (`node -e 0`, the agents'
//! runtime), each spawned and reaped in bubblewrap and, in the same run,
//! without it (`--no-sandbox`, the baseline). Prints the median and p90 of each
//! and the added median, in milliseconds.
//!
//! `cargo bench -p agent-hub-server --bench sandbox`

use std::ffi::OsString;
use std::time::{Duration, Instant};

use agent_hub::sandbox::{Reach, Request, Sandbox, SandboxConfig};

const ROUNDS: usize = 200;

fn stats(mut samples: Vec<Duration>) -> (f64, f64) {
    samples.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    (ms(samples[samples.len() / 2]), ms(samples[samples.len() * 9 / 10]))
}

async fn spawn_and_wait(sandbox: &Sandbox, request: &Request<'_>, program: &str, args: &[&str]) -> Duration {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let start = Instant::now();
    let mut prepared = sandbox.command(request, &program.into(), &args).expect("the program is there");
    prepared.command.stdin(std::process::Stdio::null()).stdout(std::process::Stdio::null());
    let status = prepared.command.spawn().expect("spawns").wait().await.expect("waits");
    let took = start.elapsed();
    assert!(status.success(), "{program} {args:?} failed ({status}): is the sandbox working here?");
    took
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let data = tempfile::tempdir().unwrap();
    let folder = tempfile::tempdir().unwrap();
    let root = folder.path().canonicalize().unwrap();
    let home = std::env::var_os("HOME").map(std::path::PathBuf::from);
    let config = |disabled| SandboxConfig {
        disabled,
        data_dir: Some(data.path().to_path_buf()),
        config_dir: None,
        home: home.clone(),
        path: std::env::var_os("PATH"),
    };
    let (sandboxed, baseline) = (Sandbox::new(config(false)), Sandbox::new(config(true)));
    if !sandboxed.enforced() {
        println!("no sandbox here ({:?}): nothing to measure", sandboxed.mode());
        return;
    }
    println!("sandbox bench: {ROUNDS} rounds each, alternating with and without the sandbox");
    let cases: [(&str, Reach, &str, &[&str]); 2] = [
        ("a command (bash -c true)", Reach::Command, "bash", &["-c", "true"]),
        ("an agent's start (node -e 0)", Reach::Agent, "node", &["-e", "0"]),
    ];
    for (label, reach, program, args) in cases {
        let request = Request {
            root: &root,
            root_fd: None,
            reach,
            network: reach == Reach::Agent,
            hide_agent_config: true,
            env: &[],
            agent: (reach == Reach::Agent).then_some("claude"),
            masks: &[],
        };
        let (mut with, mut without) = (Vec::new(), Vec::new());
        // Warm both (page cache, the binaries), then alternate so drift hits both alike.
        spawn_and_wait(&sandboxed, &request, program, args).await;
        spawn_and_wait(&baseline, &request, program, args).await;
        for _ in 0..ROUNDS {
            with.push(spawn_and_wait(&sandboxed, &request, program, args).await);
            without.push(spawn_and_wait(&baseline, &request, program, args).await);
        }
        let ((with_median, with_p90), (without_median, without_p90)) = (stats(with), stats(without));
        println!(
            "{label}: sandboxed median {with_median:.2} ms (p90 {with_p90:.2}), --no-sandbox median {without_median:.2} ms (p90 {without_p90:.2}), added {:.2} ms",
            with_median - without_median
        );
    }
}
