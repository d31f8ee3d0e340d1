//! `/api/rules*`, the session grants and `/api/audit`: the rules that apply in a
//! folder, the ones saved in the hub, and the trail of every decision.

use std::sync::Arc;

use axum::extract::{Path, State};
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use protocol::api::{RulesQuery, RulesResponse};
use protocol::audit::AuditQuery;
use protocol::habits::{Habit, HabitQuery};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::folder::canonical_folder;
use crate::http::error::{ApiError, ApiQuery, ApiResult};
use crate::hub::Hub;
use crate::store::AuditFilter;

pub async fn list(
    State(hub): State<Arc<Hub>>,
    ApiQuery(query): ApiQuery<RulesQuery>,
) -> ApiResult<Json<RulesResponse>> {
    // The folder's policy files and the database: off the async workers.
    super::blocking(move || hub.rules_of(&query.folder_path)).await.map(Json)
}

pub async fn export(State(hub): State<Arc<Hub>>, ApiQuery(query): ApiQuery<RulesQuery>) -> ApiResult<Response> {
    let toml = super::blocking(move || hub.export_rules(&query.folder_path)).await?;
    Ok((
        [
            (CONTENT_TYPE, "application/toml; charset=utf-8"),
            (CONTENT_DISPOSITION, "attachment; filename=\"agent-hub-rules.toml\""),
        ],
        toml,
    )
        .into_response())
}

#[derive(Deserialize)]
pub struct SuggestQuery {
    command: String,
}

/// What "Always in this folder" proposes for a command: its first words.
pub async fn suggest(ApiQuery(query): ApiQuery<SuggestQuery>) -> Json<Value> {
    Json(json!({ "prefix": crate::policy::default_prefix(&query.command) }))
}

/// `GET /api/habits?sessionId=&toolId=`: how often the user approved calls
/// like the one waiting on the card, in its folder, and whether the card
/// offers the "Always in this folder" rule (see `hub::habits`). Changes nothing.
pub async fn habits(State(hub): State<Arc<Hub>>, ApiQuery(query): ApiQuery<HabitQuery>) -> ApiResult<Json<Habit>> {
    if query.session_id.is_empty() || query.tool_id.is_empty() {
        return Err(ApiError::bad_request("sessionId and toolId must not be empty."));
    }
    let runtime = super::chat::runtime_off_thread(&hub, &query.session_id).await?;
    // The approvals decided a moment ago count.
    if let Some(store) = hub.store() {
        if let Err(err) = store.flush().await {
            tracing::warn!("the habit count may miss the latest decisions: {err}");
        }
    }
    super::blocking(move || hub.habit(&runtime, &query.tool_id)).await.map(Json)
}

pub async fn delete(State(hub): State<Arc<Hub>>, Path(id): Path<String>) -> ApiResult<Json<Value>> {
    hub.delete_rule(&id).await?;
    Ok(Json(json!({ "deleted": id })))
}

pub async fn withdraw_grant(
    State(hub): State<Arc<Hub>>,
    Path((id, tool_name)): Path<(String, String)>,
) -> ApiResult<Json<Value>> {
    let runtime = super::chat::runtime_off_thread(&hub, &id).await?;
    hub.withdraw_grant(&runtime, &tool_name)?;
    Ok(Json(json!({ "withdrawn": tool_name })))
}

/// `GET /api/audit`: NDJSON (or CSV with `format=csv`), oldest first.
pub async fn audit(State(hub): State<Arc<Hub>>, ApiQuery(query): ApiQuery<AuditQuery>) -> ApiResult<Response> {
    let csv = match query.format.as_deref() {
        None | Some("ndjson") => false,
        Some("csv") => true,
        Some(other) => return Err(ApiError::bad_request(format!("format must be ndjson or csv; got '{other}'."))),
    };
    let folder = match &query.folder_path {
        Some(path) => Some(canonical_folder(path)?.to_string_lossy().into_owned()),
        None => None,
    };
    let Some(store) = hub.store() else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            crate::agents::STORE_FAILED,
            "The audit trail lives in the hub's database, and this hub runs without one.",
        ));
    };
    // What was decided a moment ago is in the answer.
    if let Err(err) = store.flush().await {
        tracing::warn!("the audit read may miss the latest decisions: {err}");
    }
    let filter = AuditFilter { folder, session_id: query.session_id, after_ms: query.after, limit: query.limit };
    let reader = store.clone();
    let entries = super::blocking(move || {
        reader.audit(&filter).map_err(|err| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                crate::agents::STORE_FAILED,
                format!("The audit trail could not be read: {err}."),
            )
        })
    })
    .await?;
    Ok(if csv {
        (
            [
                (CONTENT_TYPE, "text/csv; charset=utf-8"),
                (CONTENT_DISPOSITION, "attachment; filename=\"agent-hub-audit.csv\""),
            ],
            crate::audit::to_csv(&entries),
        )
            .into_response()
    } else {
        ([(CONTENT_TYPE, "application/x-ndjson")], crate::audit::to_ndjson(&entries)).into_response()
    })
}
