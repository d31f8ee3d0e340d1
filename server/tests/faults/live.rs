//! Streamed NDJSON answers from the hub, read as they arrive.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::process::PROCESS_TOKEN;

/// An NDJSON answer read as it arrives; its reader ends when the hub dies.
pub struct Live {
    pub status: u16,
    events: Arc<Mutex<Vec<Value>>>,
    done: Arc<AtomicBool>,
}

impl Live {
    pub async fn open(client: &reqwest::Client, base: &str, path: &str, body: Option<Value>) -> Result<Self, String> {
        let mut request = client.post(format!("{base}{path}")).bearer_auth(PROCESS_TOKEN);
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body.to_string());
        }
        let mut response = request.send().await.map_err(|err| format!("POST {path}: {err}"))?;
        let live = Self { status: response.status().as_u16(), events: Arc::default(), done: Arc::default() };
        let (events, done) = (live.events.clone(), live.done.clone());
        tokio::spawn(async move {
            let mut buffer = Vec::new();
            while let Ok(Some(chunk)) = response.chunk().await {
                buffer.extend_from_slice(&chunk);
                while let Some(end) = buffer.iter().position(|byte| *byte == b'\n') {
                    let line: Vec<u8> = buffer.drain(..=end).collect();
                    if let Ok(event) = serde_json::from_slice(&line) {
                        events.lock().unwrap().push(event);
                    }
                }
            }
            if let Ok(event) = serde_json::from_slice(&buffer) {
                events.lock().unwrap().push(event); // an error body has no newline
            }
            done.store(true, Ordering::SeqCst);
        });
        Ok(live)
    }

    pub fn events(&self) -> Vec<Value> {
        self.events.lock().unwrap().clone()
    }

    pub fn ended(&self) -> bool {
        self.done.load(Ordering::SeqCst) || self.events().iter().any(|e| e["type"] == "result")
    }

    pub async fn wait_done(&self, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        while !self.done.load(Ordering::SeqCst) {
            if Instant::now() > deadline {
                return false;
            }
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
        true
    }
}

pub fn is_text(event: &Value) -> bool {
    event["type"] == "message" && event["role"] == "assistant"
}
