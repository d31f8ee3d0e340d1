//! Shapes of the HTTP contract (`shared/API.md`) shared by the server and the UI.
//! Request and response bodies are camelCase.

use serde::{Deserialize, Serialize};

/// Where a session's current YOLO value came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum YoloSource {
    /// `security.disableYoloMode` in the folder's `.gemini/settings.json`.
    Settings,
    /// No usable setting: YOLO is off.
    Default,
    /// Toggled at runtime by the user.
    User,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SessionStatus {
    Idle,
    Running,
    WaitingApproval,
    WaitingInput,
    Error,
}

impl SessionStatus {
    pub fn label(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Running => "running",
            Self::WaitingApproval => "waiting approval",
            Self::WaitingInput => "waiting input",
            Self::Error => "error",
        }
    }
}

/// `GET/POST /api/chat/config` response. `folderPath`, `sessionId` and `note` are
/// additions to the contract's `{yoloMode, yoloLocked, source}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ChatConfig {
    pub yolo_mode: bool,
    pub yolo_locked: bool,
    pub source: YoloSource,
    pub folder_path: String,
    pub session_id: String,
    /// Why the settings file gave this default (missing, invalid, locked…).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    /// Whether a decision on an edit may carry the user's own version
    /// (`modifiedContent`); an ACP agent applies its edits itself.
    #[serde(default = "yes")]
    pub accepts_modified_content: bool,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConfigQuery {
    pub folder_path: String,
    #[serde(default)]
    pub session_id: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SetConfigRequest {
    pub folder_path: String,
    #[serde(default)]
    pub session_id: Option<String>,
    pub yolo_mode: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionSummary {
    pub id: String,
    pub status: SessionStatus,
    pub pending_count: usize,
    pub yolo_mode: bool,
    /// Milliseconds since the Unix epoch.
    pub updated_at: u64,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProjectSummary {
    pub folder_path: String,
    pub sessions: Vec<SessionSummary>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectsResponse {
    pub projects: Vec<ProjectSummary>,
}

/// Pushed to open pages on `GET /api/updates` (server-sent events, one JSON per event).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HubUpdate {
    /// A session's YOLO state changed (settings file edited, or toggled elsewhere).
    Config(ChatConfig),
    /// The list of folders or sessions changed: refetch `/api/projects`.
    Projects,
}

/// `POST /api/chat/prompt`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PromptRequest {
    pub folder_path: String,
    #[serde(default)]
    pub session_id: Option<String>,
    pub message: String,
    /// `false` answers with one JSON object once the turn ends or pauses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
}

/// `POST /api/sessions/{id}/approve`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ApproveRequest {
    pub tool_id: String,
    /// `approve`, `reject`, `approve_session` or `edit`.
    pub decision: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edit_instruction: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub modified_content: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
}

/// `POST /api/sessions/{id}/input`: the answer to the agent's question.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InputAnswer {
    pub request_id: String,
    /// `"approve"`, `"reject"`, `{"index", "value"}` or text, by the question's type.
    pub response: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream: Option<bool>,
}

/// `GET /api/sessions/{id}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionDetail {
    pub id: String,
    pub folder_path: String,
    pub status: SessionStatus,
    pub yolo_mode: bool,
    pub pending_approval: Option<serde_json::Value>,
    pub pending_input: Option<serde_json::Value>,
    pub events: Vec<crate::events::SeqEvent>,
}

/// Body of every 4xx/5xx response.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    pub error: String,
    pub message: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_serializes_with_contract_names() {
        let config = ChatConfig {
            yolo_mode: true,
            yolo_locked: false,
            source: YoloSource::Settings,
            folder_path: "/p".into(),
            session_id: "s".into(),
            note: None,
            accepts_modified_content: false,
        };
        let json = serde_json::to_value(&config).unwrap();
        assert_eq!(json["acceptsModifiedContent"], false);
        let mut older = json.clone();
        older.as_object_mut().unwrap().remove("acceptsModifiedContent");
        let read: ChatConfig = serde_json::from_value(older).unwrap();
        assert!(read.accepts_modified_content, "a hub that does not say accepts the user's version");
        assert_eq!(json["yoloMode"], true);
        assert_eq!(json["yoloLocked"], false);
        assert_eq!(json["source"], "settings");
        assert!(json.get("note").is_none());
    }

    #[test]
    fn status_and_updates_use_snake_case_tags() {
        assert_eq!(serde_json::to_value(SessionStatus::WaitingApproval).unwrap(), "waiting_approval");
        let update = serde_json::to_value(HubUpdate::Projects).unwrap();
        assert_eq!(update, serde_json::json!({"type": "projects"}));
    }

    #[test]
    fn set_config_requires_yolo_mode_and_takes_optional_session() {
        let req: SetConfigRequest = serde_json::from_str(r#"{"folderPath":"/p","yoloMode":true}"#).unwrap();
        assert_eq!(req.session_id, None);
        assert!(serde_json::from_str::<SetConfigRequest>(r#"{"folderPath":"/p"}"#).is_err());
    }
}
