#![recursion_limit = "256"]
//! Agent Hub server: HTTP, gates, sessions, settings.

pub mod agent;
pub mod api;
pub mod approval;
pub mod cli;
pub mod error;
pub mod folder;
pub mod gates;
pub mod hub;
pub mod registry;
pub mod settings;
pub mod tools;
pub mod watcher;
pub mod web;

use std::sync::Arc;

use axum::Router;
use leptos::config::LeptosOptions;

use crate::gates::Gate;
use crate::hub::Hub;

/// The whole application behind its gates.
pub fn app(hub: Arc<Hub>, gate: Arc<Gate>, leptos: LeptosOptions) -> Router {
    Router::new()
        .nest("/api", api::router().with_state(hub))
        .merge(web::router(leptos))
        .layer(axum::middleware::from_fn_with_state(gate, gates::gate))
}

pub fn leptos_options(cli: &cli::Cli) -> LeptosOptions {
    LeptosOptions::builder()
        .output_name(env!("LEPTOS_OUTPUT_NAME"))
        .site_root(cli.site_root.display().to_string())
        .site_pkg_dir("pkg")
        .build()
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
