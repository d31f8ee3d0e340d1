//! The remote listener's gate. Every request must name one of the listener's
//! own hosts (against DNS rebinding) and, when it has an Origin, come from
//! `https://` that host (against CSRF), as on loopback. Then it must come from
//! a paired device: its `__Host-` cookie holds the device's id and secret. The
//! launch token opens nothing here, in a header, a cookie or a query. Only the
//! pairing page and `POST /api/pair` answer a device that is not paired.
//!
//! A device's answers are tied to its revocation: an event stream it holds
//! open ends as soon as it is revoked.

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::header::{CACHE_CONTROL, CONTENT_SECURITY_POLICY, CONTENT_TYPE, LOCATION};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::StreamExt;

use crate::clock::now_ms;
use crate::http::access::{cookies, host_name, is_api, request_host, same_origin};
use crate::http::api::devices::DeviceCookie;
use crate::http::error::ApiError;
use crate::remote::devices::Devices;
use crate::remote::listener::RemotePeer;
use crate::remote::PairedDevice;
use tokio_util::sync::CancellationToken;

pub struct RemoteAccess {
    devices: Arc<Devices>,
    cookie: DeviceCookie,
    /// Lowercase host names and addresses the listener answers to.
    hosts: Vec<String>,
}

impl RemoteAccess {
    pub fn new(devices: Arc<Devices>, cookie: DeviceCookie, hosts: &[String]) -> Self {
        let hosts = hosts.iter().map(|host| bracketed(&host.to_ascii_lowercase())).collect();
        Self { devices, cookie, hosts }
    }

    /// The device whose credential one of the request's cookies of our name
    /// holds (another site of this host may set one of the same name too:
    /// it must not hide the real one), with its revocation token.
    fn device(&self, headers: &HeaderMap, address: &str) -> Option<(PairedDevice, CancellationToken)> {
        cookies(headers)
            .filter(|(name, _)| *name == &*self.cookie.0)
            .find_map(|(_, credential)| self.devices.authenticate(credential, address, now_ms()))
    }
}

/// IPv6 addresses appear in Host headers in brackets.
fn bracketed(host: &str) -> String {
    if host.contains(':') && !host.starts_with('[') {
        format!("[{host}]")
    } else {
        host.to_string()
    }
}

/// The longest an unpaired device's request (pairing) may take, body included.
const UNPAIRED_REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// A browser opening a page (a navigation asks for HTML), not fetching a file.
fn wants_page(headers: &HeaderMap) -> bool {
    let navigates = headers.get("sec-fetch-mode").is_some_and(|mode| mode == "navigate");
    let html = headers
        .get(axum::http::header::ACCEPT)
        .and_then(|accept| accept.to_str().ok())
        .is_some_and(|accept| accept.contains("text/html"));
    navigates || html
}

/// What an unpaired device may reach.
fn open_to_unpaired(method: &Method, path: &str) -> bool {
    (method == Method::GET && path == "/pair") || (method == Method::POST && path == "/api/pair")
}

pub async fn check(State(gate): State<Arc<RemoteAccess>>, mut request: Request, next: Next) -> Response {
    let host = request_host(&request);
    if !gate.hosts.contains(&host_name(&host).to_ascii_lowercase()) {
        return ApiError::forbidden(format!(
            "Host '{host}' is not one of this hub's remote names. Start the hub with --allow-host for another."
        ))
        .into_response();
    }
    if let Err(refused) = same_origin(request.headers(), &host, "https") {
        return refused.into_response();
    }
    if request.method() == Method::GET && request.uri().path() == "/pair" {
        return pair_page();
    }
    let address = request
        .extensions()
        .get::<ConnectInfo<RemotePeer>>()
        .map(|ConnectInfo(RemotePeer(peer))| peer.ip().to_string())
        .unwrap_or_default();
    let path = request.uri().path().to_string();
    let Some((device, revoked)) = gate.device(request.headers(), &address) else {
        if open_to_unpaired(request.method(), &path) {
            // A slow body from anyone must not hold a connection for long.
            return match tokio::time::timeout(UNPAIRED_REQUEST_TIMEOUT, next.run(request)).await {
                Ok(response) => response,
                Err(_) => {
                    ApiError::new(StatusCode::REQUEST_TIMEOUT, "timeout", "The request took too long.").into_response()
                }
            };
        }
        // Only a page a person opens is sent to pairing; an asset, a part or an
        // API call is refused (a service worker must not keep the pairing page
        // under a bundle file's name).
        if !is_api(&path) && wants_page(request.headers()) {
            return (StatusCode::SEE_OTHER, [(LOCATION, "/pair")]).into_response();
        }
        return ApiError::unauthorized(
            "This device is not paired with the hub (or was revoked): pair it from the hub's own page, \"Pair a phone\".",
        )
        .into_response();
    };
    // A paired device's connection leaves the unpaired pool: no crowd of others can close it.
    if let Some(place) = request.extensions().get::<crate::remote::listener::ConnectionPlace>() {
        place.0.paired_device(&device.id);
    }
    let deciding = protocol::audit::DecidingDevice { id: device.id.clone(), name: device.name.clone() };
    request.extensions_mut().insert(device);
    // What the user decides through this request, the audit says this device decided.
    let response = crate::agents::trail::DECIDING_DEVICE.scope(Some(deciding), next.run(request)).await;
    if revoked.is_cancelled() {
        return ApiError::unauthorized("This device was revoked.").into_response();
    }
    let (parts, body) = response.into_parts();
    let body = body.into_data_stream().take_until(revoked.cancelled_owned());
    Response::from_parts(parts, Body::from_stream(body))
}

/// The page a phone pairs on: self-contained, the code read from the URL's
/// fragment (which never reaches a server or its logs).
pub fn pair_page() -> Response {
    (
        [
            (CONTENT_TYPE, "text/html; charset=utf-8"),
            (CACHE_CONTROL, "no-store"),
            (CONTENT_SECURITY_POLICY, PAIR_POLICY.as_str()),
        ],
        PAIR_PAGE,
    )
        .into_response()
}

const PAIR_PAGE: &str = include_str!("pair.html");

/// The pairing page runs its one script, by hash, and nothing else.
static PAIR_POLICY: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    use base64::Engine as _;
    use sha2::Digest as _;
    let script = PAIR_PAGE
        .split_once("<script>")
        .and_then(|(_, rest)| rest.split_once("</script>"))
        .map_or("", |(script, _)| script);
    let hash = base64::engine::general_purpose::STANDARD.encode(sha2::Sha256::digest(script.as_bytes()));
    format!("script-src 'sha256-{hash}'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'")
});

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_compare_without_port_and_case_and_ipv6_gets_brackets() {
        let devices = Devices::load(None, None).unwrap();
        let gate = RemoteAccess::new(devices, DeviceCookie::for_port(1), &["Hub.Test".into(), "fd00::1".into()]);
        assert!(gate.hosts.contains(&host_name("hub.test:8443").to_string()));
        assert!(gate.hosts.contains(&host_name("[fd00::1]:8443").to_string()));
        assert!(!gate.hosts.contains(&host_name("hub.test.evil:8443").to_string()));
    }

    #[test]
    fn only_the_pairing_page_and_pair_call_are_open() {
        assert!(open_to_unpaired(&Method::GET, "/pair"));
        assert!(open_to_unpaired(&Method::POST, "/api/pair"));
        for (method, path) in [(Method::POST, "/pair"), (Method::GET, "/"), (Method::GET, "/api/projects")] {
            assert!(!open_to_unpaired(&method, path), "{method} {path}");
        }
    }
}
