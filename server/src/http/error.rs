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
}

impl ApiError {
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        Self { status, code, message: message.into() }
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
        (self.status, Json(json!({ "error": self.code, "message": self.message }))).into_response()
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
impl From<crate::agent::AgentError> for ApiError {
    fn from(err: crate::agent::AgentError) -> Self {
        use crate::agent::AgentError as E;
        let (status, code) = match &err {
            E::Busy(_) => (StatusCode::CONFLICT, "session_busy"),
            E::NoSession(_) | E::Deleted(_) => (StatusCode::NOT_FOUND, "not_found"),
            E::NotRunning => (StatusCode::CONFLICT, "not_running"),
            E::NotPending(_) => (StatusCode::CONFLICT, "not_pending"),
            E::Invalid(_) => (StatusCode::BAD_REQUEST, "bad_request"),
            E::StateUnreadable(_) => (StatusCode::CONFLICT, crate::agent::STATE_UNREADABLE),
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

impl From<crate::agents::ChoiceError> for ApiError {
    fn from(err: crate::agents::ChoiceError) -> Self {
        use crate::agents::ChoiceError as E;
        let (status, code) = match &err {
            E::Unknown { .. } => (StatusCode::BAD_REQUEST, "unknown_agent"),
            E::Unavailable { .. } => (StatusCode::CONFLICT, "agent_unavailable"),
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
            E::StoreFailed(_) => (StatusCode::SERVICE_UNAVAILABLE, crate::agent::STORE_FAILED),
            E::Internal(_) => (StatusCode::INTERNAL_SERVER_ERROR, "internal"),
        };
        Self::new(status, code, err.to_string())
    }
}
