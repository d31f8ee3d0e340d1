//! The rules of a folder, the session grants, and the audit trail of decisions.

use serde::Deserialize;

use super::{get_json, get_ndjson, send_for_status, HubError};
use protocol::api::RulesResponse;
use protocol::audit::AuditEntry;
use protocol::habits::Habit;

fn encode(text: &str) -> std::borrow::Cow<'_, str> {
    urlencoding::encode(text)
}

/// Every rule that applies in the folder, its problems and its session grants.
pub async fn rules(folder_path: &str) -> Result<RulesResponse, HubError> {
    get_json(&format!("/api/rules?folderPath={}", encode(folder_path))).await
}

/// Deletes a rule saved in the hub (the only kind the hub deletes).
pub async fn delete_rule(id: &str) -> Result<(), HubError> {
    send_for_status("DELETE", &format!("/api/rules/{}", encode(id))).await
}

/// Where the folder's hub-saved rules download as a Gemini CLI policy file.
pub fn export_url(folder_path: &str) -> String {
    format!("/api/rules/export?folderPath={}", encode(folder_path))
}

#[derive(Deserialize)]
struct Suggestion {
    prefix: String,
}

/// The command prefix "Always in this folder" proposes for a command.
pub async fn suggest_prefix(command: &str) -> Result<String, HubError> {
    let suggestion: Suggestion = get_json(&format!("/api/rules/suggest?command={}", encode(command))).await?;
    Ok(suggestion.prefix)
}

/// How often the user approved calls like the one waiting on the card under
/// `tool_id` in its folder, and whether the card offers their rule.
pub async fn habit(session_id: &str, tool_id: &str) -> Result<Habit, HubError> {
    get_json(&format!("/api/habits?sessionId={}&toolId={}", encode(session_id), encode(tool_id))).await
}

/// Withdraws a "Yes, for this session" grant.
pub async fn withdraw_grant(session_id: &str, tool_name: &str) -> Result<(), HubError> {
    send_for_status("DELETE", &format!("/api/sessions/{}/grants/{}", encode(session_id), encode(tool_name))).await
}

/// Which decisions to list: a folder's or every folder's, one session's or all.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    pub folder_path: Option<String>,
    pub session_id: Option<String>,
}

/// `GET /api/audit` with the filter; `csv` for the download.
pub fn audit_url(filter: &AuditFilter, csv: bool) -> String {
    let mut params = Vec::new();
    if let Some(folder) = &filter.folder_path {
        params.push(format!("folderPath={}", encode(folder)));
    }
    if let Some(session) = &filter.session_id {
        params.push(format!("sessionId={}", encode(session)));
    }
    if csv {
        params.push("format=csv".to_string());
    }
    if params.is_empty() {
        "/api/audit".to_string()
    } else {
        format!("/api/audit?{}", params.join("&"))
    }
}

/// The decisions, oldest first as the hub sends them.
pub async fn audit(filter: &AuditFilter) -> Result<Vec<AuditEntry>, HubError> {
    get_ndjson(&audit_url(filter, false)).await
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::parse_ndjson;

    #[test]
    fn urls_encode_their_parts() {
        assert_eq!(export_url("/a b"), "/api/rules/export?folderPath=%2Fa%20b");
        let all = AuditFilter::default();
        assert_eq!(audit_url(&all, false), "/api/audit");
        assert_eq!(audit_url(&all, true), "/api/audit?format=csv");
        let one = AuditFilter { folder_path: Some("/p&q".into()), session_id: Some("s 1".into()) };
        assert_eq!(audit_url(&one, false), "/api/audit?folderPath=%2Fp%26q&sessionId=s%201");
        assert_eq!(audit_url(&one, true), "/api/audit?folderPath=%2Fp%26q&sessionId=s%201&format=csv");
    }

    #[test]
    fn audit_lines_parse_one_entry_each() {
        let text = concat!(
            r#"{"id":1,"at":1000,"folderPath":"/p","sessionId":"s","toolId":"t1","toolName":"run_shell_command","#,
            r#""summary":"git status","decision":"allowed","decidedBy":"rule","rule":"saved in the hub","outcome":"ran","outcomeAt":1100}"#,
            "\n\n",
            r#"{"id":2,"at":2000,"folderPath":"/p","sessionId":"s","toolId":"t2","toolName":"write_file","#,
            r#""summary":"a.md","decision":"approved","decidedBy":"user"}"#,
            "\n",
        );
        let entries: Vec<AuditEntry> = parse_ndjson(text.as_bytes()).unwrap();
        assert_eq!(entries.len(), 2);
        assert_eq!(
            (entries[0].rule.as_deref(), entries[0].outcome.as_ref().map(|outcome| outcome.as_str())),
            (Some("saved in the hub"), Some("ran"))
        );
        assert_eq!(
            (entries[1].decided_by.as_str(), entries[1].outcome.as_ref().map(|outcome| outcome.as_str())),
            ("user", None)
        );
        assert!(parse_ndjson::<AuditEntry>(b"{\"id\":1}\n").is_err(), "a row without its fields is an error");
        assert!(parse_ndjson::<AuditEntry>(b"").unwrap().is_empty());
    }
}
