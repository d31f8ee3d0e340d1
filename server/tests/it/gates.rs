//! Launch token, Host allowlist and Origin check on every route.

use crate::common;

use axum::body::Body;
use axum::http::{Request, StatusCode};
use common::*;

fn request(path: &str) -> axum::http::request::Builder {
    Request::get(path).header("host", HOST)
}

#[tokio::test]
async fn api_needs_the_token() {
    let hub = TestHub::new();
    let missing = hub.send(request("/api/projects").body(Body::empty()).unwrap()).await;
    assert_eq!((missing.status, missing.error_code().as_str()), (StatusCode::UNAUTHORIZED, "unauthorized"));
    let wrong = hub
        .send(request("/api/projects").header("authorization", "Bearer nope-nope-nope").body(Body::empty()).unwrap())
        .await;
    assert_eq!((wrong.status, wrong.error_code().as_str()), (StatusCode::UNAUTHORIZED, "unauthorized"));
    let bearer = hub.get("/api/projects").await;
    assert_eq!(bearer.status, StatusCode::OK);
    let cookie = hub
        .send(
            request("/api/projects").header("cookie", format!("agent_hub_{PORT}={TOKEN}")).body(Body::empty()).unwrap(),
        )
        .await;
    assert_eq!(cookie.status, StatusCode::OK);
}

/// Issue 39, item 9(a): a page on another port of the same host framed the
/// hub's page invisibly and one tap approved a card. Every answer, the page,
/// the API and a refusal alike, forbids framing.
#[tokio::test]
async fn no_answer_of_the_hub_may_be_framed() {
    let hub = TestHub::new();
    let page = hub.get("/").await;
    let api = hub.get("/api/projects").await;
    let refused = hub.send(request("/api/projects").body(Body::empty()).unwrap()).await;
    assert_eq!((page.status, api.status, refused.status), (StatusCode::OK, StatusCode::OK, StatusCode::UNAUTHORIZED));
    for reply in [&page, &api, &refused] {
        assert_eq!(reply.headers["x-frame-options"], "DENY");
        let policy = reply.headers["content-security-policy"].to_str().unwrap();
        assert!(policy.ends_with("frame-ancestors 'none'"), "{policy}");
    }
}

/// Issue 39, item 9(a): a tight `script-src`. The page runs only the scripts
/// carrying its response's nonce (a new one per load) and the bundle's files;
/// every inline script of the page carries it.
#[tokio::test]
async fn the_page_runs_only_the_scripts_carrying_its_nonce() {
    let hub = TestHub::new();
    let nonce_of = |reply: &Reply| {
        let policy = reply.headers["content-security-policy"].to_str().unwrap().to_string();
        assert!(policy.starts_with("script-src 'self' 'nonce-"), "{policy}");
        assert!(policy.contains("'wasm-unsafe-eval'") && policy.contains("object-src 'none'"), "{policy}");
        assert!(!policy.contains("unsafe-inline"), "{policy}");
        policy.split("'nonce-").nth(1).and_then(|rest| rest.split('\'').next()).unwrap().to_string()
    };
    let (first, second) = (hub.get("/").await, hub.get("/decisions").await);
    let (one, two) = (nonce_of(&first), nonce_of(&second));
    assert!(one.len() >= 22 && one != two, "a fresh nonce per page: {one} {two}");
    let html = String::from_utf8_lossy(&first.body);
    let tags: Vec<&str> =
        html.split("<script").skip(1).map(|rest| rest.split('>').next().unwrap_or_default()).collect();
    assert!(tags.len() >= 2, "the service worker's registration and the hydration loader: {html}");
    for tag in tags {
        assert!(tag.contains(&format!("nonce=\"{one}\"")), "a script without the nonce: <script{tag}>");
    }
    assert!(!html.contains(&two));
}

#[tokio::test]
async fn token_in_the_url_sets_a_strict_cookie_and_is_dropped_from_the_url() {
    let hub = TestHub::new();
    let reply = hub.send(request(&format!("/?folder=%2Ftmp&token={TOKEN}")).body(Body::empty()).unwrap()).await;
    assert_eq!(reply.status, StatusCode::SEE_OTHER);
    assert_eq!(reply.headers["location"], "/?folder=%2Ftmp");
    let cookie = reply.headers["set-cookie"].to_str().unwrap();
    assert!(cookie.starts_with(&format!("agent_hub_{PORT}={TOKEN};")), "{cookie}");
    assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"), "{cookie}");

    let wrong = hub.send(request("/?token=guess-guess").body(Body::empty()).unwrap()).await;
    assert_eq!(wrong.status, StatusCode::UNAUTHORIZED);
    assert!(wrong.headers.get("set-cookie").is_none());
}

#[tokio::test]
async fn pages_and_assets_need_the_token_too() {
    let hub = TestHub::new();
    for path in ["/", "/pkg/agent_hub.wasm", "/favicon.svg"] {
        let reply = hub.send(request(path).body(Body::empty()).unwrap()).await;
        assert_eq!(reply.status, StatusCode::UNAUTHORIZED, "{path}");
    }
    let page =
        hub.send(request("/").header("cookie", format!("agent_hub_{PORT}={TOKEN}")).body(Body::empty()).unwrap()).await;
    assert_eq!(page.status, StatusCode::OK);
    let html = String::from_utf8_lossy(&page.body);
    assert!(html.contains("Agent Hub") && html.contains("/pkg/agent_hub.wasm"), "the page loads the hydration bundle");
}

#[tokio::test]
async fn foreign_hosts_are_refused_even_with_the_token() {
    let hub = TestHub::new();
    for host in ["evil.example:7744", "127.0.0.1.evil.example", "192.168.1.5:7744", ""] {
        let reply = hub
            .send(
                Request::get("/api/projects")
                    .header("host", host)
                    .header("authorization", format!("Bearer {TOKEN}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!((reply.status, reply.error_code().as_str()), (StatusCode::FORBIDDEN, "forbidden"), "{host:?}");
    }
    for host in ["localhost:7744", "[::1]:7744"] {
        let reply = hub
            .send(
                Request::get("/api/projects")
                    .header("host", host)
                    .header("authorization", format!("Bearer {TOKEN}"))
                    .body(Body::empty())
                    .unwrap(),
            )
            .await;
        assert_eq!(reply.status, StatusCode::OK, "{host}");
    }
}

#[tokio::test]
async fn foreign_origins_are_refused_and_nothing_changes() {
    let hub = TestHub::new();
    let (_dir, folder) = project(None);
    let body = serde_json::json!({"folderPath": folder, "yoloMode": true}).to_string();
    for origin in ["http://evil.example", "http://127.0.0.1:9999", "null", "https://127.0.0.1:7744"] {
        let reply = hub
            .send(
                authorized(Request::post("/api/chat/config"))
                    .header("origin", origin)
                    .header("content-type", "application/json")
                    .body(Body::from(body.clone()))
                    .unwrap(),
            )
            .await;
        assert_eq!((reply.status, reply.error_code().as_str()), (StatusCode::FORBIDDEN, "forbidden"), "{origin}");
    }
    assert_eq!(hub.get("/api/projects").await.json()["projects"], serde_json::json!([]));
    let same_origin = hub
        .send(
            authorized(Request::post("/api/chat/config"))
                .header("origin", format!("http://{HOST}"))
                .header("content-type", "application/json")
                .body(Body::from(body))
                .unwrap(),
        )
        .await;
    assert_eq!(same_origin.status, StatusCode::OK);
}
