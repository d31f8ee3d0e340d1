//! `GET /api/sessions/{id}/checkpoints`, `GET …/checkpoints/{cp}/diff` and
//! `POST /api/sessions/{id}/rewind`: the folder before each turn, what each
//! turn changed, and going back (see `crate::checkpoints`). Git runs off the
//! async workers.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::Json;
use protocol::checkpoints::{CheckpointDiff, CheckpointsResponse, RewindRequest, RewindResponse};

use crate::http::error::{ApiJson, ApiResult};
use crate::hub::Hub;

pub async fn list(State(hub): State<Arc<Hub>>, Path(id): Path<String>) -> ApiResult<Json<CheckpointsResponse>> {
    let checkpoints = super::blocking(move || hub.checkpoints_of(&id)).await?;
    Ok(Json(CheckpointsResponse { checkpoints }))
}

pub async fn diff(
    State(hub): State<Arc<Hub>>,
    Path((id, checkpoint)): Path<(String, u64)>,
) -> ApiResult<Json<CheckpointDiff>> {
    super::blocking(move || hub.checkpoint_diff(&id, checkpoint)).await.map(Json)
}

pub async fn rewind(
    State(hub): State<Arc<Hub>>,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<RewindRequest>,
) -> ApiResult<Json<RewindResponse>> {
    super::blocking(move || hub.rewind(&id, request.checkpoint, request.force, request.paths.as_deref()))
        .await
        .map(Json)
}
