//! The invariants, their check after every round, and the tally of what was tried and what held.

use std::collections::{BTreeMap, HashSet};

use serde_json::Value;

use crate::driver::Run;
use crate::live::is_text;
use crate::observe::{Folder, View};

pub const NO_TWICE: usize = 0;
pub const APPROVED_ONLY: usize = 1;
pub const RAN_OR_INTERRUPTED: usize = 2;
pub const NONE_LOST: usize = 3;
pub const SEQS: usize = 4;
pub const SETTLED: usize = 5;
pub const KEPT: usize = 6;
pub const IDS: usize = 7;
pub const NEW_PROMPT: usize = 8;
pub const INVARIANTS: [&str; 9] = [
    "no command ran twice (each marker at most once in started.log and ran.log)",
    "nothing ran without the user's approval",
    "every approved call ran once or is reported interrupted; once started it is never offered again",
    "no waiting call is lost (still waiting, or reported)",
    "event seqs are 1..=n, and the replay is the session's log",
    "the session settles: never running after a restart, its status matches its log",
    "what was stored stays, and every event a client saw is kept at its seq (but a cut turn's last text)",
    "one hub tool id per call, at most one tool_result per call",
    "the session takes a new prompt (after a Stop if something waits)",
];

/// What the round knew before its action (and its kill).
#[derive(Default)]
pub struct Before {
    pub view: View,
    pub restarted: bool,
    /// Events clients got live from the hub process that was killed.
    pub seen: Vec<Value>,
    /// Waiting calls the round's action decided: a rejection or an edit
    /// instruction answers every waiting call of the reply, each reported when
    /// the turn gets to it (after a question it waits on, say).
    pub decided: Vec<String>,
}

#[derive(Default)]
pub struct Stats {
    pub kills: BTreeMap<&'static str, usize>,
    pub actions: BTreeMap<&'static str, usize>,
    pub decisions_lost: usize,
    pub seen_lost_text: usize,
    pub checks: [(usize, usize); 9],
}

impl Run {
    /// Records a violation; one still there in later rounds is said once.
    pub fn fail(&mut self, invariant: usize, message: String) {
        let message = format!("[{}] {message}", INVARIANTS[invariant]);
        if self.violations.iter().any(|(_, said)| *said == message) {
            return;
        }
        println!("      VIOLATION {message}");
        self.violations.push((self.round, message));
    }

    /// Checks every invariant on `view`, counting each as checked and held.
    pub fn check(&mut self, view: &View, before: &Before) {
        let folder = Folder::read(&self.folder);
        let mut failures = std::mem::take(&mut self.noted);
        // 1. Nothing twice.
        for (list, name) in [(&folder.started, "started.log"), (&folder.ran, "ran.log")] {
            for (marker, count) in list.iter().filter(|(_, count)| **count > 1) {
                failures.push((NO_TWICE, format!("{marker} is in {name} {count} times: a command ran twice")));
            }
        }
        // 2. Nothing without approval.
        let markers = folder.started.keys().chain(folder.ran.keys()).chain(&folder.written);
        for marker in markers.collect::<HashSet<_>>() {
            if !self.approved_markers.contains(marker) {
                failures.push((APPROVED_ONLY, format!("{marker} ran, but the user never approved its call")));
            }
        }
        // 3. Approved calls ran once or are reported interrupted.
        let last_batch = view.calls.values().map(|call| call.batch).max().unwrap_or(0);
        for (id, saw_progress) in self.approved.clone() {
            let Some(call) = view.calls.get(&id) else {
                failures.push((RAN_OR_INTERRUPTED, format!("approved call {id} has no tool_use in the log")));
                continue;
            };
            let results = view.results.get(&id).cloned().unwrap_or_default();
            let (started, finished) = (folder.started(call), folder.finished(call));
            let says = |what: &str| format!("approved call {id} ({}) {what}", call.marker);
            if view.pending.contains(&id) {
                if started || !results.is_empty() {
                    failures.push((RAN_OR_INTERRUPTED, says("is offered again after it started or was reported")));
                } else if saw_progress {
                    failures.push((RAN_OR_INTERRUPTED, says("is offered again after the client saw its turn go on")));
                } else {
                    // The kill came before the decision reached the disk: nothing ran, the card is back.
                    self.approved.remove(&id);
                    self.stats.decisions_lost += 1;
                }
                continue;
            }
            match results.as_slice() {
                [] => {
                    let waits_its_turn = view.status.starts_with("waiting")
                        && call.batch == last_batch
                        && (view.asking.is_some()
                            || view.pending.iter().any(|p| view.calls.get(p).is_some_and(|c| c.seq < call.seq)));
                    if !waits_its_turn {
                        let started = if started { "it started" } else { "it never started" };
                        failures.push((RAN_OR_INTERRUPTED, says(&format!("has no result and no card ({started})"))));
                    }
                }
                [result] => match (result["status"].as_str(), result["error"]["type"].as_str()) {
                    (Some("success"), _) if !finished => {
                        failures.push((RAN_OR_INTERRUPTED, says("is reported a success, but its marker is missing")))
                    }
                    (Some("skipped"), _) if started => {
                        failures.push((RAN_OR_INTERRUPTED, says("is reported skipped, but it started")))
                    }
                    _ => {}
                },
                _ => {} // Reported twice: invariant 8.
            }
        }
        // 4. No waiting call is lost.
        for id in before.view.waiting().into_iter().filter(|id| !before.decided.contains(id)) {
            let kept =
                view.pending.contains(&id) || view.asking.as_ref() == Some(&id) || view.results.contains_key(&id);
            if !kept && !self.approved.contains_key(&id) {
                failures.push((NONE_LOST, format!("{id} was waiting, and is now neither waiting nor reported")));
            }
        }
        // Once nothing waits, every call and question announced has its one result.
        if ["idle", "error"].contains(&view.status.as_str()) {
            let asked = view.events.iter().filter_map(|e| e["request_id"].as_str());
            for id in view.calls.keys().map(String::as_str).chain(asked) {
                if !view.results.contains_key(id) {
                    failures.push((
                        NONE_LOST,
                        format!("{id} was announced, and the {} session never reported it", view.status),
                    ));
                }
            }
        }
        // 5. Seqs.
        let seqs: Vec<u64> = view.events.iter().map(|event| event["seq"].as_u64().unwrap_or(0)).collect();
        if seqs != (1..=seqs.len() as u64).collect::<Vec<_>>() {
            failures.push((SEQS, format!("the seqs are not 1..={}: {seqs:?}", seqs.len())));
        }
        if view.replay_differs {
            failures.push((SEQS, "the replay (events?after=0) differs from the session's events".into()));
        }
        // 6. Settled.
        let last = view.events.last().cloned().unwrap_or_default();
        let expected = match view.status.as_str() {
            "waiting_approval" => (!view.pending.is_empty(), "waiting_approval"),
            "waiting_input" => (view.asking.is_some(), "waiting_input"),
            "idle" => (view.pending.is_empty() && view.asking.is_none(), ""),
            "error" => (view.pending.is_empty() && view.asking.is_none(), "error"),
            "none" => (true, ""),
            _ => (false, ""),
        };
        let result_fits = match expected.1 {
            "" => view.events.is_empty() || ["success", "cancelled"].contains(&last["status"].as_str().unwrap_or("")),
            status => last["type"] == "result" && last["status"] == status,
        };
        if !expected.0 || !result_fits {
            let what = if before.restarted { "after a restart" } else { "after its stream ended" };
            failures.push((
                SETTLED,
                format!(
                    "status {} {what}, pending {:?}, asking {:?}, last event {last}",
                    view.status, view.pending, view.asking
                ),
            ));
        }
        // 7. Kept.
        let stored = &before.view.events;
        if view.events.len() < stored.len() || view.events[..stored.len()] != stored[..] {
            failures.push((KEPT, "the stored log before the round is not a prefix of the log after it".into()));
        }
        // Seqs let a reconnecting client lose nothing: what it saw is what the log
        // keeps. Only a cut turn's last text deltas may be missing (README).
        let mut gone = Vec::new();
        for seen in before.seen.iter().filter(|seen| seen["seq"].is_u64()) {
            let at = seen["seq"].as_u64().unwrap_or(0) as usize;
            match view.events.get(at.wrapping_sub(1)) {
                Some(now) if now == seen => {}
                _ if is_text(seen) => self.stats.seen_lost_text += 1,
                now => gone.push(format!("{seen} (now: {})", now.map_or("nothing".into(), Value::to_string))),
            }
        }
        if !gone.is_empty() {
            let list = gone.join("\n          ");
            failures.push((
                KEPT,
                format!("a client saw these before the kill, the log after it differs:\n          {list}"),
            ));
        }
        // 8. Ids.
        let mut announced: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
        for event in view.events.iter().filter(|e| e["type"] == "tool_use" || e["type"] == "input_request") {
            let id = event["tool_id"].as_str().or(event["request_id"].as_str()).unwrap_or_default();
            announced.entry(id).or_default().push(event["seq"].as_u64().unwrap_or(0));
        }
        // Said by the first two (a repeated id collects more calls as the run goes on).
        for (id, seqs) in announced.into_iter().filter(|(id, seqs)| id.is_empty() || seqs.len() > 1) {
            let seqs: Vec<u64> = seqs.into_iter().take(2).collect();
            failures.push((IDS, format!("tool id {id:?} names more than one call (announced at seqs {seqs:?})")));
        }
        for (id, results) in view.results.iter().filter(|(_, results)| results.len() > 1) {
            let two: Vec<String> =
                results.iter().take(2).map(|r| format!("{} at seq {}", r["status"], r["seq"])).collect();
            failures.push((IDS, format!("{id} has more than one tool_result ({})", two.join(", "))));
        }
        let paused_on = last["pending"].as_array().into_iter().flatten().filter_map(Value::as_str);
        for id in view.pending.iter().map(String::as_str).chain(paused_on).collect::<HashSet<_>>() {
            if !view.calls.contains_key(id) {
                failures.push((IDS, format!("waiting call {id} has no tool_use in the log: no card can show it")));
            }
        }
        for (invariant, counts) in self.stats.checks.iter_mut().enumerate().take(NEW_PROMPT) {
            counts.0 += 1;
            if !failures.iter().any(|(which, _)| *which == invariant) {
                counts.1 += 1;
            }
        }
        for (invariant, message) in failures {
            self.fail(invariant, message);
        }
    }
}
