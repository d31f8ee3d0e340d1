//! Being told: alerts when a card or a question starts waiting and when a
//! turn ends, sent to `--notify-url` ([`webhook`]) and by Web Push to paired
//! devices ([`webpush`]). They are derived from what the pages see, not from
//! the agents' turns: a task follows the hub's updates and compares each look
//! at the sessions and the inbox with the one before ([`derive::alerts`]).
//! Sending happens on tasks of their own behind bounded queues, so nothing
//! here ever holds a turn up.

mod derive;
pub mod public;
pub mod queue;
pub mod vapid;
pub mod webhook;
pub mod webpush;

use std::sync::{Arc, Weak};

use protocol::devices::{AlertKind, AlertNotice, PushMessage};
use tokio::sync::broadcast::error::{RecvError, TryRecvError};

pub use derive::{alerts, Alert, SessionView, Snapshot, WaitingView};
pub use webhook::{Webhook, WebhookConfig};
pub use webpush::{PushError, WebPush};

use crate::hub::Hub;

/// Where alerts go.
#[derive(Debug, Default)]
pub struct AlertsConfig {
    /// The hub's address the alerts link to, without the token: the remote
    /// listener's when there is one, else the loopback one (`http://127.0.0.1:7744`).
    pub base_url: String,
    /// `--notify-url`, `--notify-header`.
    pub webhook: Option<WebhookConfig>,
    /// Web Push to paired devices' subscriptions.
    pub push: Option<Arc<WebPush>>,
}

/// The HTTP client of the webhook and Web Push: rustls with ring, as the
/// model client (installing the provider twice is harmless). Redirects are
/// not followed: an alert goes where it was sent (with its headers and body)
/// or nowhere.
pub fn http_client() -> reqwest::Client {
    client_builder().build().expect("the HTTP client builds once a TLS provider is installed")
}

/// [`http_client`], connecting to `host` only at `addresses` (checked before):
/// no second lookup may lead it elsewhere. `None` if it cannot be built.
pub fn pinned_client(host: &str, addresses: &[std::net::SocketAddr]) -> Option<reqwest::Client> {
    client_builder()
        .resolve_to_addrs(host, addresses)
        // A proxy would look the name up itself: the pin would hold nothing.
        .no_proxy()
        .build()
        .map_err(|err| tracing::error!("a pinned HTTP client could not be built: {err}"))
        .ok()
}

fn client_builder() -> reqwest::ClientBuilder {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(std::time::Duration::from_secs(10))
        .redirect(reqwest::redirect::Policy::none())
}

/// The hub's page of a session (the query the page reads: `app/src/location.rs`).
pub fn session_url(base_url: &str, folder_path: &str, session_id: &str) -> String {
    let query = form_urlencoded::Serializer::new(String::new())
        .append_pair("folder", folder_path)
        .append_pair("session", session_id)
        .finish();
    format!("{}/?{query}", base_url.trim_end_matches('/'))
}

/// The alert as `--notify-url` gets it.
pub fn notice(alert: &Alert, base_url: &str) -> AlertNotice {
    AlertNotice {
        folder_path: alert.folder_path.clone(),
        session_id: alert.session_id.clone(),
        kind: alert.kind,
        summary: alert.summary.clone(),
        url: session_url(base_url, &alert.folder_path, &alert.session_id),
    }
}

/// The alert as a paired device shows it: the folder in the title, the command,
/// path or question in the body, one notification per session.
pub fn push_message(alert: &Alert, base_url: &str) -> PushMessage {
    let folder = std::path::Path::new(&alert.folder_path)
        .file_name()
        .map_or_else(|| alert.folder_path.clone(), |name| name.to_string_lossy().into_owned());
    let (title, body) = match alert.kind {
        AlertKind::Approval => {
            let verb = match alert.tool.as_deref() {
                Some("run_shell_command") => "Run".to_string(),
                Some("write_file" | "replace") => "Edit".to_string(),
                Some(other) => other.to_string(),
                None => "Call".to_string(),
            };
            (format!("{folder}: Action Required"), format!("{verb}: {}", alert.summary))
        }
        AlertKind::Question => (format!("{folder}: a question"), alert.summary.clone()),
        AlertKind::Done => (format!("{folder}: turn ended"), alert.summary.clone()),
        AlertKind::Error => (format!("{folder}: turn failed"), alert.summary.clone()),
    };
    PushMessage {
        title,
        body,
        url: session_url(base_url, &alert.folder_path, &alert.session_id),
        tag: alert.session_id.clone(),
    }
}

/// What the pages see now (reads sessions not in memory: off the async workers).
pub fn snapshot(hub: &Hub) -> Snapshot {
    Snapshot::of(&hub.projects(), &hub.waiting_list())
}

async fn look(hub: &Weak<Hub>) -> Option<Snapshot> {
    let hub = hub.upgrade()?;
    tokio::task::spawn_blocking(move || snapshot(&hub)).await.ok()
}

/// Starts the channels configured and the task that derives alerts from the
/// hub's updates; all end when the hub shuts down. Nothing starts without a channel.
pub fn start(hub: &Arc<Hub>, config: AlertsConfig) {
    let shutdown = hub.shutdown_token();
    let webhook = config.webhook.map(|webhook| Webhook::start(webhook, shutdown.clone()));
    if let Some(push) = &config.push {
        push.start(shutdown.clone());
    }
    if webhook.is_none() && config.push.is_none() {
        return;
    }
    let (push, base_url) = (config.push, config.base_url);
    // Subscribed before the first look: no change after it goes unseen.
    let mut updates = hub.subscribe();
    let hub = Arc::downgrade(hub);
    tokio::spawn(async move {
        // What waits already (restored at start) was there before: not told.
        let Some(mut last) = look(&hub).await else { return };
        loop {
            tokio::select! {
                update = updates.recv() => if let Err(RecvError::Closed) = update { return },
                () = shutdown.cancelled() => return,
            }
            // Updates queued meanwhile are covered by the one look that follows.
            while !matches!(updates.try_recv(), Err(TryRecvError::Empty | TryRecvError::Closed)) {}
            let Some(now) = look(&hub).await else { return };
            for alert in alerts(&last, &now) {
                tracing::debug!(session = %alert.session_id, kind = ?alert.kind, "alert");
                if let Some(webhook) = &webhook {
                    webhook.send(notice(&alert, &base_url));
                }
                if let Some(push) = &push {
                    push.notify(push_message(&alert, &base_url));
                }
            }
            last = now;
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn alert(kind: AlertKind, tool: Option<&str>, summary: &str) -> Alert {
        Alert {
            folder_path: "/home/me/my repo".into(),
            session_id: "s1".into(),
            kind,
            summary: summary.into(),
            tool_id: None,
            tool: tool.map(str::to_string),
        }
    }

    #[test]
    fn the_url_opens_the_session_on_the_hubs_page() {
        assert_eq!(
            session_url("https://hub.local:7745/", "/home/me/my repo", "s1"),
            "https://hub.local:7745/?folder=%2Fhome%2Fme%2Fmy+repo&session=s1"
        );
    }

    #[test]
    fn a_push_names_the_folder_and_the_command_and_replaces_the_sessions_last() {
        let base = "http://127.0.0.1:7744";
        let rows = [
            (
                alert(AlertKind::Approval, Some("run_shell_command"), "git push"),
                "my repo: Action Required",
                "Run: git push",
            ),
            (
                alert(AlertKind::Approval, Some("write_file"), "/home/me/my repo/a.rs"),
                "my repo: Action Required",
                "Edit: /home/me/my repo/a.rs",
            ),
            (alert(AlertKind::Question, None, "Which branch?"), "my repo: a question", "Which branch?"),
            (alert(AlertKind::Done, None, "The agent's turn ended."), "my repo: turn ended", "The agent's turn ended."),
            (
                alert(AlertKind::Error, None, "The agent's turn ended with an error."),
                "my repo: turn failed",
                "The agent's turn ended with an error.",
            ),
        ];
        for (alert, title, body) in rows {
            let message = push_message(&alert, base);
            assert_eq!((message.title.as_str(), message.body.as_str()), (title, body));
            assert_eq!(message.tag, "s1");
            assert_eq!(message.url, session_url(base, "/home/me/my repo", "s1"));
        }
        let notice = notice(&alert(AlertKind::Approval, Some("run_shell_command"), "git push"), base);
        assert_eq!(
            serde_json::to_value(&notice).unwrap(),
            serde_json::json!({"folderPath": "/home/me/my repo", "sessionId": "s1", "kind": "approval",
                "summary": "git push", "url": "http://127.0.0.1:7744/?folder=%2Fhome%2Fme%2Fmy+repo&session=s1"})
        );
    }
}
