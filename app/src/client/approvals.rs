//! The cards waiting across folders, and deciding many at once.

use super::{get_json, send_json, HubError};
use protocol::api::{
    ApprovalDecision, ApproveRequest, BatchApproveRequest, BatchApproveResponse, BatchDecision, ChatConfig,
    SetConfigRequest, WaitingCall, WaitingList,
};

pub async fn waiting() -> Result<WaitingList, HubError> {
    get_json("/api/approvals").await
}

/// The same decision on each call as listed; one result each, in order.
pub async fn decide_all(calls: &[WaitingCall], decision: ApprovalDecision) -> Result<BatchApproveResponse, HubError> {
    send_json("POST", "/api/approvals", Some(&batch(calls, decision))).await
}

/// Each call with what identifies it as listed: one that changed since is not decided.
pub fn batch(calls: &[WaitingCall], decision: ApprovalDecision) -> BatchApproveRequest {
    let decisions = calls
        .iter()
        .map(|call| BatchDecision {
            session_id: call.session_id.clone(),
            fingerprint: Some(call.fingerprint.clone()),
            request: ApproveRequest {
                tool_id: call.tool_id.clone(),
                decision: decision.clone(),
                option_id: None,
                command_prefix: None,
                edit_instruction: None,
                modified_content: None,
                stream: None,
            },
        })
        .collect();
    BatchApproveRequest { decisions }
}

/// Sets the folder's approval timeout (`None`: wait forever).
pub async fn set_timeout(folder_path: &str, session_id: &str, secs: Option<u64>) -> Result<ChatConfig, HubError> {
    let body = SetConfigRequest {
        folder_path: folder_path.to_string(),
        session_id: Some(session_id.to_string()),
        yolo_mode: None,
        approval_timeout_secs: Some(secs),
        network: None,
        ..Default::default()
    };
    send_json("POST", "/api/chat/config", Some(&body)).await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_names_each_session_and_call_as_listed() {
        let listed = |session: &str, tool: &str| WaitingCall {
            folder_path: "/p".into(),
            session_id: session.into(),
            session_title: None,
            tool_id: tool.into(),
            tool_name: "run_shell_command".into(),
            summary: "ls".into(),
            question: false,
            batchable: true,
            fingerprint: format!("f-{tool}"),
            deadline_at: None,
        };
        let body = serde_json::to_value(batch(&[listed("s1", "t1"), listed("s2", "t2")], ApprovalDecision::Reject));
        assert_eq!(
            body.unwrap(),
            serde_json::json!({"decisions": [
                {"sessionId": "s1", "fingerprint": "f-t1", "toolId": "t1", "decision": "reject"},
                {"sessionId": "s2", "fingerprint": "f-t2", "toolId": "t2", "decision": "reject"},
            ]})
        );
    }

    #[test]
    fn clearing_the_timeout_sends_null_not_nothing() {
        let body =
            SetConfigRequest { folder_path: "/p".into(), approval_timeout_secs: Some(None), ..Default::default() };
        assert_eq!(
            serde_json::to_value(body).unwrap(),
            serde_json::json!({"folderPath": "/p", "sessionId": null, "approvalTimeoutSecs": null})
        );
    }
}
