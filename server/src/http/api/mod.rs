//! `/api/*` handlers for folders, sessions and the YOLO config.

mod agents;
mod approvals;
mod changes;
mod chat;
mod checkpoints;
pub mod devices;
mod folders;
mod fs;
mod push;
mod rules;
mod sessions;
mod worktrees;

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::StatusCode;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::routing::{delete, get, post};
use axum::{Json, Router};
use futures::Stream;
use protocol::api::{ChatConfig, ConfigQuery, ProjectsResponse, SessionDetail, SetConfigRequest};
use tokio_stream::wrappers::BroadcastStream;
use tokio_stream::StreamExt;

use crate::http::error::{ApiError, ApiJson, ApiQuery, ApiResult};
use crate::hub::Hub;

/// Request bodies are prompts and file contents: generous, but bounded.
pub const BODY_LIMIT: usize = 4 * 1024 * 1024;

pub fn router() -> Router<Arc<Hub>> {
    Router::new()
        .route("/projects", get(projects))
        .route("/agents", get(agents::list))
        .route("/chat/config", get(get_config).post(set_config))
        .route("/chat/open", post(open_config))
        .route("/sessions", post(sessions::create))
        .route("/sessions/{id}", get(session).patch(sessions::rename).delete(sessions::delete))
        .route("/chat/prompt", post(chat::prompt))
        .route("/sessions/{id}/approve", post(chat::approve))
        .route("/approvals", get(approvals::list).post(approvals::decide))
        .route("/sessions/{id}/input", post(chat::input))
        .route("/sessions/{id}/cancel", post(chat::cancel))
        .route("/sessions/{id}/mode", post(chat::set_mode))
        .route("/sessions/{id}/events", get(chat::events))
        .route("/sessions/{id}/changes", get(changes::changes))
        .route("/sessions/{id}/checkpoints", get(checkpoints::list))
        .route("/sessions/{id}/checkpoints/{cp}/diff", get(checkpoints::diff))
        .route("/sessions/{id}/rewind", post(checkpoints::rewind))
        .route("/sessions/{id}/worktree", get(worktrees::status))
        .route("/sessions/{id}/worktree/apply", post(worktrees::apply))
        .route("/sessions/{id}/worktree/commit", post(worktrees::commit))
        .route("/sessions/{id}/worktree/discard", post(worktrees::discard))
        .route("/folders/git", get(worktrees::folder_git))
        .route("/updates", get(updates))
        .route("/rules", get(rules::list))
        .route("/rules/export", get(rules::export))
        .route("/rules/suggest", get(rules::suggest))
        .route("/rules/{id}", delete(rules::delete))
        .route("/habits", get(rules::habits))
        .route("/sessions/{id}/grants/{tool}", delete(rules::withdraw_grant))
        .route("/audit", get(rules::audit))
        .route("/fs/dirs", get(fs::dirs))
        .route("/folders/recent", get(folders::recent))
        .route("/folders/trust", get(folders::trust_of).post(folders::trust).delete(folders::distrust))
        .route("/push/key", get(push::key))
        .route("/push/subscribe", post(push::subscribe).delete(push::unsubscribe))
        .fallback(|| async { ApiError::not_found("No such API endpoint.") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(StatusCode::METHOD_NOT_ALLOWED, "bad_request", "Method not allowed on this endpoint.")
        })
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
}

async fn projects(State(hub): State<Arc<Hub>>) -> Json<ProjectsResponse> {
    Json(hub.projects())
}

/// Read only: a session that does not exist yet is answered with its
/// defaults, not made (`POST /api/chat/open` makes it). It reads the folder's
/// settings file and may look for agents on PATH: off the async workers.
async fn get_config(
    State(hub): State<Arc<Hub>>,
    ApiQuery(query): ApiQuery<ConfigQuery>,
) -> ApiResult<Json<ChatConfig>> {
    blocking(move || hub.peek_config(&query.folder_path, query.session_id.as_deref())).await.map(Json)
}

/// `POST /api/chat/open` `{folderPath, sessionId?}`: opens the session,
/// making it on first use (what `GET /api/chat/config` did before it was made
/// read only); answers its config.
async fn open_config(State(hub): State<Arc<Hub>>, ApiJson(body): ApiJson<ConfigQuery>) -> ApiResult<Json<ChatConfig>> {
    blocking(move || hub.open_session(&body.folder_path, body.session_id.as_deref())).await.map(Json)
}

/// Runs blocking work (files, SQLite, PATH lookups) off the async workers.
pub(crate) async fn blocking<T, E>(work: impl FnOnce() -> Result<T, E> + Send + 'static) -> ApiResult<T>
where
    T: Send + 'static,
    E: Into<ApiError> + Send + 'static,
{
    // The device deciding (the remote listener's) goes with the work.
    let device = crate::agents::trail::deciding_device();
    match tokio::task::spawn_blocking(move || crate::agents::trail::as_deciding(device, work)).await {
        Ok(answer) => answer.map_err(Into::into),
        Err(err) => Err(ApiError::internal(format!("The request's work failed: {err}."))),
    }
}

/// `POST /api/chat/config`: YOLO (`yoloMode`), the folder's approval timeout
/// (`approvalTimeoutSecs`), or both; checked whole before anything changes.
async fn set_config(
    State(hub): State<Arc<Hub>>,
    ApiJson(body): ApiJson<SetConfigRequest>,
) -> ApiResult<Json<ChatConfig>> {
    let SetConfigRequest { folder_path, session_id, yolo_mode, approval_timeout_secs, network, sandbox_mask } = body;
    // Checked whole before anything changes: YOLO refused here changes no network either.
    if yolo_mode == Some(true) {
        hub.yolo_allowed()?;
    }
    if let Some(masks) = &sandbox_mask {
        // The masks alone, or with the rest: set first (a bad list changes nothing).
        let config = hub.set_masks(&folder_path, session_id.as_deref(), masks).await?;
        if network.is_none() && yolo_mode.is_none() && approval_timeout_secs.is_none() {
            return Ok(Json(config));
        }
    }
    if let Some(enabled) = network {
        // The network alone, or with the rest: set first, checked like the rest.
        let config = hub.set_network(&folder_path, session_id.as_deref(), enabled).await?;
        if yolo_mode.is_none() && approval_timeout_secs.is_none() {
            return Ok(Json(config));
        }
    }
    let Some(timeout) = approval_timeout_secs else {
        let Some(enabled) = yolo_mode else {
            // The contract's 422 for a body without `yoloMode`, now that either may come.
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "bad_request",
                "Give yoloMode (a boolean), approvalTimeoutSecs, or both.",
            ));
        };
        return blocking(move || hub.set_yolo(&folder_path, session_id.as_deref(), enabled)).await.map(Json);
    };
    crate::hub::checked_timeout(timeout)?;
    if let Some(enabled) = yolo_mode {
        // A YOLO switch the folder locks is refused before the timeout changes.
        let (peek, path, session) = (hub.clone(), folder_path.clone(), session_id.clone());
        let config = blocking(move || peek.peek_config(&path, session.as_deref())).await?;
        if config.yolo_locked && config.yolo_mode != enabled {
            return Err(crate::hub::HubError::YoloLocked.into());
        }
    }
    let config = hub.set_approval_timeout(&folder_path, session_id.as_deref(), timeout).await?;
    match yolo_mode {
        Some(enabled) => blocking(move || hub.set_yolo(&folder_path, session_id.as_deref(), enabled)).await.map(Json),
        None => Ok(Json(config)),
    }
}

/// A page of `GET /api/sessions/{id}`'s events when no `limit` is asked:
/// today's whole answer for any but a very long session.
pub const SESSION_EVENTS_PAGE: usize = 5_000;
/// The most events one page may hold.
pub const SESSION_EVENTS_MAX_PAGE: usize = 20_000;

#[derive(serde::Deserialize)]
struct SessionQuery {
    /// Events with a greater seq only (0: from the first).
    #[serde(default)]
    after: u64,
    #[serde(default)]
    limit: Option<usize>,
}

/// The session and a page of its events (`?after=SEQ&limit=N`); `hasMore` and
/// `nextAfter` say where the next page starts. Older events may be read back
/// from the database: off the async workers.
async fn session(
    State(hub): State<Arc<Hub>>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<SessionQuery>,
) -> ApiResult<Json<SessionDetail>> {
    let limit = match query.limit {
        None => SESSION_EVENTS_PAGE,
        Some(limit @ 1..=SESSION_EVENTS_MAX_PAGE) => limit,
        Some(_) => {
            return Err(ApiError::bad_request(format!("limit must be 1 to {SESSION_EVENTS_MAX_PAGE}.")));
        }
    };
    blocking(move || session_page(&hub, &id, query.after, limit)).await.map(Json)
}

fn session_page(hub: &Hub, id: &str, after: u64, limit: usize) -> ApiResult<SessionDetail> {
    let runtime = chat::session_runtime(hub, id)?;
    let session = hub.session(id).ok_or_else(|| ApiError::not_found(format!("No session with id '{id}'.")))?;
    let (page, has_more) = runtime.log.page(after, limit).map_err(|err| {
        ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            crate::agents::STORE_FAILED,
            format!("The session's events could not be read from the database: {err}."),
        )
    })?;
    let events = crate::agents::log::events_of(&page);
    let next_after = if has_more { events.last().map(|event| event.seq) } else { None };
    // The first waiting call's card, wherever its `tool_use` is in the log.
    let first_pending = crate::agents::pending_calls(&runtime.state()).into_iter().next();
    let announced: Vec<_> = first_pending.and_then(|tool_id| runtime.log.announcement(&tool_id)).into_iter().collect();
    let (mut pending_input, since) = {
        let state = runtime.state();
        (crate::agents::builtin::pending_input(&state.agent), state.machine.waiting_since())
    };
    // When the hub answers "no decision" (the folder's timeout), for the card's countdown.
    let deadline_at = since.and_then(|since| hub.deadline(&runtime.folder, since));
    let mut pending_approval = chat::pending_approval(&runtime, &announced);
    for pending in [pending_input.as_mut(), Some(&mut pending_approval)].into_iter().flatten() {
        if let (Some(object), Some(at)) = (pending.as_object_mut(), deadline_at) {
            object.insert("deadlineAt".into(), at.into());
        }
    }
    Ok(SessionDetail {
        has_more,
        next_after,
        pending_approval: Some(pending_approval).filter(|pending| !pending.is_null()),
        id: session.id,
        title: session.title,
        folder_path: session.folder.display().to_string(),
        status: session.status,
        yolo_mode: session.yolo.enabled,
        pending_input,
        events,
    })
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
