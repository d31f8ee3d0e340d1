//! The pages (Leptos SSR, hydrated by the wasm bundle) and the static assets.

use std::path::Path;

use app::{shell, PAGES};
use axum::http::header::CACHE_CONTROL;
use axum::http::HeaderValue;
use axum::routing::get;
use axum::Router;
use leptos::config::LeptosOptions;
use tower_http::compression::CompressionLayer;
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;

pub fn router(options: LeptosOptions) -> Router {
    let site_root = Path::new(options.site_root.as_ref()).to_path_buf();
    // Rendering spawns tasks through Leptos' executor; already set is fine (tests
    // build several routers in one process).
    let _ = any_spawner::Executor::init_tokio();
    // Every page is the same app, which picks its page from the path (`app::App`).
    let render = leptos_axum::render_app_to_stream({
        let options = options.clone();
        move || shell(options.clone())
    });
    let pages = PAGES
        .iter()
        .fold(Router::new(), |pages, path| pages.route(path, get(render.clone())))
        .layer(CompressionLayer::new());
    // The bundle keeps one name across builds: revalidate instead of caching blindly.
    // Pre-compressed .br/.gz siblings (written by scripts/build) are served as is.
    let assets = ServeDir::new(site_root).precompressed_br().precompressed_gzip();
    pages.fallback_service(
        tower::ServiceBuilder::new()
            .layer(SetResponseHeaderLayer::overriding(CACHE_CONTROL, HeaderValue::from_static("no-cache")))
            .service(assets),
    )
}

/// Tells the user when the client bundle has not been built (the page would not hydrate).
pub fn check_bundle(options: &LeptosOptions) {
    let pkg = Path::new(options.site_root.as_ref()).join(options.site_pkg_dir.as_ref());
    let wasm = pkg.join(format!("{}.wasm", options.output_name));
    if !wasm.is_file() {
        tracing::warn!(
            "client bundle {} not found: pages will not be interactive. Run ./scripts/build from the repository root.",
            wasm.display()
        );
    }
}
