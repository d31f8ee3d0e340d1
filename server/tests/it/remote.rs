//! The remote listener (`--remote`), through the real binary over real TLS:
//! only TLS, only paired devices, never the launch token, pairing codes used
//! once and limited, revocation at once, the certificate kept.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::SocketAddr;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures::StreamExt;
use reqwest::header::{COOKIE, HOST, ORIGIN, SET_COOKIE};
use reqwest::StatusCode;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::{CertificateDer, ServerName, UnixTime};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

const NAME: &str = "phone-hub.test";

struct Hub {
    child: Child,
    local: String,
    token: String,
    remote: SocketAddr,
    fingerprint: String,
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(data: &std::path::Path, extra: &[&str]) -> Hub {
    let mut child = Command::new(env!("CARGO_BIN_EXE_agent-hub"))
        .env("XDG_CONFIG_HOME", "/nonexistent/agent-hub-test-config")
        .args(["--port", "0", "--remote", "127.0.0.1:0", "--allow-host", NAME])
        .args(extra)
        .env("RUST_LOG", "warn")
        .env("HUB_DATA_DIR", data)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let launch = lines.next().unwrap().unwrap();
    let remote = lines.next().unwrap().unwrap();
    let url = launch.strip_prefix("Agent Hub listening on ").unwrap_or_else(|| panic!("{launch}"));
    let (local, token) = url.split_once("/?token=").unwrap();
    // "Remote listener for paired devices on https://phone-hub.test:PORT (certificate SHA-256 AB:…)"
    let rest =
        remote.strip_prefix("Remote listener for paired devices on https://").unwrap_or_else(|| panic!("{remote}"));
    let (origin, fingerprint) = rest.split_once(" (certificate SHA-256 ").unwrap();
    let port: u16 = origin.strip_prefix(&format!("{NAME}:")).unwrap().parse().unwrap();
    Hub {
        child,
        local: local.to_string(),
        token: token.to_string(),
        remote: SocketAddr::from(([127, 0, 0, 1], port)),
        fingerprint: fingerprint.trim_end_matches(')').to_string(),
    }
}

/// Trusts exactly the certificate whose SHA-256 the hub printed, as a user
/// who compared the fingerprint does.
#[derive(Debug)]
struct Pinned(String);

impl ServerCertVerifier for Pinned {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _: &[CertificateDer<'_>],
        _: &ServerName<'_>,
        _: &[u8],
        _: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        let seen = Sha256::digest(end_entity.as_ref()).iter().map(|b| format!("{b:02X}")).collect::<Vec<_>>().join(":");
        if seen == self.0 {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::General(format!("certificate {seen} is not the one the hub printed")))
        }
    }
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = rustls::crypto::ring::default_provider().signature_verification_algorithms;
        rustls::crypto::verify_tls12_signature(message, cert, dss, &algorithms)
    }
    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        let algorithms = rustls::crypto::ring::default_provider().signature_verification_algorithms;
        rustls::crypto::verify_tls13_signature(message, cert, dss, &algorithms)
    }
    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        rustls::crypto::ring::default_provider().signature_verification_algorithms.supported_schemes()
    }
}

impl Hub {
    fn phone(&self) -> reqwest::Client {
        reqwest::Client::builder()
            .tls_backend_preconfigured(rustls_for(self))
            .resolve(NAME, self.remote)
            .build()
            .unwrap()
    }

    fn remote_url(&self, path: &str) -> String {
        format!("https://{NAME}:{}{path}", self.remote.port())
    }

    async fn local(&self, method: reqwest::Method, path: &str) -> (StatusCode, Value) {
        let _ = rustls::crypto::ring::default_provider().install_default();
        let answer = reqwest::Client::new()
            .request(method, format!("{}{path}", self.local))
            .bearer_auth(&self.token)
            .send()
            .await
            .unwrap();
        let status = answer.status();
        (status, serde_json::from_slice(&answer.bytes().await.unwrap()).unwrap_or(Value::Null))
    }

    async fn new_code(&self) -> String {
        let (status, code) = self.local(reqwest::Method::POST, "/api/devices/pair").await;
        assert_eq!(status, StatusCode::CREATED, "{code}");
        code["code"].as_str().unwrap().to_string()
    }

    async fn pair(&self, phone: &reqwest::Client, code: &str) -> (StatusCode, Value, Option<String>) {
        let answer = phone
            .post(self.remote_url("/api/pair"))
            .header("content-type", "application/json")
            .body(json!({"code": code, "name": "Test phone"}).to_string())
            .send()
            .await
            .unwrap();
        let cookie = answer.headers().get(SET_COOKIE).map(|value| value.to_str().unwrap().to_string());
        (answer.status(), serde_json::from_slice(&answer.bytes().await.unwrap()).unwrap_or(Value::Null), cookie)
    }
}

/// `name=value` of a Set-Cookie header.
fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().to_string()
}

#[tokio::test]
async fn plain_http_gets_nothing_and_the_certificate_is_kept_across_restarts() {
    let data = tempfile::tempdir().unwrap();
    let hub = start(data.path(), &[]);
    let mut plain = std::net::TcpStream::connect(hub.remote).unwrap();
    plain.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    // The hub may drop the connection before the request is all written.
    let _ = write!(plain, "GET /api/projects HTTP/1.1\r\nHost: {NAME}\r\nConnection: close\r\n\r\n");
    let mut answer = Vec::new();
    let _ = plain.read_to_end(&mut answer);
    // Nothing, or a TLS alert record (content type 21): never an HTTP answer.
    assert!(answer.is_empty() || answer[0] == 0x15, "plain HTTP got an answer that is not a TLS alert: {answer:?}");

    // The pinned client checks the certificate is the one whose fingerprint was printed.
    let phone = hub.phone();
    assert_eq!(phone.get(hub.remote_url("/pair")).send().await.unwrap().status(), StatusCode::OK);
    let first = hub.fingerprint.clone();
    drop(hub);
    let again = start(data.path(), &[]);
    assert_eq!(again.fingerprint, first, "the certificate is kept in the data dir");
    assert_eq!(again.phone().get(again.remote_url("/pair")).send().await.unwrap().status(), StatusCode::OK);
}

#[tokio::test]
async fn the_launch_token_opens_nothing_on_the_remote_listener() {
    let data = tempfile::tempdir().unwrap();
    let hub = start(data.path(), &[]);
    let phone = hub.phone();
    let bearer = phone.get(hub.remote_url("/api/projects")).bearer_auth(&hub.token).send().await.unwrap();
    assert_eq!(bearer.status(), StatusCode::UNAUTHORIZED);
    let local_port = hub.local.rsplit(':').next().unwrap();
    let cookie = phone
        .get(hub.remote_url("/api/projects"))
        .header(COOKIE, format!("agent_hub_{local_port}={}", hub.token))
        .send()
        .await
        .unwrap();
    assert_eq!(cookie.status(), StatusCode::UNAUTHORIZED);
    let browser = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .tls_backend_preconfigured(rustls_for(&hub))
        .resolve(NAME, hub.remote)
        .build()
        .unwrap();
    let page = browser
        .get(hub.remote_url(&format!("/?token={}", hub.token)))
        .header("accept", "text/html,application/xhtml+xml")
        .send()
        .await
        .unwrap();
    assert_eq!(page.status(), StatusCode::SEE_OTHER, "a page a person opens goes to pairing");
    assert_eq!(page.headers()["location"], "/pair");
    assert!(page.headers().get(SET_COOKIE).is_none(), "no cookie for the token");
    // No page of either listener renders in another site's frame (issue 39, item 9a).
    let pairing = browser.get(hub.remote_url("/pair")).header("accept", "text/html").send().await.unwrap();
    for headers in [page.headers(), pairing.headers()] {
        assert_eq!(headers["x-frame-options"], "DENY");
        assert!(headers["content-security-policy"].to_str().unwrap().contains("frame-ancestors 'none'"));
    }
    // A file (a part a service worker would keep) is refused, never redirected.
    let asset = browser.get(hub.remote_url("/pkg/agent_hub.js")).send().await.unwrap();
    assert_eq!(asset.status(), StatusCode::UNAUTHORIZED);

    // Each listener serves only its half of the devices API.
    assert_eq!(hub.local(reqwest::Method::POST, "/api/pair").await.0, StatusCode::NOT_FOUND);
    let code = hub.new_code().await;
    let (status, _, set_cookie) = hub.pair(&phone, &code).await;
    assert_eq!(status, StatusCode::CREATED);
    let device = cookie_pair(&set_cookie.unwrap());
    for (method, path) in [("GET", "/api/devices"), ("POST", "/api/devices/pair")] {
        let answer =
            phone.request(method.parse().unwrap(), hub.remote_url(path)).header(COOKIE, &device).send().await.unwrap();
        assert_eq!(answer.status(), StatusCode::NOT_FOUND, "{method} {path} on the remote listener");
    }
}

fn rustls_for(hub: &Hub) -> rustls::ClientConfig {
    rustls::ClientConfig::builder_with_provider(Arc::new(rustls::crypto::ring::default_provider()))
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(Pinned(hub.fingerprint.clone())))
        .with_no_client_auth()
}

#[tokio::test]
async fn a_code_pairs_once_wrong_codes_are_limited_and_host_and_origin_are_checked() {
    let data = tempfile::tempdir().unwrap();
    let hub = start(data.path(), &[]);
    let phone = hub.phone();
    assert_eq!(hub.pair(&phone, "acid-acid-acid-acid").await.0, StatusCode::BAD_REQUEST, "no code open");
    let code = hub.new_code().await;
    let wrong = if code == "acid-acid-acid-acid" { "zebra-zebra-zebra-zebra" } else { "acid-acid-acid-acid" };
    for _ in 0..10 {
        let (status, body, cookie) = hub.pair(&phone, wrong).await;
        assert_eq!((status, body["error"].as_str()), (StatusCode::FORBIDDEN, Some("pair_wrong_code")));
        assert!(cookie.is_none());
    }
    let (status, body, _) = hub.pair(&phone, &code).await;
    assert_eq!((status, body["error"].as_str()), (StatusCode::TOO_MANY_REQUESTS, Some("pair_too_many")));

    // Open pages on the hub's own listener are told of every pairing.
    let updates =
        reqwest::Client::new().get(format!("{}/api/updates", hub.local)).bearer_auth(&hub.token).send().await.unwrap();
    let told = tokio::spawn(async move {
        let mut body = updates.bytes_stream();
        let mut seen = String::new();
        while let Some(Ok(chunk)) = body.next().await {
            seen.push_str(&String::from_utf8_lossy(&chunk));
            if seen.contains("device_paired") {
                break;
            }
        }
        seen
    });
    let code = hub.new_code().await;
    let (status, body, set_cookie) = hub.pair(&phone, &code.replace('-', " ").to_uppercase()).await;
    let told = tokio::time::timeout(Duration::from_secs(5), told).await.expect("told of the pairing").unwrap();
    assert!(told.contains(r#""type":"device_paired","name":"Test phone","address":"127.0.0.1""#), "{told}");
    assert_eq!(status, StatusCode::CREATED, "{body}");
    let set_cookie = set_cookie.unwrap();
    for attribute in ["Secure", "HttpOnly", "SameSite=Strict", "Path=/"] {
        assert!(set_cookie.contains(attribute), "{attribute} in {set_cookie}");
    }
    assert!(set_cookie.starts_with("__Host-"), "{set_cookie}");
    assert_eq!(hub.pair(&phone, &code).await.0, StatusCode::BAD_REQUEST, "single use");
    let device = cookie_pair(&set_cookie);

    let get = |host: Option<String>, origin: Option<&str>| {
        let mut request = phone.get(hub.remote_url("/api/projects")).header(COOKIE, &device);
        if let Some(host) = host {
            request = request.header(HOST, host);
        }
        if let Some(origin) = origin {
            request = request.header(ORIGIN, origin);
        }
        request.send()
    };
    assert_eq!(get(None, None).await.unwrap().status(), StatusCode::OK);
    // A cookie of the same name set by another site of this host does not hide the device's.
    let shadowed = phone
        .get(hub.remote_url("/api/projects"))
        .header(COOKIE, format!("{}=junk.junk; {device}", device.split_once('=').unwrap().0))
        .send()
        .await
        .unwrap();
    assert_eq!(shadowed.status(), StatusCode::OK);
    let own = format!("https://{NAME}:{}", hub.remote.port());
    assert_eq!(get(None, Some(&own)).await.unwrap().status(), StatusCode::OK);
    let plain_origin = format!("http://{NAME}:{}", hub.remote.port());
    for origin in ["https://evil.test", plain_origin.as_str()] {
        assert_eq!(get(None, Some(origin)).await.unwrap().status(), StatusCode::FORBIDDEN, "{origin}");
    }
    let evil_host = format!("evil.test:{}", hub.remote.port());
    assert_eq!(get(Some(evil_host), None).await.unwrap().status(), StatusCode::FORBIDDEN);

    // Through the real gate: a paired device may subscribe to Web Push, nobody else.
    use base64::Engine as _;
    use web_push_native::p256::elliptic_curve::sec1::ToEncodedPoint as _;
    let point = web_push_native::p256::SecretKey::from_slice(&[0x5a; 32]).unwrap().public_key().to_encoded_point(false);
    let subscription = json!({
        // A public address: the hub refuses an endpoint that is not (the suite may run without DNS).
        "endpoint": "https://142.250.74.46/send/abc",
        "keys": {
            "p256dh": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(point.as_bytes()),
            "auth": base64::engine::general_purpose::URL_SAFE_NO_PAD.encode([0x22; 16]),
        },
    });
    let subscribe = |cookie: Option<&str>| {
        let mut request = phone
            .post(hub.remote_url("/api/push/subscribe"))
            .header("content-type", "application/json")
            .body(subscription.to_string());
        if let Some(cookie) = cookie {
            request = request.header(COOKIE, cookie.to_string());
        }
        request.send()
    };
    assert_eq!(subscribe(None).await.unwrap().status(), StatusCode::UNAUTHORIZED);
    assert_eq!(subscribe(Some(&device)).await.unwrap().status(), StatusCode::CREATED);

    let (status, listed) = hub.local(reqwest::Method::GET, "/api/devices").await;
    assert_eq!(status, StatusCode::OK);
    let devices = listed["devices"].as_array().unwrap();
    assert_eq!(devices.len(), 1);
    assert_eq!(devices[0]["name"], "Test phone");
    assert_eq!(devices[0]["address"], "127.0.0.1");
    assert_eq!(listed["fingerprint"].as_str(), Some(hub.fingerprint.as_str()));
}

#[tokio::test]
async fn a_revoked_device_is_refused_at_once_and_its_streams_end() {
    let data = tempfile::tempdir().unwrap();
    let hub = start(data.path(), &[]);
    let phone = hub.phone();
    let mut devices = Vec::new();
    for _ in 0..2 {
        let code = hub.new_code().await;
        devices.push(cookie_pair(&hub.pair(&phone, &code).await.2.unwrap()));
    }
    let (_, listed) = hub.local(reqwest::Method::GET, "/api/devices").await;
    let id = listed["devices"][0]["id"].as_str().unwrap().to_string();
    let (revoked, kept) = (&devices[0], &devices[1]);
    assert!(revoked.contains(&format!("={id}.")), "the first device is the first listed");

    async fn follow(request: reqwest::RequestBuilder) -> tokio::task::JoinHandle<Instant> {
        let stream = request.send().await.unwrap();
        assert_eq!(stream.status(), StatusCode::OK);
        let mut body = stream.bytes_stream();
        tokio::spawn(async move {
            while let Some(Ok(_)) = body.next().await {}
            Instant::now()
        })
    }
    let updates = |cookie: &str| phone.get(hub.remote_url("/api/updates")).header(COOKIE, cookie.to_string());
    let reader = follow(updates(revoked)).await;
    let other = follow(updates(kept)).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!reader.is_finished(), "the stream stays open while the device is paired");
    let revoked_at = Instant::now();
    assert_eq!(hub.local(reqwest::Method::DELETE, &format!("/api/devices/{id}")).await.0, StatusCode::NO_CONTENT);
    let ended = tokio::time::timeout(Duration::from_secs(5), reader).await.expect("the stream ended").unwrap();
    eprintln!("revoked device's stream ended {:?} after the revocation", ended - revoked_at);
    assert!(!other.is_finished(), "the other device's stream goes on");
    other.abort();
    let refused = phone.get(hub.remote_url("/api/projects")).header(COOKIE, revoked).send().await.unwrap();
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(hub.local(reqwest::Method::DELETE, &format!("/api/devices/{id}")).await.0, StatusCode::NOT_FOUND);

    // After a restart the revoked device stays out and the other is still paired.
    drop(phone);
    drop(hub);
    let hub = start(data.path(), &[]);
    let phone = hub.phone();
    let status = |cookie: &str| phone.get(hub.remote_url("/api/projects")).header(COOKIE, cookie.to_string()).send();
    // The cookie's name carries the remote port, which changed: send the value under the new name.
    let renamed =
        |cookie: &str| format!("__Host-agent_hub_device_{}={}", hub.remote.port(), cookie.split_once('=').unwrap().1);
    assert_eq!(status(&renamed(kept)).await.unwrap().status(), StatusCode::OK);
    assert_eq!(status(&renamed(revoked)).await.unwrap().status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn without_a_remote_listener_devices_are_listed_but_no_code_is_made() {
    let hub = crate::common::TestHub::new();
    let listed = hub.get("/api/devices").await;
    assert_eq!(listed.status, 200);
    assert_eq!(listed.json(), json!({"devices": []}));
    let code = hub.post("/api/devices/pair", "").await;
    assert_eq!(code.status, 409);
    assert_eq!(code.error_code(), "no_remote");
    assert_eq!(
        hub.post("/api/pair", r#"{"code":"a","name":"b"}"#).await.status,
        404,
        "pairing is the remote listener's"
    );
    let gone = hub
        .send(
            crate::common::authorized(axum::http::Request::delete("/api/devices/nope"))
                .body(axum::body::Body::empty())
                .unwrap(),
        )
        .await;
    assert_eq!(gone.status, 404);
}

/// A decision made from a paired phone names the phone in the audit trail;
/// one made on the hub's own machine names none.
#[tokio::test]
async fn a_decision_from_a_paired_device_names_it_in_the_audit() {
    use crate::common::fake_model::{text, FakeModel};
    let model = FakeModel::start(vec![crate::common::shell("c1", "echo one"), text(&["ok"])]).await;
    model.push(crate::common::shell("c2", "echo two"));
    model.push(text(&["ok"]));
    let (data, project) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let folder = project.path().canonicalize().unwrap();
    let hub = start(data.path(), &["--model-url", &model.base_url, "--model", "fake-model"]);
    let phone = hub.phone();
    let code = hub.new_code().await;
    let device = cookie_pair(&hub.pair(&phone, &code).await.2.unwrap());
    let local = reqwest::Client::new();
    let prompt = |message: &str| {
        local
            .post(format!("{}/api/chat/prompt", hub.local))
            .bearer_auth(&hub.token)
            .header("content-type", "application/json")
            .body(json!({"folderPath": folder, "message": message}).to_string())
            .send()
    };
    let lines = |text: String| -> Vec<Value> { text.lines().map(|line| serde_json::from_str(line).unwrap()).collect() };
    let first = lines(prompt("one").await.unwrap().text().await.unwrap());
    let session =
        first.iter().find(|event| event["type"] == "init").unwrap()["session_id"].as_str().unwrap().to_string();
    assert_eq!(first.last().unwrap()["status"], "waiting_approval", "{first:?}");
    let own = format!("https://{NAME}:{}", hub.remote.port());
    let decided = phone
        .post(hub.remote_url(&format!("/api/sessions/{session}/approve")))
        .header(COOKIE, device.clone())
        .header(ORIGIN, own)
        .header("content-type", "application/json")
        .body(json!({"toolId": "c1", "decision": "approve"}).to_string())
        .send()
        .await
        .unwrap();
    assert_eq!(decided.status(), StatusCode::OK);
    decided.text().await.unwrap();
    // The second call is decided on the hub's own machine.
    let second = lines(prompt("two").await.unwrap().text().await.unwrap());
    assert_eq!(second.last().unwrap()["status"], "waiting_approval", "{second:?}");
    let local_decision = local
        .post(format!("{}/api/sessions/{session}/approve", hub.local))
        .bearer_auth(&hub.token)
        .header("content-type", "application/json")
        .body(json!({"toolId": "c2", "decision": "approve"}).to_string())
        .send()
        .await
        .unwrap();
    local_decision.text().await.unwrap();
    // The third card is withdrawn by Stop on the phone: that decision names it too.
    model.push(crate::common::shell("c3", "echo three"));
    let third = lines(prompt("three").await.unwrap().text().await.unwrap());
    assert_eq!(third.last().unwrap()["status"], "waiting_approval", "{third:?}");
    let stopped = phone
        .post(hub.remote_url(&format!("/api/sessions/{session}/cancel")))
        .header(COOKIE, device.clone())
        .header(ORIGIN, format!("https://{NAME}:{}", hub.remote.port()))
        .send()
        .await
        .unwrap();
    assert_eq!(stopped.status(), StatusCode::OK);
    stopped.text().await.unwrap();
    let audit = local
        .get(format!("{}/api/audit?sessionId={session}", hub.local))
        .bearer_auth(&hub.token)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let rows = lines(audit);
    let row = |id: &str| rows.iter().find(|row| row["toolId"] == id).cloned().unwrap_or_else(|| panic!("{rows:?}"));
    let (_, listed) = hub.local(reqwest::Method::GET, "/api/devices").await;
    let id = listed["devices"][0]["id"].clone();
    assert_eq!(row("c1")["device"], json!({"id": id, "name": "Test phone"}), "{rows:?}");
    assert!(row("c2").get("device").is_none(), "decided on the hub's machine: {rows:?}");
    assert_eq!(row("c3")["decision"], "stopped", "{rows:?}");
    assert_eq!(row("c3")["device"], json!({"id": id, "name": "Test phone"}), "Stop from the phone: {rows:?}");
}

/// Idle connections held by unpaired peers (other addresses of the loopback
/// net: 127.0.0.2, …) lock nobody out: the paired phone gets a connection
/// while they hold the pool, and keeps it while the crowd grows.
#[tokio::test]
async fn a_paired_device_is_served_however_many_unpaired_connections_are_held() {
    let data = tempfile::tempdir().unwrap();
    let hub = start(data.path(), &[]);
    let phone = hub.phone();
    let code = hub.new_code().await;
    let device = cookie_pair(&hub.pair(&phone, &code).await.2.unwrap());
    let tls = tokio_rustls::TlsConnector::from(Arc::new(rustls_for(&hub)));
    let crowd = |count: usize| {
        let tls = tls.clone();
        let remote = hub.remote;
        async move {
            let mut held = Vec::new();
            for n in 0..count {
                let socket = tokio::net::TcpSocket::new_v4().unwrap();
                socket.bind(SocketAddr::from(([127, 0, 0, 2 + (n % 20) as u8], 0))).unwrap();
                let tcp = socket.connect(remote).await.unwrap();
                let name = rustls::pki_types::ServerName::try_from(NAME).unwrap();
                // Handshaken and idle, as a peer holding places would keep them.
                if let Ok(stream) = tls.connect(name, tcp).await {
                    held.push(stream);
                }
            }
            held
        }
    };
    // More than the listener held in all before (128), fewer than an address may open at once.
    let first = crowd(140).await;
    let projects = || phone.get(hub.remote_url("/api/projects")).header(COOKIE, device.clone()).send();
    assert_eq!(projects().await.unwrap().status(), StatusCode::OK, "the phone gets in past the crowd");
    let second = crowd(140).await;
    assert_eq!(projects().await.unwrap().status(), StatusCode::OK, "and stays served as it grows");
    drop((first, second));
}
