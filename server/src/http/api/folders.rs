//! `GET /api/folders/recent`: the folders opened last, kept across restarts,
//! for the folder browser to offer first. `/api/folders/trust`: folder trust.

use std::sync::Arc;

use axum::extract::State;
use axum::http::StatusCode;
use axum::Json;
use protocol::api::{FolderTrust, RecentFolder, RecentFolders, RulesQuery};

use crate::http::error::{ApiError, ApiJson, ApiQuery, ApiResult};
use crate::hub::Hub;

/// Newest first; a folder that is no longer a directory on disk is left out.
/// A hub without a database remembers none.
pub async fn recent(State(hub): State<Arc<Hub>>) -> ApiResult<Json<RecentFolders>> {
    let Some(store) = hub.store().cloned() else { return Ok(Json(RecentFolders::default())) };
    // A read of the database and a stat per folder: off the runtime's threads.
    let folders = tokio::task::spawn_blocking(move || {
        let rows = store.recent_folders().map_err(|err| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                crate::agents::STORE_FAILED,
                format!("The recent folders could not be read: {err}."),
            )
        })?;
        Ok::<_, ApiError>(
            rows.into_iter()
                .filter(|row| row.folder.is_dir())
                .map(|row| RecentFolder { folder_path: row.folder.display().to_string(), opened_at: row.opened_at_ms })
                .collect(),
        )
    })
    .await
    .map_err(|err| ApiError::internal(format!("Reading the recent folders failed: {err}.")))??;
    Ok(Json(RecentFolders { folders }))
}

/// `GET /api/folders/trust?folderPath=`: whether the user trusts the folder.
pub async fn trust_of(
    State(hub): State<Arc<Hub>>,
    ApiQuery(query): ApiQuery<RulesQuery>,
) -> ApiResult<Json<FolderTrust>> {
    Ok(Json(hub.trust_of(&query.folder_path)?))
}

/// `POST /api/folders/trust {folderPath}`: the folder's own files may loosen
/// what the hub does (allow rules, `disableYoloMode: false`).
pub async fn trust(State(hub): State<Arc<Hub>>, ApiJson(body): ApiJson<RulesQuery>) -> ApiResult<Json<FolderTrust>> {
    Ok(Json(hub.set_trust(&body.folder_path, true).await?))
}

/// `DELETE /api/folders/trust?folderPath=`: trust withdrawn; the folder's files may only tighten again.
pub async fn distrust(
    State(hub): State<Arc<Hub>>,
    ApiQuery(query): ApiQuery<RulesQuery>,
) -> ApiResult<Json<FolderTrust>> {
    Ok(Json(hub.set_trust(&query.folder_path, false).await?))
}
