use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use agent_hub::agents::acp::{groups, AcpAgent};
use agent_hub::agents::builtin::model::ModelConfig;
use agent_hub::agents::catalog::AgentsFile;
use agent_hub::cli::{AgentKind, Cli};
use agent_hub::http::access::Access;
use agent_hub::http::web;
use agent_hub::hub::{Hub, HubOptions};
use agent_hub::remote::cert::RemoteCert;
use agent_hub::remote::devices::{Devices, RemoteListener};
use agent_hub::remote::listener::TlsListener;
use agent_hub::shutdown::{self, Progress, ShutdownStep, Signals};
use agent_hub::store::Store;
use agent_hub::{app, launch_url, random_token, remote_app, try_leptos_options, without_delay};
use tracing_subscriber::EnvFilter;

fn main() -> ExitCode {
    hide_own_environment();
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::from_args_and_env();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("agent-hub: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(run(cli));
    // From here no agent starts, and the agents' groups the sessions let go of
    // are left for `end_all` (its grace outlasts the runtime).
    groups::close();
    // Dropping the tasks ends what they own (a running command's group; the
    // agents' connections, quietly: the agents' end is not a crash to record);
    // a blocking task still busy is not waited for, so the exit stays prompt.
    runtime.shutdown_timeout(Duration::from_millis(500));
    // Every agent's whole group, wrappers and all: SIGTERM, a grace to save, SIGKILL.
    groups::end_all(groups::EXIT_GRACE);
    // Commands that ignored SIGTERM: their grace dies with the hub.
    agent_hub::tools::kill_remaining_groups();
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("agent-hub: {message}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> Result<(), String> {
    cli.validate()?;
    // Before anything starts: a bad LEPTOS_* variable stops the hub at once.
    let options = try_leptos_options(&cli)?;
    let acp = match cli.agent {
        AgentKind::Acp => Some(Arc::new(AcpAgent::new(&cli.acp_command)?.with_env(&cli.acp_env))),
        AgentKind::Builtin => None,
    };
    let token = match &cli.token {
        Some(token) => token.clone(),
        None => random_token().map_err(|err| format!("cannot generate a token: {err}"))?,
    };
    if !cli.host.is_loopback() {
        tracing::warn!("binding {}: the hub will be reachable from the network", cli.host);
    }
    let listener = tokio::net::TcpListener::bind((cli.host, cli.port))
        .await
        .map_err(|err| format!("cannot listen on {}:{}: {err}", cli.host, cli.port))?;
    let addr = listener.local_addr().map_err(|err| err.to_string())?;

    let model = cli.model_url.clone().map(|base_url| ModelConfig {
        base_url,
        model: cli.model.clone().unwrap_or_default(),
        api_key: std::env::var("OPENAI_API_KEY").ok().filter(|key| !key.is_empty()),
    });
    if model.as_ref().is_some_and(|model| model.model.is_empty()) {
        return Err("--model-url is set but no model: set HUB_MODEL or --model.".into());
    }
    let data_dir = cli
        .data_dir
        .clone()
        .or_else(default_data_dir)
        .ok_or("no data dir: set --data-dir or HUB_DATA_DIR (HOME is not set either).".to_string())?;
    let store = Store::open(&data_dir).map_err(|err| err.to_string())?;
    agent_hub::agents::protected::protect_data_dir(&data_dir);
    tracing::info!(database = %store.path().display(), "sessions are kept here");
    let remote = match cli.remote {
        Some(addr) => Some(Remote::open(&cli, addr, &data_dir).await?),
        None => None,
    };
    let devices = Devices::load(Some(store.clone()), remote.as_ref().map(|remote| remote.listener.clone()))
        .map_err(|err| format!("the paired devices could not be read: {err}"))?;
    let agents = agents(&cli, model, acp)?;
    // Once the agents file's `api_key_env` is known to be a secret.
    agent_hub::tools::pass_to_commands(&cli.command_env).map_err(|err| err.to_string())?;
    for entry in agents.entries() {
        let info = entry.info();
        let what = info.command.or(info.model).unwrap_or_default();
        match info.reason {
            None => tracing::info!(agent = %info.id, "{} ({what})", info.name),
            Some(reason) => tracing::info!(agent = %info.id, "{}: not available: {reason}", info.name),
        }
    }
    tracing::info!(default = agents.default_id(), "new sessions get this agent unless they pick another");
    let sandbox = Arc::new(agent_hub::sandbox::Sandbox::new(agent_hub::sandbox::SandboxConfig::for_hub(
        cli.no_sandbox,
        Some(data_dir.clone()),
    )));
    let hub = Hub::try_new(HubOptions {
        sandbox: Some(sandbox.clone()),
        store: Some(store.clone()),
        agents: Some(agents),
        max_resident: cli.max_resident,
        folder_trust: !cli.no_folder_trust,
        policy_dirs: agent_hub::policy::PolicyDirs {
            user: cli.user_policies.clone().or_else(|| agent_hub::policy::PolicyDirs::standard().user),
            admin: Some(cli.admin_policies.clone()),
            admin_checked: true,
        },
        checkpoints: Some(data_dir.join("checkpoints")),
        worktrees: Some(data_dir.join("worktrees")),
        ..HubOptions::default()
    })
    .map_err(|err| format!("the stored sessions could not be read, so the hub does not start: {err}"))?;
    // What recovering cut turns wrote is on disk before anyone can ask: a
    // client's first read and its next see the same log.
    store.flush().await.map_err(|err| format!("the sessions could not be recovered: {err}"))?;
    for folder in &cli.folders {
        // `agent-hub .` means the folder the hub was started in; the API takes absolute paths only.
        let absolute = std::path::absolute(folder).map_err(|err| format!("cannot open {}: {err}", folder.display()))?;
        let config = hub
            .open_session(&absolute.display().to_string(), None)
            .map_err(|err| format!("cannot open {}: {}", folder.display(), err))?;
        tracing::info!(folder = %config.folder_path, yolo = config.yolo_mode, "opened folder");
    }
    web::check_bundle(&options);
    devices.on_paired({
        let hub = hub.clone();
        move |device, address| hub.device_paired(&device.name, address)
    });
    // A key file that cannot be read leaves Web Push off (said), not the hub.
    let push = agent_hub::alerts::WebPush::open(&data_dir, store.clone(), &cli.push_contact)
        .map_err(|err| tracing::warn!("Web Push is off: {err}"))
        .ok()
        .map(Arc::new);
    let webhook = match &cli.notify_url {
        Some(url) => Some(agent_hub::alerts::WebhookConfig::from_flags(url, &cli.notify_headers)?),
        None => None,
    };
    agent_hub::alerts::start(
        &hub,
        agent_hub::alerts::AlertsConfig {
            // Where a paired phone opens the card, else the loopback page
            // (without the token: the browser has its cookie).
            base_url: remote.as_ref().map_or_else(|| format!("http://{addr}"), |remote| remote.listener.origin.clone()),
            webhook,
            push: push.clone(),
        },
    );
    let gate = Arc::new(Access::new(token.clone(), addr.port(), &cli.allow_hosts));
    // Before the launch line: from then on Ctrl-C and SIGTERM shut the hub down.
    let signals = Signals::listen().map_err(|err| format!("cannot listen for Ctrl-C and SIGTERM: {err}"))?;
    let progress = Progress::default();
    shutdown::on_signals(hub.clone(), signals, progress.clone(), shutdown::GRACE);
    let url = launch_url(addr, &token);
    println!("Agent Hub listening on {url}");
    // On stderr: the launch line stays the first thing on stdout, and a
    // reader that stops after it cannot make a later line fail.
    match sandbox.mode() {
        agent_hub::sandbox::Mode::Enforced { bwrap } => {
            tracing::info!("sandbox: on (bubblewrap, {}): commands and agents run inside it", bwrap.display())
        }
        agent_hub::sandbox::Mode::Disabled => {
            tracing::warn!("sandbox: OFF (--no-sandbox): commands and agents reach whatever you can")
        }
        agent_hub::sandbox::Mode::Unavailable { reason } => tracing::warn!(
            "sandbox: UNAVAILABLE ({reason}); YOLO stays off. Install bubblewrap, or start with --no-sandbox to run without it"
        ),
    }
    if let Some(remote) = &remote {
        println!(
            "Remote listener for paired devices on {} (certificate SHA-256 {})",
            remote.listener.origin, remote.listener.fingerprint
        );
    }
    if cli.open {
        open_browser(&url);
    }
    // Serving ends when the hub's shutdown begins and every connection has
    // closed; live streams end on the same token, so open pages do not hold it up.
    let mut local_app = app(hub.clone(), gate, devices.clone(), options.clone());
    if let Some(push) = &push {
        local_app = local_app.layer(axum::Extension(push.clone()));
    }
    let local =
        axum::serve(without_delay(listener), local_app).with_graceful_shutdown(hub.shutdown_token().cancelled_owned());
    let remote = async {
        let Some(remote) = remote else { return Ok(()) };
        let mut router = remote_app(hub.clone(), devices, remote.listener_port, &remote.names, options);
        if let Some(push) = push {
            router = router.layer(axum::Extension(push));
        }
        agent_hub::remote::listener::serve(remote.tls, router, hub.shutdown_token()).await;
        Ok::<(), std::io::Error>(())
    };
    tokio::try_join!(std::future::IntoFuture::into_future(local), remote).map_err(|err| err.to_string())?;
    progress.set(ShutdownStep::Turns);
    shutdown::settle_turns(&hub, shutdown::TURNS_SETTLE).await;
    progress.set(ShutdownStep::Store);
    // The writer gathers for a few milliseconds: what it holds goes to disk before the exit.
    if let Err(err) = store.flush().await {
        tracing::error!("the last writes were not saved: {err}");
    }
    progress.set(ShutdownStep::Done);
    tracing::info!("shut down");
    Ok(())
}

/// The remote listener, bound, with its certificate.
struct Remote {
    tls: TlsListener,
    listener: RemoteListener,
    listener_port: u16,
    names: Vec<String>,
}

impl Remote {
    async fn open(cli: &Cli, addr: std::net::SocketAddr, data_dir: &std::path::Path) -> Result<Self, String> {
        let names = agent_hub::remote::listener_names(addr.ip(), &cli.allow_hosts);
        let cert = match (&cli.remote_cert, &cli.remote_key) {
            (Some(cert), Some(key)) => RemoteCert::from_files(cert, key),
            _ => RemoteCert::kept_or_made(
                &data_dir.join("remote"),
                &agent_hub::remote::certificate_names(addr.ip(), &names, &cli.allow_hosts),
            ),
        }
        .map_err(|err| format!("the remote listener has no certificate: {err}"))?;
        let fingerprint = cert.fingerprint.clone();
        let config = agent_hub::remote::listener::server_config(cert)?;
        let tcp = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|err| format!("cannot listen on {addr} (--remote): {err}"))?;
        let listener_port = tcp.local_addr().map_err(|err| err.to_string())?.port();
        let tls = TlsListener::new(tcp, config);
        let listener = RemoteListener { origin: agent_hub::remote::origin(&names, listener_port), fingerprint };
        tracing::warn!(names = ?names, "remote listener on {addr}: paired devices can reach the hub from the network");
        Ok(Self { tls, listener, listener_port, names })
    }
}

/// The agents sessions can pick: the ready ones, the agents file's, the flags'.
fn agents(
    cli: &Cli,
    model: Option<ModelConfig>,
    acp: Option<Arc<AcpAgent>>,
) -> Result<agent_hub::agents::catalog::Catalog, String> {
    let (path, required) = match &cli.agents_file {
        Some(path) => (Some(path.clone()), true),
        None => (agent_hub::agents::catalog::file::standard_path(), false),
    };
    let file = match path {
        Some(path) => AgentsFile::read(&path, required).map_err(|err| err.to_string())?,
        None => None,
    };
    Ok(agent_hub::agents::catalog::Catalog::new(agent_hub::agents::catalog::AgentFlags {
        model,
        acp,
        file,
        agent_flag_given: cli.agent_given,
        acp_command_given: cli.acp_command_given,
        acp_env: cli.acp_env.clone(),
    }))
}

/// The hub's environment holds its secrets (`OPENAI_API_KEY`, `HUB_TOKEN`).
/// Commands and agents get them removed, but any process of the same user could
/// read them from `/proc/<hub>/environ`; a process that is not dumpable has its
/// `/proc` entries owned by root. (Its children are dumpable again after exec.)
fn hide_own_environment() {
    #[cfg(target_os = "linux")]
    // SAFETY: prctl(PR_SET_DUMPABLE) only changes this process's own flag.
    unsafe {
        if libc::prctl(libc::PR_SET_DUMPABLE, 0, 0, 0, 0) != 0 {
            eprintln!(
                "agent-hub: could not hide the environment from other processes: {}",
                std::io::Error::last_os_error()
            );
        }
    }
}

fn open_browser(url: &str) {
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    if let Err(err) = std::process::Command::new(opener).arg(url).spawn() {
        tracing::warn!("could not open a browser ({opener}): {err}");
    }
}

/// The platform's data dir: `$XDG_DATA_HOME/agent-hub`, else
/// `~/.local/share/agent-hub` (`~/Library/Application Support/agent-hub` on macOS).
fn default_data_dir() -> Option<std::path::PathBuf> {
    agent_hub::user_dir("XDG_DATA_HOME", ".local/share")
}
