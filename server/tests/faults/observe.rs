//! What the suite reads back: the project folder's marker logs, and the session as the hub replays it.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

use serde_json::Value;

use crate::common::process::PROCESS_TOKEN;
use crate::driver::Run;

fn lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path).unwrap_or_default().lines().map(str::to_string).collect()
}

/// How often each marker started and finished, and which files were written.
pub struct Folder {
    pub started: HashMap<String, usize>,
    pub ran: HashMap<String, usize>,
    pub written: HashSet<String>,
}

impl Folder {
    pub fn read(folder: &Path) -> Self {
        let count = |list: Vec<String>| {
            let mut counts = HashMap::new();
            for line in list {
                *counts.entry(line.trim_start_matches("START-").to_string()).or_insert(0) += 1;
            }
            counts
        };
        let written = std::fs::read_dir(folder)
            .unwrap()
            .filter_map(|entry| entry.ok()?.file_name().into_string().ok())
            .filter_map(|name| Some(name.strip_prefix("w-")?.strip_suffix(".txt")?.to_string()))
            .collect();
        Self { started: count(lines(&folder.join("started.log"))), ran: count(lines(&folder.join("ran.log"))), written }
    }

    pub fn started(&self, call: &Call) -> bool {
        self.started.contains_key(&call.marker)
            || self.ran.contains_key(&call.marker)
            || self.written.contains(&call.marker)
    }

    pub fn finished(&self, call: &Call) -> bool {
        self.ran.contains_key(&call.marker) || self.written.contains(&call.marker)
    }
}

/// A call the hub announced with `tool_use`.
#[derive(Clone, Debug)]
pub struct Call {
    pub marker: String,
    /// The tenths of a second its command sleeps (0: a fast command or a write).
    pub tenths: u64,
    /// Which run of consecutive `tool_use` events (one model reply) it came in.
    pub batch: usize,
    pub seq: u64,
}

fn call_of(event: &Value) -> Option<Call> {
    let parameters = &event["parameters"];
    let (marker, tenths) = if let Some(command) = parameters["command"].as_str() {
        let marker = command.split("START-").nth(1)?.split_whitespace().next()?.to_string();
        let tenths = command.split("sleep 0.").nth(1).and_then(|rest| rest.get(..1)?.parse().ok()).unwrap_or(0);
        (marker, tenths)
    } else {
        (parameters["file_path"].as_str()?.strip_prefix("w-")?.strip_suffix(".txt")?.to_string(), 0)
    };
    Some(Call { marker, tenths, batch: 0, seq: event["seq"].as_u64()? })
}

/// The session as the hub answers it once nothing runs.
#[derive(Default, Clone)]
pub struct View {
    pub status: String,
    pub pending: Vec<String>,
    pub asking: Option<String>,
    pub events: Vec<Value>,
    pub calls: BTreeMap<String, Call>,
    pub results: HashMap<String, Vec<Value>>,
    /// The replay (`events?after=0`) is not `GET /api/sessions/{id}`'s `events`.
    pub replay_differs: bool,
}

impl View {
    pub fn waiting(&self) -> Vec<String> {
        self.pending.iter().cloned().chain(self.asking.clone()).collect()
    }
}

impl Run {
    async fn get(&self, path: &str) -> Result<reqwest::Response, String> {
        let url = format!("{}{path}", self.base());
        self.client.get(url).bearer_auth(PROCESS_TOKEN).send().await.map_err(|err| format!("GET {path}: {err}"))
    }

    async fn get_json(&self, path: &str) -> Result<Value, String> {
        let response = self.get(path).await?;
        let status = response.status();
        let text = response.text().await.map_err(|err| format!("GET {path}: {err}"))?;
        match status.is_success() {
            true => serde_json::from_str(&text).map_err(|err| format!("GET {path}: {err}: {text}")),
            false => Err(format!("GET {path}: {status}: {text}")),
        }
    }

    /// The session's state and whole log (replayed with `events?after=0`).
    pub async fn observe(&mut self) -> Result<View, String> {
        if self.session.is_none() {
            let projects: Value = self.get_json("/api/projects").await?;
            self.session = projects["projects"][0]["sessions"][0]["id"].as_str().map(str::to_string);
        }
        let Some(session) = self.session.clone() else { return Ok(View { status: "none".into(), ..View::default() }) };
        let detail: Value = self.get_json(&format!("/api/sessions/{session}")).await?;
        let replay = self.get(&format!("/api/sessions/{session}/events?after=0")).await?;
        let text = replay.text().await.map_err(|err| err.to_string())?;
        let events = text
            .lines()
            .map(|line| serde_json::from_str(line).map_err(|err| format!("replay line {line:?}: {err}")))
            .collect::<Result<Vec<Value>, String>>()?;
        let mut view = View {
            status: detail["status"].as_str().unwrap_or("?").to_string(),
            pending: detail["pendingApproval"]["pending"]
                .as_array()
                .map(|ids| ids.iter().filter_map(|id| Some(id.as_str()?.to_string())).collect())
                .unwrap_or_default(),
            asking: detail["pendingInput"]["requestId"].as_str().map(str::to_string),
            events,
            ..View::default()
        };
        let mut batch = 0;
        let mut previous_was_call = false;
        for event in &view.events {
            let is_call = event["type"] == "tool_use";
            if is_call && !previous_was_call {
                batch += 1;
            }
            previous_was_call = is_call;
            if let (true, Some(mut call)) = (is_call, call_of(event)) {
                call.batch = batch;
                view.calls.insert(event["tool_id"].as_str().unwrap_or_default().to_string(), call);
            }
            if event["type"] == "tool_result" {
                let id = event["tool_id"].as_str().unwrap_or_default().to_string();
                view.results.entry(id).or_default().push(event.clone());
            }
        }
        view.replay_differs = detail["events"].as_array() != Some(&view.events);
        Ok(view)
    }
}
