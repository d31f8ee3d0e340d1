//! `GET /api/sessions/{id}/changes`: what the session's agent changed, and the
//! folder's git working tree (see `crate::changes`).

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::Json;
use protocol::changes::ChangesResponse;

use crate::http::error::{ApiError, ApiResult};
use crate::hub::Hub;

pub async fn changes(State(hub): State<Arc<Hub>>, Path(id): Path<String>) -> ApiResult<Json<ChangesResponse>> {
    let runtime = super::chat::runtime_off_thread(&hub, &id).await?;
    // What clients may see: an event not yet on disk is not shown.
    // Events no longer in memory are read back from the database: off the async workers.
    let reader = runtime.clone();
    let events = super::blocking(move || Ok::<_, ApiError>(reader.log.all())).await?;
    crate::changes::collect(runtime.root.clone(), events)
        .await
        .map(Json)
        .map_err(|err| ApiError::internal(err.to_string()))
}
