//! Rules written back as a Gemini CLI policy file, for the rules saved in the hub.
//! The output follows Gemini CLI 0.61's `PolicyRuleSchema`: `toolName` always
//! present (a plain string with `commandPrefix`/`commandRegex`, as
//! `validateShellCommandSyntax` demands), `priority` an integer 0–999, `modes`
//! among Gemini CLI's approval modes, strings escaped as TOML basic strings.

use std::fmt::Write as _;

use protocol::api::PolicyDecision;
use serde_json::Value;

use super::rule::Rule;

pub fn export_toml(rules: &[Rule]) -> String {
    let mut out = String::from(
        "# Rules saved in Agent Hub (\"Always in this folder\"), as a Gemini CLI policy file.\n\
         # Put it in <folder>/.gemini/policies/ (the workspace tier, where the hub ranks these\n\
         # rules) or in ~/.gemini/policies/ (the user tier); both the hub and Gemini CLI\n\
         # read every *.toml file there.\n",
    );
    for rule in rules {
        out.push_str("\n[[rule]]\n");
        let _ = writeln!(out, "# {}: {}", one_line(&rule.id), one_line(&rule.source));
        field(&mut out, "toolName", &strings(&rule.tool_names));
        if let Some(mcp_name) = &rule.mcp_name {
            field(&mut out, "mcpName", &string(mcp_name));
        }
        if let Some(subagent) = &rule.subagent {
            field(&mut out, "subagent", &string(subagent));
        }
        if !rule.command_prefixes.is_empty() {
            field(&mut out, "commandPrefix", &strings(&rule.command_prefixes));
        }
        if let Some(regex) = &rule.command_regex {
            field(&mut out, "commandRegex", &string(regex));
        }
        if let Some(pattern) = &rule.args_pattern {
            field(&mut out, "argsPattern", &string(pattern));
        }
        field(&mut out, "decision", &string(decision_name(rule.decision)));
        field(&mut out, "priority", &rule.priority.to_string());
        if !rule.modes.is_empty() {
            field(&mut out, "modes", &format!("[{}]", list(&rule.modes)));
        }
        if let Some(message) = &rule.deny_message {
            field(&mut out, "denyMessage", &string(message));
        }
        if rule.allow_redirection {
            field(&mut out, "allowRedirection", "true");
        }
        if let Some(interactive) = rule.interactive {
            field(&mut out, "interactive", &interactive.to_string());
        }
        if let Some(annotations) = &rule.tool_annotations {
            field(&mut out, "toolAnnotations", &inline_table(annotations));
        }
    }
    out
}

fn field(out: &mut String, key: &str, value: &str) {
    let _ = writeln!(out, "{key} = {value}");
}

pub(crate) fn decision_name(decision: PolicyDecision) -> &'static str {
    match decision {
        PolicyDecision::Allow => "allow",
        PolicyDecision::Deny => "deny",
        PolicyDecision::AskUser => "ask_user",
    }
}

/// One string stays a string (what Gemini CLI requires next to `commandPrefix`).
fn strings(items: &[String]) -> String {
    match items {
        [one] => string(one),
        _ => format!("[{}]", list(items)),
    }
}

fn list(items: &[String]) -> String {
    items.iter().map(|item| string(item)).collect::<Vec<_>>().join(", ")
}

/// A TOML basic string: JSON's escapes are all valid TOML escapes; TOML also
/// forbids a raw DEL, which JSON leaves as it is.
fn string(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default().replace('\u{7f}', "\\u007f")
}

fn inline_table(map: &serde_json::Map<String, Value>) -> String {
    let pairs: Vec<String> = map.iter().map(|(k, v)| format!("{} = {}", string(k), toml_value(v))).collect();
    format!("{{ {} }}", pairs.join(", "))
}

fn toml_value(value: &Value) -> String {
    match value {
        // TOML has no null; an annotation that is null cannot equal anything a tool sends.
        Value::Null => string(""),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => n.to_string(),
        Value::String(s) => string(s),
        Value::Array(items) => format!("[{}]", items.iter().map(toml_value).collect::<Vec<_>>().join(", ")),
        Value::Object(map) => inline_table(map),
    }
}

fn one_line(text: &str) -> String {
    text.chars().map(|c| if c.is_control() { ' ' } else { c }).collect()
}
