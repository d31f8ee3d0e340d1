//! `/api/*` handlers for folders, sessions and the YOLO config.

mod agents;
mod changes;
mod chat;
mod folders;
mod fs;
mod rules;
mod sessions;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use app::types::{ChatConfig, ConfigQuery, ProjectsResponse, SessionDetail, SetConfigRequest};
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use futures::Stream;
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::StreamExt;

use crate::error::{ApiError, ApiJson, ApiQuery, ApiResult};
use crate::hub::Hub;

/// Request bodies are prompts and file contents: generous, but bounded.
pub const BODY_LIMIT: usize = 4 * 1024 * 1024;

pub fn router() -> Router<Arc<Hub>> {
    Router::new()
        .route("/projects", get(projects))
        .route("/agents", get(agents::list))
        .route("/chat/config", get(get_config).post(set_config))
        .route("/sessions", post(sessions::create))
        .route("/sessions/{id}", get(session).patch(sessions::rename).delete(sessions::delete))
        .route("/chat/prompt", post(chat::prompt))
        .route("/sessions/{id}/approve", post(chat::approve))
        .route("/sessions/{id}/input", post(chat::input))
        .route("/sessions/{id}/cancel", post(chat::cancel))
        .route("/sessions/{id}/mode", post(chat::set_mode))
        .route("/sessions/{id}/events", get(chat::events))
        .route("/sessions/{id}/changes", get(changes::changes))
        .route("/updates", get(updates))
        .route("/rules", get(rules::list))
        .route("/rules/export", get(rules::export))
        .route("/rules/suggest", get(rules::suggest))
        .route("/rules/{id}", delete(rules::delete))
        .route("/sessions/{id}/grants/{tool}", delete(rules::withdraw_grant))
        .route("/audit", get(rules::audit))
        .route("/fs/dirs", get(fs::dirs))
        .route("/folders/recent", get(folders::recent))
        .route("/folders/trust", get(folders::trust_of).post(folders::trust).delete(folders::distrust))
        .fallback(|| async { ApiError::not_found("No such API endpoint.") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "bad_request", "Method not allowed on this endpoint.")
        })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
}

async fn projects(State(hub): State<Arc<Hub>>) -> Json<ProjectsResponse> {
    Json(hub.projects())
}

async fn get_config(
    State(hub): State<Arc<Hub>>,
    ApiQuery(query): ApiQuery<ConfigQuery>,
) -> ApiResult<Json<ChatConfig>> {
    hub.open_session(&query.folder_path, query.session_id.as_deref()).map(Json)
}

async fn set_config(
    State(hub): State<Arc<Hub>>,
    ApiJson(body): ApiJson<SetConfigRequest>,
) -> ApiResult<Json<ChatConfig>> {
    hub.set_yolo(&body.folder_path, body.session_id.as_deref(), body.yolo_mode).map(Json)
}

async fn session(State(hub): State<Arc<Hub>>, Path(id): Path<String>) -> ApiResult<Json<SessionDetail>> {
    let runtime = chat::session_runtime(&hub, &id)?;
    let session = hub.session(&id).ok_or_else(|| ApiError::not_found(format!("No session with id '{id}'.")))?;
    let events = runtime.log.all();
    let pending_input = crate::agent::builtin::pending_input(&runtime.state());
    Ok(Json(SessionDetail {
        pending_approval: Some(chat::pending_approval(&runtime, &events)).filter(|pending| !pending.is_null()),
        id: session.id,
        title: session.title,
        folder_path: session.folder.display().to_string(),
        status: session.status,
        yolo_mode: session.yolo.enabled,
        pending_input,
        events,
    }))
}

/// Server-sent events for open pages: one JSON `HubUpdate` per message, until
/// the hub shuts down (an open page must not hold the shutdown up).
async fn updates(State(hub): State<Arc<Hub>>) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let stream = BroadcastStream::new(hub.subscribe()).filter_map(|update| {
        // A page that fell behind just misses intermediate states; the next
        // update (or its own refetch) brings it up to date.
        let update = update.ok()?;
        Some(Ok(Event::default().json_data(update).unwrap_or_else(|_| Event::default().comment("unserializable"))))
    });
    let stream = futures::StreamExt::take_until(stream, hub.shutdown_token().cancelled_owned());
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
