//! Being told (issue 26): a Web Push message sent to a scripted push service on
//! loopback is decrypted with the subscription's keys and its VAPID JWT checked
//! against the hub's key (with ring, another implementation than the signer's);
//! 410 drops the subscription; the push API takes a paired device's
//! subscription only; the webhook gets each alert with its header, tries a 5xx
//! again, gives up on a hung receiver without holding anything up; and a real
//! turn's card gives one approval alert naming the command, its end `done`.

use crate::common;

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_hub::alerts::webhook::{deliver, Delivery};
use agent_hub::alerts::webpush::Sent;
use agent_hub::alerts::{AlertsConfig, WebPush, Webhook, WebhookConfig};
use agent_hub::remote::PairedDevice;
use agent_hub::store::{PushSubscriptionRow, Store};
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Request, StatusCode};
use axum::Router;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use common::fake_model::{text, FakeModel};
use common::*;
use protocol::devices::{AlertKind, AlertNotice, PushMessage};
use serde_json::{json, Value};
use tower::ServiceExt;
use web_push_native::p256;
use web_push_native::p256::elliptic_curve::sec1::ToEncodedPoint as _;

const PATIENCE: Duration = Duration::from_secs(20);

/// A scripted receiver on loopback: it records each request and answers the
/// statuses given in turn (then 201); `hang`: it never answers.
struct Receiver {
    base: String,
    got: Arc<Mutex<Vec<(HeaderMap, Bytes)>>>,
}

impl Receiver {
    async fn start(statuses: &[u16], hang: bool) -> Self {
        let got: Arc<Mutex<Vec<(HeaderMap, Bytes)>>> = Arc::default();
        let statuses = Arc::new(Mutex::new(statuses.iter().copied().collect::<VecDeque<u16>>()));
        let (recorded, answers) = (got.clone(), statuses.clone());
        let app = Router::new().fallback(move |headers: HeaderMap, body: Bytes| {
            let (recorded, answers) = (recorded.clone(), answers.clone());
            async move {
                recorded.lock().unwrap().push((headers, body));
                if hang {
                    tokio::time::sleep(Duration::from_secs(3600)).await;
                }
                let status = answers.lock().unwrap().pop_front().unwrap_or(201);
                StatusCode::from_u16(status).unwrap()
            }
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        Self { base, got }
    }

    fn requests(&self) -> Vec<(HeaderMap, Bytes)> {
        self.got.lock().unwrap().clone()
    }

    /// The JSON bodies, once there are at least `count`.
    async fn notices(&self, count: usize) -> Vec<Value> {
        let got = self.wait_for(count).await;
        got.iter().map(|(_, body)| serde_json::from_slice::<Value>(body).unwrap()).collect()
    }

    async fn wait_for(&self, count: usize) -> Vec<(HeaderMap, Bytes)> {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let got = self.requests();
            if got.len() >= count {
                return got;
            }
            assert!(Instant::now() < deadline, "{} requests, not {count}", got.len());
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A browser's subscription keys, as the test holds them.
struct Browser {
    secret: p256::SecretKey,
    auth: [u8; 16],
}

impl Browser {
    fn new() -> Self {
        Self { secret: p256::SecretKey::from_slice(&[0x5a; 32]).unwrap(), auth: [0x22; 16] }
    }

    fn p256dh(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.secret.public_key().to_encoded_point(false).as_bytes())
    }

    fn row(&self, endpoint: &str, device: &str) -> PushSubscriptionRow {
        PushSubscriptionRow {
            endpoint: endpoint.into(),
            device_id: device.into(),
            p256dh: self.p256dh(),
            auth: URL_SAFE_NO_PAD.encode(self.auth),
            created_at_ms: 1,
        }
    }

    fn decrypt(&self, body: &Bytes) -> Value {
        let auth = web_push_native::Auth::clone_from_slice(&self.auth);
        let plain =
            web_push_native::decrypt(body.to_vec(), &self.secret, &auth).expect("decrypts with the device's keys");
        serde_json::from_slice(&plain).unwrap()
    }
}

fn message() -> PushMessage {
    PushMessage {
        title: "my-repo: Action Required".into(),
        body: "Run: git push --force".into(),
        url: "https://hub.local:7745/?folder=%2Fsrc%2Fmy-repo&session=s1".into(),
        tag: "s1".into(),
    }
}

/// A store whose paired devices are "phone", "d1" and "d2" (a subscription
/// belongs to a device the store knows), and the hub's Web Push on it.
async fn push_in(data: &tempfile::TempDir) -> (Arc<Store>, WebPush) {
    let store = Store::open(data.path()).unwrap();
    for id in ["phone", "d1", "d2"] {
        let device = agent_hub::store::DeviceRow {
            id: id.into(),
            name: id.into(),
            secret_sha256: "00".into(),
            paired_at_ms: 1,
            last_seen_ms: 1,
            last_address: String::new(),
        };
        store.pair_device(device).await.unwrap();
    }
    let push = WebPush::open(data.path(), store.clone(), "mailto:hub@example.com").unwrap();
    (store, push)
}

/// Checks `vapid t=<JWT>, k=<key>`: the key is the hub's, the JWT's signature
/// verifies against it (ring), `aud` is the endpoint's origin.
fn check_vapid(authorization: &str, public_key: &str, origin: &str) {
    let rest = authorization.strip_prefix("vapid t=").unwrap_or_else(|| panic!("{authorization}"));
    let (jwt, key) = rest.split_once(", k=").unwrap();
    assert_eq!(key, public_key);
    let (signed, signature) = jwt.rsplit_once('.').unwrap();
    let key = URL_SAFE_NO_PAD.decode(key).unwrap();
    ring::signature::UnparsedPublicKey::new(&ring::signature::ECDSA_P256_SHA256_FIXED, &key)
        .verify(signed.as_bytes(), &URL_SAFE_NO_PAD.decode(signature).unwrap())
        .expect("the JWT verifies against the hub's public key");
    let (header, claims) = signed.split_once('.').unwrap();
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header).unwrap()).unwrap();
    assert_eq!(header["alg"], "ES256");
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).unwrap()).unwrap();
    assert_eq!(claims["aud"], origin);
    assert_eq!(claims["sub"], "mailto:hub@example.com");
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    let exp = claims["exp"].as_u64().unwrap();
    assert!(exp > now && exp <= now + 24 * 3600, "exp within a day: {claims}");
}

#[tokio::test]
async fn a_push_is_encrypted_for_the_device_and_signed_for_its_service() {
    let service = Receiver::start(&[], false).await;
    let data = tempfile::tempdir().unwrap();
    let (store, push) = push_in(&data).await;
    let push = push.with_loopback_http_for_tests();
    let browser = Browser::new();
    let endpoint = format!("{}/push/v2/abc", service.base);
    store.save_push_subscription(browser.row(&endpoint, "phone")).await.unwrap();

    assert_eq!(push.send_to_all(&message()).await, [Sent::Delivered]);
    let got = service.requests();
    assert_eq!(got.len(), 1);
    let (headers, body) = &got[0];
    assert_eq!(headers["content-encoding"], "aes128gcm");
    assert_eq!(headers["ttl"], "3600");
    assert_eq!(headers["urgency"], "high");
    check_vapid(headers["authorization"].to_str().unwrap(), push.public_key(), &service.base);
    assert!(!String::from_utf8_lossy(body).contains("git push"), "the body is not plain text");
    assert_eq!(browser.decrypt(body), serde_json::to_value(message()).unwrap());
    let other = Browser { auth: [0x23; 16], ..Browser::new() };
    let wrong =
        web_push_native::decrypt(body.to_vec(), &other.secret, &web_push_native::Auth::clone_from_slice(&other.auth));
    assert!(wrong.is_err(), "another auth secret cannot read it");
}

#[tokio::test]
async fn a_gone_subscription_is_dropped_and_a_failing_service_tried_again() {
    let service = Receiver::start(&[503, 201, 410], false).await;
    let data = tempfile::tempdir().unwrap();
    let (store, push) = push_in(&data).await;
    let push = push.with_loopback_http_for_tests();
    let browser = Browser::new();
    store.save_push_subscription(browser.row(&format!("{}/a", service.base), "phone")).await.unwrap();
    assert_eq!(push.send_to_all(&message()).await, [Sent::Delivered], "503, then 201");
    assert_eq!(service.requests().len(), 2);
    assert_eq!(push.send_to_all(&message()).await, [Sent::Gone], "410");
    assert!(store.push_subscriptions().unwrap().is_empty(), "dropped");
    assert!(push.send_to_all(&message()).await.is_empty(), "nothing left to send to");
    assert_eq!(service.requests().len(), 3);
}

#[tokio::test]
async fn without_the_test_knob_an_http_endpoint_is_never_sent_to() {
    let service = Receiver::start(&[], false).await;
    let data = tempfile::tempdir().unwrap();
    let (store, push) = push_in(&data).await;
    store.save_push_subscription(Browser::new().row(&format!("{}/a", service.base), "phone")).await.unwrap();
    assert_eq!(push.send_to_all(&message()).await, [Sent::Failed]);
    assert!(service.requests().is_empty());
}

/// The hub's router with Web Push; a request with `x-test-device: ID` comes
/// as that paired device, as the remote gate would put it.
fn push_router(hub: &TestHub, push: Arc<WebPush>) -> Router {
    let as_device = |mut request: Request<Body>, next: axum::middleware::Next| async move {
        let device = request.headers().get("x-test-device").and_then(|id| id.to_str().ok()).map(str::to_string);
        if let Some(id) = device {
            request.extensions_mut().insert(PairedDevice { id: id.clone(), name: format!("{id}'s phone") });
        }
        next.run(request).await
    };
    hub.router().layer(axum::Extension(push)).layer(axum::middleware::from_fn(as_device))
}

async fn call(router: &Router, method: &str, path: &str, device: Option<&str>, body: Value) -> (StatusCode, Value) {
    let mut request =
        authorized(Request::builder().method(method).uri(path)).header("content-type", "application/json");
    if let Some(device) = device {
        request = request.header("x-test-device", device);
    }
    let response = router.clone().oneshot(request.body(Body::from(body.to_string())).unwrap()).await.unwrap();
    let status = response.status();
    let bytes = http_body_util::BodyExt::collect(response.into_body()).await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

#[tokio::test]
async fn only_a_paired_device_subscribes_and_bad_input_changes_nothing() {
    let data = tempfile::tempdir().unwrap();
    let (store, push) = push_in(&data).await;
    let public_key = push.public_key().to_string();
    let router = push_router(&TestHub::new(), Arc::new(push));
    let browser = Browser::new();
    let subscription = |endpoint: &str, p256dh: &str, auth: &str| json!({"endpoint": endpoint, "expirationTime": null, "keys": {"p256dh": p256dh, "auth": auth}});
    let auth = URL_SAFE_NO_PAD.encode(browser.auth);
    // A public address (the suite may run without DNS): a name is checked on what it resolves to.
    let good = subscription("https://142.250.74.46/fcm/send/x1", &browser.p256dh(), &auth);

    let (status, key) = call(&router, "GET", "/api/push/key", None, Value::Null).await;
    assert_eq!((status, &key["subscribable"]), (StatusCode::OK, &json!(false)), "loopback: no device");
    assert_eq!(key["publicKey"], public_key.as_str());
    assert_eq!(URL_SAFE_NO_PAD.decode(&public_key).unwrap().len(), 65);
    let (_, key) = call(&router, "GET", "/api/push/key", Some("d1"), Value::Null).await;
    assert_eq!(key["subscribable"], true);

    let (status, error) = call(&router, "POST", "/api/push/subscribe", None, good.clone()).await;
    assert_eq!((status, error["error"].as_str()), (StatusCode::FORBIDDEN, Some("not_paired")));
    for (bad, expected) in [
        (subscription("http://push.example/x", &browser.p256dh(), &auth), StatusCode::BAD_REQUEST),
        (subscription("https://push.example/x", "AAAA", &auth), StatusCode::BAD_REQUEST),
        (subscription("https://push.example/x", &browser.p256dh(), "AAAA"), StatusCode::BAD_REQUEST),
        // Not the shape at all: 422, as every JSON body of the hub.
        (json!({"endpoint": "https://push.example/x"}), StatusCode::UNPROCESSABLE_ENTITY),
        // The hub's own machine, the LAN, a cloud's metadata service: never connected to.
        (subscription("https://127.0.0.1:8443/x", &browser.p256dh(), &auth), StatusCode::BAD_REQUEST),
        (subscription("https://[::1]/x", &browser.p256dh(), &auth), StatusCode::BAD_REQUEST),
        (subscription("https://169.254.169.254/x", &browser.p256dh(), &auth), StatusCode::BAD_REQUEST),
        (subscription("https://10.0.0.7/x", &browser.p256dh(), &auth), StatusCode::BAD_REQUEST),
        (subscription("https://[fd00::7]/x", &browser.p256dh(), &auth), StatusCode::BAD_REQUEST),
        (subscription("https://[::ffff:192.168.1.1]/x", &browser.p256dh(), &auth), StatusCode::BAD_REQUEST),
        (subscription("https://localhost/x", &browser.p256dh(), &auth), StatusCode::BAD_REQUEST),
        (subscription("https://push.invalid/x", &browser.p256dh(), &auth), StatusCode::BAD_REQUEST),
    ] {
        let (status, error) = call(&router, "POST", "/api/push/subscribe", Some("d1"), bad.clone()).await;
        assert_eq!(status, expected, "{bad}: {error}");
        assert!(error["message"].as_str().is_some_and(|message| !message.is_empty()));
    }
    assert!(store.push_subscriptions().unwrap().is_empty(), "bad input changed nothing");

    let (status, _) = call(&router, "POST", "/api/push/subscribe", Some("d1"), good.clone()).await;
    assert_eq!(status, StatusCode::CREATED);
    let kept = store.push_subscriptions().unwrap();
    assert_eq!((kept.len(), kept[0].device_id.as_str()), (1, "d1"));

    let endpoint = json!({"endpoint": "https://142.250.74.46/fcm/send/x1"});
    let (status, _) = call(&router, "DELETE", "/api/push/subscribe", Some("d2"), endpoint.clone()).await;
    assert_eq!(status, StatusCode::NOT_FOUND, "another device's is not d2's to remove");
    let (status, _) = call(&router, "DELETE", "/api/push/subscribe", None, endpoint.clone()).await;
    assert_eq!(status, StatusCode::FORBIDDEN);
    assert_eq!(store.push_subscriptions().unwrap().len(), 1);
    let (status, _) = call(&router, "DELETE", "/api/push/subscribe", Some("d1"), endpoint).await;
    assert_eq!(status, StatusCode::NO_CONTENT);
    assert!(store.push_subscriptions().unwrap().is_empty());
}

fn webhook_to(receiver: &Receiver, timeout: Duration) -> WebhookConfig {
    let mut config =
        WebhookConfig::from_flags(&format!("{}/hub-topic", receiver.base), &["Authorization: Bearer tk_alerts".into()])
            .unwrap();
    config.timeout = timeout;
    config.backoff = Duration::from_millis(50);
    config
}

fn notice() -> AlertNotice {
    AlertNotice {
        folder_path: "/src/my-repo".into(),
        session_id: "s1".into(),
        kind: AlertKind::Approval,
        summary: "git push".into(),
        url: "http://127.0.0.1:7744/?folder=%2Fsrc%2Fmy-repo&session=s1".into(),
    }
}

#[tokio::test]
async fn the_webhook_gets_the_json_with_its_header_and_a_5xx_is_tried_again_a_4xx_not() {
    let receiver = Receiver::start(&[500, 200], false).await;
    let webhook = Webhook::start(webhook_to(&receiver, Duration::from_secs(5)), Default::default());
    webhook.send(notice());
    let got = receiver.wait_for(2).await;
    for (headers, body) in &got {
        assert_eq!(headers["authorization"], "Bearer tk_alerts");
        assert_eq!(headers["content-type"], "application/json");
        let body: Value = serde_json::from_slice(body).unwrap();
        assert_eq!(
            body,
            json!({"folderPath": "/src/my-repo", "sessionId": "s1", "kind": "approval",
            "summary": "git push", "url": "http://127.0.0.1:7744/?folder=%2Fsrc%2Fmy-repo&session=s1"})
        );
    }
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(receiver.requests().len(), 2, "delivered on the second try: no third");

    let refusing = Receiver::start(&[400], false).await;
    let client = agent_hub::alerts::http_client();
    assert_eq!(
        deliver(&client, &webhook_to(&refusing, Duration::from_secs(5)), &notice()).await,
        Delivery::Refused(400)
    );
    assert_eq!(refusing.requests().len(), 1, "a 4xx is not tried again");
}

#[tokio::test]
async fn a_hung_receiver_times_out_and_holds_nothing_up() {
    let receiver = Receiver::start(&[], true).await;
    let mut config = webhook_to(&receiver, Duration::from_millis(300));
    config.retries = 1;
    let started = Instant::now();
    let client = agent_hub::alerts::http_client();
    assert_eq!(deliver(&client, &config, &notice()).await, Delivery::GaveUp);
    assert!(started.elapsed() < Duration::from_secs(5), "{:?}", started.elapsed());
    assert_eq!(receiver.requests().len(), 2, "tried twice");

    // The sender's queue takes alerts at once while its task waits on the receiver.
    let webhook = Webhook::start(config, Default::default());
    let started = Instant::now();
    for _ in 0..200 {
        webhook.send(notice());
    }
    assert!(started.elapsed() < Duration::from_millis(200), "sending never waits: {:?}", started.elapsed());
}

#[tokio::test]
async fn a_cards_wait_gives_one_approval_alert_naming_the_command_and_its_turns_end_done() {
    let model = FakeModel::start(vec![shell("t1", "echo alerted"), text(&["all done"])]).await;
    let hub = TestHub::with_model(&model);
    let (_dir, folder) = project(None);
    let receiver = Receiver::start(&[], false).await;
    agent_hub::alerts::start(
        &hub.hub,
        AlertsConfig {
            base_url: "http://127.0.0.1:7744".into(),
            webhook: Some(webhook_to(&receiver, Duration::from_secs(5))),
            push: None,
        },
    );
    let paused = hub.prompt(&folder, "say it").await.lines();
    let session = session_of(&paused);
    let first = receiver.notices(1).await;
    assert_eq!(first[0]["kind"], "approval");
    assert_eq!(first[0]["summary"], "echo alerted");
    assert_eq!(first[0]["sessionId"], session.as_str());
    assert_eq!(first[0]["folderPath"], folder.display().to_string());
    let url = format!("http://127.0.0.1:7744/?folder={}&session={session}", urlencoding(&folder));
    assert_eq!(first[0]["url"], url.as_str());

    // Looks at the hub while the card waits tell nothing more.
    hub.hub.projects_changed();
    hub.hub.projects_changed();
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(receiver.requests().len(), 1);

    let done = hub.decide(&session, json!({"toolId": "t1", "decision": "approve"})).await;
    assert_eq!(done.status, StatusCode::OK);
    receiver.notices(2).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let all = receiver.notices(2).await;
    let kinds: Vec<&Value> = all.iter().map(|notice| &notice["kind"]).collect();
    assert_eq!(kinds, ["approval", "done"], "{all:?}");
    assert_eq!(all[1]["sessionId"], session.as_str());
}

/// A subscription kept from before (or planted in the database) that names a
/// private address is never connected to: checked again at each send.
#[tokio::test]
async fn a_push_to_a_private_address_is_never_sent() {
    let data = tempfile::tempdir().unwrap();
    let (_store, push) = push_in(&data).await;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let browser = Browser::new();
    let payload = serde_json::to_vec(&message()).unwrap();
    for endpoint in [format!("https://127.0.0.1:{port}/x"), format!("https://localhost:{port}/x")] {
        let sent = push.send(&browser.row(&endpoint, "d1"), &payload).await;
        assert_eq!(sent, agent_hub::alerts::webpush::Sent::Failed, "{endpoint}");
    }
    assert!(listener.accept().is_err(), "nothing connected to the hub's own machine");
}
