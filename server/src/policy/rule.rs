//! One rule of a policy, and whether it matches a call (Gemini CLI's `ruleMatches`).

use protocol::api::{PolicyDecision, RuleOrigin, RuleTier, RuleView};
use regex::Regex;

use super::args::{build_args_patterns, compile_js_regex, is_safe_regexp};
use super::Mode;

/// Gemini CLI's name of the shell tool: `commandPrefix`/`commandRegex` rules are about it.
pub const SHELL_TOOL: &str = "run_shell_command";
/// Gemini CLI treats both names as the shell tool (`SHELL_TOOL_NAMES`).
pub const SHELL_TOOL_NAMES: [&str; 2] = [SHELL_TOOL, "ShellTool"];
/// Gemini CLI's priority for "Allow for all future sessions": workspace tier + .950.
pub const ALWAYS_ALLOW_PRIORITY: u32 = 950;
/// Rule sources for rules saved from a card.
pub const SAVED_SOURCE: &str = "saved in the hub";

/// A policy rule, as a policy file wrote it (fields keep Gemini CLI's meaning).
#[derive(Debug, Clone)]
pub struct Rule {
    pub id: String,
    pub tier: RuleTier,
    pub origin: RuleOrigin,
    /// Readable: `<path>, rule 2`, "saved in the hub", "built-in guard rail: <name>".
    pub source: String,
    /// Never empty once loaded: `commandPrefix`/`commandRegex` imply `run_shell_command`.
    pub tool_names: Vec<String>,
    pub command_prefixes: Vec<String>,
    pub command_regex: Option<String>,
    pub args_pattern: Option<String>,
    pub decision: PolicyDecision,
    /// As written, 0–999.
    pub priority: u32,
    /// Empty: every mode. Gemini CLI's `autoEdit` and `plan` are kept but never active here.
    pub modes: Vec<String>,
    pub deny_message: Option<String>,
    pub allow_redirection: bool,
    pub created_at: Option<u64>,
    /// Gemini CLI fields about things the hub's calls never have (an MCP server, a
    /// subagent, tool annotations): kept for display and export; such a rule never matches.
    pub mcp_name: Option<String>,
    pub subagent: Option<String>,
    pub tool_annotations: Option<serde_json::Map<String, serde_json::Value>>,
    /// `false`: only in Gemini CLI's headless mode, so never here (the hub asks people).
    pub interactive: Option<bool>,
    patterns: Vec<Regex>,
}

/// Why a rule could not be saved from a card.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SavedRuleError {
    #[error("a saved rule needs a tool name")]
    NoToolName,
    #[error("a command prefix only applies to {SHELL_TOOL}, not to {0}")]
    PrefixForOtherTool(String),
    #[error("the command prefix is empty")]
    EmptyPrefix,
    #[error("the rule cannot be built: {0}")]
    Pattern(String),
    /// The prefix would allow any command (`python3`, `git`, `find`, `env`):
    /// refused when a rule is saved; a rule saved before stays as it is.
    #[error(
        "the command prefix \"{0}\" would allow running anything (a bare interpreter, shell, wrapper or \
         runner, git without a subcommand, find): make it longer, e.g. the whole command"
    )]
    TooBroad(String),
    /// The prefix holds an option no rule covers (it writes files or runs
    /// programs): such a rule would never allow anything.
    #[error(
        "the command prefix \"{0}\" holds {1}, which writes files or runs programs: no rule covers it, so each such \
         command asks (save the prefix without it)"
    )]
    Widening(String, &'static str),
}

/// Checks a command prefix the user is saving as "Always in this folder" (the
/// card proposes [`super::default_prefix`], which the user may edit): not
/// empty, not [`super::too_broad`].
pub fn check_saved_prefix(prefix: &str) -> Result<(), SavedRuleError> {
    let prefix = prefix.trim();
    if prefix.is_empty() {
        return Err(SavedRuleError::EmptyPrefix);
    }
    if super::too_broad(prefix) {
        return Err(SavedRuleError::TooBroad(prefix.to_string()));
    }
    let words: Vec<String> = prefix.split_whitespace().map(str::to_string).collect();
    if let Some(option) = super::widening::widening_option(&words) {
        return Err(SavedRuleError::Widening(prefix.to_string(), option));
    }
    Ok(())
}

/// What a rule is made of before its patterns are compiled.
#[derive(Debug, Clone, Default)]
pub(crate) struct RuleSpec {
    pub tool_names: Vec<String>,
    pub command_prefixes: Vec<String>,
    pub command_regex: Option<String>,
    pub args_pattern: Option<String>,
    pub modes: Vec<String>,
    pub deny_message: Option<String>,
    pub allow_redirection: bool,
    pub mcp_name: Option<String>,
    pub subagent: Option<String>,
    pub tool_annotations: Option<serde_json::Map<String, serde_json::Value>>,
    pub interactive: Option<bool>,
}

impl Rule {
    /// Compiles the spec's patterns as Gemini CLI's loader does: the built regex must
    /// compile and pass `isSafeRegExp`, else the rule is refused with the reason.
    pub(crate) fn build(
        id: String,
        tier: RuleTier,
        origin: RuleOrigin,
        source: String,
        decision: PolicyDecision,
        priority: u32,
        spec: RuleSpec,
    ) -> Result<Rule, String> {
        let sources =
            build_args_patterns(spec.args_pattern.as_deref(), &spec.command_prefixes, spec.command_regex.as_deref());
        let mut patterns = Vec::with_capacity(sources.len());
        for source in &sources {
            let regex = compile_js_regex(source)?;
            is_safe_regexp(source)?;
            patterns.push(regex);
        }
        Ok(Rule {
            id,
            tier,
            origin,
            source,
            tool_names: spec.tool_names,
            command_prefixes: spec.command_prefixes,
            command_regex: spec.command_regex,
            args_pattern: spec.args_pattern,
            decision,
            priority,
            modes: spec.modes,
            deny_message: spec.deny_message,
            allow_redirection: spec.allow_redirection,
            created_at: None,
            mcp_name: spec.mcp_name,
            subagent: spec.subagent,
            tool_annotations: spec.tool_annotations,
            interactive: spec.interactive,
            patterns,
        })
    }

    /// A rule saved in the hub from a card ("Always in this folder"): allow, tier
    /// Workspace, priority 950 (Gemini CLI's ALWAYS_ALLOW_PRIORITY = workspace tier +
    /// .950), id "hub-<n>", source "saved in the hub".
    pub fn saved(
        id: i64,
        tool_name: &str,
        command_prefix: Option<&str>,
        created_at: u64,
    ) -> Result<Rule, SavedRuleError> {
        let tool_name = tool_name.trim();
        if tool_name.is_empty() {
            return Err(SavedRuleError::NoToolName);
        }
        let command_prefixes = match command_prefix {
            None => Vec::new(),
            Some(_) if !SHELL_TOOL_NAMES.contains(&tool_name) => {
                return Err(SavedRuleError::PrefixForOtherTool(tool_name.to_string()))
            }
            Some(prefix) if prefix.trim().is_empty() => return Err(SavedRuleError::EmptyPrefix),
            Some(prefix) => vec![prefix.trim().to_string()],
        };
        let spec = RuleSpec { tool_names: vec![tool_name.to_string()], command_prefixes, ..RuleSpec::default() };
        let mut rule = Rule::build(
            format!("hub-{id}"),
            RuleTier::Workspace,
            RuleOrigin::Hub,
            SAVED_SOURCE.to_string(),
            PolicyDecision::Allow,
            ALWAYS_ALLOW_PRIORITY,
            spec,
        )
        .map_err(SavedRuleError::Pattern)?;
        rule.created_at = Some(created_at);
        Ok(rule)
    }

    /// `tier base + priority / 1000`, Gemini CLI's ranking number.
    pub fn effective_priority(&self) -> f64 {
        f64::from(tier_base(self.tier)) + f64::from(self.priority) / 1000.0
    }

    /// The same ranking in integers, so equal priorities compare equal exactly.
    pub(crate) fn rank(&self) -> u32 {
        tier_base(self.tier) * 1000 + self.priority
    }

    /// Whether the rule takes part in the mode: its modes include it (none = all),
    /// and it is not limited to Gemini CLI's non-interactive mode.
    pub fn active_in(&self, mode: Mode) -> bool {
        (self.modes.is_empty() || self.modes.iter().any(|m| m == mode.as_str())) && self.interactive != Some(false)
    }

    /// Rules about MCP servers, subagents or tool annotations: the hub's calls have
    /// none of these, and Gemini CLI then does not match them either.
    pub fn never_matches_here(&self) -> bool {
        self.mcp_name.is_some() || self.subagent.is_some() || self.tool_annotations.is_some()
    }

    /// Gemini CLI's `ruleMatches` for a call of the hub (no MCP server, no subagent,
    /// no annotations, interactive), given the arguments' stable stringification.
    pub(crate) fn matches(&self, tool_name: &str, stringified_args: Option<&str>) -> bool {
        if self.never_matches_here() {
            return false;
        }
        if !self.tool_names.iter().any(|pattern| tool_name_matches(pattern, tool_name)) {
            return false;
        }
        if self.patterns.is_empty() {
            return true;
        }
        let Some(text) = stringified_args else { return false };
        self.patterns.iter().any(|pattern| pattern.is_match(text))
    }

    /// Whether the rule is only about the start of a command (a prefix): such a rule
    /// judges simple commands, not a whole command line.
    pub(crate) fn is_prefix_rule(&self) -> bool {
        !self.command_prefixes.is_empty()
    }

    pub fn view(&self, mode: Mode) -> RuleView {
        RuleView {
            id: self.id.clone(),
            tier: self.tier,
            origin: self.origin,
            source: self.source.clone(),
            tool_names: self.tool_names.clone(),
            command_prefixes: self.command_prefixes.clone(),
            command_regex: self.command_regex.clone(),
            args_pattern: self.args_pattern.clone(),
            decision: self.decision,
            priority: self.priority,
            effective_priority: self.effective_priority(),
            modes: self.modes.clone(),
            deny_message: self.deny_message.clone(),
            allow_redirection: self.allow_redirection,
            active: self.active_in(mode) && !self.never_matches_here(),
            created_at: self.created_at,
        }
    }
}

/// Gemini CLI's tier bases: DEFAULT 1, (EXTENSION 2), WORKSPACE 3, USER 4, ADMIN 5.
pub fn tier_base(tier: RuleTier) -> u32 {
    match tier {
        RuleTier::Default => 1,
        RuleTier::Workspace => 3,
        RuleTier::User => 4,
        RuleTier::Admin => 5,
    }
}

/// How strict a decision is: at equal priority the stricter rule wins (the issue
/// asks for deny > ask > allow; Gemini CLI keeps file order there).
pub(crate) fn severity(decision: PolicyDecision) -> u8 {
    match decision {
        PolicyDecision::Allow => 0,
        PolicyDecision::AskUser => 1,
        PolicyDecision::Deny => 2,
    }
}

/// Gemini CLI's `toolName` matching for a call without an MCP server: `*` matches
/// every tool; `mcp_*` and `mcp_<server>_*` need a server, so never; any other name
/// with a `*` is compared literally (as `matchesWildcard` does); legacy aliases count.
fn tool_name_matches(pattern: &str, tool_name: &str) -> bool {
    if pattern == "*" {
        return true;
    }
    if pattern.contains('*') {
        if pattern == "mcp_*" || (pattern.starts_with("mcp_") && pattern.ends_with("_*")) {
            return false;
        }
        return pattern == tool_name;
    }
    aliases(tool_name).any(|name| name == pattern)
}

/// Gemini CLI's `TOOL_LEGACY_ALIASES`: `search_file_content` is now `grep_search`.
fn aliases(name: &str) -> impl Iterator<Item = &str> {
    const LEGACY: [(&str, &str); 1] = [("search_file_content", "grep_search")];
    let other = LEGACY.iter().find_map(|(old, new)| {
        if name == *old {
            Some(*new)
        } else if name == *new {
            Some(*old)
        } else {
            None
        }
    });
    std::iter::once(name).chain(other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn saved_rules_are_workspace_allows_at_the_always_allow_priority() {
        let rule = Rule::saved(7, "run_shell_command", Some("git status"), 1234).unwrap();
        assert_eq!(rule.id, "hub-7");
        assert_eq!((rule.tier, rule.origin, rule.priority), (RuleTier::Workspace, RuleOrigin::Hub, 950));
        assert!((rule.effective_priority() - 3.95).abs() < 1e-9);
        assert_eq!(rule.view(Mode::Yolo).created_at, Some(1234));
        assert!(rule.matches("run_shell_command", Some("{\0\"command\":\"git status -s\"\0}")));
        assert!(!rule.matches("run_shell_command", Some("{\0\"command\":\"git statusx\"\0}")));
        assert_eq!(
            Rule::saved(1, "write_file", Some("x"), 0).unwrap_err(),
            SavedRuleError::PrefixForOtherTool("write_file".into())
        );
        assert_eq!(Rule::saved(1, " ", None, 0).unwrap_err(), SavedRuleError::NoToolName);
        assert_eq!(Rule::saved(1, SHELL_TOOL, Some("  "), 0).unwrap_err(), SavedRuleError::EmptyPrefix);
        let file_tool = Rule::saved(2, "write_file", None, 0).unwrap();
        assert!(file_tool.matches("write_file", None));
        assert!(!file_tool.matches("replace", None));
    }

    #[test]
    fn tool_names_match_as_in_gemini_cli() {
        let table = [
            ("*", "write_file", true),
            ("write_file", "write_file", true),
            ("write_file", "replace", false),
            ("mcp_*", "mcp_server_tool", false),
            ("mcp_github_*", "mcp_github_issue", false),
            ("write_*", "write_file", false),
            ("write_*", "write_*", true),
            ("search_file_content", "grep_search", true),
            ("grep_search", "search_file_content", true),
        ];
        for (pattern, name, expected) in table {
            assert_eq!(tool_name_matches(pattern, name), expected, "{pattern} vs {name}");
        }
    }
}
