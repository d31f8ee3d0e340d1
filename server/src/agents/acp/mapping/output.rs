//! A tool's `rawOutput` as text, for agents that send no `content` with a
//! result (codex-acp sends its exec result as JSON only).

use serde_json::Value;

/// Keys that hold what a command printed, best first: codex's
/// `formatted_output` (what the model saw) and `aggregated_output` (stdout and
/// stderr interleaved), then the common `output`, `stdout`/`stderr`.
const WHOLE_OUTPUT: [&str; 4] = ["formatted_output", "aggregated_output", "output", "result"];

/// The text a user reads for a raw output: a string as it is; an object's
/// printed output (with a non-zero exit code said), else pretty JSON.
pub fn output_text(raw: &Value) -> String {
    match raw {
        Value::Null => String::new(),
        Value::String(text) => text.clone(),
        Value::Object(map) => {
            let text = |key: &str| map.get(key).and_then(Value::as_str);
            // A command that printed nothing has its output key, empty: that is its output.
            let present: Vec<&str> = WHOLE_OUTPUT.iter().filter_map(|key| text(key)).collect();
            let whole = present.iter().find(|text| !text.is_empty()).or(present.first());
            let printed = whole.map(|text| text.to_string()).or_else(|| {
                let parts: Vec<&str> = ["stdout", "stderr"].iter().filter_map(|key| text(key)).collect();
                (!parts.is_empty())
                    .then(|| parts.iter().filter(|part| !part.is_empty()).copied().collect::<Vec<_>>().join("\n"))
            });
            let exit = map.get("exit_code").or_else(|| map.get("exitCode")).and_then(Value::as_i64);
            match (printed, exit) {
                (Some(printed), Some(code)) if code != 0 => format!("{printed}\n(exit code {code})"),
                (Some(printed), _) => printed,
                (None, Some(code)) if code != 0 => format!("(exit code {code}, no output)"),
                (None, Some(_)) if map.len() <= 3 => String::new(),
                (None, _) => pretty(raw),
            }
        }
        // Content blocks, as an MCP tool answers (Claude Code's tools that run through the hub).
        Value::Array(blocks) if !blocks.is_empty() && blocks.iter().all(|block| block["type"] == "text") => {
            blocks.iter().filter_map(|block| block["text"].as_str()).collect::<Vec<_>>().join("\n")
        }
        other => pretty(other),
    }
}

fn pretty(value: &Value) -> String {
    serde_json::to_string_pretty(value).unwrap_or_else(|_| value.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn printed_output_is_picked_from_the_keys_agents_use() {
        assert_eq!(output_text(&json!("a\nb")), "a\nb");
        let codex = json!({"formatted_output": "hi\n", "aggregated_output": "hi\n", "exit_code": 0,
            "stdout": "hi\n", "stderr": "", "duration": {"secs": 0, "nanos": 3}});
        assert_eq!(output_text(&codex), "hi\n");
        assert_eq!(output_text(&json!({"stdout": "out", "stderr": "err", "exit_code": 2})), "out\nerr\n(exit code 2)");
        assert_eq!(output_text(&json!({"exit_code": 1})), "(exit code 1, no output)");
        let blocks = json!([{"type": "text", "text": "one"}, {"type": "text", "text": "two"}]);
        assert_eq!(output_text(&blocks), "one\ntwo", "an MCP tool's content blocks read as their text");
        assert_eq!(output_text(&json!([{"type": "image"}])), "[\n  {\n    \"type\": \"image\"\n  }\n]");
        assert_eq!(output_text(&json!({"exit_code": 0, "stdout": ""})), "");
        let silent = json!({"formatted_output": "", "aggregated_output": "", "exit_code": 0, "stdout": "",
            "call_id": "c", "turn_id": "t", "cwd": "/p", "command": ["/bin/bash", "-lc", "true"]});
        assert_eq!(output_text(&silent), "", "printed nothing: no JSON dump of the bookkeeping");
        assert_eq!(
            output_text(&json!({"files": ["a"], "count": 1})),
            "{\n  \"files\": [\n    \"a\"\n  ],\n  \"count\": 1\n}"
        );
        assert_eq!(output_text(&Value::Null), "");
    }
}
