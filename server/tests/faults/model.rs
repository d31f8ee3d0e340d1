//! The scripted model's side: what it proposes, drawn from its own seeded generator.

use std::time::Duration;

use serde_json::{json, Value};

use crate::common::fake_model::Reply;
use crate::rng::Rng;

/// The model's side: its own generator, so what it proposes depends on the
/// seed and the order of requests, not on timing.
pub struct ModelScript {
    pub rng: Rng,
    pub markers: u64,
}

impl ModelScript {
    pub fn respond(&mut self, request: &Value) -> Reply {
        let messages = request["messages"].as_array().cloned().unwrap_or_default();
        let last = messages.last().cloned().unwrap_or_default();
        if last["role"] == "user" {
            if last["content"].as_str().is_some_and(|text| text.starts_with("check")) {
                return Reply::Text(vec!["Ready ".into(), "for more.".into()]);
            }
            return if self.rng.chance(80) { self.batch() } else { self.text() };
        }
        // Tool results: another batch now and then, else the turn's closing text.
        let since_prompt = messages.iter().rposition(|m| m["role"] == "user").unwrap_or(0);
        let batches = messages[since_prompt..]
            .iter()
            .filter(|m| m["tool_calls"].as_array().is_some_and(|calls| !calls.is_empty()))
            .count();
        if batches < 2 && self.rng.chance(30) {
            return self.batch();
        }
        if self.rng.chance(4) {
            return Reply::Fail(500, "the fake model fails on purpose".into());
        }
        self.text()
    }

    /// One to three calls; ids unique, repeated across replies, empty, or all the same.
    fn batch(&mut self) -> Reply {
        let count = 1 + self.rng.below(3);
        let ids = self.rng.below(100);
        let mut calls = Vec::new();
        for index in 0..count {
            self.markers += 1;
            let marker = format!("m{}", self.markers);
            let id = match ids {
                0..40 => format!("fc_{marker}"),
                40..70 => format!("call_{index}"),
                70..85 => String::new(),
                _ => "dup".into(),
            };
            let (name, args) = match self.rng.below(100) {
                0..60 => {
                    let command = if self.rng.chance(50) {
                        let tenths = 2 + self.rng.below(7);
                        format!("echo START-{marker} >> started.log; sleep 0.{tenths}; echo {marker} >> ran.log")
                    } else {
                        format!("echo START-{marker} >> started.log; echo {marker} >> ran.log; echo ran {marker}")
                    };
                    ("run_shell_command", json!({"command": command}))
                }
                60..80 => {
                    ("write_file", json!({"file_path": format!("w-{marker}.txt"), "content": format!("{marker}\n")}))
                }
                _ => (
                    "ask_user",
                    json!({"prompt": format!("Go on after {marker}?"), "input_type": "approval", "choices": ["yes", "no"]}),
                ),
            };
            calls.push((id, name.to_string(), args));
        }
        let reply = Reply::Calls(calls);
        if self.rng.chance(35) {
            Reply::Slow(self.rng.millis(200, 800), Box::new(reply))
        } else {
            reply
        }
    }

    /// Text: at once, trickling (a kill lands mid-stream), or after a pause.
    fn text(&mut self) -> Reply {
        let pieces: Vec<String> = (0..12).map(|i| format!("word{i} ")).collect();
        match self.rng.below(100) {
            0..45 => Reply::Text(pieces),
            45..85 => Reply::Trickle(self.rng.millis(40, 100), Box::new(Reply::Text(pieces))),
            _ => Reply::Slow(
                self.rng.millis(300, 1000),
                Box::new(Reply::Trickle(Duration::from_millis(50), Box::new(Reply::Text(pieces)))),
            ),
        }
    }
}
