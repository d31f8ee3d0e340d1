//! `POST /api/sessions`, `PATCH /api/sessions/{id}` and `DELETE
//! /api/sessions/{id}`: a folder's sessions created, renamed and deleted.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use protocol::api::{CreateSessionRequest, CreatedSession, RenameSessionRequest, SessionSummary};
use serde::Deserialize;

use crate::http::error::{ApiJson, ApiQuery, ApiResult};
use crate::hub::Hub;

pub async fn create(
    State(hub): State<Arc<Hub>>,
    ApiJson(request): ApiJson<CreateSessionRequest>,
) -> ApiResult<(StatusCode, Json<CreatedSession>)> {
    // An isolated session's worktree is made by git: off the async workers.
    let summary = super::blocking(move || {
        hub.create_session(&request.folder_path, request.title.as_deref(), request.agent.as_deref(), request.isolated)
    })
    .await?;
    Ok((StatusCode::CREATED, Json(summary)))
}

pub async fn rename(
    State(hub): State<Arc<Hub>>,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<RenameSessionRequest>,
) -> ApiResult<Json<SessionSummary>> {
    Ok(Json(hub.rename_session(&id, &request.title)?))
}

#[derive(Deserialize)]
pub struct DeleteQuery {
    /// Delete even when a turn runs or a card waits (the user confirmed).
    #[serde(default)]
    force: bool,
}

/// 204 once the session is gone from the hub and from the database; an
/// isolated session's answer is 200 with what became of its worktree and branch.
pub async fn delete(
    State(hub): State<Arc<Hub>>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<DeleteQuery>,
) -> ApiResult<Response> {
    let runtime = super::chat::runtime_off_thread(&hub, &id).await?;
    Ok(match hub.delete_session(runtime, query.force).await? {
        Some(deleted) => (StatusCode::OK, Json(deleted)).into_response(),
        None => StatusCode::NO_CONTENT.into_response(),
    })
}
