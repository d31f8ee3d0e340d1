//! How rules, policy notes and audit rows read on screen (issue 15), and what
//! "Always in this folder" proposes for a call. Pure: no signals, no requests.

use serde_json::Value;

use crate::transcript::ToolCall;
use protocol::api::{PolicyDecision, RuleTier, RuleView};
use protocol::audit::{AuditDecision, Decider, Outcome};
use protocol::events::{PolicyNote, ToolKind};

/// The Gemini CLI name of the shell tool, which rules match by command prefix.
pub const SHELL_TOOL: &str = "run_shell_command";

/// A rule's part in a call, as its line in the transcript says it.
pub fn note_line(note: &PolicyNote) -> String {
    let message = note.message.as_deref().map(str::trim).filter(|message| !message.is_empty());
    match (note.decision, message) {
        (PolicyDecision::Allow, _) => format!("allowed by rule · {}", note.source),
        (PolicyDecision::Deny, Some(message)) => format!("denied by rule · {}: {message}", note.source),
        (PolicyDecision::Deny, None) => format!("denied by rule · {}", note.source),
        (PolicyDecision::AskUser, _) => format!("asks (rule) · {}", note.source),
    }
}

/// The error type a denied call's result carries.
pub const DENIED_BY_POLICY: &str = "denied_by_policy";

/// The command a shell call runs: its `command` argument, or (an ACP agent
/// that sent no arguments) the title Gemini CLI gives it, which is the command.
pub fn shell_command(call: &ToolCall) -> Option<String> {
    if call.tool_name != SHELL_TOOL && call.kind != ToolKind::Execute {
        return None;
    }
    let text = |key: &str| call.parameters.get(key).and_then(Value::as_str).map(str::to_string);
    let command = call
        .parameters
        .get("command")
        .and_then(command_text)
        .or_else(|| text("title"))
        .or_else(|| (call.tool_name != SHELL_TOOL).then(|| call.tool_name.clone()))?;
    let command = command.trim().trim_matches('`').trim().to_string();
    (!command.is_empty()).then_some(command)
}

/// The tool a rule saved from this call allows, under Gemini CLI's names (as
/// the hub judges an ACP agent's edits: `write_file`, or `replace` for a
/// change of a part of the file).
pub fn rule_tool(call: &ToolCall) -> String {
    if shell_command(call).is_some() {
        return SHELL_TOOL.to_string();
    }
    if call.kind == ToolKind::Edit && !matches!(call.tool_name.as_str(), "write_file" | "replace") {
        let replaces = call.parameters.get("old_string").is_some() || call.parameters.get("new_string").is_some();
        return if replaces { "replace" } else { "write_file" }.to_string();
    }
    call.tool_name.clone()
}

/// A first guess at the prefix to allow, when the hub cannot be asked: the
/// program and, if there is one, its subcommand (`git status`, `cargo test`).
pub fn first_words(command: &str) -> String {
    let first_part = command.split(['\n', ';', '|', '&', '>', '<', '(', ')', '`', '$']).next().unwrap_or_default();
    let mut words = first_part.split_whitespace();
    let Some(program) = words.next() else { return String::new() };
    match words.next() {
        Some(sub) if !sub.starts_with('-') && sub.chars().all(|c| c.is_ascii_alphanumeric() || "-_.:".contains(c)) => {
            format!("{program} {sub}")
        }
        _ => program.to_string(),
    }
}

/// Whether a rule with this prefix covers the command's start, on a word
/// boundary as Gemini CLI builds it (`git status` covers `git status -s`, not
/// `git statusx`).
pub fn prefix_covers(command: &str, prefix: &str) -> bool {
    let (command, prefix) = (command.trim_start(), prefix.trim());
    !prefix.is_empty()
        && command.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with(char::is_whitespace))
}

pub fn tier_label(tier: RuleTier) -> &'static str {
    match tier {
        RuleTier::Default => "built-in tier",
        RuleTier::Workspace => "workspace tier",
        RuleTier::User => "user tier",
        RuleTier::Admin => "admin tier",
    }
}

/// A mode as a person knows it.
pub fn mode_label(mode: &str) -> String {
    match mode {
        "default" => "YOLO off".to_string(),
        "yolo" => "YOLO on".to_string(),
        other => format!("{other} mode"),
    }
}

/// Why a rule does not apply now: it is written for other modes.
pub fn inactive_reason(rule: &RuleView, mode: &str) -> Option<String> {
    if rule.active {
        return None;
    }
    if rule.modes.is_empty() {
        return Some("Inactive.".to_string());
    }
    let modes: Vec<String> = rule.modes.iter().map(|mode| mode_label(mode)).collect();
    Some(format!("Inactive now ({}): applies only with {}.", mode_label(mode), modes.join(" or ")))
}

/// What a rule matches, as (what, value) pairs; every pair must hold.
pub fn rule_matches(rule: &RuleView) -> Vec<(&'static str, String)> {
    let mut matches = Vec::new();
    let tools = match rule.tool_names.as_slice() {
        [] => "any tool".to_string(),
        names if names.iter().any(|name| name == "*") => "any tool".to_string(),
        names => names.join(", "),
    };
    matches.push((if rule.tool_names.len() > 1 { "tools" } else { "tool" }, tools));
    if !rule.command_prefixes.is_empty() {
        let prefixes: Vec<String> = rule.command_prefixes.iter().map(|prefix| format!("“{prefix}”")).collect();
        matches.push(("command starts with", prefixes.join(" or ")));
    }
    if let Some(regex) = &rule.command_regex {
        matches.push(("command matches", format!("/{regex}/")));
    }
    if let Some(pattern) = &rule.args_pattern {
        matches.push(("arguments match", format!("/{pattern}/")));
    }
    matches
}

/// The decision an audit row records, in words. A word a newer hub wrote is
/// shown as it is.
pub fn audit_decision_label(decision: &AuditDecision) -> String {
    let known = match decision {
        AuditDecision::Allowed => "allowed",
        AuditDecision::Approved => "approved",
        AuditDecision::ApprovedEdited => "approved · edited",
        AuditDecision::ApprovedSession => "approved · session",
        AuditDecision::ApprovedAlways => "approved · always",
        AuditDecision::Rejected => "rejected",
        AuditDecision::Feedback => "instruction instead",
        AuditDecision::Denied => "denied",
        AuditDecision::Refused => "refused by hub checks",
        AuditDecision::Stopped => "stopped",
        AuditDecision::ApprovedAgentAlways => "approved · agent's always",
        AuditDecision::RejectedAgentAlways => "rejected · agent's always",
        AuditDecision::ApprovedTurn => "approved · turn",
        AuditDecision::TimedOut => "timed out",
        AuditDecision::ApprovedNetwork => "approved · with network",
        AuditDecision::ApprovedUnsandboxed => "approved · outside the sandbox",
        AuditDecision::Other(word) => return unknown_word(word),
    };
    known.to_string()
}

/// Who made an audit row's decision, in words.
pub fn decided_by_label(decided_by: &Decider) -> String {
    let known = match decided_by {
        Decider::User => "you",
        Decider::Rule => "rule",
        Decider::Yolo => "YOLO",
        Decider::SessionGrant => "session grant",
        Decider::TurnGrant => "turn grant",
        Decider::ReadOnlyDefault => "read-only default",
        Decider::Hub => "the hub",
        Decider::Other(word) => return unknown_word(word),
    };
    known.to_string()
}

/// How a call ended; `pending` while it waits or runs.
pub fn outcome_label(outcome: Option<&Outcome>) -> String {
    match outcome {
        None => "pending".to_string(),
        Some(Outcome::Other(word)) => unknown_word(word),
        Some(outcome) => outcome.as_str().to_string(),
    }
}

/// A word this version of the page does not know, readable.
fn unknown_word(word: &str) -> String {
    word.replace('_', " ")
}

/// How an audit decision looks: allowed-like, refused-like, or neither.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Go,
    Stop,
    Neutral,
}

pub fn decision_tone(decision: &AuditDecision) -> Tone {
    match decision {
        AuditDecision::Allowed
        | AuditDecision::Approved
        | AuditDecision::ApprovedEdited
        | AuditDecision::ApprovedSession
        | AuditDecision::ApprovedAlways
        | AuditDecision::ApprovedTurn
        | AuditDecision::ApprovedNetwork
        | AuditDecision::ApprovedUnsandboxed
        | AuditDecision::ApprovedAgentAlways => Tone::Go,
        AuditDecision::Rejected
        | AuditDecision::Denied
        | AuditDecision::Refused
        | AuditDecision::Stopped
        | AuditDecision::TimedOut
        | AuditDecision::RejectedAgentAlways => Tone::Stop,
        AuditDecision::Feedback | AuditDecision::Other(_) => Tone::Neutral,
    }
}

pub fn outcome_tone(outcome: Option<&Outcome>) -> Tone {
    match outcome {
        Some(Outcome::Ran) => Tone::Go,
        Some(Outcome::Failed | Outcome::Denied | Outcome::Rejected | Outcome::Interrupted | Outcome::Stopped) => {
            Tone::Stop
        }
        Some(Outcome::Skipped | Outcome::Other(_)) | None => Tone::Neutral,
    }
}

/// The start of a long id (sessions are shown by it; the whole is the title).
pub fn short_id(id: &str) -> &str {
    match id.char_indices().nth(8) {
        Some((end, _)) => &id[..end],
        None => id,
    }
}

/// A rule's source for a narrow column: a policy file's name and rule number
/// without its directory ("team.toml, rule 2"); other sources as they are.
pub fn short_source(source: &str) -> &str {
    match source.rfind('/') {
        Some(slash) if source.starts_with('/') || source.starts_with('~') || source.starts_with('.') => {
            &source[slash + 1..]
        }
        _ => source,
    }
}

/// A moment as (year, month, day, hour, minute, second).
pub type Clock = (i64, u32, u32, u32, u32, u32);

pub fn clock_text((year, month, day, hour, minute, second): Clock) -> String {
    format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}:{second:02}")
}

/// Short for a table: the time alone today, else the date and minute.
pub fn when_text(at: Clock, now: Clock) -> String {
    let (year, month, day, hour, minute, second) = at;
    if (year, month, day) == (now.0, now.1, now.2) {
        format!("{hour:02}:{minute:02}:{second:02}")
    } else {
        format!("{year:04}-{month:02}-{day:02} {hour:02}:{minute:02}")
    }
}

/// `YYYY-MM-DD HH:MM:SS` in UTC; the browser shows local time instead.
pub fn utc_time(ms: u64) -> String {
    clock_text(utc_clock(ms))
}

pub fn utc_clock(ms: u64) -> Clock {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (hour, minute, second) = (rest / 3600, rest % 3600 / 60, rest % 60);
    // Days to a civil date (Howard Hinnant's algorithm).
    let z = days as i64 + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month as u32, day as u32, hour as u32, minute as u32, second as u32)
}

/// The moment in the browser's time zone (UTC outside the browser).
pub fn local_clock(ms: u64) -> Clock {
    #[cfg(feature = "hydrate")]
    {
        let date = js_sys::Date::new(&wasm_bindgen::JsValue::from_f64(ms as f64));
        (
            i64::from(date.get_full_year()),
            date.get_month() + 1,
            date.get_date(),
            date.get_hours(),
            date.get_minutes(),
            date.get_seconds(),
        )
    }
    #[cfg(not(feature = "hydrate"))]
    utc_clock(ms)
}

/// Now, in ms since the epoch (the browser's clock in the browser).
pub fn now_ms() -> u64 {
    #[cfg(feature = "hydrate")]
    {
        js_sys::Date::now() as u64
    }
    #[cfg(not(feature = "hydrate"))]
    {
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
    }
}

/// A time for a table (short), and in full for its title; local in the browser.
pub fn time_label(ms: u64) -> (String, String) {
    let at = local_clock(ms);
    (when_text(at, local_clock(now_ms())), clock_text(at))
}

/// A command as the line it runs: a string as it is; words (codex sends
/// `["bash", "-lc", "echo hi"]`) joined as a shell reads them, a shell's
/// `-c` script as the script.
pub fn command_text(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Array(words) => {
            let words = words.iter().map(Value::as_str).collect::<Option<Vec<&str>>>()?;
            Some(match words.as_slice() {
                [shell, "-c" | "-lc", script] if is_shell(shell) => script.to_string(),
                words => shell_join(words),
            })
        }
        _ => None,
    }
}

fn is_shell(program: &str) -> bool {
    matches!(program.rsplit('/').next(), Some("bash" | "sh" | "zsh" | "dash"))
}

/// Words as a POSIX shell line: plain words as they are, others single-quoted.
pub fn shell_join(words: &[&str]) -> String {
    let quote = |word: &&str| {
        let plain = !word.is_empty() && word.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=:,+@%^".contains(c));
        if plain {
            word.to_string()
        } else {
            format!("'{}'", word.replace('\'', r"'\''"))
        }
    };
    words.iter().map(quote).collect::<Vec<_>>().join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::api::RuleOrigin;
    use serde_json::json;

    fn note(decision: PolicyDecision, message: Option<&str>) -> PolicyNote {
        PolicyNote { decision, source: "p.toml rule 2".into(), message: message.map(str::to_string) }
    }

    #[test]
    fn policy_notes_read_as_sentences() {
        let rows = [
            (note(PolicyDecision::Allow, None), "allowed by rule · p.toml rule 2"),
            (note(PolicyDecision::Deny, Some("No force pushes.")), "denied by rule · p.toml rule 2: No force pushes."),
            (note(PolicyDecision::Deny, Some("  ")), "denied by rule · p.toml rule 2"),
            (note(PolicyDecision::AskUser, Some("guard rail")), "asks (rule) · p.toml rule 2"),
        ];
        for (note, line) in rows {
            assert_eq!(note_line(&note), line);
        }
    }

    fn call(tool_name: &str, kind: ToolKind, parameters: Value) -> ToolCall {
        ToolCall {
            tool_id: "t".into(),
            tool_name: tool_name.into(),
            kind,
            parameters,
            diff: None,
            outcome: None,
            policy: None,
            choices: None,
            live: String::new(),
        }
    }

    #[test]
    fn shell_calls_give_their_command_and_file_tools_their_rule_name() {
        let rows = [
            (call(SHELL_TOOL, ToolKind::Execute, json!({"command": " git status "})), Some("git status"), SHELL_TOOL),
            (call("git status", ToolKind::Execute, json!({})), Some("git status"), SHELL_TOOL),
            (call("Run", ToolKind::Execute, json!({"title": "`ls -la`"})), Some("ls -la"), SHELL_TOOL),
            (call("write_file", ToolKind::Edit, json!({"file_path": "a"})), None, "write_file"),
            (call("Writing to a.md", ToolKind::Edit, json!({})), None, "write_file"),
            (call("Edit a.md", ToolKind::Edit, json!({"old_string": "a", "new_string": "b"})), None, "replace"),
            (call("web_fetch", ToolKind::Other, json!({"url": "x"})), None, "web_fetch"),
        ];
        for (call, command, tool) in rows {
            assert_eq!(shell_command(&call).as_deref(), command, "{}", call.tool_name);
            assert_eq!(rule_tool(&call), tool, "{}", call.tool_name);
        }
    }

    #[test]
    fn the_fallback_prefix_is_the_program_and_its_subcommand() {
        let rows = [
            ("git status -s", "git status"),
            ("cargo test -p app", "cargo test"),
            ("ls -la", "ls"),
            ("npm run build && rm -rf /", "npm run"),
            ("git status; rm -rf ~", "git status"),
            ("echo hi > out.txt", "echo hi"),
            ("   ", ""),
        ];
        for (command, prefix) in rows {
            assert_eq!(first_words(command), prefix, "{command}");
        }
    }

    #[test]
    fn a_prefix_covers_a_command_on_a_word_boundary() {
        assert!(prefix_covers("git status -s", "git status"));
        assert!(prefix_covers("git status", " git status "));
        assert!(!prefix_covers("git statusx", "git status"));
        assert!(!prefix_covers("git push", "git status"));
        assert!(!prefix_covers("git status", ""));
    }

    fn rule(active: bool, modes: &[&str]) -> RuleView {
        RuleView {
            id: "hub-1".into(),
            tier: RuleTier::User,
            origin: RuleOrigin::Hub,
            source: "saved in the hub".into(),
            tool_names: vec![SHELL_TOOL.into()],
            command_prefixes: vec!["git status".into(), "git diff".into()],
            command_regex: None,
            args_pattern: Some("\"force\":true".into()),
            decision: PolicyDecision::Allow,
            priority: 100,
            effective_priority: 3.1,
            modes: modes.iter().map(|mode| mode.to_string()).collect(),
            deny_message: None,
            allow_redirection: false,
            active,
            created_at: None,
        }
    }

    #[test]
    fn rules_say_what_they_match_and_why_they_are_inactive() {
        assert_eq!(
            rule_matches(&rule(true, &[])),
            vec![
                ("tool", SHELL_TOOL.to_string()),
                ("command starts with", "“git status” or “git diff”".to_string()),
                ("arguments match", "/\"force\":true/".to_string()),
            ]
        );
        let mut any = rule(true, &[]);
        any.tool_names = vec!["*".into()];
        assert_eq!(rule_matches(&any)[0], ("tool", "any tool".to_string()));
        assert_eq!(inactive_reason(&rule(true, &["yolo"]), "yolo"), None);
        assert_eq!(
            inactive_reason(&rule(false, &["yolo"]), "default").as_deref(),
            Some("Inactive now (YOLO off): applies only with YOLO on.")
        );
        assert_eq!(
            inactive_reason(&rule(false, &["default", "autoEdit"]), "yolo").as_deref(),
            Some("Inactive now (YOLO on): applies only with YOLO off or autoEdit mode.")
        );
    }

    #[test]
    fn audit_words() {
        assert_eq!(audit_decision_label(&AuditDecision::ApprovedAlways), "approved · always");
        assert_eq!(audit_decision_label(&AuditDecision::RejectedAgentAlways), "rejected · agent's always");
        assert_eq!(audit_decision_label(&AuditDecision::Other("approved_turn".into())), "approved turn");
        assert_eq!(decided_by_label(&Decider::SessionGrant), "session grant");
        assert_eq!(decided_by_label(&Decider::User), "you");
        assert_eq!(outcome_label(None), "pending");
        assert_eq!(outcome_label(Some(&Outcome::Ran)), "ran");
        assert_eq!(outcome_label(Some(&Outcome::Other("timed_out".into()))), "timed out");
        assert_eq!(decision_tone(&AuditDecision::Denied), Tone::Stop);
        assert_eq!(decision_tone(&AuditDecision::Stopped), Tone::Stop, "Stop withdrew the card: nothing ran");
        assert_eq!(decision_tone(&AuditDecision::ApprovedAgentAlways), Tone::Go);
        assert_eq!(decision_tone(&AuditDecision::ApprovedSession), Tone::Go);
        assert_eq!(decision_tone(&AuditDecision::Other("x".into())), Tone::Neutral);
        assert_eq!(outcome_tone(Some(&Outcome::Interrupted)), Tone::Stop);
        assert_eq!(outcome_tone(None), Tone::Neutral);
        // Every word this version knows has words of its own on screen, none the raw snake_case.
        for decision in AuditDecision::ALL {
            assert!(!audit_decision_label(decision).contains('_'), "{decision:?}");
        }
        for decider in Decider::ALL {
            assert!(!decided_by_label(decider).contains('_'), "{decider:?}");
        }
    }

    #[test]
    fn ids_and_times_are_short_and_readable() {
        assert_eq!(short_id("0123456789abcdef"), "01234567");
        assert_eq!(short_id("abc"), "abc");
        assert_eq!(utc_time(0), "1970-01-01 00:00:00");
        assert_eq!(utc_time(1_795_000_000_000), "2026-11-18 11:06:40");
        assert_eq!(utc_time(951_782_400_000), "2000-02-29 00:00:00");
        let at = (2026, 11, 23, 13, 32, 16);
        assert_eq!(when_text(at, (2026, 11, 23, 18, 0, 0)), "13:32:16", "today: the time alone");
        assert_eq!(when_text(at, (2026, 11, 24, 9, 0, 0)), "2026-11-23 13:32");
    }

    #[test]
    fn sources_drop_their_directory_in_narrow_columns() {
        assert_eq!(short_source("/tmp/p/.gemini/policies/team.toml, rule 2"), "team.toml, rule 2");
        assert_eq!(short_source("~/.gemini/policies/me.toml, rule 1"), "me.toml, rule 1");
        assert_eq!(short_source("saved in the hub"), "saved in the hub");
        assert_eq!(short_source("built-in guard rail: force-push"), "built-in guard rail: force-push");
        assert_eq!(short_source("built-in guard rail: a/b"), "built-in guard rail: a/b");
    }
}
