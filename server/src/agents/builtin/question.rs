//! The agent's questions to the user (seed design 003): the `ask_user` tool's
//! arguments, and the answers each kind of question accepts. No IO.

use protocol::events::InputType;
use serde_json::{json, Value};

use crate::tools::ToolFailure;

pub const TOOL_NAME: &str = "ask_user";

/// What the model sees when the user turned the question down.
pub const REJECTED_ANSWER: &str = "The user rejected the question; the turn was ended.";

/// The tool as the model sees it.
pub fn definition() -> Value {
    json!({"type": "function", "function": {
        "name": TOOL_NAME,
        "description": "Ask the user a question and wait for the answer. input_type 'approval' asks yes or \
            no (choices: the two button labels), 'choice' asks to pick one of choices, 'text' asks for free \
            text. Use it when you need a decision only the user can make.",
        "parameters": {
            "type": "object",
            "properties": {
                "prompt": {"type": "string", "description": "The question."},
                "input_type": {"type": "string", "enum": ["approval", "choice", "text"]},
                "choices": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["prompt", "input_type"],
        },
    }})
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Question {
    pub prompt: String,
    pub input_type: InputType,
    pub choices: Vec<String>,
}

/// A question the user cannot answer: it is answered as rejected, and this says why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unanswerable {
    pub prompt: String,
    pub reason: String,
}

/// Reads the model's arguments. Arguments that are not a question at all are a
/// tool error the model can fix; a question with no way to answer it is
/// [`Unanswerable`] (the seed's "treat as rejection").
pub fn parse(args: &Value) -> Result<Result<Question, Unanswerable>, ToolFailure> {
    let invalid = |message: &str| ToolFailure::new("invalid_arguments", message);
    let prompt = args
        .get("prompt")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|prompt| !prompt.is_empty())
        .ok_or_else(|| invalid("ask_user needs a non-empty 'prompt' string."))?
        .to_string();
    let choices = match args.get("choices") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(items)) => items
            .iter()
            .map(|item| item.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| invalid("ask_user 'choices' must be a list of strings."))?,
        Some(_) => return Err(invalid("ask_user 'choices' must be a list of strings.")),
    };
    let kind = args.get("input_type").and_then(Value::as_str).unwrap_or("approval");
    let unanswerable = |reason: String| Ok(Err(Unanswerable { prompt: prompt.clone(), reason }));
    let input_type = match kind {
        "approval" => InputType::Approval,
        "choice" => InputType::Choice,
        "text" => InputType::Text,
        other => return unanswerable(format!("unknown input_type '{other}' (approval, choice or text)")),
    };
    if input_type != InputType::Text && choices.is_empty() {
        return unanswerable(format!("a question of type {kind} needs choices"));
    }
    Ok(Ok(Question { prompt, input_type, choices }))
}

/// A valid answer: what the model is told, or a rejection (the turn ends).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    Given(String),
    Rejected,
}

impl Question {
    /// Checks the user's `response` (`"approve"`, `"reject"`, `{index, value}` or
    /// text, by type). `"reject"` turns down any kind of question.
    pub fn answer(&self, response: &Value) -> Result<Answer, String> {
        if response.as_str() == Some("reject") {
            return Ok(Answer::Rejected);
        }
        match self.input_type {
            InputType::Approval => match response.as_str() {
                Some("approve") => Ok(Answer::Given(format!(
                    "The user approved ({}).",
                    self.choices.first().map_or("yes", String::as_str)
                ))),
                _ => Err("This question takes \"approve\" or \"reject\".".into()),
            },
            InputType::Choice => {
                let index = response.get("index").and_then(Value::as_u64).map(|index| index as usize);
                let value = response.get("value").and_then(Value::as_str);
                let hint = || {
                    format!("Pick one of the {} choices: {{\"index\", \"value\"}} or \"reject\".", self.choices.len())
                };
                let (Some(index), Some(value)) = (index, value) else { return Err(hint()) };
                match self.choices.get(index) {
                    None => Err(format!("Choice {index} does not exist. {}", hint())),
                    Some(choice) if choice != value => {
                        Err(format!("Choice {index} is \"{choice}\", not \"{value}\". {}", hint()))
                    }
                    Some(choice) => Ok(Answer::Given(format!(
                        "The user chose option {} of {}: {choice}",
                        index + 1,
                        self.choices.len()
                    ))),
                }
            }
            InputType::Text => match response.as_str().map(str::trim) {
                Some(text) if !text.is_empty() => Ok(Answer::Given(format!("The user answered: {text}"))),
                _ => Err("This question takes a non-empty text answer (or \"reject\").".into()),
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(input_type: InputType, choices: &[&str]) -> Question {
        Question { prompt: "?".into(), input_type, choices: choices.iter().map(|c| c.to_string()).collect() }
    }

    #[test]
    fn arguments_become_questions() {
        let parsed = parse(&json!({"prompt": " Which? ", "input_type": "choice", "choices": ["a", "b"]}));
        assert_eq!(parsed.unwrap().unwrap(), question(InputType::Choice, &["a", "b"]).with_prompt("Which?"));
        let text = parse(&json!({"prompt": "Name?", "input_type": "text"})).unwrap().unwrap();
        assert_eq!(text.input_type, InputType::Text);
    }

    #[test]
    fn questions_without_a_way_to_answer_are_unanswerable() {
        let empty = parse(&json!({"prompt": "Ok?", "input_type": "approval", "choices": []})).unwrap();
        assert!(empty.unwrap_err().reason.contains("needs choices"));
        let no_choices = parse(&json!({"prompt": "Which?", "input_type": "choice"})).unwrap();
        assert!(no_choices.is_err());
        let unknown = parse(&json!({"prompt": "Ok?", "input_type": "slider", "choices": ["a"]})).unwrap();
        assert!(unknown.unwrap_err().reason.contains("unknown input_type 'slider'"));
    }

    #[test]
    fn arguments_that_are_no_question_are_tool_errors() {
        assert_eq!(parse(&json!({"input_type": "text"})).unwrap_err().kind, "invalid_arguments");
        assert_eq!(parse(&json!({"prompt": "  "})).unwrap_err().kind, "invalid_arguments");
        assert_eq!(parse(&json!({"prompt": "x", "choices": [1, 2]})).unwrap_err().kind, "invalid_arguments");
    }

    #[test]
    fn approval_takes_approve_or_reject_only() {
        let q = question(InputType::Approval, &["Delete", "Keep"]);
        assert_eq!(q.answer(&json!("approve")), Ok(Answer::Given("The user approved (Delete).".into())));
        assert_eq!(q.answer(&json!("reject")), Ok(Answer::Rejected));
        for bad in [json!("yes"), json!(""), json!({"index": 0, "value": "Delete"}), json!(true), Value::Null] {
            assert!(q.answer(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn text_takes_any_non_blank_text() {
        let q = question(InputType::Text, &[]);
        assert_eq!(q.answer(&json!(" blue ")), Ok(Answer::Given("The user answered: blue".into())));
        assert_eq!(q.answer(&json!("reject")), Ok(Answer::Rejected));
        assert!(q.answer(&json!("   ")).is_err());
        assert!(q.answer(&json!(3)).is_err());
    }

    /// Property: for any list of choices, exactly the pairs (i, choices[i]) are
    /// accepted, and they name that choice; every other index or value is refused.
    #[test]
    fn a_choice_is_accepted_exactly_when_index_and_value_agree() {
        let pool = ["red", "green", "blue", "red", "", "ünï", "a b"];
        for len in 1..=pool.len() {
            for offset in 0..pool.len() {
                let choices: Vec<&str> = (0..len).map(|i| pool[(i + offset) % pool.len()]).collect();
                let q = question(InputType::Choice, &choices);
                for index in 0..len + 2 {
                    for value in pool.iter().chain(&["nothing"]) {
                        let answer = q.answer(&json!({"index": index, "value": value}));
                        let valid = choices.get(index) == Some(value);
                        assert_eq!(answer.is_ok(), valid, "{choices:?} {index} {value:?}");
                        if let Ok(Answer::Given(text)) = answer {
                            assert!(text.starts_with(&format!("The user chose option {} of {len}:", index + 1)));
                        }
                    }
                }
                assert!(q.answer(&json!({"index": -1, "value": choices[0]})).is_err());
                assert!(q.answer(&json!({"index": 0})).is_err());
                assert!(q.answer(&json!("approve")).is_err());
            }
        }
    }

    impl Question {
        fn with_prompt(mut self, prompt: &str) -> Self {
            self.prompt = prompt.into();
            self
        }
    }
}
