//! `GET /api/sessions/{id}/worktree`, `POST …/worktree/apply`, `…/commit`
//! and `…/discard`: an isolated session's worktree (see `crate::worktrees`),
//! and `GET /api/folders/git?folderPath=`: whether a new session there may be
//! isolated. Git runs off the async workers.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::Json;
use protocol::api::{ConfigQuery, FolderGit, WorktreeCommitRequest, WorktreeDone, WorktreeStatus};

use crate::http::error::{ApiJson, ApiQuery, ApiResult};
use crate::hub::Hub;

pub async fn status(State(hub): State<Arc<Hub>>, Path(id): Path<String>) -> ApiResult<Json<WorktreeStatus>> {
    super::blocking(move || hub.worktree_status(&id)).await.map(Json)
}

pub async fn apply(State(hub): State<Arc<Hub>>, Path(id): Path<String>) -> ApiResult<Json<WorktreeDone>> {
    let done = super::blocking({
        let hub = hub.clone();
        move || hub.apply_worktree(&id)
    })
    .await?;
    Ok(Json(done))
}

pub async fn commit(
    State(hub): State<Arc<Hub>>,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<WorktreeCommitRequest>,
) -> ApiResult<Json<WorktreeDone>> {
    super::blocking(move || hub.commit_worktree(&id, &request.message)).await.map(Json)
}

pub async fn discard(State(hub): State<Arc<Hub>>, Path(id): Path<String>) -> ApiResult<Json<WorktreeDone>> {
    super::blocking(move || hub.discard_worktree(&id)).await.map(Json)
}

/// Whether the folder is in a git repository with a commit (and the hub
/// keeps worktrees): the New session control offers "isolated" then.
pub async fn folder_git(
    State(hub): State<Arc<Hub>>,
    ApiQuery(query): ApiQuery<ConfigQuery>,
) -> ApiResult<Json<FolderGit>> {
    super::blocking(move || {
        let folder = crate::folder::canonical_folder(&query.folder_path)?;
        Ok::<_, crate::hub::HubError>(FolderGit { isolatable: hub.can_isolate(&folder) })
    })
    .await
    .map(Json)
}
