#![recursion_limit = "256"]
//! Agent Hub server: HTTP, gates, sessions, settings.

pub mod agents;
pub mod alerts;
pub mod approval;
pub mod audit;
pub mod changes;
pub mod checkpoints;
pub mod cli;
pub mod clock;
pub mod folder;
pub mod http;
pub mod hub;
pub mod policy;
pub mod registry;
pub mod remote;
pub mod sandbox;
pub mod session;
pub mod settings;
pub mod shutdown;
pub mod site;
pub mod store;
pub mod tools;
pub mod watcher;
pub mod worktrees;

use std::sync::Arc;

use axum::Router;
use leptos::config::LeptosOptions;

use crate::http::access::Access;
use crate::hub::Hub;
use crate::remote::devices::Devices;

/// The whole application behind the loopback listener's gates; paired devices
/// are managed here.
pub fn app(hub: Arc<Hub>, gate: Arc<Access>, devices: Arc<Devices>, leptos: LeptosOptions) -> Router {
    let api = http::api::router().with_state(hub).merge(http::api::devices::local(devices));
    never_framed(
        Router::new()
            .nest("/api", api)
            .merge(http::web::router(leptos))
            .layer(axum::middleware::from_fn_with_state(gate, http::access::check)),
    )
}

/// No page of the hub renders inside another site's frame (a page on another
/// port of the same host could frame the card invisibly and take a tap for
/// an approval; `SameSite` cookies do not stop that within one site).
fn never_framed(router: Router) -> Router {
    use axum::http::header::{HeaderValue, CONTENT_SECURITY_POLICY, X_FRAME_OPTIONS};
    use tower_http::set_header::SetResponseHeaderLayer;
    router.layer(SetResponseHeaderLayer::overriding(X_FRAME_OPTIONS, HeaderValue::from_static("DENY"))).layer(
        SetResponseHeaderLayer::if_not_present(
            CONTENT_SECURITY_POLICY,
            HeaderValue::from_static("frame-ancestors 'none'"),
        ),
    )
}

/// The same application behind the remote listener's gates (paired devices
/// only); devices pair here and are managed only on loopback.
pub fn remote_app(hub: Arc<Hub>, devices: Arc<Devices>, port: u16, hosts: &[String], leptos: LeptosOptions) -> Router {
    let cookie = http::api::devices::DeviceCookie::for_port(port);
    let gate = Arc::new(http::remote::RemoteAccess::new(devices.clone(), cookie.clone(), hosts));
    let api = http::api::router().with_state(hub).merge(http::api::devices::remote(devices, cookie));
    never_framed(
        Router::new()
            .nest("/api", api)
            .merge(http::web::router(leptos))
            .layer(axum::middleware::from_fn_with_state(gate, http::remote::check)),
    )
}

/// The hub's directory of one kind for this user: `$<xdg_var>/agent-hub`, else
/// `~/<home_dir>/agent-hub` (on macOS `~/Library/Application Support/agent-hub`).
pub fn user_dir(xdg_var: &str, home_dir: &str) -> Option<std::path::PathBuf> {
    if let Some(xdg) = std::env::var_os(xdg_var).filter(|dir| !dir.is_empty()) {
        return Some(std::path::PathBuf::from(xdg).join("agent-hub"));
    }
    let home = std::path::PathBuf::from(std::env::var_os("HOME").filter(|home| !home.is_empty())?);
    let base = if cfg!(target_os = "macos") { home.join("Library/Application Support") } else { home.join(home_dir) };
    Some(base.join("agent-hub"))
}

/// What the pages and assets are served from: Leptos.toml, then `LEPTOS_*`
/// variables, then `--site-root` ([`site`]).
pub fn try_leptos_options(cli: &cli::Cli) -> Result<LeptosOptions, String> {
    let mut options = site::options_from_file_and_env()?;
    match &cli.site_root {
        Some(site_root) => options.site_root = site_root.display().to_string().into(),
        // The file's own place, never the directory the hub happens to run in.
        None if std::env::var_os("LEPTOS_SITE_ROOT").is_none() => {
            options.site_root = site::built_site_root().display().to_string().into();
        }
        None => {}
    }
    Ok(options)
}

/// [`try_leptos_options`] for tests and benches, where a bad setting is a bug.
pub fn leptos_options(cli: &cli::Cli) -> LeptosOptions {
    try_leptos_options(cli).unwrap_or_else(|err| panic!("{err}"))
}

/// Accepted connections send small writes at once (TCP_NODELAY): a streamed
/// reply is many small writes, which Nagle's algorithm would hold back ~40 ms
/// behind the client's delayed ACKs.
pub fn without_delay(
    listener: tokio::net::TcpListener,
) -> axum::serve::TapIo<tokio::net::TcpListener, fn(&mut tokio::net::TcpStream)> {
    use axum::serve::ListenerExt;
    fn no_delay(stream: &mut tokio::net::TcpStream) {
        if let Err(err) = stream.set_nodelay(true) {
            tracing::debug!("TCP_NODELAY not set: {err}");
        }
    }
    listener.tap_io(no_delay as fn(&mut tokio::net::TcpStream))
}

/// A random launch token: 128 bits, hex.
pub fn random_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The URL the hub prints; IPv6 literals get brackets.
pub fn launch_url(addr: std::net::SocketAddr, token: &str) -> String {
    format!("http://{addr}/?token={token}")
}
