//! A session's checkpoints (the folder before each turn), a turn's diff, and
//! rewinding the folder to before a turn.

use super::{get_json, HubError};
use protocol::checkpoints::{CheckpointDiff, CheckpointsResponse, RewindRequest, RewindResponse};

fn url(session_id: &str, rest: &str) -> String {
    format!("/api/sessions/{}/{rest}", urlencoding::encode(session_id))
}

pub async fn list(session_id: &str) -> Result<CheckpointsResponse, HubError> {
    get_json(&url(session_id, "checkpoints")).await
}

pub async fn diff(session_id: &str, checkpoint: u64) -> Result<CheckpointDiff, HubError> {
    get_json(&url(session_id, &format!("checkpoints/{checkpoint}/diff"))).await
}

/// Why a rewind did not happen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RewindError {
    /// Files changed since by someone else: rewinding with `force` overwrites them.
    Conflict {
        message: String,
        conflicts: Vec<String>,
    },
    Hub(HubError),
}

impl std::fmt::Display for RewindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Conflict { message, .. } => f.write_str(message),
            Self::Hub(err) => err.fmt(f),
        }
    }
}

/// A refusal's body read as a rewind's: a conflict names its files.
pub fn rewind_error(status: u16, text: &str) -> RewindError {
    match super::decode::<protocol::checkpoints::RewindRefusal>(text.as_bytes()) {
        Ok(body) if body.error == "rewind_conflict" => {
            RewindError::Conflict { message: body.message, conflicts: body.conflicts }
        }
        Ok(body) => RewindError::Hub(HubError { status: Some(status), ..HubError::from(body.message) }),
        Err(_) => RewindError::Hub(HubError {
            status: Some(status),
            ..HubError::from(format!("The hub answered HTTP {status}."))
        }),
    }
}

#[cfg(feature = "hydrate")]
pub async fn rewind(session_id: &str, request: &RewindRequest) -> Result<RewindResponse, RewindError> {
    let response = super::browser::fetch("POST", &url(session_id, "rewind"), Some(request), None)
        .await
        .map_err(RewindError::Hub)?;
    let text = super::browser::text(&response).await.map_err(RewindError::Hub)?;
    if !response.ok() {
        return Err(rewind_error(response.status(), &text));
    }
    super::decode(text.as_bytes()).map_err(|message| RewindError::Hub(message.into()))
}

#[cfg(not(feature = "hydrate"))]
pub async fn rewind(_session_id: &str, _request: &RewindRequest) -> Result<RewindResponse, RewindError> {
    Err(RewindError::Hub("Rewinding happens in the browser.".into()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conflict_names_its_files_and_other_refusals_are_the_hubs() {
        let conflict =
            rewind_error(409, r#"{"error":"rewind_conflict","message":"b.txt was changed","conflicts":["b.txt"]}"#);
        assert_eq!(
            conflict,
            RewindError::Conflict { message: "b.txt was changed".into(), conflicts: vec!["b.txt".into()] }
        );
        let busy = rewind_error(409, r#"{"error":"session_busy","message":"A turn is under way."}"#);
        assert!(matches!(busy, RewindError::Hub(HubError { status: Some(409), .. })));
        assert_eq!(busy.to_string(), "A turn is under way.");
    }
}
