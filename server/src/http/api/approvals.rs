//! `GET /api/approvals`: every card waiting on the user, across folders;
//! `POST /api/approvals`: decisions on many of them at once, each answered as
//! the single approve would answer it. Every decision goes through the same
//! agents' paths (and so the same gate) as a card's.

use std::sync::Arc;

use axum::extract::State;
use axum::Json;
use protocol::api::{BatchApproveRequest, BatchApproveResponse, BatchDecision, BatchResult, WaitingList};

use super::chat::{decision_of, runtime_off_thread, Decided};
use crate::agents::{decide_many, BatchItem};
use crate::approval::Decision;
use crate::http::error::{ApiError, ApiJson, ApiResult};
use crate::hub::Hub;

/// More decisions than anyone selects at once; a bound on one request's work.
pub const MAX_BATCH: usize = 500;

pub async fn list(State(hub): State<Arc<Hub>>) -> ApiResult<Json<WaitingList>> {
    super::blocking(move || Ok::<_, ApiError>(hub.waiting_list())).await.map(Json)
}

/// Why a batch item cannot be decided in a batch (before anything is decided).
fn batch_decision(item: &BatchDecision) -> ApiResult<Decision> {
    if item.request.modified_content.is_some() {
        return Err(ApiError::bad_request("modifiedContent is sent from the edit's card, not in a batch."));
    }
    match decision_of(item.request.clone())? {
        // Running outside the sandbox is decided with the call in view, one at a time.
        Decided::Plain(Decision::ApproveUnsandboxed) => {
            Err(ApiError::bad_request("approve_unsandboxed is decided on the call's card, not in a batch."))
        }
        Decided::Plain(decision) => Ok(decision),
        // A rule for the whole folder, or the agent's own option: each on its card.
        Decided::Always(_) | Decided::AgentOption(_) => Err(ApiError::bad_request(
            "approve_always and agent_option are decided on the call's card, not in a batch.",
        )),
    }
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
        let mut plain: Vec<(usize, BatchItem)> = Vec::new();
        for &index in &items {
            let item = &request.decisions[index];
            match batch_decision(item) {
                Ok(decision) => plain.push((
                    index,
                    BatchItem { tool_id: item.request.tool_id.clone(), decision, seen: item.fingerprint.clone() },
                )),
                Err(err) => results[index] = Some(Err(err)),
            }
        }
        // A rejection turns down every call of its turn: approving some of them
        // in the same batch would be answered "ok" and never run.
        let rejects = plain.iter().any(|(_, item)| item.decision == Decision::Reject);
        if rejects && plain.iter().any(|(_, item)| item.decision != Decision::Reject) {
            for (index, _) in plain.drain(..) {
                results[index] = Some(Err(ApiError::bad_request(
                    "A session's decisions in one batch must all reject or all approve: a rejection ends its turn.",
                )));
            }
        }
        if plain.is_empty() {
            continue;
        }
        let runtime = match runtime_off_thread(&hub, &session_id).await {
            Ok(runtime) => runtime,
            Err(err) => {
                plain.iter().for_each(|(index, _)| results[*index] = Some(Err(err.clone())));
                continue;
            }
        };
        let (indexes, batch): (Vec<usize>, Vec<BatchItem>) = plain.into_iter().unzip();
        // The gate may read the rules' files as the other waiting calls are judged again.
        let port = hub.port();
        let outcomes = super::blocking(move || Ok::<_, ApiError>(decide_many(&port, &runtime, batch).0)).await?;
        for (index, outcome) in indexes.into_iter().zip(outcomes) {
            results[index] = Some(outcome.map_err(ApiError::from));
        }
    }
    let results = request
        .decisions
        .iter()
        .zip(results)
        .map(|(item, result)| {
            let (ok, error, message) = match result {
                Some(Ok(())) => (true, None, None),
                Some(Err(err)) => (false, Some(err.code.to_string()), Some(err.message)),
                None => (false, Some("internal".to_string()), Some("This decision was not taken.".to_string())),
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

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::api::ApprovalDecision;

    fn item(decision: ApprovalDecision) -> BatchDecision {
        serde_json::from_value(serde_json::json!({"sessionId": "s", "toolId": "t", "decision": decision})).unwrap()
    }

    #[test]
    fn a_batch_takes_the_decisions_a_card_takes_but_its_rule_and_the_agents_own_options() {
        assert_eq!(batch_decision(&item(ApprovalDecision::ApproveTurn)).unwrap(), Decision::ApproveTurn);
        assert_eq!(batch_decision(&item(ApprovalDecision::Reject)).unwrap(), Decision::Reject);
        for decision in
            [ApprovalDecision::ApproveAlways, ApprovalDecision::AgentOption, ApprovalDecision::ApproveUnsandboxed]
        {
            assert_eq!(batch_decision(&item(decision)).unwrap_err().code, "bad_request");
        }
    }
}
