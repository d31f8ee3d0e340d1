//! `GET /api/approvals`: every card waiting on the user, across folders;
//! `POST /api/approvals`: decisions on many of them at once, each answered as
//! the single approve would answer it. Every decision goes through the same
//! agents' paths (and so the same gate) as a card's.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use protocol::api::{BatchApproveRequest, BatchApproveResponse, BatchResult, WaitingList};

use super::chat::{decision_of, runtime_off_thread, Decided};
use crate::agents::{begin, decide_many, AgentError, Start};
use crate::approval::Decision;
use crate::http::error::{ApiError, ApiJson, ApiResult};
use crate::hub::Hub;

/// More decisions than anyone selects at once; a bound on one request's work.
pub const MAX_BATCH: usize = 500;

pub async fn list(State(hub): State<Arc<Hub>>) -> ApiResult<Json<WaitingList>> {
    super::blocking(move || Ok::<_, ApiError>(hub.waiting_list())).await.map(Json)
}

pub async fn decide(
    State(hub): State<Arc<Hub>>,
    ApiJson(request): ApiJson<BatchApproveRequest>,
) -> ApiResult<Json<BatchApproveResponse>> {
    if request.decisions.is_empty() || request.decisions.len() > MAX_BATCH {
        return Err(ApiError::bad_request(format!("decisions must hold 1 to {MAX_BATCH} decisions.")));
    }
    let mut results: Vec<Option<Result<(), ApiError>>> = vec![None; request.decisions.len()];
    // Each session's decisions are taken together (its turn resumes once), in
    // the order the sessions first appear.
    let mut sessions: Vec<(String, Vec<usize>)> = Vec::new();
    for (index, item) in request.decisions.iter().enumerate() {
        match sessions.iter_mut().find(|(id, _)| *id == item.session_id) {
            Some((_, items)) => items.push(index),
            None => sessions.push((item.session_id.clone(), vec![index])),
        }
    }
    for (session_id, items) in sessions {
        let runtime = match runtime_off_thread(&hub, &session_id).await {
            Ok(runtime) => runtime,
            Err(err) => {
                items.iter().for_each(|&index| results[index] = Some(Err(err.clone())));
                continue;
            }
        };
        let mut plain: Vec<(usize, String, Decision)> = Vec::new();
        let mut saved_rules = Vec::new();
        for &index in &items {
            let request = request.decisions[index].request.clone();
            let tool_id = request.tool_id.clone();
            match decision_of(request) {
                Err(err) => results[index] = Some(Err(err)),
                Ok(Decided::Plain(decision)) => plain.push((index, tool_id, decision)),
                Ok(Decided::Always(prefix)) => match hub.save_rule_for(&runtime, &tool_id, prefix).await {
                    Ok(saved) => {
                        saved_rules.push((index, saved.id));
                        plain.push((index, tool_id, Decision::ApproveAlways));
                    }
                    Err(err) => results[index] = Some(Err(err.into())),
                },
                // One of an ACP agent's own options: alone, as on its card.
                Ok(Decided::AgentOption(option_id)) => {
                    let start = Start::AgentOption { tool_id, option_id };
                    results[index] = Some(begin(&hub.port(), &runtime, start).map(|_| ()).map_err(ApiError::from));
                }
            }
        }
        if plain.is_empty() {
            continue;
        }
        let decisions = plain.iter().map(|(_, tool_id, decision)| (tool_id.clone(), decision.clone())).collect();
        let (outcomes, _) = decide_many(&hub.port(), &runtime, decisions);
        for ((index, _, _), outcome) in plain.iter().zip(outcomes) {
            if outcome.is_err() {
                // A decision that did not go through takes its rule back.
                if let Some((_, rule)) = saved_rules.iter().find(|(at, _)| at == index) {
                    hub.forget_rule(*rule).await;
                }
            }
            results[*index] = Some(outcome.map_err(ApiError::from));
        }
    }
    let results = request
        .decisions
        .iter()
        .zip(results)
        .map(|(item, result)| {
            let (ok, error, message) = match result.unwrap_or_else(|| Err(AgentError::NotRunning.into())) {
                Ok(()) => (true, None, None),
                Err(err) => (false, Some(err.code.to_string()), Some(err.message)),
            };
            BatchResult {
                session_id: item.session_id.clone(),
                tool_id: item.request.tool_id.clone(),
                ok,
                error,
                message,
            }
        })
        .collect();
    Ok(Json(BatchApproveResponse { results }))
}
