//! Agents and their turns. A session's runtime holds its event log and the
//! agent's state; a turn runs in a task of its own, so a closed connection
//! neither stops nor corrupts it.

pub mod builtin;
pub mod log;
pub mod model;

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::Value;

use crate::approval::ApprovalBatch;
use crate::tools::{Tool, ToolFailure};
use log::EventLog;

/// A call of a paused model turn, as the runtime will run it.
#[derive(Debug, Clone)]
pub struct PlannedCall {
    pub tool: Option<Tool>,
    pub name: String,
    pub args: Value,
    /// Found before any card (bad arguments, path outside, no match): reported instead of running.
    pub failure: Option<ToolFailure>,
}

/// A model turn waiting for the user's decisions.
#[derive(Debug, Clone)]
pub struct PausedTurn {
    pub batch: ApprovalBatch,
    pub calls: HashMap<String, PlannedCall>,
}

#[derive(Debug, Default)]
pub struct AgentState {
    /// A turn task owns the session.
    pub running: bool,
    /// The conversation in Chat Completions form.
    pub messages: Vec<Value>,
    pub paused: Option<PausedTurn>,
    /// Tools approved "for this session".
    pub allowed_tools: HashSet<String>,
    /// Completions requested so far (names made-up call ids).
    pub completions: usize,
}

pub struct SessionRuntime {
    pub id: String,
    pub folder: PathBuf,
    pub log: Arc<EventLog>,
    state: Mutex<AgentState>,
}

impl SessionRuntime {
    pub fn new(id: String, folder: PathBuf) -> Self {
        Self { id, folder, log: Arc::default(), state: Mutex::default() }
    }

    pub fn state(&self) -> MutexGuard<'_, AgentState> {
        self.state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}
