//! `POST /api/chat/prompt`, `POST /api/sessions/{id}/approve` and
//! `POST /api/sessions/{id}/input`: NDJSON streams of the turn's events (or one
//! JSON answer with `"stream": false`).

use std::convert::Infallible;
use std::sync::Arc;

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::Json;
use futures::StreamExt;
use protocol::api::{ApprovalDecision, ApproveRequest, InputAnswer, PromptRequest};
use protocol::events::{AgentEvent, ResultStatus, SeqEvent};
use serde::Deserialize;
use serde_json::{json, Value};

use crate::agents::log::{events_of, until_turn_pauses, Logged};
use crate::agents::{begin, pending_calls, SessionRuntime, Start};
use crate::approval::Decision;
use crate::http::error::{ApiError, ApiJson, ApiQuery, ApiResult};
use crate::hub::Hub;

pub async fn prompt(State(hub): State<Arc<Hub>>, ApiJson(request): ApiJson<PromptRequest>) -> ApiResult<Response> {
    if request.message.trim().is_empty() {
        return Err(ApiError::bad_request("message must not be empty."));
    }
    // The folder is looked at, its settings read, PATH searched for a new
    // session's agent, the session read from the database: off the async workers.
    let opening = hub.clone();
    let (folder, session, agent) = (request.folder_path.clone(), request.session_id.clone(), request.agent.clone());
    let runtime = super::blocking(move || {
        let config = opening.open_session_with(&folder, session.as_deref(), agent.as_deref())?;
        let runtime = opening.runtime(&config.session_id).ok_or_else(|| ApiError::internal("The session vanished."))?;
        // An isolated session whose worktree was deleted by hand takes no turn.
        if !runtime.root.is_dir() {
            return Err(ApiError::from(crate::worktrees::WorktreeError::Missing(runtime.root.clone())));
        }
        Ok(runtime)
    })
    .await?;
    // A prompt that answers a waiting card ("yes") does not name the session.
    let deciding = runtime.state().machine.occupied().is_some();
    let after = begin(&hub.port(), &runtime, Start::Prompt(request.message.clone()))?;
    if !deciding {
        hub.note_prompt(&runtime.id, &request.message);
    }
    respond(&hub, runtime, after, request.stream.unwrap_or(true)).await
}

pub async fn approve(
    State(hub): State<Arc<Hub>>,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<ApproveRequest>,
) -> ApiResult<Response> {
    let runtime = runtime_off_thread(&hub, &id).await?;
    let stream = request.stream.unwrap_or(true);
    let tool_id = request.tool_id.clone();
    let after = match decision_of(request)? {
        Decided::Plain(decision) => begin(&hub.port(), &runtime, Start::Decide { tool_id, decision })?,
        Decided::Always(prefix) => approve_always(&hub, &runtime, tool_id, prefix).await?,
        Decided::AgentOption(option_id) => begin(&hub.port(), &runtime, Start::AgentOption { tool_id, option_id })?,
    };
    respond(&hub, runtime, after, stream).await
}

/// What a card's decision asks of the hub.
pub enum Decided {
    Plain(Decision),
    /// "Always in this folder": the rule (with this command prefix) is saved first.
    Always(Option<String>),
    /// One of an ACP agent's own options, answered as it is.
    AgentOption(String),
}

/// The decision an approve body asks for, or why it is malformed.
pub fn decision_of(request: ApproveRequest) -> ApiResult<Decided> {
    Ok(Decided::Plain(match (request.decision, request.modified_content) {
        // The user's content for an edit tool goes with approving it (or with `edit`).
        (ApprovalDecision::Approve | ApprovalDecision::Edit, Some(content)) => {
            Decision::Edit { instruction: None, modified_content: Some(content) }
        }
        (ApprovalDecision::Approve, None) => Decision::Approve,
        (ApprovalDecision::Reject, None) => Decision::Reject,
        (ApprovalDecision::ApproveSession, None) => Decision::ApproveSession,
        (ApprovalDecision::ApproveTurn, None) => Decision::ApproveTurn,
        (ApprovalDecision::ApproveNetwork, None) => Decision::ApproveNetwork,
        (ApprovalDecision::ApproveUnsandboxed, None) => Decision::ApproveUnsandboxed,
        (ApprovalDecision::ApproveAlways, None) => return Ok(Decided::Always(request.command_prefix)),
        (ApprovalDecision::Edit, None) => {
            Decision::Edit { instruction: request.edit_instruction, modified_content: None }
        }
        (ApprovalDecision::AgentOption, None) => {
            let Some(option_id) = request.option_id.filter(|id| !id.is_empty()) else {
                return Err(ApiError::bad_request("decision agent_option needs optionId: one of the card's choices."));
            };
            return Ok(Decided::AgentOption(option_id));
        }
        (
            ApprovalDecision::Reject
            | ApprovalDecision::ApproveSession
            | ApprovalDecision::ApproveTurn
            | ApprovalDecision::ApproveNetwork
            | ApprovalDecision::ApproveUnsandboxed
            | ApprovalDecision::ApproveAlways
            | ApprovalDecision::AgentOption,
            Some(_),
        ) => return Err(ApiError::bad_request("modifiedContent goes with decision approve or edit.")),
        (ApprovalDecision::Other(other), _) => {
            return Err(ApiError::bad_request(format!(
            "decision must be approve, reject, approve_session, approve_turn, approve_always, edit or agent_option; got '{other}'."
        )))
        }
    }))
}

/// "Always in this folder": the rule is saved (on disk) first, then the call
/// is approved; the other waiting calls are judged again with the rule (one
/// the gate still stops keeps its card). A decision that does not go through
/// takes its rule back.
async fn approve_always(
    hub: &Arc<Hub>,
    runtime: &Arc<SessionRuntime>,
    tool_id: String,
    prefix: Option<String>,
) -> ApiResult<u64> {
    let saved = hub.save_rule_for(runtime, &tool_id, prefix).await?;
    match begin(&hub.port(), runtime, Start::Decide { tool_id, decision: Decision::ApproveAlways }) {
        Ok(after) => Ok(after),
        Err(err) => {
            hub.forget_rule(saved.id).await;
            Err(err.into())
        }
    }
}

pub async fn input(
    State(hub): State<Arc<Hub>>,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<InputAnswer>,
) -> ApiResult<Response> {
    let runtime = runtime_off_thread(&hub, &id).await?;
    let start = Start::Answer { request_id: request.request_id, response: request.response };
    let after = begin(&hub.port(), &runtime, start)?;
    respond(&hub, runtime, after, request.stream.unwrap_or(true)).await
}

/// `POST /api/sessions/{id}/cancel` (the Stop button): the running turn stops,
/// a waiting card is withdrawn; NDJSON of the turn's last events, ending with
/// `result` `cancelled`.
pub async fn cancel(State(hub): State<Arc<Hub>>, Path(id): Path<String>) -> ApiResult<Response> {
    let runtime = runtime_off_thread(&hub, &id).await?;
    let after = crate::agents::cancel(&hub.port(), &runtime).await?;
    respond(&hub, runtime, after, true).await
}

#[derive(Deserialize)]
pub struct EventsQuery {
    #[serde(default)]
    after: u64,
}

/// `GET /api/sessions/{id}/events?after=N`: the stored events after N, then, while
/// a turn runs, its live events until it pauses or ends.
pub async fn events(
    State(hub): State<Arc<Hub>>,
    Path(id): Path<String>,
    ApiQuery(query): ApiQuery<EventsQuery>,
) -> ApiResult<Response> {
    let runtime = runtime_off_thread(&hub, &id).await?;
    // One lock: a turn publishes its last event as it lets the session go.
    let (stored, running) = {
        let state = runtime.state();
        (runtime.log.after(query.after), state.machine.is_running())
    };
    let last = stored.last().map_or(query.after, |event| event.seq);
    let live = running.then(|| live(&hub, &runtime, last));
    let batches = futures::stream::once(async move { stored }).chain(futures::stream::iter(live).flatten());
    Ok(ndjson(batches))
}

/// One body chunk per batch of events, one JSON object per line.
fn ndjson(batches: impl futures::Stream<Item = Vec<Logged>> + Send + 'static) -> Response {
    let chunks = batches.filter(|batch| std::future::ready(!batch.is_empty())).map(|batch| {
        let chunk = match batch.as_slice() {
            [one] => one.line.clone(),
            many => {
                let mut chunk = Vec::with_capacity(many.iter().map(|event| event.line.len()).sum());
                many.iter().for_each(|event| chunk.extend_from_slice(&event.line));
                Bytes::from(chunk)
            }
        };
        Ok::<_, Infallible>(chunk)
    });
    ([(CONTENT_TYPE, "application/x-ndjson")], Body::from_stream(chunks)).into_response()
}

/// The turn's events after `after` as they come, until it pauses or ends, or
/// the hub shuts down: a stream left open would hold the shutdown up.
fn live(hub: &Hub, runtime: &SessionRuntime, after: u64) -> impl futures::Stream<Item = Vec<Logged>> {
    until_turn_pauses(runtime.log.clone(), after).take_until(hub.shutdown_token().cancelled_owned())
}

async fn respond(hub: &Hub, runtime: Arc<SessionRuntime>, after: u64, stream: bool) -> ApiResult<Response> {
    let batches = live(hub, &runtime, after);
    if stream {
        return Ok(ndjson(batches));
    }
    let events = events_of(&batches.concat().await);
    if let Some(AgentEvent::Result { status: ResultStatus::WaitingApproval, pending: Some(pending) }) =
        events.last().map(|event| &event.event)
    {
        let pending: Vec<Value> = pending.iter().filter_map(|id| tool_use(&events, id)).collect();
        let body = json!({
            "error": "tool_approval_required",
            "message": "The turn is paused: a tool call needs your approval (POST /api/sessions/{id}/approve).",
            "pending": pending,
        });
        return Ok((StatusCode::CONFLICT, Json(body)).into_response());
    }
    Ok(Json(json!({ "events": events })).into_response())
}

/// The runtime of an existing session, or 404.
/// `POST /api/sessions/{id}/mode`: puts the session's ACP agent in one of its
/// modes; answers the session's config with the modes as they now are.
pub async fn set_mode(
    State(hub): State<Arc<Hub>>,
    Path(id): Path<String>,
    ApiJson(request): ApiJson<protocol::api::SetModeRequest>,
) -> ApiResult<Json<protocol::api::ChatConfig>> {
    let runtime = runtime_off_thread(&hub, &id).await?;
    // A mode that skips asking is the agent's YOLO: not while the sandbox cannot work.
    if crate::agents::acp::modes::asks(&request.mode_id) != Some(true) {
        hub.yolo_allowed()?;
    }
    hub.agent_of(&id)?.agent().set_mode(&runtime, request.mode_id).await?;
    hub.config(&id).map(Json).ok_or_else(|| ApiError::not_found(format!("No session with id '{id}'.")))
}

/// [`session_runtime`] off the async workers: a session not in memory is
/// read from the database.
pub async fn runtime_off_thread(hub: &Arc<Hub>, id: &str) -> ApiResult<Arc<SessionRuntime>> {
    let (hub, id) = (hub.clone(), id.to_string());
    super::blocking(move || session_runtime(&hub, &id)).await
}

pub fn session_runtime(hub: &Hub, id: &str) -> ApiResult<Arc<SessionRuntime>> {
    match hub.try_runtime(id) {
        Ok(Some(runtime)) => Ok(runtime),
        Ok(None) => Err(ApiError::not_found(format!("No session with id '{id}'."))),
        Err(err) => Err(ApiError::new(
            axum::http::StatusCode::SERVICE_UNAVAILABLE,
            crate::agents::STORE_FAILED,
            format!("The session could not be read from the database: {err}."),
        )),
    }
}

/// The `tool_use` event that announced a call.
fn announced<'a>(events: &'a [SeqEvent], tool_id: &str) -> Option<&'a AgentEvent> {
    events
        .iter()
        .rev()
        .map(|event| &event.event)
        .find(|event| matches!(event, AgentEvent::ToolUse { tool_id: id, .. } if id == tool_id))
}

/// `{tool_id, tool_name, parameters}` of a call announced in `events`.
fn tool_use(events: &[SeqEvent], tool_id: &str) -> Option<Value> {
    let Some(AgentEvent::ToolUse { tool_id, tool_name, parameters, .. }) = announced(events, tool_id) else {
        return None;
    };
    Some(json!({"tool_id": tool_id, "tool_name": tool_name, "parameters": parameters}))
}

/// The first call waiting for the user, with its place among the waiting ones.
pub fn pending_approval(runtime: &SessionRuntime, events: &[SeqEvent]) -> Value {
    let pending = pending_calls(&runtime.state());
    let Some(first) = pending.first() else { return Value::Null };
    let Some(AgentEvent::ToolUse { tool_id, tool_name, parameters, kind, diff, .. }) = announced(events, first) else {
        return Value::Null;
    };
    json!({
        "toolId": tool_id,
        "toolName": tool_name,
        "parameters": parameters,
        "kind": kind,
        "diff": diff,
        "pending": pending,
    })
}
