//! Paired devices and their notifications: the remote listener's shapes
//! (`docs/API.md`, "Remote devices").

use serde::{Deserialize, Serialize};

/// `POST /api/devices/pair` (loopback only): a one-time code, good for ten minutes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairCode {
    /// The code in words, as the user reads it out or types it.
    pub code: String,
    /// The pairing page on the remote listener, the code in its fragment.
    pub url: String,
    /// Unix milliseconds.
    pub expires_at: u64,
    /// The URL as a QR code (an SVG document), for the phone's camera.
    pub qr_svg: String,
    /// SHA-256 of the remote listener's certificate, `AB:CD:…`.
    pub fingerprint: String,
}

/// `POST /api/pair` (remote listener only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PairRequest {
    pub code: String,
    pub name: String,
}

/// One paired device, as `GET /api/devices` lists it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeviceInfo {
    pub id: String,
    pub name: String,
    /// Unix milliseconds.
    pub paired_at: u64,
    /// Unix milliseconds of its last request.
    pub last_seen: u64,
    /// The address its last request came from.
    pub address: String,
}

/// `GET /api/devices`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DevicesResponse {
    pub devices: Vec<DeviceInfo>,
    /// The remote listener's address, when the hub has one (`--remote`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote: Option<String>,
    /// SHA-256 of its certificate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint: Option<String>,
}
