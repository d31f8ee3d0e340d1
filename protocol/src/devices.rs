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

/// What an alert is about (`--notify-url`, Web Push): a card or a question
/// started waiting, or a turn ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AlertKind {
    /// A call waits for approval on its card.
    Approval,
    /// The agent asks the user a question.
    Question,
    /// A turn ended (stopped ones too).
    Done,
    /// A turn ended with an error.
    Error,
}

/// The JSON body `--notify-url` gets for each alert.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct AlertNotice {
    pub folder_path: String,
    pub session_id: String,
    pub kind: AlertKind,
    /// The command or file path on the card, the question, or how the turn ended.
    pub summary: String,
    /// The hub's page of that session.
    pub url: String,
}

/// A Web Push message's payload (encrypted for the device; `public/sw-push.js` shows it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushMessage {
    /// Names the folder.
    pub title: String,
    /// The command, path or question.
    pub body: String,
    /// The hub's page of the session: a click opens it.
    pub url: String,
    /// The session: a newer notification of the same session replaces the older.
    pub tag: String,
}

/// `GET /api/push/key`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PushKeyResponse {
    /// The hub's VAPID public key: an uncompressed P-256 point, base64url without padding
    /// (the browser's `applicationServerKey`).
    pub public_key: String,
    /// Whether this request comes from a paired device, which may subscribe.
    pub subscribable: bool,
}

/// `POST /api/push/subscribe`: the browser's `PushSubscription` as `JSON.stringify` gives it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushSubscription {
    /// The push service's URL for this browser (https).
    pub endpoint: String,
    pub keys: PushSubscriptionKeys,
}

/// A subscription's keys, base64url: `p256dh` a 65-byte P-256 point, `auth` 16 bytes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushSubscriptionKeys {
    pub p256dh: String,
    pub auth: String,
}

/// `DELETE /api/push/subscribe`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushUnsubscribe {
    pub endpoint: String,
}
