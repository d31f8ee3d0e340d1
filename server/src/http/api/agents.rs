//! `GET /api/agents[?folderPath=…]`: the agents a new session can pick, each
//! available or not with the reason, the hub's default and the folder's.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use protocol::api::AgentsResponse;
use serde::Deserialize;

use crate::folder::canonical_folder;
use crate::http::error::{ApiQuery, ApiResult};
use crate::hub::Hub;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentsQuery {
    #[serde(default)]
    folder_path: Option<String>,
}

pub async fn list(
    State(hub): State<Arc<Hub>>,
    ApiQuery(query): ApiQuery<AgentsQuery>,
) -> ApiResult<Json<AgentsResponse>> {
    let folder = query.folder_path.map(|raw| canonical_folder(&raw)).transpose()?;
    // A few `stat`s on PATH per agent: off the runtime's threads.
    let listing = hub.clone();
    let (agents, folder_default) = tokio::task::spawn_blocking(move || {
        let agents = listing.agents().entries().iter().map(|entry| entry.info()).collect();
        (agents, folder.map(|folder| listing.folder_agent(&folder)))
    })
    .await
    .map_err(|err| crate::http::error::ApiError::internal(format!("Listing the agents failed: {err}.")))?;
    Ok(Json(AgentsResponse { agents, default: hub.agents().default_id().to_string(), folder_default }))
}
