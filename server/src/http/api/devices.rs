//! Paired devices. On the loopback listener: a pairing code made, the devices
//! listed and revoked. On the remote listener: a code used, which makes the
//! device's cookie. Neither listener serves the other's half.

use std::sync::Arc;

use axum::extract::{ConnectInfo, Path, State};
use axum::http::header::SET_COOKIE;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{delete, get, post};
use axum::{Extension, Json, Router};
use protocol::devices::{DevicesResponse, PairCode, PairRequest};
use serde_json::json;

use crate::clock::now_ms;
use crate::http::error::{ApiError, ApiJson, ApiResult};
use crate::remote::devices::Devices;
use crate::remote::listener::RemotePeer;

/// `/api/devices…`, for the loopback listener.
pub fn local(devices: Arc<Devices>) -> Router {
    Router::new()
        .route("/devices", get(list))
        .route("/devices/pair", post(open_code))
        .route("/devices/{id}", delete(revoke))
        .with_state(devices)
}

/// `/api/pair`, for the remote listener.
pub fn remote(devices: Arc<Devices>, cookie: DeviceCookie) -> Router {
    Router::new().route("/pair", post(pair)).with_state((devices, cookie))
}

/// The name of the cookie that carries a device's credential.
#[derive(Debug, Clone)]
pub struct DeviceCookie(pub Arc<str>);

impl DeviceCookie {
    /// `__Host-`: the browser keeps it only from HTTPS, for this host, path `/`.
    pub fn for_port(port: u16) -> Self {
        Self(format!("__Host-agent_hub_device_{port}").into())
    }

    fn set(&self, credential: &str) -> String {
        // 400 days, the most browsers keep a cookie.
        format!("{}={credential}; Secure; HttpOnly; SameSite=Strict; Path=/; Max-Age=34560000", self.0)
    }
}

async fn list(State(devices): State<Arc<Devices>>) -> Json<DevicesResponse> {
    let remote = devices.remote();
    Json(DevicesResponse {
        devices: devices.list(),
        remote: remote.map(|remote| remote.origin.clone()),
        fingerprint: remote.map(|remote| remote.fingerprint.clone()),
    })
}

async fn open_code(State(devices): State<Arc<Devices>>) -> ApiResult<(StatusCode, Json<PairCode>)> {
    let code = devices.open_code(now_ms())?;
    let qr_svg = qrcode::QrCode::new(code.url.as_bytes())
        .map_err(|err| ApiError::internal(format!("cannot draw the QR code: {err}")))?
        .render::<qrcode::render::svg::Color<'_>>()
        .min_dimensions(220, 220)
        .build();
    Ok((
        StatusCode::CREATED,
        Json(PairCode {
            code: code.code,
            url: code.url,
            expires_at: code.expires_at_ms,
            qr_svg,
            fingerprint: code.fingerprint,
        }),
    ))
}

async fn revoke(State(devices): State<Arc<Devices>>, Path(id): Path<String>) -> ApiResult<StatusCode> {
    devices.revoke(&id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn pair(
    State((devices, cookie)): State<(Arc<Devices>, DeviceCookie)>,
    peer: Option<Extension<ConnectInfo<RemotePeer>>>,
    ApiJson(request): ApiJson<PairRequest>,
) -> ApiResult<Response> {
    let address = peer.map(|Extension(ConnectInfo(RemotePeer(peer)))| peer.ip().to_string()).unwrap_or_default();
    let paired = devices.pair(&request.code, &request.name, &address, now_ms()).await?;
    let set_cookie = HeaderValue::from_str(&cookie.set(&paired.credential))
        .map_err(|err| ApiError::internal(format!("cannot set the device's cookie: {err}")))?;
    let body = Json(json!({ "device": { "id": paired.device.id, "name": paired.device.name } }));
    let mut response = (StatusCode::CREATED, body).into_response();
    response.headers_mut().insert(SET_COOKIE, set_cookie);
    Ok(response)
}
