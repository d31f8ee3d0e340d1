//! The request each decision on a card sends.

use protocol::api::{ApprovalDecision, ApproveRequest};

/// What saving the editor sends: the user's text, or a plain approval when it
/// is still the proposal (closing the editor unchanged applies as proposed).
pub fn content_request(tool_id: &str, proposed: &str, content: &str) -> ApproveRequest {
    let changed = content != proposed;
    ApproveRequest {
        tool_id: tool_id.to_string(),
        decision: if changed { ApprovalDecision::Edit } else { ApprovalDecision::Approve },
        edit_instruction: None,
        modified_content: changed.then(|| content.to_string()),
        command_prefix: None,
        option_id: None,
        stream: None,
    }
}

/// The request a decision sends; `None` for an instruction that is blank.
pub fn request(tool_id: &str, decision: ApprovalDecision, instruction: &str) -> Option<ApproveRequest> {
    let edit = decision == ApprovalDecision::Edit;
    if edit && instruction.trim().is_empty() {
        return None;
    }
    Some(ApproveRequest {
        tool_id: tool_id.to_string(),
        decision,
        edit_instruction: edit.then(|| instruction.trim().to_string()),
        modified_content: None,
        command_prefix: None,
        option_id: None,
        stream: None,
    })
}

/// "Always in this folder": the call is approved and an allow rule saved; for
/// a shell command the rule covers `prefix` (`None` for other tools, whose
/// rule covers the tool). `None` when a command's prefix is blank.
pub fn always_request(tool_id: &str, prefix: Option<&str>) -> Option<ApproveRequest> {
    let prefix = match prefix.map(str::trim) {
        Some("") => return None,
        prefix => prefix.map(str::to_string),
    };
    Some(ApproveRequest {
        tool_id: tool_id.to_string(),
        decision: ApprovalDecision::ApproveAlways,
        command_prefix: prefix,
        edit_instruction: None,
        modified_content: None,
        option_id: None,
        stream: None,
    })
}

/// The agent's own option, answered as it is.
pub fn option_request(tool_id: &str, option_id: &str) -> ApproveRequest {
    ApproveRequest {
        tool_id: tool_id.to_string(),
        decision: ApprovalDecision::AgentOption,
        option_id: Some(option_id.to_string()),
        command_prefix: None,
        edit_instruction: None,
        modified_content: None,
        stream: None,
    }
}
