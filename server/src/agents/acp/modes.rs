//! An ACP agent's session modes, as the hub reads them: which ones ask the user
//! before a command or an edit, and which one a session starts in. Plain
//! functions over the protocol types.
//!
//! The hub is the approval authority: with YOLO off or on, a session runs in a
//! mode whose permission requests reach the hub (YOLO is the hub answering
//! them, so rules still hold). A mode that lets the agent decide by itself is
//! only ever taken when the user picks it.

use agent_client_protocol::v1::schema::SessionModeState;
use protocol::api::{AgentMode, AgentModes};

/// Modes known to ask before commands and edits, best first: Claude Code's,
/// Gemini CLI's and Qwen Code's `default`, codex's `read-only` (it asks before
/// anything that writes or leaves its sandbox), and `plan`, where nothing runs.
const ASKING: [&str; 3] = ["default", "read-only", "plan"];

/// Modes known to let the agent run commands or write files without asking.
const SKIPPING: [&str; 10] = [
    "acceptEdits",
    "bypassPermissions",
    "dontAsk",
    "autoEdit",
    "auto-edit",
    "auto_edit",
    "auto",
    "yolo",
    "full-access",
    "agent-full-access",
];

/// Modes that skip asking for edits only: commands still ask.
const EDITS_ONLY: [&str; 4] = ["acceptEdits", "autoEdit", "auto-edit", "auto_edit"];

/// Whether the mode lets the agent run commands without asking (`false`
/// for a mode that skips asking for edits only, or asks).
pub fn skips_for_commands(mode_id: &str) -> bool {
    asks(mode_id) == Some(false) && !EDITS_ONLY.contains(&mode_id)
}

/// Whether the agent asks before a command or a file write in this mode
/// (`None`: a mode the hub does not know).
pub fn asks(mode_id: &str) -> Option<bool> {
    if ASKING.contains(&mode_id) {
        Some(true)
    } else if SKIPPING.contains(&mode_id) {
        Some(false)
    } else {
        None
    }
}

/// The mode the hub puts a session in: the user's pick when the agent still
/// offers it, else the first asking mode the agent offers (plan only when
/// nothing else asks). `None`: leave the agent's own mode.
pub fn target(modes: &SessionModeState, chosen: Option<&str>) -> Option<String> {
    let offered = |id: &str| modes.available_modes.iter().any(|mode| &*mode.id.0 == id);
    if let Some(chosen) = chosen.filter(|id| offered(id)) {
        return Some(chosen.to_string());
    }
    ASKING.iter().find(|id| offered(id)).map(|id| id.to_string())
}

/// The modes as the page shows them.
pub fn shown(modes: &SessionModeState, chosen_by_user: bool) -> AgentModes {
    AgentModes {
        current_mode_id: modes.current_mode_id.0.to_string(),
        modes: modes
            .available_modes
            .iter()
            .map(|mode| AgentMode {
                id: mode.id.0.to_string(),
                name: mode.name.clone(),
                description: mode.description.clone(),
                asks: asks(&mode.id.0),
            })
            .collect(),
        chosen_by_user,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn state(current: &str, ids: &[&str]) -> SessionModeState {
        let modes: Vec<_> = ids.iter().map(|id| json!({"id": id, "name": id.to_uppercase()})).collect();
        serde_json::from_value(json!({"currentModeId": current, "availableModes": modes})).unwrap()
    }

    #[test]
    fn a_session_is_put_in_a_mode_that_asks_unless_the_user_chose_another() {
        let qwen = state("auto", &["plan", "default", "auto-edit", "auto", "yolo"]);
        assert_eq!(target(&qwen, None).as_deref(), Some("default"), "Qwen Code's auto decides by itself");
        assert_eq!(target(&qwen, Some("yolo")).as_deref(), Some("yolo"), "the user's pick holds");
        assert_eq!(target(&qwen, Some("gone")).as_deref(), Some("default"), "a pick no longer offered is dropped");
        let claude = state("default", &["default", "acceptEdits", "plan", "bypassPermissions"]);
        assert_eq!(target(&claude, None).as_deref(), Some("default"));
        let codex = state("auto", &["read-only", "auto", "full-access"]);
        assert_eq!(target(&codex, None).as_deref(), Some("read-only"));
        let plan_only = state("yolo", &["plan", "yolo"]);
        assert_eq!(target(&plan_only, None).as_deref(), Some("plan"));
        assert_eq!(target(&state("x", &["x", "y"]), None), None, "unknown modes: the agent's own stays");
    }

    #[test]
    fn modes_are_shown_with_whether_they_ask() {
        let shown = shown(&state("auto", &["default", "auto", "custom"]), false);
        assert_eq!(shown.current_mode_id, "auto");
        let asks: Vec<_> = shown.modes.iter().map(|mode| (mode.id.as_str(), mode.asks)).collect();
        assert_eq!(asks, [("default", Some(true)), ("auto", Some(false)), ("custom", None)]);
        assert_eq!(shown.modes[0].name, "DEFAULT");
    }
}
