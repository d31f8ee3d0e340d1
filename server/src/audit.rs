//! How the audit trail reads: a call's arguments in one short line, and the
//! rows of `GET /api/audit` as NDJSON or CSV. (The rows themselves are kept by
//! [`crate::store`].)

use protocol::audit::AuditEntry;
use serde_json::Value;

/// The longest summary, in characters, the ellipsis included.
pub const SUMMARY_CHARS: usize = 200;

/// A call's arguments, readable and short: the command of a shell call, the
/// path of a file tool, the pattern (and where) of a search, else the
/// arguments as compact JSON. One line of at most [`SUMMARY_CHARS`]
/// characters: a line break shows as `⏎`, a tab as `\t`, other control and
/// text-reordering characters (a "Trojan Source" summary could read as
/// another command) as `\u{..}`; a longer text ends with `…`.
pub fn summarize(tool_name: &str, args: &Value) -> String {
    summarize_within(tool_name, args, SUMMARY_CHARS)
}

/// [`summarize`], at most `max` characters.
pub fn summarize_within(tool_name: &str, args: &Value, max: usize) -> String {
    let text = |key: &str| args.get(key).and_then(Value::as_str).filter(|text| !text.is_empty());
    let readable = match tool_name {
        "run_shell_command" => text("command").map(str::to_string),
        // An edit naming several paths (an ACP agent's) is summed up by all of them.
        "write_file" | "replace" => match args.get("paths").and_then(Value::as_array) {
            Some(paths) => Some(paths.iter().filter_map(Value::as_str).collect::<Vec<_>>().join(", ")),
            None => text("file_path").map(str::to_string),
        },
        "read_file" => text("file_path").map(str::to_string),
        _ => match (text("pattern"), text("path").or_else(|| text("file_path"))) {
            (Some(pattern), Some(path)) => Some(format!("{pattern} in {path}")),
            (Some(pattern), None) => Some(pattern.to_string()),
            (None, Some(path)) => Some(path.to_string()),
            (None, None) => None,
        },
    };
    one_line(&readable.unwrap_or_else(|| args.to_string()), max)
}

/// `text` escaped to one line and cut to `max` characters (the last an ellipsis).
fn one_line(text: &str, max: usize) -> String {
    let mut pieces: Vec<String> = Vec::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        pieces.push(match c {
            '\r' if chars.peek() == Some(&'\n') => continue,
            '\n' | '\r' | '\u{2028}' | '\u{2029}' => "⏎".to_string(),
            '\t' => "\\t".to_string(),
            c if c.is_control() || reorders(c) => format!("\\u{{{:x}}}", c as u32),
            c => c.to_string(),
        });
    }
    let length: usize = pieces.iter().map(|piece| piece.chars().count()).sum();
    if length <= max {
        return pieces.concat();
    }
    // Whole pieces only: an escape is never cut in half.
    let mut out = String::new();
    let mut used = 0;
    for piece in pieces {
        let count = piece.chars().count();
        if used + count > max - 1 {
            break;
        }
        out.push_str(&piece);
        used += count;
    }
    out.push('…');
    out
}

/// Characters that change the order text is shown in (bidirectional controls).
fn reorders(c: char) -> bool {
    matches!(c, '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The CSV header, the fields of [`AuditEntry`] by their JSON names.
pub const CSV_HEADER: &str =
    "id,at,folderPath,sessionId,toolId,toolName,summary,decision,decidedBy,rule,outcome,outcomeAt";

/// The rows as CSV (RFC 4180): the [`CSV_HEADER`] line, then one line per
/// entry, lines ending in CRLF; a field with a comma, a quote, CR or LF is
/// quoted, its quotes doubled; a missing value is an empty field; times are
/// ms since the epoch.
///
/// A spreadsheet would run a field that starts with `=`, `+`, `-`, `@`, a tab
/// or CR as a formula (CSV injection: a command the agent chose could become
/// one), so such a field gets a leading `'`, which spreadsheets show as text;
/// a program reading the CSV sees that apostrophe as part of the value.
pub fn to_csv(entries: &[AuditEntry]) -> String {
    let mut out = String::with_capacity(CSV_HEADER.len() + 2 + entries.len() * 160);
    out.push_str(CSV_HEADER);
    out.push_str("\r\n");
    for entry in entries {
        let optional_ms = |ms: Option<u64>| ms.map(|ms| ms.to_string()).unwrap_or_default();
        let fields = [
            entry.id.to_string().as_str(),
            entry.at.to_string().as_str(),
            &entry.folder_path,
            &entry.session_id,
            &entry.tool_id,
            &entry.tool_name,
            &entry.summary,
            entry.decision.as_str(),
            entry.decided_by.as_str(),
            entry.rule.as_deref().unwrap_or_default(),
            entry.outcome.as_ref().map_or("", |outcome| outcome.as_str()),
            &optional_ms(entry.outcome_at),
        ]
        .map(csv_field);
        out.push_str(&fields.join(","));
        out.push_str("\r\n");
    }
    out
}

/// One CSV field: kept from being read as a formula, then quoted if it must be.
fn csv_field(value: &str) -> String {
    let value =
        if value.starts_with(['=', '+', '-', '@', '\t', '\r']) { format!("'{value}") } else { value.to_string() };
    if value.contains([',', '"', '\r', '\n']) {
        format!("\"{}\"", value.replace('"', "\"\""))
    } else {
        value
    }
}

/// The rows as NDJSON: one JSON object (the API row) per line, each line
/// ending in a newline.
pub fn to_ndjson(entries: &[AuditEntry]) -> String {
    let mut out = String::new();
    for entry in entries {
        // An AuditEntry is strings and numbers: it always serializes.
        out.push_str(&serde_json::to_string(entry).unwrap_or_default());
        out.push('\n');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(id: u64) -> AuditEntry {
        AuditEntry {
            id,
            at: 1_700_000_000_000 + id,
            folder_path: "/home/me/project".into(),
            session_id: "s1".into(),
            tool_id: format!("c{id}"),
            tool_name: "run_shell_command".into(),
            summary: "git status".into(),
            decision: protocol::audit::AuditDecision::Allowed,
            decided_by: protocol::audit::Decider::Rule,
            device: None,
            rule: Some("/home/me/project/.gemini/policies/a.toml, rule 1".into()),
            outcome: Some(protocol::audit::Outcome::Ran),
            outcome_at: Some(1_700_000_000_500 + id),
        }
    }

    #[test]
    fn summaries_name_what_the_call_does_in_one_short_line() {
        let long = "x".repeat(300);
        let cases: Vec<(&str, Value, String)> = vec![
            ("run_shell_command", json!({"command": "git status", "description": "why"}), "git status".into()),
            ("write_file", json!({"file_path": "src/a.rs", "content": "fn main() {}"}), "src/a.rs".into()),
            ("replace", json!({"file_path": "b.rs", "old_string": "a", "new_string": "b"}), "b.rs".into()),
            ("read_file", json!({"file_path": "README.md"}), "README.md".into()),
            (
                "write_file",
                json!({"file_path": "/p/notes.md", "paths": ["/p/notes.md", "/p/.gemini/settings.json"]}),
                "/p/notes.md, /p/.gemini/settings.json".into(),
            ),
            ("list_directory", json!({"path": "src"}), "src".into()),
            ("glob", json!({"pattern": "**/*.rs"}), "**/*.rs".into()),
            ("search_file_content", json!({"pattern": "TODO", "path": "src"}), "TODO in src".into()),
            ("web_fetch", json!({"url": "https://example.com"}), r#"{"url":"https://example.com"}"#.into()),
            ("run_shell_command", json!({}), "{}".into()),
            ("run_shell_command", json!({"command": "a\nb\r\nc\rd"}), "a⏎b⏎c⏎d".into()),
            ("run_shell_command", json!({"command": "a\tb\u{1b}[31m"}), "a\\tb\\u{1b}[31m".into()),
            ("run_shell_command", json!({"command": "ls \u{202e}txt.sh"}), "ls \\u{202e}txt.sh".into()),
            ("run_shell_command", json!({"command": long}), format!("{}…", "x".repeat(199))),
        ];
        for (tool, args, expected) in cases {
            assert_eq!(summarize(tool, &args), expected, "{tool} {args}");
        }
    }

    #[test]
    fn a_long_summary_is_cut_between_escapes_never_inside_one() {
        let command = format!("{}\u{1b}tail", "y".repeat(195));
        let summary = summarize("run_shell_command", &json!({ "command": command }));
        assert_eq!(summary, format!("{}…", "y".repeat(195)));
        let summary = summarize("run_shell_command", &json!({ "command": "é".repeat(250) }));
        assert_eq!(summary.chars().count(), SUMMARY_CHARS, "characters, not bytes");
        assert!(!summary.contains('\n'));
    }

    #[test]
    fn csv_has_the_header_and_one_crlf_line_per_entry_with_empty_fields_for_what_is_missing() {
        let waiting = AuditEntry { rule: None, outcome: None, outcome_at: None, ..entry(2) };
        assert_eq!(
            to_csv(&[entry(1), waiting]),
            "id,at,folderPath,sessionId,toolId,toolName,summary,decision,decidedBy,rule,outcome,outcomeAt\r\n\
             1,1700000000001,/home/me/project,s1,c1,run_shell_command,git status,allowed,rule,\
             \"/home/me/project/.gemini/policies/a.toml, rule 1\",ran,1700000000501\r\n\
             2,1700000000002,/home/me/project,s1,c2,run_shell_command,git status,allowed,rule,,,\r\n"
        );
        assert_eq!(to_csv(&[]), format!("{CSV_HEADER}\r\n"));
    }

    #[test]
    fn csv_fields_are_quoted_as_rfc_4180_says_and_never_read_as_formulas() {
        let cases = [
            ("plain", "plain"),
            ("a,b", "\"a,b\""),
            ("say \"hi\"", "\"say \"\"hi\"\"\""),
            ("line\nbreak", "\"line\nbreak\""),
            ("cr\rhere", "\"cr\rhere\""),
            ("=HYPERLINK(\"http://x\")", "\"'=HYPERLINK(\"\"http://x\"\")\""),
            ("+1", "'+1"),
            ("-rf /", "'-rf /"),
            ("@SUM(A1)", "'@SUM(A1)"),
            ("\tcmd", "'\tcmd"),
            ("\rcmd", "\"'\rcmd\""),
            ("a=b", "a=b"),
            ("", ""),
        ];
        for (value, expected) in cases {
            assert_eq!(csv_field(value), expected, "{value:?}");
        }
        let hostile = AuditEntry { summary: "=1+1,\"x\"".into(), ..entry(3) };
        let csv = to_csv(&[hostile]);
        assert!(csv.contains(",\"'=1+1,\"\"x\"\"\","), "{csv}");
    }

    #[test]
    fn ndjson_is_one_api_row_per_line() {
        let waiting = AuditEntry { rule: None, outcome: None, outcome_at: None, ..entry(2) };
        let text = to_ndjson(&[entry(1), waiting.clone()]);
        assert!(text.ends_with('\n'));
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(lines.len(), 2);
        let first: Value = serde_json::from_str(lines[0]).unwrap();
        assert_eq!(first["folderPath"], "/home/me/project");
        assert_eq!(first["outcomeAt"], 1_700_000_000_501u64);
        let second: AuditEntry = serde_json::from_str(lines[1]).unwrap();
        assert_eq!(second, waiting);
        assert!(!lines[1].contains("outcome"), "no outcome yet: the keys are left out");
        assert_eq!(to_ndjson(&[]), "");
    }
}
