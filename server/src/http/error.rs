//! The one error shape of the HTTP contract: `{"error": code, "message": sentence}`.

use axum::extract::rejection::{JsonRejection, QueryRejection};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: &'static str,
    pub message: String,
    /// Fields the body carries besides `error` and `message` (a rewind's `conflicts`).
    pub extra: Option<serde_json::Map<String, serde_json::Value>>,
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into(), extra: None }
    }
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(StatusCode::BAD_REQUEST, "bad_request", message)
    }
    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, "unauthorized", message)
    }
    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, "forbidden", message)
    }
    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, "not_found", message)
    }
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, "internal", message)
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let mut body = json!({ "error": self.code, "message": self.message });
        if let (Some(extra), Some(fields)) = (self.extra, body.as_object_mut()) {
            fields.extend(extra);
        }
        (self.status, Json(body)).into_response()
    }
}

impl From<JsonRejection> for ApiError {
    fn from(rejection: JsonRejection) -> Self {
        let status = rejection.status();
        // 413 (body over the limit) and 415 (wrong content type) keep their status.
        Self::new(status, "bad_request", format!("Invalid JSON body: {}", rejection.body_text()))
    }
}

impl From<QueryRejection> for ApiError {
    fn from(rejection: QueryRejection) -> Self {
        Self::bad_request(format!("Invalid query string: {}", rejection.body_text()))
    }
}

/// `axum::Json` whose rejections use the contract's error shape.
#[derive(axum::extract::FromRequest)]
#[from_request(via(axum::Json), rejection(ApiError))]
pub struct ApiJson<T>(pub T);

/// `axum::extract::Query` whose rejections use the contract's error shape.
#[derive(axum::extract::FromRequestParts)]
#[from_request(via(axum::extract::Query), rejection(ApiError))]
pub struct ApiQuery<T>(pub T);

pub type ApiResult<T> = Result<T, ApiError>;

/// The agent's refusals, in the contract's statuses and codes.
impl From<crate::agents::AgentError> for ApiError {
    fn from(err: crate::agents::AgentError) -> Self {
        use crate::agents::AgentError as E;
        let (status, code) = match &err {
            E::Busy(_) => (StatusCode::CONFLICT, "session_busy"),
            E::NoSession(_) | E::Deleted(_) => (StatusCode::NOT_FOUND, "not_found"),
            E::NotRunning => (StatusCode::CONFLICT, "not_running"),
            E::NotPending(_) => (StatusCode::CONFLICT, "not_pending"),
            E::Invalid(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            E::StateUnreadable(_) => (StatusCode::CONFLICT, crate::agents::STATE_UNREADABLE),
            E::AgentGone(_) => (StatusCode::CONFLICT, "agent_unavailable"),
            E::NotStarted => (StatusCode::CONFLICT, "agent_not_started"),
            E::ModeTimeout => (StatusCode::GATEWAY_TIMEOUT, "agent_timeout"),
        };
        Self::new(status, code, err.to_string())
    }
}

impl From<crate::folder::FolderError> for ApiError {
    fn from(err: crate::folder::FolderError) -> Self {
        use crate::folder::FolderError as E;
        let code = match &err {
            E::Missing | E::NotAbsolute(_) => "bad_request",
            E::NotFound(_) => "folder_not_found",
            E::NotADirectory(_) => "not_a_directory",
        };
        Self::new(StatusCode::BAD_REQUEST, code, err.to_string())
    }
}

impl From<crate::agents::catalog::ChoiceError> for ApiError {
    fn from(err: crate::agents::catalog::ChoiceError) -> Self {
        use crate::agents::catalog::ChoiceError as E;
        let (status, code) = match &err {
            E::Unknown { .. } => (StatusCode::BAD_REQUEST, "unknown_agent"),
            E::Unavailable { .. } => (StatusCode::CONFLICT, "agent_unavailable"),
        };
        Self::new(status, code, err.to_string())
    }
}

/// Pairing and device refusals (`docs/API.md`, "Remote devices").
impl From<crate::remote::devices::DeviceError> for ApiError {
    fn from(err: crate::remote::devices::DeviceError) -> Self {
        use crate::remote::devices::DeviceError as E;
        use crate::remote::pairing::PairRefusal as R;
        let (status, code) = match &err {
            E::NoRemote => (StatusCode::CONFLICT, "no_remote"),
            E::Refused(R::NoCode) => (StatusCode::BAD_REQUEST, "pair_no_code"),
            E::Refused(R::Expired) => (StatusCode::GONE, "pair_expired"),
            E::Refused(R::Wrong) => (StatusCode::FORBIDDEN, "pair_wrong_code"),
            E::Refused(R::TooManyWrong) => (StatusCode::TOO_MANY_REQUESTS, "pair_too_many"),
            E::UnknownDevice(_) => (StatusCode::NOT_FOUND, "not_found"),
            E::BadName => (StatusCode::BAD_REQUEST, "bad_request"),
            E::Random(_) | E::Unfinished(_) | E::Store(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        Self::new(status, code, err.to_string())
    }
}

/// The hub's refusals, in the contract's statuses and codes.
impl From<crate::hub::HubError> for ApiError {
    fn from(err: crate::hub::HubError) -> Self {
        use crate::hub::HubError as E;
        use crate::policy::SavedRuleError;
        use crate::registry::RegistryError;
        let (status, code) = match err {
            E::Folder(err) => return err.into(),
            E::Agent(err) => return err.into(),
            E::AgentChoice(err) => return err.into(),
            E::Registry(RegistryError::Deleted(_)) => (StatusCode::NOT_FOUND, "not_found"),
            E::Registry(_) | E::Title(_) | E::Invalid(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            E::SavedRule(ref saved) => {
                let code = match saved {
                    SavedRuleError::TooBroad(_) => "prefix_too_broad",
                    _ => "bad_request",
                };
                // The rule's own words start lower-case, mid-sentence elsewhere.
                let mut message = saved.to_string();
                message[..1].make_ascii_uppercase();
                return Self::new(StatusCode::BAD_REQUEST, code, format!("{message}."));
            }
            E::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            E::Occupied(_) => (StatusCode::CONFLICT, "session_busy"),
            E::YoloLocked => (StatusCode::FORBIDDEN, "yolo_locked"),
            E::FolderTrustOff => (StatusCode::CONFLICT, "folder_trust_off"),
            E::SandboxUnavailable(_) => (StatusCode::CONFLICT, "sandbox_unavailable"),
            E::StoreFailed(_) => (StatusCode::SERVICE_UNAVAILABLE, crate::agents::STORE_FAILED),
            E::Checkpoint(err) => return err.into(),
            E::Worktree(err) => return err.into(),
            E::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        Self::new(status, code, err.to_string())
    }
}

/// Checkpoints' refusals: a rewind over others' changes names them (`conflicts`).
impl From<crate::checkpoints::CheckpointError> for ApiError {
    fn from(err: crate::checkpoints::CheckpointError) -> Self {
        use crate::checkpoints::CheckpointError as E;
        let (status, code) = match &err {
            E::NotFound(_) => (StatusCode::NOT_FOUND, "not_found"),
            E::Conflict(_) => (StatusCode::CONFLICT, "rewind_conflict"),
            E::Git(_) | E::Restore(_) | E::Stopped => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        let mut answer = Self::new(status, code, err.to_string());
        if let E::Conflict(paths) = err {
            answer.extra = Some(serde_json::Map::from_iter([("conflicts".to_string(), json!(paths))]));
        }
        answer
    }
}

/// Isolated sessions' refusals: an Apply over the folder's own changes names them (`conflicts`).
impl From<crate::worktrees::WorktreeError> for ApiError {
    fn from(err: crate::worktrees::WorktreeError) -> Self {
        use crate::worktrees::WorktreeError as E;
        let (status, code) = match &err {
            E::NotARepository => (StatusCode::BAD_REQUEST, "not_a_git_repository"),
            E::NoCommit => (StatusCode::BAD_REQUEST, "no_git_commit"),
            E::Off => (StatusCode::BAD_REQUEST, "worktrees_off"),
            E::NotIsolated(_) => (StatusCode::BAD_REQUEST, "not_isolated"),
            E::Invalid(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            E::Missing(_) => (StatusCode::CONFLICT, "worktree_missing"),
            E::Conflict(_) => (StatusCode::CONFLICT, "worktree_conflict"),
            E::Git(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        let mut answer = Self::new(status, code, err.to_string());
        if let E::Conflict(paths) = err {
            answer.extra = Some(serde_json::Map::from_iter([("conflicts".to_string(), json!(paths))]));
        }
        answer
    }
}

/// Web Push's refusals (`/api/push/*`).
impl From<crate::alerts::PushError> for ApiError {
    fn from(err: crate::alerts::PushError) -> Self {
        use crate::alerts::PushError as E;
        let (status, code) = match &err {
            E::NotPaired => (StatusCode::FORBIDDEN, "not_paired"),
            E::BadEndpoint(_) | E::BadKeys(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            E::NotFound => (StatusCode::NOT_FOUND, "not_found"),
            E::Off => (StatusCode::NOT_FOUND, "push_off"),
            E::Store(_) => (StatusCode::SERVICE_UNAVAILABLE, crate::agents::STORE_FAILED),
        };
        Self::new(status, code, err.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agents::catalog::ChoiceError;
    use crate::agents::AgentError;
    use crate::checkpoints::CheckpointError;
    use crate::folder::FolderError;
    use crate::hub::HubError;
    use crate::registry::{RegistryError, TitleError};

    fn answer(err: impl Into<ApiError>) -> (u16, &'static str) {
        let err = err.into();
        (err.status.as_u16(), err.code)
    }

    /// Every domain refusal has the status and code the contract gave it
    /// before the domain stopped deciding HTTP.
    #[test]
    fn each_domain_error_keeps_its_status_and_code() {
        let agent = [
            (AgentError::Busy("b".into()), (409, "session_busy")),
            (AgentError::NoSession("s".into()), (404, "not_found")),
            (AgentError::Deleted("s".into()), (404, "not_found")),
            (AgentError::NotRunning, (409, "not_running")),
            (AgentError::NotPending("n".into()), (409, "not_pending")),
            (AgentError::Invalid("i".into()), (400, "bad_request")),
            (AgentError::StateUnreadable("u".into()), (409, "state_unreadable")),
            (AgentError::AgentGone("a".into()), (409, "agent_unavailable")),
            (AgentError::NotStarted, (409, "agent_not_started")),
            (AgentError::ModeTimeout, (504, "agent_timeout")),
        ];
        for (err, expected) in agent {
            assert_eq!(answer(err.clone()), expected, "{err:?}");
            assert_eq!(answer(HubError::Agent(err.clone())), expected, "through the hub: {err:?}");
        }
        let folder = [
            (FolderError::Missing, (400, "bad_request")),
            (FolderError::NotAbsolute("r".into()), (400, "bad_request")),
            (FolderError::NotFound("m".into()), (400, "folder_not_found")),
            (FolderError::NotADirectory("f".into()), (400, "not_a_directory")),
        ];
        for (err, expected) in folder {
            assert_eq!(answer(err.clone()), expected, "{err:?}");
        }
        assert_eq!(answer(ChoiceError::Unknown { id: "x".into(), known: vec![] }), (400, "unknown_agent"));
        assert_eq!(
            answer(ChoiceError::Unavailable { name: "X".into(), reason: "r".into() }),
            (409, "agent_unavailable")
        );
        let hub = [
            (HubError::Registry(RegistryError::Deleted("s".into())), (404, "not_found")),
            (HubError::Registry(RegistryError::InvalidSessionId("?".into())), (400, "bad_request")),
            (HubError::Title(TitleError::Blank), (400, "bad_request")),
            (HubError::Invalid("i".into()), (400, "bad_request")),
            (HubError::NotFound("n".into()), (404, "not_found")),
            (HubError::Occupied("a turn is running in it".into()), (409, "session_busy")),
            (HubError::YoloLocked, (403, "yolo_locked")),
            (HubError::FolderTrustOff, (409, "folder_trust_off")),
            (HubError::SandboxUnavailable("no bwrap".into()), (409, "sandbox_unavailable")),
            (HubError::StoreFailed("s".into()), (503, "store_failed")),
            (HubError::Internal("i".into()), (500, "internal")),
            (HubError::Checkpoint(CheckpointError::NotFound(3)), (404, "not_found")),
            (HubError::Checkpoint(CheckpointError::Conflict(vec!["a".into()])), (409, "rewind_conflict")),
            (HubError::Checkpoint(CheckpointError::Git("g".into())), (500, "internal")),
            (HubError::Checkpoint(CheckpointError::Restore("r".into())), (500, "internal")),
        ];
        for (err, expected) in hub {
            let shown = format!("{err:?}");
            assert_eq!(answer(err), expected, "{shown}");
        }
        let conflict = ApiError::from(HubError::Checkpoint(CheckpointError::Conflict(vec!["b.txt".into()])));
        assert_eq!(conflict.extra.as_ref().and_then(|extra| extra.get("conflicts")), Some(&json!(["b.txt"])));
        use crate::alerts::PushError;
        let push = [
            (PushError::NotPaired, (403, "not_paired")),
            (PushError::BadEndpoint("e".into()), (400, "bad_request")),
            (PushError::BadKeys("k".into()), (400, "bad_request")),
            (PushError::NotFound, (404, "not_found")),
            (PushError::Off, (404, "push_off")),
            (PushError::Store(crate::store::StoreError::Closed), (503, "store_failed")),
        ];
        for (err, expected) in push {
            assert_eq!(answer(err.clone()), expected, "{err:?}");
        }
    }

    #[test]
    fn a_refusal_keeps_its_words() {
        let err = ApiError::from(HubError::Occupied("a turn is running in it".into()));
        assert_eq!(err.message, "The session was not deleted: a turn is running in it.");
        let err = ApiError::from(AgentError::StateUnreadable("Its saved state is damaged.".into()));
        assert!(err.message.starts_with("Its saved state is damaged. It is kept as it was;"), "{}", err.message);
    }
}
