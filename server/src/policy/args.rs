//! What a rule's patterns are matched against, built exactly as Gemini CLI 0.61
//! builds it (`packages/core/src/policy/stable-stringify.ts` and `utils.ts`), so a
//! pattern written for the terminal matches the same calls here.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::Value;

/// Gemini CLI's `stableStringify`: JSON with object keys sorted, and each pair of
/// the TOP-LEVEL object wrapped in NUL characters (`{\0"command":"ls"\0}`), so a
/// pattern can anchor on a whole argument with `\x00"file_path":"…"\x00`.
pub fn stable_stringify(args: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, args, true);
    out
}

fn write_value(out: &mut String, value: &Value, top_level: bool) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&js_number(n)),
        // JSON.stringify and serde_json escape strings alike: `"`, `\`, the short
        // escapes, other controls as lowercase `\u00xx`, nothing else.
        Value::String(s) => out.push_str(&json_string(s)),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(out, item, false);
            }
            out.push(']');
        }
        Value::Object(map) => {
            // `Object.keys(…).sort()` orders by UTF-16 code units, not by code points.
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort_by(|a, b| a.encode_utf16().cmp(b.encode_utf16()));
            out.push('{');
            for (i, key) in keys.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                if top_level {
                    out.push('\0');
                }
                out.push_str(&json_string(key));
                out.push(':');
                write_value(out, &map[key.as_str()], false);
                if top_level {
                    out.push('\0');
                }
            }
            out.push('}');
        }
    }
}

/// A JSON string literal, as `JSON.stringify` writes it.
pub fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| String::from("\"\""))
}

/// A number as JavaScript prints it: `1.0` is `1`, large and small ones use `e+N`.
fn js_number(n: &serde_json::Number) -> String {
    if n.is_i64() || n.is_u64() {
        return n.to_string();
    }
    let Some(x) = n.as_f64() else { return n.to_string() };
    if !x.is_finite() {
        return "null".into();
    }
    if x == x.trunc() && x.abs() < 1e21 {
        return format!("{x:.0}");
    }
    if x.abs() >= 1e-6 && x.abs() < 1e21 {
        return format!("{x}");
    }
    let text = format!("{x:e}");
    match text.split_once('e') {
        Some((mantissa, exp)) if !exp.starts_with('-') => format!("{mantissa}e+{exp}"),
        _ => text,
    }
}

/// The regex sources a rule matches the stringified arguments with: one per
/// command prefix, or the command regex behind `"command":"`, or the args pattern
/// (Gemini CLI's `buildArgsPatterns`). Empty: the rule looks at no argument.
pub fn build_args_patterns(
    args_pattern: Option<&str>,
    command_prefixes: &[String],
    command_regex: Option<&str>,
) -> Vec<String> {
    if !command_prefixes.is_empty() {
        return command_prefixes.iter().map(|prefix| prefix_pattern(prefix)).collect();
    }
    if let Some(regex) = command_regex {
        return vec![format!("\"command\":\"{regex}")];
    }
    args_pattern.map(str::to_string).into_iter().collect()
}

/// `"command":"<prefix>` as JSON, without the closing quote, escaped, then a word
/// boundary: whitespace, the closing quote, or an escaped quote. So `git status`
/// covers `git status -s` and `git status` but not `git statusx`.
fn prefix_pattern(prefix: &str) -> String {
    let encoded = json_string(prefix);
    let open = &encoded[..encoded.len() - 1];
    format!("{}(?:[\\s\"]|\\\\\")", regex::escape(&format!("\"command\":{open}")))
}

/// Gemini CLI's `isSafeRegExp`: it refuses patterns over 2,048 characters and any
/// group with a quantifier inside that is itself quantified (a ReDoS guard for
/// JavaScript's backtracking engine). The hub's engine cannot be led into
/// catastrophic backtracking, but a rule Gemini CLI refuses must not apply here.
pub fn is_safe_regexp(pattern: &str) -> Result<(), String> {
    static NESTED: LazyLock<Regex> = LazyLock::new(|| Regex::new(r"\([^)]*[*+?{].*\)[*+?{]").expect("valid"));
    if pattern.chars().count() > 2048 {
        return Err("the pattern is longer than 2048 characters (Gemini CLI refuses it)".into());
    }
    if NESTED.is_match(pattern) {
        return Err(
            "the pattern quantifies a group that has a quantifier inside (Gemini CLI refuses it as a ReDoS risk)"
                .into(),
        );
    }
    Ok(())
}

/// Compiles a pattern written for JavaScript's `RegExp`. `\0` (NUL, which the
/// stringified arguments are delimited with) is spelled `\x00` for this engine;
/// look-around and backreferences have no equivalent and are refused.
pub fn compile_js_regex(pattern: &str) -> Result<Regex, String> {
    Regex::new(&translate_nul(pattern)).map_err(|err| match err {
        regex::Error::Syntax(text) => {
            let lookaround = ["(?=", "(?!", "(?<=", "(?<!"].iter().any(|l| pattern.contains(l));
            let first = text.lines().last().unwrap_or_default().trim().to_string();
            if lookaround {
                format!("look-around is not supported by the hub's regex engine ({first})")
            } else {
                format!("not a valid regular expression: {first}")
            }
        }
        other => format!("not a usable regular expression: {other}"),
    })
}

fn translate_nul(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('0') if !chars.peek().is_some_and(char::is_ascii_digit) => out.push_str("\\x00"),
            Some(next) => {
                out.push('\\');
                out.push(next);
            }
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn stable_stringify_sorts_keys_and_wraps_top_level_pairs_in_nul() {
        let args = json!({"dir_path": "src", "command": "ls -la", "opts": {"z": 1, "a": [true, null, 1.0]}});
        assert_eq!(
            stable_stringify(&args),
            "{\0\"command\":\"ls -la\"\0,\0\"dir_path\":\"src\"\0,\0\"opts\":{\"a\":[true,null,1],\"z\":1}\0}"
        );
        assert_eq!(stable_stringify(&json!("a\"b\n")), "\"a\\\"b\\n\"");
        assert_eq!(stable_stringify(&json!([{"b": 1, "a": 2}])), "[{\"a\":2,\"b\":1}]");
        assert_eq!(stable_stringify(&json!({"k": "\u{1b}\u{7f}é"})), "{\0\"k\":\"\\u001b\u{7f}é\"\0}");
    }

    #[test]
    fn numbers_print_as_javascript_prints_them() {
        for (value, text) in [(json!(1.0), "1"), (json!(0.5), "0.5"), (json!(1e21), "1e+21"), (json!(1e-7), "1e-7")] {
            assert_eq!(stable_stringify(&value), text);
        }
    }

    #[test]
    fn prefix_patterns_match_on_a_word_boundary() {
        let pattern = Regex::new(&prefix_pattern("git status")).unwrap();
        let text = |command: &str| stable_stringify(&json!({ "command": command }));
        assert!(pattern.is_match(&text("git status")));
        assert!(pattern.is_match(&text("git status --short")));
        // As in Gemini CLI: a tab is `\t` in the JSON, not a space (the shell
        // splitter adds a single-spaced variant for deny and ask rules).
        assert!(!pattern.is_match(&text("git status\t-s")));
        assert!(!pattern.is_match(&text("git statusx")));
        assert!(!pattern.is_match(&text("xgit status")));
        // A prefix with a quote is encoded as JSON first, as Gemini CLI does.
        let quoted = Regex::new(&prefix_pattern("echo \"hi\"")).unwrap();
        assert!(quoted.is_match(&text("echo \"hi\" there")));
        assert_eq!(prefix_pattern("a.b"), "\"command\":\"a\\.b(?:[\\s\"]|\\\\\")");
    }

    #[test]
    fn unsafe_patterns_are_refused_as_gemini_cli_refuses_them() {
        assert!(is_safe_regexp("(a+)+").is_err());
        assert!(is_safe_regexp("(?:ab)?").is_err());
        assert!(is_safe_regexp(&"a".repeat(2049)).is_err());
        assert!(is_safe_regexp("\"command\":\"git (commit|push)").is_ok());
        assert!(is_safe_regexp(&prefix_pattern("rm -rf")).is_ok());
    }

    #[test]
    fn javascript_only_syntax_is_translated_or_explained() {
        assert!(compile_js_regex("\\0\"command\"").unwrap().is_match("\0\"command\""));
        assert!(compile_js_regex("a(?=b)").unwrap_err().contains("look-around"));
        assert!(compile_js_regex("a(").unwrap_err().starts_with("not a valid regular expression"));
    }
}
