//! The rounds: choose an action, aim a kill at a point it can set off, restart the hub and check.

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::common::fake_model::FakeModel;
use crate::common::process::HubProcess;
use crate::invariants::{Before, Stats, NEW_PROMPT, NONE_LOST, SETTLED};
use crate::live::{is_text, Live};
use crate::observe::{Call, Folder, View};
use crate::rng::Rng;

/// The hub's own log: its errors show, its routine warnings (one per start) do not.
const HUB_LOG: &str = "error";

#[derive(Clone, Copy, Debug)]
enum Intent {
    Finish,
    AfterSend,
    MidCommand,
    MidStream,
    Idle,
}

#[derive(Debug)]
enum Action {
    Prompt(String),
    Decide { tool_id: String, decision: &'static str, word: bool },
    Answer { request_id: String, response: Value },
    Stop,
}

pub struct Run {
    pub rng: Rng,
    pub client: reqwest::Client,
    pub model: FakeModel,
    pub data: tempfile::TempDir,
    pub _dir: tempfile::TempDir,
    pub folder: PathBuf,
    pub hub: Option<HubProcess>,
    pub session: Option<String>,
    /// Calls the user approved (a 200 answer), and whether the client saw the
    /// turn go on after the decision.
    pub approved: HashMap<String, bool>,
    /// Markers of every call ever approved.
    pub approved_markers: HashSet<String>,
    pub view: View,
    pub stats: Stats,
    /// Failures found during the round's action, for its check to count.
    pub noted: Vec<(usize, String)>,
    /// Each violation once, with the round that found it.
    pub violations: Vec<(usize, String)>,
    pub round: usize,
}

impl Run {
    pub fn start_hub(&mut self) {
        if self.hub.is_none() {
            let args = ["--model-url", &self.model.base_url, "--model", "fake-model"];
            let data = self.data.path().to_path_buf();
            self.hub = Some(tokio::task::block_in_place(|| HubProcess::start_logging(&data, &args, HUB_LOG)));
        }
    }

    pub fn base(&self) -> String {
        self.hub.as_ref().expect("a running hub").base.clone()
    }

    pub fn kill(&mut self) {
        if let Some(hub) = self.hub.take() {
            tokio::task::block_in_place(|| hub.kill_9());
        }
    }

    fn choose(&mut self) -> Action {
        let view = self.view.clone();
        let roll = self.rng.below(100);
        if let Some(request_id) = view.asking.clone().filter(|_| view.status == "waiting_input") {
            return match roll {
                0..10 => Action::Stop,
                10..80 => Action::Answer { request_id, response: json!("approve") },
                _ => Action::Answer { request_id, response: json!("reject") },
            };
        }
        if view.status.starts_with("waiting") && view.pending.is_empty() {
            return Action::Stop; // Nothing to decide: Stop is all a user can do.
        }
        if view.status != "waiting_approval" {
            return Action::Prompt(format!("task {}: change something", self.round));
        }
        let first = view.pending[0].clone();
        match roll {
            0..5 => Action::Stop,
            5..70 => Action::Decide { tool_id: first, decision: "approve", word: false },
            70..77 if view.pending.len() > 1 => {
                let other = view.pending[1 + self.rng.below(view.pending.len() as u64 - 1) as usize].clone();
                Action::Decide { tool_id: other, decision: "approve", word: false }
            }
            70..84 => Action::Decide { tool_id: first, decision: "approve", word: true },
            84..92 => Action::Decide { tool_id: first, decision: "reject", word: self.rng.chance(30) },
            _ => Action::Decide { tool_id: first, decision: "edit", word: false },
        }
    }

    /// Where to aim the kill, weighted by what the action can set off: a slow
    /// command can be cut while it runs; the model is asked after a prompt
    /// and after the last call of a reply.
    fn intent(&mut self, approves: Option<&Call>) -> Intent {
        // Percent: finish, after send, mid-command, mid-stream; the rest: idle.
        let weights = match approves {
            Some(call) if call.tenths > 0 => [10, 25, 50, 10],
            Some(_) => [15, 40, 0, 30],
            None => [15, 30, 0, 45],
        };
        let mut roll = self.rng.below(100);
        for (weight, intent) in
            weights.into_iter().zip([Intent::Finish, Intent::AfterSend, Intent::MidCommand, Intent::MidStream])
        {
            if roll < weight {
                return intent;
            }
            roll -= weight;
        }
        Intent::Idle
    }

    fn request(&self, action: &Action) -> (String, Option<Value>, &'static str) {
        let session = self.session.clone().unwrap_or_default();
        let prompt = |message: &str| Some(json!({"folderPath": self.folder, "message": message}));
        match action {
            Action::Prompt(message) => ("/api/chat/prompt".into(), prompt(message), "prompt"),
            Action::Decide { decision, word: true, .. } => {
                let (word, label) =
                    if *decision == "approve" { ("yes", "approve (word)") } else { ("no", "reject (word)") };
                ("/api/chat/prompt".into(), prompt(word), label)
            }
            Action::Decide { tool_id, decision, .. } => {
                let mut body = json!({"toolId": tool_id, "decision": decision});
                if *decision == "edit" {
                    body["editInstruction"] = json!("Do it another way.");
                }
                let label = match *decision {
                    "approve" if self.view.pending.first() != Some(tool_id) => "approve (out of order)",
                    "approve" => "approve",
                    "reject" => "reject",
                    _ => "edit instruction",
                };
                (format!("/api/sessions/{session}/approve"), Some(body), label)
            }
            Action::Answer { request_id, response } => {
                let label = if response == "reject" { "answer: reject" } else { "answer: approve" };
                (
                    format!("/api/sessions/{session}/input"),
                    Some(json!({"requestId": request_id, "response": response})),
                    label,
                )
            }
            Action::Stop => (format!("/api/sessions/{session}/cancel"), None, "stop"),
        }
    }

    /// The call an action approves, if any.
    fn approving(&self, action: &Action) -> Option<String> {
        match action {
            Action::Decide { tool_id, decision: "approve", .. } => Some(tool_id.clone()),
            _ => None,
        }
    }

    /// What was under way when the kill landed, from what the client had got
    /// (read once the connection is gone) and the folder.
    fn kill_point(&self, events: &[Value], action: &Action, approved: Option<&Call>) -> &'static str {
        if events.iter().any(|e| e["type"] == "result") {
            return "idle (paused or ended)";
        }
        if let Some(call) = approved {
            let folder = Folder::read(&self.folder);
            if call.tenths > 0 && folder.started(call) && !folder.finished(call) {
                return "mid-command";
            }
        }
        if events.iter().any(is_text) {
            return "mid-stream";
        }
        let nothing_yet = events.iter().all(|e| e["type"] == "init" || (e["type"] == "message" && e["role"] == "user"));
        match (nothing_yet, action) {
            (true, Action::Prompt(_)) => "after-prompt",
            (true, _) => "after-decision",
            _ => "mid-turn",
        }
    }

    /// Waits for the point `intent` aims at; returns whether to kill there.
    async fn wait_for(&mut self, intent: Intent, live: &Live, approved: Option<&Call>, asked: usize) -> bool {
        match intent {
            Intent::Finish | Intent::Idle => {
                live.wait_done(Duration::from_secs(30)).await;
                matches!(intent, Intent::Idle)
            }
            Intent::AfterSend => {
                // Mostly at once: between the decision and what it sets off.
                let limit = if self.rng.chance(70) { 4 } else { 40 };
                tokio::time::sleep(self.rng.millis(0, limit)).await;
                true
            }
            Intent::MidCommand => {
                let Some(call) = approved.filter(|call| call.tenths > 0) else {
                    tokio::time::sleep(self.rng.millis(0, 150)).await;
                    return true;
                };
                let deadline = Instant::now() + Duration::from_secs(5);
                while !Folder::read(&self.folder).started(call) && !live.ended() && Instant::now() < deadline {
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                tokio::time::sleep(self.rng.millis(0, call.tenths * 90)).await;
                true
            }
            Intent::MidStream => {
                // Into the model's text, or into its silence before it.
                let (after_text, after_ask) = (self.rng.millis(0, 300), self.rng.millis(0, 1000));
                let deadline = Instant::now() + Duration::from_secs(10);
                let mut asked_at = None;
                while !live.ended() && Instant::now() < deadline {
                    if live.events().iter().any(is_text) {
                        tokio::time::sleep(after_text).await;
                        break;
                    }
                    if asked_at.is_none() && self.model.requests().len() > asked {
                        asked_at = Some(Instant::now());
                    }
                    if asked_at.is_some_and(|at| at.elapsed() >= after_ask) {
                        break;
                    }
                    tokio::time::sleep(Duration::from_millis(5)).await;
                }
                true
            }
        }
    }

    pub async fn round(&mut self, rounds: usize) {
        let round = self.round;
        self.start_hub();
        let action = self.choose();
        let (path, body, label) = self.request(&action);
        *self.stats.actions.entry(label).or_default() += 1;
        // A decision word decides the first waiting call, which `choose` named.
        let target = self.approving(&action);
        let call = target.as_ref().and_then(|id| self.view.calls.get(id).cloned());
        let intent = self.intent(call.as_ref());
        let mut line = format!("round {round}/{rounds} [{}] {label}", self.view.status);
        if let Some(id) = &target {
            let marker = call.as_ref().map_or("?".to_string(), |c| format!("{}, sleep 0.{}", c.marker, c.tenths));
            line.push_str(&format!(" {id} ({marker})"));
        }
        let asked = self.model.requests().len();
        let base = self.base();
        let decided = match &action {
            Action::Decide { decision: "approve", .. } | Action::Prompt(_) => Vec::new(),
            Action::Answer { response, .. } if response != "reject" => Vec::new(),
            Action::Decide { .. } | Action::Answer { .. } | Action::Stop => self.view.waiting(),
        };
        let before = Before { view: self.view.clone(), decided, ..Before::default() };
        let live = match Live::open(&self.client, &base, &path, body).await {
            Ok(live) => live,
            Err(err) => {
                self.noted.push((SETTLED, format!("the hub did not answer: {err}")));
                self.kill();
                return self.settle(line, before, Vec::new(), true).await;
            }
        };
        if matches!(action, Action::Prompt(_)) {
            // Every prompt the session takes is invariant 9 at work too.
            self.stats.checks[NEW_PROMPT].0 += 1;
            self.stats.checks[NEW_PROMPT].1 += usize::from(live.status == 200);
        }
        if live.status == 200 {
            if let (Some(id), Some(call)) = (&target, &call) {
                self.approved.insert(id.clone(), false);
                self.approved_markers.insert(call.marker.clone());
            }
        } else {
            live.wait_done(Duration::from_secs(5)).await;
            let answer = live.events().first().cloned().unwrap_or_default();
            let invariant = if matches!(action, Action::Prompt(_)) { NEW_PROMPT } else { NONE_LOST };
            self.noted.push((invariant, format!("{label} was answered {}: {answer}", live.status)));
        }
        if live.status == 200 && self.wait_for(intent, &live, call.as_ref(), asked).await {
            self.kill();
            live.wait_done(Duration::from_secs(2)).await;
            let point = self.kill_point(&live.events(), &action, call.as_ref());
            *self.stats.kills.entry(point).or_default() += 1;
            line.push_str(&format!(" -> kill -9 {point} (aimed {intent:?})"));
        } else if !live.wait_done(Duration::from_secs(30)).await {
            self.noted.push((SETTLED, format!("the {label} stream did not end within 30 s")));
            self.kill();
        }
        let seen = live.events();
        if let Some(id) = &target {
            let progress = seen.iter().any(|e| e["type"] != "init" && !(e["type"] == "message" && e["role"] == "user"));
            if let Some(saw) = self.approved.get_mut(id) {
                *saw |= progress;
            }
        }
        let killed = self.hub.is_none();
        self.settle(line, before, if killed { seen } else { Vec::new() }, killed).await;
    }

    /// Restarts the hub if it was killed, then observes and checks.
    async fn settle(&mut self, mut line: String, mut before: Before, seen: Vec<Value>, killed: bool) {
        if killed {
            self.start_hub();
            line.push_str(" -> restart");
        }
        before.restarted = killed;
        before.seen = seen;
        match self.observe().await {
            Ok(view) => {
                line.push_str(&format!(": {}, {} events", view.status, view.events.len()));
                println!("{line}");
                self.check(&view, &before);
                self.view = view;
            }
            Err(err) => {
                println!("{line}");
                self.fail(SETTLED, format!("the session could not be read: {err}"));
            }
        }
    }

    /// Invariant 9: Stop whatever waits, then a new prompt is taken and completes.
    pub async fn takes_new_prompt(&mut self) {
        self.start_hub();
        self.stats.checks[NEW_PROMPT].0 += 1;
        let base = self.base();
        let mut failures = Vec::new();
        let mut steps = Vec::new();
        if self.view.status.starts_with("waiting") {
            let session = self.session.clone().unwrap_or_default();
            steps.push((format!("/api/sessions/{session}/cancel"), None, "cancelled"));
        }
        steps.push((
            "/api/chat/prompt".into(),
            Some(json!({"folderPath": self.folder, "message": "check"})),
            "success",
        ));
        for (path, body, status) in steps {
            match Live::open(&self.client, &base, &path, body).await {
                Ok(live) => {
                    live.wait_done(Duration::from_secs(30)).await;
                    let events = live.events();
                    let last = events.last().cloned().unwrap_or_default();
                    if live.status != 200 || last["type"] != "result" || last["status"] != status {
                        failures.push(format!("{path} answered {}, ending {last}", live.status));
                    }
                }
                Err(err) => failures.push(err),
            }
        }
        if failures.is_empty() {
            self.stats.checks[NEW_PROMPT].1 += 1;
        }
        for failure in failures {
            self.fail(NEW_PROMPT, failure);
        }
        let before = Before { view: self.view.clone(), ..Before::default() };
        let line = format!("round {}/-- stop if waiting, then a new prompt", self.round);
        self.settle(line, before, Vec::new(), false).await;
    }
}
