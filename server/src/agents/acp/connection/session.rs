//! Opening the agent's session (`initialize`, `session/load` or `session/new`)
//! and keeping it in the mode the hub or the user chose.

use agent_client_protocol::schema::ProtocolVersion;
use agent_client_protocol::v1::schema::{
    ClientCapabilities, FileSystemCapabilities, Implementation, InitializeRequest, LoadSessionRequest,
    NewSessionRequest, RequestPermissionOutcome, RequestPermissionResponse, SessionId, SessionModeId,
    SetSessionModeRequest,
};
use agent_client_protocol::v1::ConnectionTo;
use agent_client_protocol::Agent;
use protocol::api::AgentModes;
use protocol::events::{AgentEvent, Severity};
use tokio::sync::mpsc;

use super::super::modes;

/// How long the agent may take to switch modes.
const MODE_SWITCH_LIMIT: std::time::Duration = std::time::Duration::from_secs(10);
use super::{describe, skip_replay, Driver, Inbound};

/// In a folder the user has not trusted, the agent's own switch for loading
/// only the user's settings where it has one: Claude Code's adapter takes
/// `settingSources` (its project and local settings, and `.mcp.json` in this
/// folder and every parent, are then not read). Its sandbox hides the
/// folder's config files too.
fn untrusted_meta(untrusted: bool) -> Option<agent_client_protocol::v1::schema::Meta> {
    let meta = serde_json::json!({"claudeCode": {"options": {"settingSources": ["user"]}}});
    untrusted.then(|| meta.as_object().cloned()).flatten()
}

impl Driver {
    /// `initialize`, then `session/load` of the stored session where the agent
    /// offers it (its replayed history is already in the log), else `session/new`.
    pub(super) async fn open_session(
        &mut self,
        cx: &ConnectionTo<Agent>,
        inbound: &mut mpsc::UnboundedReceiver<Inbound>,
    ) -> Result<SessionId, agent_client_protocol::Error> {
        // The agent's writes and commands through the hub: judged, confined and
        // sandboxed as the built-in agent's (see `client`). Reads are served
        // (Claude Code's Edit reads through the hub) but not offered: an agent's
        // own reads are bounded by its sandbox, and Gemini CLI, reading a file
        // before it writes it, cannot tell a client's "does not exist" from a
        // failure, so it could no longer make a new file.
        let serves = ClientCapabilities::new()
            .fs(FileSystemCapabilities::new().read_text_file(false).write_text_file(true))
            .terminal(true);
        let hello = InitializeRequest::new(ProtocolVersion::V1)
            .client_capabilities(serves)
            .client_info(Implementation::new("agent-hub", env!("CARGO_PKG_VERSION")).title("Agent Hub".to_string()));
        let init = cx.send_request(hello).block_task().await?;
        let name = init.agent_info.map(|info| {
            let title = info.title.unwrap_or(info.name);
            format!("{title} {}", info.version)
        });
        let stored = {
            let mut state = self.runtime.state();
            state.agent.acp.agent_name = name;
            state.agent.acp.session_id.clone()
        };
        let folder = self.runtime.root.clone();
        let meta = untrusted_meta(self.hub.sandbox_terms(&self.runtime.id).hide_agent_config);
        let mut session = None;
        if let Some(id) = stored.filter(|_| init.agent_capabilities.load_session) {
            let load = LoadSessionRequest::new(SessionId::new(id.clone()), folder.clone()).meta(meta.clone());
            match cx.send_request(load).block_task().await {
                Ok(loaded) => {
                    self.modes = loaded.modes;
                    session = Some(SessionId::new(id));
                }
                Err(err) => {
                    self.runtime.log.push(AgentEvent::Error {
                        severity: Severity::Warning,
                        message: format!(
                            "The agent could not load its earlier conversation ({}); it starts a new one.",
                            describe(&err)
                        ),
                        code: Some("session_not_loaded".into()),
                    });
                }
            }
            if session.is_some() {
                skip_replay(inbound).await;
            }
        }
        let session = match session {
            Some(session) => session,
            None => {
                let created = cx.send_request(NewSessionRequest::new(folder).meta(meta)).block_task().await?;
                self.modes = created.modes;
                created.session_id
            }
        };
        let mut state = self.runtime.state();
        state.agent.acp.session_id = Some(session.0.to_string());
        self.runtime.save(&state);
        Ok(session)
    }

    /// Puts the new session in the user's mode, else in one that asks (an
    /// agent's own default may run commands or edits without asking: Qwen
    /// Code's `auto`). Says so when that fails or no mode asks.
    pub(super) async fn apply_mode(&mut self, cx: &ConnectionTo<Agent>, session: &SessionId) {
        let Some(offered) = &self.modes else {
            self.runtime.set_agent_modes(None);
            return;
        };
        let chosen = self.runtime.state().agent.acp.chosen_mode.clone();
        // A mode that skips asking is the agent's YOLO: a choice made earlier
        // is not taken again while the sandbox cannot work.
        let unsandboxable =
            matches!(self.hub.sandbox_terms(&self.runtime.id).sandbox.mode(), crate::sandbox::Mode::Unavailable { .. });
        let chosen = chosen.filter(|mode| !unsandboxable || modes::asks(mode) == Some(true));
        let target = modes::target(offered, chosen.as_deref());
        let current = offered.current_mode_id.0.to_string();
        match target {
            Some(target) if target != current => {
                if let Err(err) = self.switch_mode(cx, session, &target).await {
                    self.warn(
                        "mode_not_set",
                        format!(
                            "The agent could not be put in its mode '{target}' ({}); it stays in '{current}'.",
                            describe(&err)
                        ),
                    );
                }
            }
            None if modes::asks(&current) == Some(false) => self.warn(
                "mode_skips_asking",
                format!(
                    "The agent runs in its mode '{current}', which does not ask before commands or edits, and \
                     offers no mode the hub knows to ask: its calls may run without a card."
                ),
            ),
            _ => {}
        }
        self.publish_modes();
    }

    /// The user picked a mode (`POST /api/sessions/{id}/mode`).
    pub(super) async fn set_mode(
        &mut self,
        cx: &ConnectionTo<Agent>,
        session: &SessionId,
        mode_id: &str,
    ) -> Result<AgentModes, String> {
        let Some(offered) = &self.modes else {
            return Err("This agent offers no modes.".into());
        };
        if !offered.available_modes.iter().any(|mode| &*mode.id.0 == mode_id) {
            let ids: Vec<&str> = offered.available_modes.iter().map(|mode| &*mode.id.0).collect();
            return Err(format!("The agent offers no mode '{mode_id}'; it offers: {}.", ids.join(", ")));
        }
        self.switch_mode(cx, session, mode_id)
            .await
            .map_err(|err| format!("The agent did not switch to mode '{mode_id}': {}", describe(&err)))?;
        {
            let mut state = self.runtime.state();
            state.agent.acp.chosen_mode = Some(mode_id.to_string());
            self.runtime.save(&state);
        }
        self.publish_modes();
        self.runtime.agent_modes().ok_or_else(|| "The agent's modes are gone.".to_string())
    }

    pub(super) fn note_mode_pick(&mut self, answer: &RequestPermissionResponse) {
        let RequestPermissionOutcome::Selected(selected) = &answer.outcome else { return };
        let offered = self.modes.iter().flat_map(|modes| &modes.available_modes);
        if offered.into_iter().any(|mode| mode.id.0 == selected.option_id.0) {
            self.mode_picked = Some(selected.option_id.0.to_string());
        }
    }

    /// The agent switched modes by itself. Into a mode that skips asking, when
    /// the user did not choose one, it is put back: only the user takes such a mode.
    pub(super) async fn mode_changed(&mut self, cx: &ConnectionTo<Agent>, session: &SessionId, mode_id: &str) {
        let Some(offered) = &mut self.modes else { return };
        offered.current_mode_id = SessionModeId::new(mode_id.to_string());
        if self.mode_picked.take().as_deref() == Some(mode_id) {
            let mut state = self.runtime.state();
            state.agent.acp.chosen_mode = Some(mode_id.to_string());
            self.runtime.save(&state);
        }
        let chosen = self.runtime.state().agent.acp.chosen_mode.clone();
        // A mode that skips asking is the agent's YOLO: a choice made earlier
        // is not taken again while the sandbox cannot work.
        let unsandboxable =
            matches!(self.hub.sandbox_terms(&self.runtime.id).sandbox.mode(), crate::sandbox::Mode::Unavailable { .. });
        let chosen = chosen.filter(|mode| !unsandboxable || modes::asks(mode) == Some(true));
        if modes::asks(mode_id) == Some(false) && chosen.as_deref() != Some(mode_id) {
            if let Some(target) = modes::target(offered, chosen.as_deref()) {
                let message = match self.switch_mode(cx, session, &target).await {
                    Ok(()) => format!(
                        "The agent switched itself to its mode '{mode_id}', which does not ask before commands or \
                         edits; the hub put it back in '{target}'."
                    ),
                    Err(err) => format!(
                        "The agent switched itself to its mode '{mode_id}', which does not ask before commands or \
                         edits, and could not be put back in '{target}' ({}).",
                        describe(&err)
                    ),
                };
                self.warn("mode_skips_asking", message);
            }
        }
        self.publish_modes();
    }

    async fn switch_mode(
        &mut self,
        cx: &ConnectionTo<Agent>,
        session: &SessionId,
        mode_id: &str,
    ) -> Result<(), agent_client_protocol::Error> {
        let request = SetSessionModeRequest::new(session.clone(), mode_id.to_string());
        // Awaited inside the driver's loop: an agent that never answers must not wedge the session.
        tokio::time::timeout(MODE_SWITCH_LIMIT, cx.send_request(request).block_task()).await.map_err(|_| {
            agent_client_protocol::Error::internal_error().data("no answer to session/set_mode within 10 s")
        })??;
        if let Some(offered) = &mut self.modes {
            offered.current_mode_id = SessionModeId::new(mode_id.to_string());
        }
        Ok(())
    }

    fn publish_modes(&self) {
        let chosen = self.runtime.state().agent.acp.chosen_mode.clone();
        // A mode that skips asking is the agent's YOLO: a choice made earlier
        // is not taken again while the sandbox cannot work.
        let unsandboxable =
            matches!(self.hub.sandbox_terms(&self.runtime.id).sandbox.mode(), crate::sandbox::Mode::Unavailable { .. });
        let chosen = chosen.filter(|mode| !unsandboxable || modes::asks(mode) == Some(true));
        let shown = self.modes.as_ref().map(|offered| {
            let current = &*offered.current_mode_id.0;
            modes::shown(offered, chosen.as_deref() == Some(current))
        });
        self.runtime.set_agent_modes(shown);
        self.hub.config_changed(&self.runtime.id);
    }

    fn warn(&self, code: &str, message: String) {
        tracing::warn!(session = %self.runtime.id, "{message}");
        self.runtime.log.push(AgentEvent::Error { severity: Severity::Warning, message, code: Some(code.into()) });
    }
}
