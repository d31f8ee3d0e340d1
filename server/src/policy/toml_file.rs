//! One policy file read as Gemini CLI's loader reads it (`toml-loader.ts`), except
//! that a bad rule costs only that rule: Gemini CLI 0.61 drops the whole file when
//! one rule fails its schema; the issue asks that the others still apply.

use protocol::api::{PolicyDecision, PolicyProblem, RuleOrigin, RuleTier};
use toml::{Table, Value};

use super::rule::{Rule, RuleSpec, SHELL_TOOL};

/// Gemini CLI's `ApprovalMode` values, the only ones its schema accepts in `modes`.
const KNOWN_MODES: [&str; 4] = ["default", "autoEdit", "yolo", "plan"];

/// Reads the `[[rule]]`s of one policy file. Rules get ids `<id_prefix>-<n>` and
/// sources `<source_path>, rule <n>` (n counts `[[rule]]`s from 1). A file that is
/// not TOML, or whose `rule` is not an array of tables, is one problem with no rule
/// number and gives no rules; a bad rule is a problem naming its number, and the
/// other rules still load. `[[safety_checker]]` entries are not run by the hub.
pub fn parse_policy_file(
    text: &str,
    source_path: &str,
    tier: RuleTier,
    id_prefix: &str,
) -> (Vec<Rule>, Vec<PolicyProblem>) {
    let problem = |rule: Option<usize>, message: String| PolicyProblem { file: source_path.to_string(), rule, message };
    let table: Table = match text.parse() {
        Ok(table) => table,
        Err(err) => {
            let message = format!("not valid TOML, the file is ignored: {}", err.to_string().trim());
            return (Vec::new(), vec![problem(None, message)]);
        }
    };
    let entries = match table.get("rule") {
        None => return (Vec::new(), Vec::new()),
        Some(Value::Array(entries)) => entries,
        Some(_) => {
            let message = "`rule` must be an array of tables (`[[rule]]`), the file is ignored".to_string();
            return (Vec::new(), vec![problem(None, message)]);
        }
    };
    let mut rules = Vec::new();
    let mut problems = Vec::new();
    for (index, entry) in entries.iter().enumerate() {
        let number = index + 1;
        let built = match entry {
            Value::Table(fields) => read_rule(fields).and_then(|(decision, priority, spec)| {
                Rule::build(
                    format!("{id_prefix}-{number}"),
                    tier,
                    RuleOrigin::File,
                    format!("{source_path}, rule {number}"),
                    decision,
                    priority,
                    spec,
                )
            }),
            _ => Err("a rule must be a table".to_string()),
        };
        match built {
            Ok(rule) => rules.push(rule),
            Err(why) => problems.push(problem(Some(number), format!("{why}; the rule is ignored"))),
        }
    }
    (rules, problems)
}

/// One `[[rule]]`, validated field by field as Gemini CLI's zod schema and
/// `validateShellCommandSyntax` do. Unknown fields are ignored, as zod strips them.
fn read_rule(fields: &Table) -> Result<(PolicyDecision, u32, RuleSpec), String> {
    let decision = match fields.get("decision") {
        None => return Err("decision is required".into()),
        Some(Value::String(text)) => {
            parse_decision(text).ok_or_else(|| format!("unknown decision {text:?} (allow, deny or ask_user)"))?
        }
        Some(_) => return Err("decision must be a string (allow, deny or ask_user)".into()),
    };
    let priority = read_priority(fields.get("priority"))?;
    let command_prefixes = match fields.get("commandPrefix") {
        None => Vec::new(),
        Some(value) => {
            let prefixes = string_or_strings(value, "commandPrefix")?;
            if prefixes.is_empty() || prefixes.iter().any(String::is_empty) {
                return Err("commandPrefix must not be empty".into());
            }
            prefixes
        }
    };
    let command_regex = optional_string(fields, "commandRegex")?;
    let args_pattern = optional_string(fields, "argsPattern")?;
    let mcp_name = optional_string(fields, "mcpName")?;
    let shell_sugar = !command_prefixes.is_empty() || command_regex.is_some();
    let tool_names = match fields.get("toolName") {
        Some(value) => {
            let names = string_or_strings(value, "toolName")?;
            if names.is_empty() || names.iter().any(String::is_empty) {
                return Err("toolName must not be empty (use \"*\" for every tool)".into());
            }
            if shell_sugar && !matches!(value, Value::String(name) if name == SHELL_TOOL) {
                return Err(format!(
                    "commandPrefix and commandRegex can only be used with toolName = \"{SHELL_TOOL}\""
                ));
            }
            names
        }
        // The docs call commandPrefix/commandRegex sugar for the shell tool; an
        // mcpName alone means every tool of that server.
        None if shell_sugar => vec![SHELL_TOOL.to_string()],
        None if mcp_name.is_some() => vec!["*".to_string()],
        None => return Err("toolName is required (use \"*\" for every tool)".into()),
    };
    if shell_sugar && args_pattern.is_some() {
        return Err("commandPrefix/commandRegex and argsPattern cannot be used together".into());
    }
    if !command_prefixes.is_empty() && command_regex.is_some() {
        return Err("commandPrefix and commandRegex cannot be used together".into());
    }
    let modes = match fields.get("modes") {
        None => Vec::new(),
        Some(Value::Array(items)) => {
            let mut modes = Vec::with_capacity(items.len());
            for item in items {
                match item.as_str() {
                    Some(mode) if KNOWN_MODES.contains(&mode) => modes.push(mode.to_string()),
                    Some(mode) => return Err(format!("unknown mode {mode:?} (default, autoEdit, yolo or plan)")),
                    None => return Err("modes must be an array of strings".into()),
                }
            }
            modes
        }
        Some(_) => return Err("modes must be an array of strings".into()),
    };
    let deny_message = match optional_string(fields, "denyMessage")? {
        Some(message) => Some(message),
        None => optional_string(fields, "deny_message")?,
    };
    let allow_redirection = match optional_bool(fields, "allowRedirection")? {
        Some(allow) => allow,
        None => optional_bool(fields, "allow_redirection")?.unwrap_or(false),
    };
    let subagent = optional_string(fields, "subagent")?;
    if mcp_name.as_deref() == Some("") || subagent.as_deref() == Some("") {
        return Err("mcpName and subagent must not be empty when given".into());
    }
    let tool_annotations = match fields.get("toolAnnotations") {
        None => None,
        Some(Value::Table(table)) => Some(table.iter().map(|(k, v)| (k.clone(), to_json(v))).collect()),
        Some(_) => return Err("toolAnnotations must be a table".into()),
    };
    let spec = RuleSpec {
        tool_names,
        command_prefixes,
        command_regex,
        args_pattern,
        modes,
        deny_message,
        allow_redirection,
        mcp_name,
        subagent,
        tool_annotations,
        interactive: optional_bool(fields, "interactive")?,
    };
    Ok((decision, priority, spec))
}

pub(crate) fn parse_decision(text: &str) -> Option<PolicyDecision> {
    match text {
        "allow" => Some(PolicyDecision::Allow),
        "deny" => Some(PolicyDecision::Deny),
        "ask_user" => Some(PolicyDecision::AskUser),
        _ => None,
    }
}

/// 0–999, an integer; `10.0` passes as in JavaScript, where it is the number 10.
fn read_priority(value: Option<&Value>) -> Result<u32, String> {
    let number = match value {
        None => return Err("priority is required".into()),
        Some(Value::Integer(n)) => *n as f64,
        Some(Value::Float(x)) if x.fract() == 0.0 => *x,
        Some(Value::Float(_)) => return Err("priority must be an integer".into()),
        Some(_) => return Err("priority must be a number".into()),
    };
    if number < 0.0 {
        return Err("priority must be >= 0".into());
    }
    if number > 999.0 {
        return Err("priority must be <= 999 (1000 and above would jump to the next tier)".into());
    }
    Ok(number as u32)
}

fn string_or_strings(value: &Value, field: &str) -> Result<Vec<String>, String> {
    match value {
        Value::String(text) => Ok(vec![text.clone()]),
        Value::Array(items) => items
            .iter()
            .map(|item| item.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| format!("{field} must be a string or an array of strings")),
        _ => Err(format!("{field} must be a string or an array of strings")),
    }
}

fn optional_string(fields: &Table, field: &str) -> Result<Option<String>, String> {
    match fields.get(field) {
        None => Ok(None),
        Some(Value::String(text)) => Ok(Some(text.clone())),
        Some(_) => Err(format!("{field} must be a string")),
    }
}

fn optional_bool(fields: &Table, field: &str) -> Result<Option<bool>, String> {
    match fields.get(field) {
        None => Ok(None),
        Some(Value::Boolean(b)) => Ok(Some(*b)),
        Some(_) => Err(format!("{field} must be true or false")),
    }
}

fn to_json(value: &Value) -> serde_json::Value {
    match value {
        Value::String(s) => serde_json::Value::String(s.clone()),
        Value::Integer(n) => serde_json::Value::from(*n),
        Value::Float(x) => serde_json::Value::from(*x),
        Value::Boolean(b) => serde_json::Value::Bool(*b),
        Value::Datetime(d) => serde_json::Value::String(d.to_string()),
        Value::Array(items) => serde_json::Value::Array(items.iter().map(to_json).collect()),
        Value::Table(table) => table.iter().map(|(k, v)| (k.clone(), to_json(v))).collect(),
    }
}
