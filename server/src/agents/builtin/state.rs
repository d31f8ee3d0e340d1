//! What the built-in agent keeps of a session: the conversation, the turn
//! waiting on the user, and its calls as they will run.

use std::collections::{HashMap, HashSet};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::approval::ApprovalBatch;
use crate::tools::{Tool, ToolFailure};

/// A call of a paused model turn, as the runtime will run it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PlannedCall {
    /// The model's id for the call where the hub gave it another (the model's
    /// was empty, repeated, or not fit to show); the conversation keeps the model's.
    #[serde(default)]
    pub model_id: Option<String>,
    pub tool: Option<Tool>,
    pub name: String,
    pub args: Value,
    /// Found before any card (bad arguments, path outside, no match): reported instead of running.
    pub failure: Option<ToolFailure>,
}

/// A model turn waiting for the user's decisions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PausedTurn {
    pub batch: ApprovalBatch,
    pub calls: HashMap<String, PlannedCall>,
}

/// The built-in agent's side of a session.
#[derive(Debug, Default, Serialize, Deserialize)]
pub struct BuiltinState {
    /// The conversation in Chat Completions form.
    pub messages: Vec<Value>,
    pub paused: Option<PausedTurn>,
    /// Completions requested so far (names made-up call ids).
    pub completions: usize,
    /// Stops the running turn (the Stop button).
    #[serde(skip)]
    pub stop: Option<tokio_util::sync::CancellationToken>,
}

impl BuiltinState {
    /// The latest model reply that called tools: its place in the conversation,
    /// and the ids of its calls that have no result yet.
    fn unanswered_calls(&self) -> Option<(usize, Vec<String>)> {
        let index = self.messages.iter().rposition(|m| m["role"] == "assistant" && m.get("tool_calls").is_some())?;
        let answered: HashSet<&str> = self.messages[index + 1..]
            .iter()
            .filter(|m| m["role"] == "tool")
            .filter_map(|m| m["tool_call_id"].as_str())
            .collect();
        let open = self.messages[index]["tool_calls"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|call| call["id"].as_str())
            .filter(|id| !answered.contains(id))
            .map(str::to_string)
            .collect();
        Some((index, open))
    }

    /// After a restart cut a running turn: forget the turn's unfinished calls, and
    /// drop a model reply whose tool calls did not all get results, so the
    /// conversation is one the model accepts and nothing half-done is resumed.
    pub fn recover_interrupted(&mut self) {
        self.paused = None;
        if let Some((index, open)) = self.unanswered_calls() {
            if !open.is_empty() {
                self.messages.truncate(index);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn an_interrupted_turn_drops_calls_without_results() {
        let user = json!({"role": "user", "content": "go"});
        let calls = json!({"role": "assistant", "content": "", "tool_calls": [{"id": "a"}, {"id": "b"}]});
        let result = json!({"role": "tool", "tool_call_id": "a", "content": "ok"});
        let mut state =
            BuiltinState { messages: vec![user.clone(), calls.clone(), result.clone()], ..Default::default() };
        state.recover_interrupted();
        assert_eq!(state.messages, vec![user.clone()], "b never got a result");

        let done = json!({"role": "tool", "tool_call_id": "b", "content": "ok"});
        let complete = vec![user, calls, result, done];
        let mut state = BuiltinState { messages: complete.clone(), ..Default::default() };
        state.recover_interrupted();
        assert_eq!(state.messages, complete, "a finished exchange is kept");
    }
}
