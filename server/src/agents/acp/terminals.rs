//! The terminals one agent process has open (ACP's `terminal/*`), each tied to
//! the tool call that shows it once the agent says which: its output then
//! reaches the page live, and becomes that call's result. Dropping the
//! registry (the process ended) ends every command still running.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use crate::agents::live::LiveOutput;
use crate::agents::log::EventLog;
use crate::tools::terminal::Terminal;

/// How many terminals an agent may have open at once.
pub const MAX_OPEN: usize = 32;
/// How many released terminals' results are kept for the calls that showed them.
const KEPT_RESULTS: usize = 32;

pub struct Terminals {
    log: Arc<EventLog>,
    open: HashMap<String, Open>,
    /// Released terminals' results, by the call that showed them (the agent
    /// releases a terminal before it reports the call's end).
    results: VecDeque<(String, String)>,
    next: u64,
}

struct Open {
    terminal: Arc<Terminal>,
    tool_id: Option<String>,
}

impl Terminals {
    pub fn new(log: Arc<EventLog>) -> Self {
        Self { log, open: HashMap::new(), results: VecDeque::new(), next: 0 }
    }

    pub fn is_full(&self) -> bool {
        self.open.len() >= MAX_OPEN
    }

    /// The id the next terminal gets (each asked for once).
    pub fn reserve_id(&mut self) -> String {
        self.next += 1;
        // Unique beyond this process too: the audit trail names unasked commands by it.
        format!("term-{}-{}", crate::clock::now_ms(), self.next)
    }

    /// Keeps a started terminal under its reserved id. `tool_id`: the call it
    /// runs, when the hub already knows it.
    pub fn add(&mut self, id: &str, terminal: Arc<Terminal>, tool_id: Option<String>) {
        self.open.insert(id.to_string(), Open { terminal, tool_id: None });
        if let Some(tool_id) = tool_id {
            self.link(id, &tool_id);
        }
    }

    pub fn get(&self, id: &str) -> Option<Arc<Terminal>> {
        self.open.get(id).map(|open| open.terminal.clone())
    }

    /// The agent showed terminal `id` in call `tool_id`: its output goes live
    /// there. A terminal belongs to the first call that shows it.
    pub fn link(&mut self, id: &str, tool_id: &str) {
        let Some(open) = self.open.get_mut(id).filter(|open| open.tool_id.is_none()) else { return };
        open.tool_id = Some(tool_id.to_string());
        let live = Arc::new(LiveOutput::new(self.log.clone(), tool_id));
        open.terminal.show_live(Arc::new(move |stream, piece: &[u8]| live.push(stream, piece)));
    }

    /// Ends the terminal's command and forgets it; its result stays for its call.
    pub fn release(&mut self, id: &str) -> bool {
        let Some(open) = self.open.remove(id) else { return false };
        open.terminal.kill();
        if let Some(tool_id) = open.tool_id {
            if self.results.len() == KEPT_RESULTS {
                self.results.pop_front();
            }
            self.results.push_back((tool_id, result_text(&open.terminal)));
        }
        true
    }

    /// The result of the terminal call `tool_id` showed, if one did.
    pub fn result_of(&self, tool_id: &str) -> Option<String> {
        let open = self.open.values().find(|open| open.tool_id.as_deref() == Some(tool_id));
        open.map(|open| result_text(&open.terminal))
            .or_else(|| self.results.iter().rev().find(|(id, _)| id == tool_id).map(|(_, text)| text.clone()))
    }

    /// Stop: every command still running ends (the terminals stay readable).
    pub fn kill_all(&self) {
        for open in self.open.values() {
            open.terminal.kill();
        }
    }
}

/// What the call's line shows as its result: the output and how it ended.
fn result_text(terminal: &Terminal) -> String {
    let (mut text, truncated, exit) = terminal.output();
    if truncated {
        text.insert_str(0, "[the start of the output was cut]\n");
    }
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(&exit.map_or_else(|| "[still running]".to_string(), |exit| exit.describe()));
    text
}

impl Drop for Terminals {
    /// The agent's connection is gone: so is every command it ran through the hub.
    fn drop(&mut self) {
        self.kill_all();
    }
}
