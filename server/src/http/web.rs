//! The pages (Leptos SSR, hydrated by the wasm bundle) and the static assets.

use std::path::Path;

use app::{shell, PAGES};
use axum::body::Body;
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY};
use axum::http::{HeaderValue, Request, StatusCode};
use axum::response::IntoResponse;
use axum::routing::get;
use axum::Router;
use leptos::config::LeptosOptions;
use leptos::nonce::Nonce;
use leptos::prelude::provide_context;
use tower_http::compression::CompressionLayer;
use tower_http::services::ServeDir;
use tower_http::set_header::SetResponseHeaderLayer;

pub fn router(options: LeptosOptions) -> Router {
    let site_root = Path::new(options.site_root.as_ref()).to_path_buf();
    // Rendering spawns tasks through Leptos' executor; already set is fine (tests
    // build several routers in one process).
    let _ = any_spawner::Executor::init_tokio();
    // Every page is the same app, which picks its page from the path (`app::App`).
    let page = move |request: Request<Body>| {
        let options = options.clone();
        async move {
            let Some(nonce) = new_nonce() else {
                return (StatusCode::INTERNAL_SERVER_ERROR, "No randomness for the page's script nonce.")
                    .into_response();
            };
            let render = leptos_axum::render_app_to_stream_with_context(
                {
                    let nonce = nonce.clone();
                    move || provide_context(Nonce::from_value(nonce.clone()))
                },
                move || shell(options.clone()),
            );
            let mut response = render(request).await;
            if let Ok(policy) = HeaderValue::from_str(&page_policy(&nonce)) {
                response.headers_mut().insert(CONTENT_SECURITY_POLICY, policy);
            }
            response
        }
    };
    let pages = PAGES
        .iter()
        .fold(Router::new(), |pages, path| pages.route(path, get(page.clone())))
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

/// A page runs only the scripts the hub put in it: those carrying this
/// response's nonce (the service worker's registration, Leptos' hydration
/// loader) and the bundle's own files; the wasm may compile. An injected
/// `<script>`, inline handler or plugin does not run, and no site may frame it.
pub fn page_policy(nonce: &str) -> String {
    format!(
        "script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; object-src 'none'; base-uri 'none'; \
         frame-ancestors 'none'"
    )
}

/// 128 random bits, base64url: a fresh nonce for each page.
fn new_nonce() -> Option<String> {
    use base64::Engine as _;
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
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
