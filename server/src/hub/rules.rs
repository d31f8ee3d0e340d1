//! The rules that apply in a folder: Gemini CLI's policy files (admin, user and
//! the folder's own `.gemini/policies`), the rules saved in the hub from a card
//! ("Always in this folder"), and the built-in guard rails; and the session
//! grants ("Yes, for this session") the Rules panel lists beside them.

use std::path::Path;
use std::sync::Arc;

use protocol::api::{PolicyDecision, RulesResponse, SessionGrant};
use serde_json::Value;

use super::{now_ms, Hub, HubError, HubResult};
use crate::agents::SessionRuntime;
use crate::folder::canonical_folder;
use crate::policy::{self, Mode, PolicySet, Rule};
use crate::store::{NewSavedRule, SavedRule, StoreError};

/// The longest command prefix a card may save.
const MAX_PREFIX: usize = 500;

impl Hub {
    /// Every rule that applies in `folder` (canonical) now. Policy files are
    /// read again only when they changed; a database that cannot be read leaves
    /// out the saved rules (those only allow: without them, calls ask).
    pub fn policy_set(&self, folder: &Path) -> PolicySet {
        self.policies().for_folder(folder, self.saved_rules(folder), self.trusted(folder))
    }

    pub(super) fn saved_rules(&self, folder: &Path) -> Vec<Rule> {
        let Some(store) = self.store() else { return Vec::new() };
        match store.saved_rules(folder) {
            Ok(rows) => rows.iter().filter_map(as_rule).collect(),
            Err(err) => {
                tracing::error!(folder = %folder.display(), "saved rules could not be read: {err}");
                Vec::new()
            }
        }
    }

    /// `GET /api/rules`: the folder's rules (highest first), the problems of its
    /// policy files, and the session grants of its sessions. Changes nothing.
    pub fn rules_of(&self, folder_path: &str) -> HubResult<RulesResponse> {
        let folder = canonical_folder(folder_path)?;
        // The folder's default session's mode; a folder never opened has its settings' default
        // (looking at its rules opens no session).
        let yolo = self
            .session(&crate::registry::default_session_id(&folder))
            .map_or_else(|| self.folder_settings(&folder).yolo_mode, |session| session.yolo.enabled);
        let mode = Mode::from_yolo(yolo);
        let set = self.policy_set(&folder);
        let rules: Vec<_> = set.rules().iter().map(|rule| rule.view(mode)).collect();
        let mut grants = Vec::new();
        for id in self.sessions_in(&folder) {
            if let Ok(Some(runtime)) = self.try_runtime(&id) {
                let mut tools: Vec<String> = runtime.state().agent.allowed_tools.iter().cloned().collect();
                tools.sort();
                grants.extend(tools.into_iter().map(|tool_name| SessionGrant { session_id: id.clone(), tool_name }));
            }
        }
        Ok(RulesResponse {
            folder_path: folder.display().to_string(),
            mode: mode.as_str().to_string(),
            guard_rails: rules.iter().any(|rule| rule.origin == protocol::api::RuleOrigin::BuiltIn),
            rules,
            problems: set.problems().to_vec(),
            grants,
            trusted: self.trusted(&folder),
            held_back: set.held_back().iter().map(|rule| rule.view(mode)).collect(),
        })
    }

    /// Saves "Always in this folder" for the call waiting on `runtime`'s card:
    /// an allow for its tool, for a command only with `prefix` (by default the
    /// command's first words). Answered once the rule is on disk.
    pub async fn save_rule_for(
        &self,
        runtime: &SessionRuntime,
        tool_id: &str,
        prefix: Option<String>,
    ) -> HubResult<SavedRule> {
        let Some((name, args)) = runtime.waiting_call(tool_id) else {
            return Err(crate::agents::AgentError::call_not_pending(tool_id).into());
        };
        let command_prefix = rule_prefix(&name, &args, prefix)?;
        let store = self.store().ok_or_else(|| {
            HubError::StoreFailed("Rules are saved in the hub's database, and this hub runs without one.".into())
        })?;
        let rule = NewSavedRule {
            folder: runtime.folder.to_string_lossy().into_owned(),
            tool_name: name,
            command_prefix,
            created_at_ms: now_ms(),
            session_id: runtime.id.clone(),
            tool_id: tool_id.to_string(),
        };
        store.save_rule(rule).await.map_err(|err| store_failed("The rule could not be saved", &err))
    }

    /// Takes back a rule saved for a decision that did not go through.
    pub async fn forget_rule(&self, id: i64) {
        if let Some(store) = self.store() {
            if let Err(err) = store.delete_rule(id).await {
                tracing::error!("a rule saved for a decision that failed could not be deleted: {err}");
            }
        }
    }

    /// `DELETE /api/rules/{id}`: only rules saved in the hub; the others live in files the user edits.
    pub async fn delete_rule(&self, id: &str) -> HubResult<SavedRule> {
        let Some(number) = id.strip_prefix("hub-").and_then(|number| number.parse::<i64>().ok()) else {
            return Err(HubError::Invalid(format!(
                "Rule '{id}' is not saved in the hub: edit or delete it in its policy file (or, for a built-in \
                 guard rail, override it with a rule of your own)."
            )));
        };
        let store = self.store().ok_or_else(|| HubError::NotFound(format!("No rule '{id}'.")))?;
        match store.delete_rule(number).await {
            Ok(Some(rule)) => Ok(rule),
            Ok(None) => Err(HubError::NotFound(format!("No rule '{id}'."))),
            Err(err) => Err(store_failed("The rule could not be deleted", &err)),
        }
    }

    /// `GET /api/rules/export`: the folder's saved rules as a policy file Gemini CLI loads.
    pub fn export_rules(&self, folder_path: &str) -> HubResult<String> {
        let folder = canonical_folder(folder_path)?;
        Ok(policy::export_toml(&self.saved_rules(&folder)))
    }

    /// `DELETE /api/sessions/{id}/grants/{tool}`: withdraws "Yes, for this session".
    pub fn withdraw_grant(&self, runtime: &Arc<SessionRuntime>, tool_name: &str) -> HubResult<()> {
        let mut state = runtime.state();
        if !state.agent.allowed_tools.remove(tool_name) {
            return Err(HubError::NotFound(format!("Session '{}' has no grant for '{tool_name}'.", runtime.id)));
        }
        runtime.save(&state);
        Ok(())
    }
}

fn store_failed(what: &str, err: &StoreError) -> HubError {
    HubError::StoreFailed(format!("{what}: {err}."))
}

fn as_rule(row: &SavedRule) -> Option<Rule> {
    if row.decision != PolicyDecision::Allow {
        return None;
    }
    Rule::saved(row.id, &row.tool_name, row.command_prefix.as_deref(), row.created_at_ms)
        .map_err(|err| tracing::error!(rule = row.id, "a saved rule is unusable: {err}"))
        .ok()
}

/// The prefix a saved rule allows: for a command, the user's (checked to
/// start the command, at a word's end) or the command's first words; other
/// tools take none (the rule allows the tool).
fn rule_prefix(name: &str, args: &Value, prefix: Option<String>) -> HubResult<Option<String>> {
    let command = args.get("command").and_then(Value::as_str).filter(|_| name == "run_shell_command");
    let Some(command) = command else {
        return match prefix {
            Some(_) => Err(HubError::Invalid("commandPrefix applies to shell commands only.".into())),
            None => Ok(None),
        };
    };
    let prefix = match prefix {
        Some(prefix) => prefix.trim().to_string(),
        None => policy::default_prefix(command),
    };
    if prefix.is_empty() || prefix.len() > MAX_PREFIX || prefix.chars().any(char::is_control) {
        return Err(HubError::Invalid(format!(
            "commandPrefix must be 1–{MAX_PREFIX} characters of one line, e.g. \"git status\"."
        )));
    }
    let command = command.trim_start();
    let at_word_end = command
        .strip_prefix(prefix.as_str())
        .is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace) || prefix.ends_with(' '));
    if !at_word_end {
        return Err(HubError::Invalid(format!(
            "commandPrefix \"{prefix}\" does not begin the command \"{command}\" (at a word's end): the rule would \
             not allow what the card shows."
        )));
    }
    policy::check_saved_prefix(&prefix)?;
    Ok(Some(prefix))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::error::ApiError;
    use axum::http::StatusCode;
    use serde_json::json;

    #[test]
    fn a_prefix_must_begin_the_command_at_a_word_end() {
        let shell = |command: &str| json!({ "command": command });
        let prefix =
            |command: &str, prefix: &str| rule_prefix("run_shell_command", &shell(command), Some(prefix.into()));
        assert_eq!(prefix("git status --short", "git status").unwrap(), Some("git status".into()));
        assert_eq!(prefix("git status", " git status ").unwrap(), Some("git status".into()), "trimmed");
        assert!(prefix("git statusx", "git status").is_err(), "not at a word's end");
        assert!(prefix("git status", "git push").is_err());
        assert!(prefix("git status", "").is_err());
        assert!(prefix("git status", "git\nstatus").is_err());
        assert!(rule_prefix("write_file", &json!({"file_path": "a"}), Some("x".into())).is_err());
        assert_eq!(rule_prefix("write_file", &json!({"file_path": "a"}), None).unwrap(), None);
    }

    /// Issue 24, item 11: the card lets the user edit the prefix; one that
    /// would allow anything is refused with a reason, and the proposal never is.
    #[test]
    fn a_prefix_that_would_allow_anything_is_refused() {
        let shell = |command: &str| json!({ "command": command });
        for (command, prefix) in [
            ("python3 -c 'print(1)'", "python3"),
            ("python3 -c 'print(1)'", "python3 -c"),
            ("git -c core.pager=cat log", "git"),
            ("git config user.name x", "git config"),
            ("find . -name '*.rs'", "find"),
            ("xargs rm < list", "xargs"),
            ("env FOO=1 ls", "env FOO=1"),
            ("npx prettier .", "npx"),
        ] {
            let err =
                ApiError::from(rule_prefix("run_shell_command", &shell(command), Some(prefix.into())).unwrap_err());
            assert_eq!((err.status, err.code), (StatusCode::BAD_REQUEST, "prefix_too_broad"), "{prefix}");
            assert!(err.message.contains(&format!("\"{prefix}\" would allow running anything")), "{}", err.message);
            let proposed = rule_prefix("run_shell_command", &shell(command), None).unwrap().unwrap();
            assert!(proposed.len() > prefix.len(), "{command}: proposed {proposed}");
        }
    }
}
