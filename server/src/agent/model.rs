//! Streaming chat completions from any OpenAI-compatible endpoint (Ollama,
//! llama.cpp, vLLM, OpenAI, Gemini): one POST, the reply read as server-sent
//! events. The chunk types are lenient: local servers omit fields OpenAI always
//! sends.
//!
//! Why not async-openai: its SSE parser (eventsource-stream) copies the rest of
//! its buffer after every line, so a fast reply cost the hub ~15 µs per token,
//! 42% of the relay benchmark's CPU in `memmove`. sse-stream parses in one pass.

use std::borrow::Cow;
use std::collections::BTreeMap;

use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};
use sse_stream::SseStream;

#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
}

pub struct ModelClient {
    http: reqwest::Client,
    /// `{base_url}/chat/completions`
    endpoint: String,
    api_key: Option<String>,
    model: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolCallRequest {
    pub id: String,
    pub name: String,
    /// JSON text as the model wrote it (may be invalid).
    pub arguments: String,
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelReply {
    pub content: String,
    pub tool_calls: Vec<ToolCallRequest>,
}

impl ModelReply {
    /// The assistant message to append to the conversation.
    pub fn to_message(&self) -> Value {
        let mut message = json!({"role": "assistant", "content": self.content});
        if !self.tool_calls.is_empty() {
            message["tool_calls"] = self
                .tool_calls
                .iter()
                .map(|call| json!({"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}))
                .collect();
        }
        message
    }
}

/// One streamed chunk, read in place: text without escapes is borrowed from
/// the event, not copied (one allocation less per token on the hot path).
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Vec<ChunkChoice<'a>>,
    /// Some servers report a failure mid-stream as a chunk with an `error`.
    #[serde(default)]
    error: Option<Value>,
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(default, borrow)]
    delta: Delta<'a>,
}

#[derive(Deserialize, Default)]
struct Delta<'a> {
    #[serde(default, borrow, deserialize_with = "borrowed_text")]
    content: Option<Cow<'a, str>>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
}

/// `Option<Cow<str>>` alone always copies (serde borrows only a `Cow` field of
/// its own); the wrapper borrows, and copies only text with escapes.
fn borrowed_text<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Cow<'de, str>>, D::Error> {
    #[derive(Deserialize)]
    struct Text<'a>(#[serde(borrow)] Cow<'a, str>);
    Option::<Text<'de>>::deserialize(deserializer).map(|text| text.map(|Text(text)| text))
}

#[derive(Deserialize, Debug, Clone, Default)]
pub struct ToolCallDelta {
    #[serde(default)]
    pub index: usize,
    #[serde(default)]
    pub id: Option<String>,
    #[serde(default)]
    pub function: Option<FunctionDelta>,
}

#[derive(Deserialize, Debug, Clone, Default)]
pub struct FunctionDelta {
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub arguments: Option<String>,
}

/// Joins tool-call fragments: id and name arrive once, arguments in pieces,
/// all keyed by `index`.
#[derive(Debug, Default)]
pub struct ToolCallAccumulator {
    calls: BTreeMap<usize, ToolCallRequest>,
}

impl ToolCallAccumulator {
    pub fn add(&mut self, delta: ToolCallDelta) {
        let call = self.calls.entry(delta.index).or_insert_with(|| ToolCallRequest {
            id: String::new(),
            name: String::new(),
            arguments: String::new(),
        });
        if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
            call.id = id;
        }
        if let Some(function) = delta.function {
            if let Some(name) = function.name.filter(|name| !name.is_empty()) {
                call.name = name;
            }
            if let Some(arguments) = function.arguments {
                call.arguments.push_str(&arguments);
            }
        }
    }

    /// The calls in order; ids the model left out are made up so results can refer to them.
    pub fn finish(self, turn: usize) -> Vec<ToolCallRequest> {
        self.calls
            .into_iter()
            .map(|(index, mut call)| {
                if call.id.is_empty() {
                    call.id = format!("call_{turn}_{index}");
                }
                call
            })
            .collect()
    }
}

impl ModelClient {
    pub fn new(config: &ModelConfig) -> Self {
        // HTTPS endpoints need a TLS provider; installing it twice is harmless.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            // The first token matters more than packet count.
            .tcp_nodelay(true)
            .build()
            .expect("the HTTP client builds once a TLS provider is installed");
        Self {
            http,
            endpoint: format!("{}/chat/completions", config.base_url.trim_end_matches('/')),
            api_key: config.api_key.clone().filter(|key| !key.is_empty()),
            model: config.model.clone(),
        }
    }

    pub fn model(&self) -> &str {
        &self.model
    }

    /// Streams one completion; `on_text` gets each piece of assistant text as it arrives.
    /// `turn` numbers the completion within the session (for made-up call ids).
    pub async fn complete(
        &self,
        messages: &[Value],
        tools: &[Value],
        turn: usize,
        mut on_text: impl FnMut(&str),
    ) -> Result<ModelReply, String> {
        let body = json!({"model": self.model, "messages": messages, "tools": tools, "stream": true});
        let mut request = self
            .http
            .post(&self.endpoint)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(body.to_string());
        // Local servers need no key; none is sent rather than an empty one.
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|err| format!("The model endpoint failed: {}", describe(&err)))?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(format!("The model endpoint failed ({status}): {}", error_message(&body)));
        }

        let mut content = String::new();
        let mut calls = ToolCallAccumulator::default();
        // Chunks that have already arrived are taken together, and their text is
        // one delta: a model faster than the browser costs fewer events, a slow
        // one gets no added latency.
        let mut batches = SseStream::from_bytes_stream(response.bytes_stream()).ready_chunks(1024);
        while let Some(batch) = batches.next().await {
            let mut text = String::new();
            // Set by `[DONE]` or a failure; the text before it is still passed on.
            let mut end = None;
            for event in batch {
                match read_event(event, &mut text, &mut calls) {
                    Ok(true) => {}
                    outcome => {
                        end = Some(outcome);
                        break;
                    }
                }
            }
            if !text.is_empty() {
                on_text(&text);
                content.push_str(&text);
            }
            match end {
                None => {}
                Some(Ok(_)) => break,
                Some(Err(message)) => return Err(message),
            }
        }
        Ok(ModelReply { content, tool_calls: calls.finish(turn) })
    }
}

/// Takes one event's text and tool-call fragments; `Ok(false)` at `[DONE]`.
fn read_event(
    event: Result<sse_stream::Sse, sse_stream::Error>,
    text: &mut String,
    calls: &mut ToolCallAccumulator,
) -> Result<bool, String> {
    let event = event.map_err(|err| format!("The model stream failed: {}", describe(&err)))?;
    let Some(data) = event.data else { return Ok(true) };
    if data.trim() == "[DONE]" {
        return Ok(false);
    }
    let chunk: Chunk<'_> = serde_json::from_str(&data)
        .map_err(|err| format!("The model sent a chunk that is not valid JSON ({err}): {data:.200}"))?;
    if let Some(error) = chunk.error {
        return Err(format!("The model stream failed: {}", error_message(&error.to_string())));
    }
    for choice in chunk.choices {
        text.push_str(choice.delta.content.as_deref().unwrap_or_default());
        for call in choice.delta.tool_calls.unwrap_or_default() {
            calls.add(call);
        }
    }
    Ok(true)
}

/// An error with its causes: reqwest's own message alone ("error sending
/// request") does not say that the connection was refused.
fn describe(err: &dyn std::error::Error) -> String {
    let mut message = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// The readable part of an error body: OpenAI's `{"error": {"message"}}`,
/// `{"error": "..."}` (Ollama), `{"message"}`, or the text itself, shortened.
fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let message = parsed.as_ref().and_then(|value| {
        let error = value.get("error").unwrap_or(value);
        error.get("message").and_then(Value::as_str).or_else(|| error.as_str())
    });
    let text = message.unwrap_or(body).trim();
    match text.char_indices().nth(500) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None if text.is_empty() => "no details given".into(),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunk_text_is_borrowed_unless_it_has_escapes() {
        let plain: Chunk<'_> = serde_json::from_str(r#"{"choices":[{"delta":{"content":"abc"}}]}"#).unwrap();
        assert!(matches!(plain.choices[0].delta.content, Some(Cow::Borrowed("abc"))));
        let escaped: Chunk<'_> = serde_json::from_str(r#"{"choices":[{"delta":{"content":"a\nb\u00e9"}}]}"#).unwrap();
        assert!(matches!(&escaped.choices[0].delta.content, Some(Cow::Owned(text)) if text == "a\nbé"));
        let none: Chunk<'_> = serde_json::from_str(r#"{"choices":[{"delta":{"content":null}}]}"#).unwrap();
        assert!(none.choices[0].delta.content.is_none());
        let missing: Chunk<'_> = serde_json::from_str(r#"{"choices":[{"delta":{}}]}"#).unwrap();
        assert!(missing.choices[0].delta.content.is_none());
    }

    fn fragment(index: usize, id: Option<&str>, name: Option<&str>, args: Option<&str>) -> ToolCallDelta {
        ToolCallDelta {
            index,
            id: id.map(String::from),
            function: Some(FunctionDelta { name: name.map(String::from), arguments: args.map(String::from) }),
        }
    }

    #[test]
    fn fragments_of_interleaved_calls_are_joined_by_index() {
        let mut acc = ToolCallAccumulator::default();
        acc.add(fragment(0, Some("a"), Some("run_shell_command"), Some("")));
        acc.add(fragment(1, Some("b"), Some("read_file"), Some("{\"file_")));
        acc.add(fragment(0, None, None, Some("{\"command\":")));
        acc.add(fragment(1, None, None, Some("path\":\"x\"}")));
        acc.add(fragment(0, None, None, Some("\"ls\"}")));
        let calls = acc.finish(1);
        assert_eq!(calls.len(), 2);
        assert_eq!((calls[0].id.as_str(), calls[0].name.as_str()), ("a", "run_shell_command"));
        assert_eq!(calls[0].arguments, "{\"command\":\"ls\"}");
        assert_eq!(calls[1].arguments, "{\"file_path\":\"x\"}");
    }

    #[test]
    fn missing_ids_are_made_up_and_distinct() {
        let mut acc = ToolCallAccumulator::default();
        acc.add(fragment(0, None, Some("glob"), Some("{}")));
        acc.add(fragment(1, Some(""), Some("glob"), Some("{}")));
        let ids: Vec<_> = acc.finish(3).into_iter().map(|call| call.id).collect();
        assert_eq!(ids, ["call_3_0", "call_3_1"]);
    }

    #[test]
    fn error_bodies_are_read_in_the_shapes_servers_use() {
        assert_eq!(
            error_message(r#"{"error":{"message":"model 'x' not found","type":"invalid"}}"#),
            "model 'x' not found"
        );
        assert_eq!(
            error_message(r#"{"error":"model \"x\" not found, try pulling it first"}"#),
            "model \"x\" not found, try pulling it first"
        );
        assert_eq!(error_message(r#"{"message":"Unauthorized"}"#), "Unauthorized");
        assert_eq!(error_message("Bad Gateway\n"), "Bad Gateway");
        assert_eq!(error_message(""), "no details given");
        assert_eq!(error_message(&"x".repeat(600)).chars().count(), 501);
    }

    #[test]
    fn assistant_message_carries_the_tool_calls() {
        let reply = ModelReply {
            content: "ok".into(),
            tool_calls: vec![ToolCallRequest { id: "a".into(), name: "glob".into(), arguments: "{}".into() }],
        };
        let message = reply.to_message();
        assert_eq!(message["tool_calls"][0]["function"]["name"], "glob");
        assert!(ModelReply::default().to_message().get("tool_calls").is_none());
    }
}
