//! Web Push to paired devices: each alert encrypted for each subscription
//! (RFC 8291 aes128gcm, `web-push-native`), signed for its push service
//! (VAPID, [`super::vapid`]) and posted from a task of its own. A push service
//! answering 404 or 410 says the subscription is gone: it is dropped.

use std::sync::Arc;
use std::time::Duration;

use base64::engine::general_purpose::{URL_SAFE, URL_SAFE_NO_PAD};
use base64::Engine as _;
use protocol::devices::{PushMessage, PushSubscription};
use web_push_native::{p256, Auth, WebPushBuilder};

use super::queue::{Queue, CAPACITY};
use super::vapid::Vapid;
use crate::store::{PushSubscriptionRow, Store, StoreError};

/// How long a push service keeps a message for a device that is offline.
pub const TTL: Duration = Duration::from_secs(60 * 60);
/// Each try's limit.
const TIMEOUT: Duration = Duration::from_secs(10);
/// Tries after the first, on a network error, a 429 or a 5xx.
const RETRIES: u32 = 2;
/// The longest endpoint kept.
const MAX_ENDPOINT: usize = 2048;

/// Why a subscription is refused (the HTTP edge maps these: `http/error.rs`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PushError {
    #[error("Only a paired device can be notified: open the hub on the phone through its remote address, paired.")]
    NotPaired,
    #[error("The endpoint must be an https:// URL of a push service: {0}")]
    BadEndpoint(String),
    #[error("The subscription's keys are not a browser's: {0}")]
    BadKeys(String),
    #[error("No such subscription of this device.")]
    NotFound,
    #[error("Web Push is not set up on this hub (it keeps no data dir).")]
    Off,
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A browser's subscription, checked: an https endpoint, a P-256 point, a 16-byte secret.
pub fn checked(subscription: &PushSubscription) -> Result<(), PushError> {
    checked_endpoint(&subscription.endpoint, false)?;
    ua_keys(&subscription.keys.p256dh, &subscription.keys.auth).map(drop)
}

/// [`checked`], and the endpoint's host resolves to public addresses only
/// (a device may not have the hub connect to its own machine, the LAN or a
/// cloud's metadata service).
pub async fn checked_public(subscription: &PushSubscription) -> Result<(), PushError> {
    checked(subscription)?;
    let url = checked_endpoint(&subscription.endpoint, false)?;
    public_addresses(&url).await.map(drop)
}

/// Where `url` may be reached: its host's addresses, every one public.
async fn public_addresses(url: &reqwest::Url) -> Result<Vec<std::net::SocketAddr>, PushError> {
    let host = url.host_str().ok_or_else(|| PushError::BadEndpoint("no host".into()))?;
    let port = url.port_or_known_default().unwrap_or(443);
    super::public::resolve_public(host, port).await.map_err(PushError::BadEndpoint)
}

/// The endpoint as a URL: https with a host (`loopback_http`: or http to 127.0.0.1, for tests).
fn checked_endpoint(endpoint: &str, loopback_http: bool) -> Result<reqwest::Url, PushError> {
    if endpoint.len() > MAX_ENDPOINT {
        return Err(PushError::BadEndpoint(format!("longer than {MAX_ENDPOINT} characters")));
    }
    let url = reqwest::Url::parse(endpoint).map_err(|err| PushError::BadEndpoint(err.to_string()))?;
    let loopback = url.host_str() == Some("127.0.0.1");
    match url.scheme() {
        _ if url.host_str().is_none() => Err(PushError::BadEndpoint("no host".into())),
        "https" => Ok(url),
        "http" if loopback_http && loopback => Ok(url),
        scheme => Err(PushError::BadEndpoint(format!("{scheme}: is not https:"))),
    }
}

/// Base64url as browsers write it (padding or not).
fn decode(text: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(text.trim_end_matches('=')).ok().or_else(|| URL_SAFE.decode(text).ok())
}

/// The browser's public key and auth secret.
fn ua_keys(p256dh: &str, auth: &str) -> Result<(p256::PublicKey, Auth), PushError> {
    let point = decode(p256dh).ok_or_else(|| PushError::BadKeys("p256dh is not base64url".into()))?;
    if point.len() != 65 || point[0] != 4 {
        return Err(PushError::BadKeys(format!(
            "p256dh must be a 65-byte uncompressed point, not {} bytes",
            point.len()
        )));
    }
    let public = p256::PublicKey::from_sec1_bytes(&point)
        .map_err(|_| PushError::BadKeys("p256dh is not a point of P-256".into()))?;
    let secret = decode(auth).ok_or_else(|| PushError::BadKeys("auth is not base64url".into()))?;
    if secret.len() != 16 {
        return Err(PushError::BadKeys(format!("auth must be 16 bytes, not {}", secret.len())));
    }
    Ok((public, Auth::clone_from_slice(&secret)))
}

/// The hub's Web Push: its key, the subscriptions' store, the sender's queue.
pub struct WebPush {
    vapid: Vapid,
    store: Arc<Store>,
    /// The VAPID `sub`: how a push service may reach whoever runs the hub.
    contact: String,
    /// Test-only: endpoints on http://127.0.0.1 are sent to (the API still refuses them).
    loopback_http: bool,
    queue: Arc<Queue<PushMessage>>,
    client: reqwest::Client,
}

impl std::fmt::Debug for WebPush {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WebPush").field("vapid", &self.vapid).finish_non_exhaustive()
    }
}

/// What a push service made of one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sent {
    Delivered,
    /// 404 or 410: the subscription was dropped.
    Gone,
    /// Refused (another 4xx), or every try failed.
    Failed,
}

impl WebPush {
    /// The hub's key from `data_dir` (made on first use) and the store's subscriptions.
    pub fn open(
        data_dir: &std::path::Path,
        store: Arc<Store>,
        contact: &str,
    ) -> Result<Self, super::vapid::VapidError> {
        Ok(Self {
            vapid: Vapid::load_or_make(data_dir)?,
            store,
            contact: contact.to_string(),
            loopback_http: false,
            queue: Queue::new("web push", CAPACITY),
            client: super::http_client(),
        })
    }

    /// For tests only: also send to `http://127.0.0.1` endpoints (a scripted
    /// push service). Nothing in the API reaches this.
    pub fn with_loopback_http_for_tests(mut self) -> Self {
        self.loopback_http = true;
        self
    }

    pub fn public_key(&self) -> &str {
        self.vapid.public_key()
    }

    pub fn store(&self) -> &Arc<Store> {
        &self.store
    }

    /// Starts the sender task; it ends with `shutdown`.
    pub fn start(self: &Arc<Self>, shutdown: tokio_util::sync::CancellationToken) {
        let push = self.clone();
        tokio::spawn(async move {
            loop {
                let message = tokio::select! {
                    message = push.queue.take() => message,
                    () = shutdown.cancelled() => return,
                };
                tokio::select! {
                    _ = push.send_to_all(&message) => {}
                    () = shutdown.cancelled() => return,
                }
            }
        });
    }

    /// Queues a message for every subscription; never waits.
    pub fn notify(&self, message: PushMessage) {
        self.queue.put(message);
    }

    /// Sends the message to every subscription, one after another.
    pub async fn send_to_all(&self, message: &PushMessage) -> Vec<Sent> {
        let store = self.store.clone();
        let subscriptions = match tokio::task::spawn_blocking(move || store.push_subscriptions()).await {
            Ok(Ok(subscriptions)) => subscriptions,
            Ok(Err(err)) => {
                tracing::error!("the push subscriptions could not be read: {err}");
                return Vec::new();
            }
            Err(_) => return Vec::new(),
        };
        let payload = serde_json::to_vec(message).unwrap_or_default();
        let mut sent = Vec::with_capacity(subscriptions.len());
        for subscription in &subscriptions {
            sent.push(self.send(subscription, &payload).await);
        }
        sent
    }

    /// Sends one encrypted message, trying again on a network error, 429 or 5xx.
    pub async fn send(&self, subscription: &PushSubscriptionRow, payload: &[u8]) -> Sent {
        let device = subscription.device_id.as_str();
        let built = self.request(subscription, payload);
        let Ok((url, request)) = built.map_err(|err| tracing::warn!(device, "a push subscription is unusable: {err}"))
        else {
            return Sent::Failed;
        };
        // The endpoint's path identifies the device at its push service: only its host is logged.
        let host = url.host_str().unwrap_or_default().to_string();
        // Checked again at each send (a name may resolve elsewhere by now), and the
        // connection pinned to what was checked.
        let client = if self.loopback_http && host == "127.0.0.1" {
            self.client.clone()
        } else {
            match public_addresses(&url).await {
                Ok(addresses) => match super::pinned_client(&host, &addresses) {
                    Some(client) => client,
                    None => return Sent::Failed,
                },
                Err(err) => {
                    tracing::warn!(device, host, "a push message was not sent: {err}");
                    return Sent::Failed;
                }
            }
        };
        let mut pause = Duration::from_millis(500);
        for attempt in 0..=RETRIES {
            if attempt > 0 {
                tokio::time::sleep(pause).await;
                pause *= 2;
            }
            // Encrypted once: each try sends the same bytes.
            let Some(request) = request.try_clone() else { return Sent::Failed };
            match client.execute(request).await {
                Ok(response) if response.status().is_success() => return Sent::Delivered,
                Ok(response) if matches!(response.status().as_u16(), 404 | 410) => {
                    tracing::info!(device, host, "a push subscription is gone at its push service: dropped");
                    if let Err(err) = self.store.delete_push_subscription(&subscription.endpoint, None).await {
                        tracing::error!("a gone push subscription could not be dropped: {err}");
                    }
                    return Sent::Gone;
                }
                Ok(response) if response.status().as_u16() == 429 || response.status().is_server_error() => {
                    tracing::debug!(host, status = response.status().as_u16(), attempt, "push: the service failed");
                }
                Ok(response) => {
                    tracing::warn!(
                        device,
                        host,
                        status = response.status().as_u16(),
                        "a push service refused a message"
                    );
                    return Sent::Failed;
                }
                Err(err) => tracing::debug!(host, attempt, "push: {}", err.without_url()),
            }
        }
        tracing::warn!(device, host, "a push message could not be sent; dropped");
        Sent::Failed
    }

    /// The POST to the subscription's endpoint: the payload encrypted for it
    /// (`TTL`, `Content-Encoding: aes128gcm`), `Urgency: high`, and the VAPID
    /// `Authorization` for the endpoint's origin.
    fn request(
        &self,
        subscription: &PushSubscriptionRow,
        payload: &[u8],
    ) -> Result<(reqwest::Url, reqwest::Request), PushError> {
        let url = checked_endpoint(&subscription.endpoint, self.loopback_http)?;
        let (public, auth) = ua_keys(&subscription.p256dh, &subscription.auth)?;
        let uri: axum::http::Uri = url.as_str().parse().map_err(|_| PushError::BadEndpoint("not a URI".into()))?;
        let built = WebPushBuilder::new(uri, public, auth).with_valid_duration(TTL).build(payload.to_vec());
        let mut request = built.map_err(|err| PushError::BadKeys(err.to_string()))?;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
        let authorization = self.vapid.authorization(&url.origin().ascii_serialization(), &self.contact, now);
        let headers = request.headers_mut();
        headers.insert(axum::http::header::AUTHORIZATION, authorization.parse().map_err(|_| PushError::Off)?);
        headers.insert("urgency", axum::http::HeaderValue::from_static("high"));
        let mut request = reqwest::Request::try_from(request).map_err(|err| PushError::BadEndpoint(err.to_string()))?;
        *request.timeout_mut() = Some(TIMEOUT);
        Ok((url, request))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::devices::PushSubscriptionKeys;

    fn subscription(endpoint: &str, p256dh: &str, auth: &str) -> PushSubscription {
        PushSubscription {
            endpoint: endpoint.into(),
            keys: PushSubscriptionKeys { p256dh: p256dh.into(), auth: auth.into() },
        }
    }

    #[test]
    fn only_an_https_endpoint_with_a_browsers_keys_is_taken() {
        let secret = p256::SecretKey::from_slice(&[7u8; 32]).unwrap();
        use p256::elliptic_curve::sec1::ToEncodedPoint as _;
        let point = URL_SAFE_NO_PAD.encode(secret.public_key().to_encoded_point(false).as_bytes());
        let compressed = URL_SAFE_NO_PAD.encode(secret.public_key().to_encoded_point(true).as_bytes());
        let auth = URL_SAFE_NO_PAD.encode([1u8; 16]);
        let padded_auth = URL_SAFE.encode([1u8; 16]);
        let not_on_curve = URL_SAFE_NO_PAD.encode([[4u8].as_slice(), &[1u8; 64]].concat());
        let ok = "https://fcm.googleapis.com/fcm/send/abc";
        assert_eq!(checked(&subscription(ok, &point, &auth)), Ok(()));
        assert_eq!(checked(&subscription(ok, &point, &padded_auth)), Ok(()), "padding is fine");
        let refused = [
            (subscription("http://push.example/x", &point, &auth), "https"),
            (subscription("http://127.0.0.1:9/x", &point, &auth), "https"),
            (subscription("mailto:a@b.c", &point, &auth), "host"),
            (subscription("not a url", &point, &auth), "URL"),
            (subscription(&format!("https://p/{}", "x".repeat(MAX_ENDPOINT)), &point, &auth), "longer"),
            (subscription(ok, &compressed, &auth), "65-byte"),
            (subscription(ok, &not_on_curve, &auth), "not a point"),
            (subscription(ok, "%%%", &auth), "base64url"),
            (subscription(ok, &point, &URL_SAFE_NO_PAD.encode([1u8; 15])), "16 bytes"),
        ];
        for (bad, why) in refused {
            let err = checked(&bad).unwrap_err();
            assert!(err.to_string().contains(why) || format!("{err:?}").contains(why), "{bad:?}: {err}");
        }
    }
}
