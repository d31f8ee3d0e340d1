//! `--notify-url`: each alert as a JSON POST (`AlertNotice`) to a URL of the
//! user's (ntfy and the like), with the headers `--notify-header` gives. Sent
//! from a task of its own through a bounded queue, each try with a timeout,
//! network errors and 5xx tried again after a growing pause, a 4xx not: a slow
//! or dead receiver never holds a turn up. The headers' values (tokens) and
//! the URL's path and query (an ntfy topic is a secret) are never logged.

use std::sync::Arc;
use std::time::Duration;

use protocol::devices::AlertNotice;
use reqwest::header::{HeaderMap, HeaderName, HeaderValue};

use super::queue::{Queue, CAPACITY};

/// Where and how alerts are posted.
#[derive(Clone)]
pub struct WebhookConfig {
    pub url: reqwest::Url,
    pub headers: HeaderMap,
    /// Each try's limit, connecting to reading the answer.
    pub timeout: Duration,
    /// Tries after the first, on a network error or a 5xx.
    pub retries: u32,
    /// The pause before the first retry; each next one doubles.
    pub backoff: Duration,
}

impl std::fmt::Debug for WebhookConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The header names only: their values are secrets.
        let names: Vec<&str> = self.headers.keys().map(HeaderName::as_str).collect();
        f.debug_struct("WebhookConfig")
            .field("host", &self.url.host_str())
            .field("headers", &names)
            .field("timeout", &self.timeout)
            .field("retries", &self.retries)
            .finish_non_exhaustive()
    }
}

impl WebhookConfig {
    /// From the flags: `url` http or https, each header `Name: value`.
    pub fn from_flags(url: &str, headers: &[String]) -> Result<Self, String> {
        let url = reqwest::Url::parse(url).map_err(|err| format!("--notify-url is not a URL: {err}"))?;
        if !matches!(url.scheme(), "http" | "https") || url.host_str().is_none() {
            return Err("--notify-url must be an http:// or https:// URL with a host.".into());
        }
        let mut map = HeaderMap::new();
        for header in headers.iter().filter(|header| !header.trim().is_empty()) {
            let (name, value) = header.split_once(':').ok_or_else(|| {
                "--notify-header must be \"Name: value\" (e.g. \"Authorization: Bearer …\").".to_string()
            })?;
            let name = HeaderName::from_bytes(name.trim().as_bytes())
                .map_err(|_| format!("--notify-header: '{}' is not a header name.", name.trim()))?;
            // The value is not repeated in the message: it is likely a token.
            let mut value = HeaderValue::from_str(value.trim())
                .map_err(|_| format!("--notify-header {name}: the value is not a valid header value."))?;
            value.set_sensitive(true);
            map.append(name, value);
        }
        Ok(Self { url, headers: map, timeout: Duration::from_secs(10), retries: 3, backoff: Duration::from_secs(1) })
    }
}

/// What became of one alert.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Delivery {
    Delivered,
    /// The receiver refused it (4xx): not tried again.
    Refused(u16),
    /// Every try failed (network, timeout, 5xx).
    GaveUp,
}

/// The webhook's sender: alerts go into its queue, its task posts them.
pub struct Webhook {
    queue: Arc<Queue<AlertNotice>>,
}

impl Webhook {
    /// Starts the sender task on the current runtime; it ends with `shutdown`.
    pub fn start(config: WebhookConfig, shutdown: tokio_util::sync::CancellationToken) -> Self {
        let queue = Queue::new("webhook", CAPACITY);
        let client = super::http_client();
        let taken = queue.clone();
        tokio::spawn(async move {
            loop {
                let notice = tokio::select! {
                    notice = taken.take() => notice,
                    () = shutdown.cancelled() => return,
                };
                let delivery = tokio::select! {
                    delivery = deliver(&client, &config, &notice) => delivery,
                    () = shutdown.cancelled() => return,
                };
                let host = config.url.host_str().unwrap_or_default();
                match delivery {
                    Delivery::Delivered => tracing::debug!(host, kind = ?notice.kind, "alert posted"),
                    Delivery::Refused(status) => {
                        tracing::warn!(host, status, "the --notify-url receiver refused an alert")
                    }
                    Delivery::GaveUp => tracing::warn!(host, "an alert could not be posted to --notify-url; dropped"),
                }
            }
        });
        Self { queue }
    }

    /// Queues the alert; never waits.
    pub fn send(&self, notice: AlertNotice) {
        self.queue.put(notice);
    }
}

/// Posts one alert, trying again on a network error, a timeout or a 5xx.
pub async fn deliver(client: &reqwest::Client, config: &WebhookConfig, notice: &AlertNotice) -> Delivery {
    let body = serde_json::to_vec(notice).unwrap_or_default();
    let host = config.url.host_str().unwrap_or_default();
    let mut pause = config.backoff;
    for attempt in 0..=config.retries {
        if attempt > 0 {
            tokio::time::sleep(pause).await;
            pause = pause.saturating_mul(2);
        }
        let request = client
            .post(config.url.clone())
            .headers(config.headers.clone())
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .timeout(config.timeout)
            .body(body.clone());
        match request.send().await {
            Ok(response) if response.status().is_success() => return Delivery::Delivered,
            Ok(response) if response.status().is_server_error() => {
                tracing::debug!(host, status = response.status().as_u16(), attempt, "alert: the receiver failed");
            }
            Ok(response) => return Delivery::Refused(response.status().as_u16()),
            // Without the URL: its path may be a secret.
            Err(err) => {
                let timeout = err.is_timeout();
                tracing::debug!(host, attempt, timeout, "alert: {}", err.without_url());
            }
        }
    }
    Delivery::GaveUp
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_checked_and_header_values_kept_secret() {
        let config = WebhookConfig::from_flags(
            "https://ntfy.sh/my-secret-topic",
            &["Authorization: Bearer tk_123".into(), "X-Tags:  robot ".into()],
        )
        .unwrap();
        assert_eq!(config.headers["authorization"], "Bearer tk_123");
        assert!(config.headers["authorization"].is_sensitive());
        assert_eq!(config.headers["x-tags"], "robot");
        let shown = format!("{config:?}");
        assert!(!shown.contains("tk_123") && !shown.contains("my-secret-topic"), "{shown}");
        for (url, headers, refused) in [
            ("ftp://host/x", vec![], "http:// or https://"),
            ("not a url", vec![], "not a URL"),
            ("https://h/", vec!["no colon".to_string()], "Name: value"),
            ("https://h/", vec!["Bad Name: x".to_string()], "not a header name"),
            ("https://h/", vec!["X-Token: a\nb".to_string()], "not a valid header value"),
        ] {
            let err = WebhookConfig::from_flags(url, &headers).unwrap_err();
            assert!(err.contains(refused), "{url} {headers:?}: {err}");
            assert!(!err.contains("a\nb"));
        }
    }
}
