//! Streaming chat completions from any OpenAI-compatible endpoint (Ollama,
//! llama.cpp, vLLM, OpenAI, Gemini): one POST, the reply read as server-sent
//! events. The chunk types are lenient: local servers omit fields OpenAI always
//! sends.
//!
//! Why not async-openai: its SSE parser (eventsource-stream) copies the rest of
//! its buffer after every line, so a fast reply cost the hub ~15 µs per token,
//! 42% of the relay benchmark's CPU in `memmove`. The reply is read in place
//! instead ([`SseReader`], borrowed chunk text): no allocation per token.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::ops::ControlFlow;

use futures::StreamExt;
use serde::de::{SeqAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::{json, Value};

use super::sse::SseReader;

/// The most one streamed event may hold (a chunk is usually a few hundred bytes).
const MAX_EVENT_BYTES: usize = 16 << 20;
/// Why a completion failed: the turn ends with `model_error` and this sentence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ModelError {
    #[error("The request to the model could not be written: {0}")]
    Request(String),
    #[error("The model endpoint failed: {0}")]
    Unreachable(String),
    #[error("The model endpoint failed ({status}): {message}")]
    Status { status: String, message: String },
    /// The stream broke, or the model said it failed in the middle.
    #[error("The model stream failed: {0}")]
    Stream(String),
    #[error("The model sent a chunk that is not valid JSON ({reason}): {data:.200}")]
    NotJson { reason: String, data: String },
    #[error("The model sent an event of more than {} MiB without ending it; the reply was stopped.", MAX_EVENT_BYTES >> 20)]
    EventTooLarge,
    #[error("The model's reply grew past {} MiB (text and tool calls); it was stopped.", MAX_REPLY_BYTES >> 20)]
    ReplyTooLarge,
    #[error(
        "The model asked for more than {} tool calls in one reply; none of them was run or shown. Ask for the \
         work in smaller steps.",
        MAX_CALLS_PER_REPLY
    )]
    TooManyCalls,
}

impl ModelError {
    /// The `error` event's code for a turn this ended.
    pub fn code(&self) -> &'static str {
        match self {
            Self::TooManyCalls => "too_many_calls",
            _ => "model_error",
        }
    }
}

/// At most this many tool calls in one model reply. Each call is checked (an
/// edit reads its file, up to 8 MiB, and keeps its diff), saved with the
/// agent's state and shown on a card: a hostile or broken model must not make
/// the hub do that without bound. Real models send a handful per reply (a
/// parallel burst stays well under 20). The whole reply is refused rather
/// than its first 64 run: the model would be told of calls it never saw run,
/// and the user would approve part of a plan whose rest is missing.
pub const MAX_CALLS_PER_REPLY: usize = 64;

/// A whole reply (text and tool calls) past this ends the turn with an error:
/// a model that never stops must not grow the hub without bound.
pub const MAX_REPLY_BYTES: usize = 32 << 20;

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
/// the event, not copied, and the choices are merged as they are read, so the
/// usual chunk costs no allocation.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(default, borrow)]
    choices: Option<Choices<'a>>,
    /// Some servers report a failure mid-stream as a chunk with an `error`.
    #[serde(default)]
    error: Option<Value>,
}

/// Every choice's delta of a chunk, joined.
#[derive(Default)]
struct Choices<'a> {
    content: Option<Cow<'a, str>>,
    tool_calls: Vec<ToolCallDelta>,
}

impl<'de: 'a, 'a> Deserialize<'de> for Choices<'a> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Merge<'a>(std::marker::PhantomData<Choices<'a>>);
        impl<'de: 'a, 'a> Visitor<'de> for Merge<'a> {
            type Value = Choices<'a>;
            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("a list of choices")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut merged = Choices::default();
                while let Some(ChunkChoice { delta }) = seq.next_element()? {
                    match (&mut merged.content, delta.content) {
                        (Some(content), Some(more)) => content.to_mut().push_str(&more),
                        (content, more) => *content = content.take().or(more),
                    }
                    merged.tool_calls.extend(delta.tool_calls.unwrap_or_default());
                }
                Ok(merged)
            }
        }
        deserializer.deserialize_seq(Merge(std::marker::PhantomData))
    }
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
    /// What the calls hold so far, roughly (each call counts a little on its own).
    bytes: usize,
}

impl ToolCallAccumulator {
    /// Takes one fragment; a fragment that would start call number
    /// [`MAX_CALLS_PER_REPLY`] + 1 is refused (and the reply with it).
    pub fn add(&mut self, delta: ToolCallDelta) -> Result<(), ModelError> {
        if self.calls.len() >= MAX_CALLS_PER_REPLY && !self.calls.contains_key(&delta.index) {
            return Err(ModelError::TooManyCalls);
        }
        self.bytes +=
            64 + delta.id.as_ref().map_or(0, String::len)
                + delta.function.as_ref().map_or(0, |f| {
                    f.name.as_ref().map_or(0, String::len) + f.arguments.as_ref().map_or(0, String::len)
                });
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
        Ok(())
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
    ) -> Result<ModelReply, ModelError> {
        // Serialized from borrows: `json!` would first copy the whole conversation.
        #[derive(serde::Serialize)]
        struct Request<'a> {
            model: &'a str,
            messages: &'a [Value],
            tools: &'a [Value],
            stream: bool,
        }
        let body = serde_json::to_string(&Request { model: &self.model, messages, tools, stream: true })
            .map_err(|err| ModelError::Request(err.to_string()))?;
        let mut request = self
            .http
            .post(&self.endpoint)
            .header(reqwest::header::CONTENT_TYPE, "application/json")
            .header(reqwest::header::ACCEPT, "text/event-stream")
            .body(body);
        // Local servers need no key; none is sent rather than an empty one.
        if let Some(key) = &self.api_key {
            request = request.bearer_auth(key);
        }
        let response = request.send().await.map_err(|err| ModelError::Unreachable(describe(&err)))?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(ModelError::Status { status: status.to_string(), message: error_message(&body) });
        }

        let mut content = String::new();
        let mut calls = ToolCallAccumulator::default();
        let mut reader = SseReader::default();
        // Network chunks that have already arrived are read together, and their
        // text is one delta: a model faster than the browser costs fewer events,
        // a slow one gets no added latency.
        let mut arrivals = response.bytes_stream().ready_chunks(64);
        let end = loop {
            let mut text = String::new();
            let arrived = arrivals.next().await;
            let flow = match &arrived {
                Some(chunks) => chunks.iter().try_for_each(|chunk| match chunk {
                    Ok(bytes) => reader.feed(bytes, |data| read_event(data, &mut text, &mut calls)),
                    Err(err) => ControlFlow::Break(Err(ModelError::Stream(describe(err)))),
                }),
                None => reader.finish(|data| read_event(data, &mut text, &mut calls)),
            };
            let flow = match flow {
                // A broken endpoint must not grow the hub without bound.
                ControlFlow::Continue(()) if reader.unfinished() > MAX_EVENT_BYTES => {
                    ControlFlow::Break(Err(ModelError::EventTooLarge))
                }
                ControlFlow::Continue(()) if content.len() + text.len() + calls.bytes > MAX_REPLY_BYTES => {
                    ControlFlow::Break(Err(ModelError::ReplyTooLarge))
                }
                flow => flow,
            };
            // The text before a `[DONE]` or a failure is still passed on.
            if !text.is_empty() {
                on_text(&text);
                content.push_str(&text);
            }
            match flow {
                ControlFlow::Break(end) => break end,
                // A stream that closes without `[DONE]` is taken as complete.
                ControlFlow::Continue(()) if arrived.is_none() => break Ok(()),
                ControlFlow::Continue(()) => {}
            }
        };
        end.map(|()| ModelReply { content, tool_calls: calls.finish(turn) })
    }
}

/// Takes one event's text and tool-call fragments; breaks at `[DONE]` or a failure.
fn read_event(data: &[u8], text: &mut String, calls: &mut ToolCallAccumulator) -> ControlFlow<Result<(), ModelError>> {
    if data.trim_ascii() == b"[DONE]" {
        return ControlFlow::Break(Ok(()));
    }
    // Checked once as a whole, the text's strings need no check each (a tenth
    // of the parsing time).
    let parsed = std::str::from_utf8(data)
        .map_err(|err| err.to_string())
        .and_then(|data| serde_json::from_str::<Chunk<'_>>(data).map_err(|err| err.to_string()));
    let chunk = match parsed {
        Ok(chunk) => chunk,
        Err(reason) => {
            // Only its start is shown; the rest could be megabytes.
            let data: String = String::from_utf8_lossy(&data[..data.len().min(800)]).into_owned();
            return ControlFlow::Break(Err(ModelError::NotJson { reason, data }));
        }
    };
    if let Some(error) = chunk.error {
        return ControlFlow::Break(Err(ModelError::Stream(error_message(&error.to_string()))));
    }
    let choices = chunk.choices.unwrap_or_default();
    text.push_str(choices.content.as_deref().unwrap_or_default());
    for call in choices.tool_calls {
        if let Err(err) = calls.add(call) {
            return ControlFlow::Break(Err(err));
        }
    }
    ControlFlow::Continue(())
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
        let content = |json: &'static str| serde_json::from_str::<Chunk<'_>>(json).unwrap().choices.unwrap().content;
        assert!(matches!(content(r#"{"choices":[{"delta":{"content":"abc"}}]}"#), Some(Cow::Borrowed("abc"))));
        let escaped = content(r#"{"choices":[{"delta":{"content":"a\nb\u00e9"}}]}"#);
        assert!(matches!(&escaped, Some(Cow::Owned(text)) if text == "a\nbé"));
        assert!(content(r#"{"choices":[{"delta":{"content":null}}]}"#).is_none());
        assert!(content(r#"{"choices":[{"delta":{}}]}"#).is_none());
    }

    #[test]
    fn choices_are_merged_and_may_be_null() {
        let chunk: Chunk<'_> = serde_json::from_str(
            r#"{"choices":[{"delta":{"content":"a"}},{"delta":{}},{"delta":{"content":"b","tool_calls":[{"index":1}]}}]}"#,
        )
        .unwrap();
        let choices = chunk.choices.unwrap();
        assert_eq!(choices.content.as_deref(), Some("ab"));
        assert_eq!(choices.tool_calls.len(), 1);
        let null: Chunk<'_> = serde_json::from_str(r#"{"choices":null,"usage":{"total_tokens":3}}"#).unwrap();
        assert!(null.choices.is_none());
    }

    #[test]
    fn events_end_at_done_or_a_failure() {
        let (mut text, mut calls) = (String::new(), ToolCallAccumulator::default());
        let mut read = |data: &str| read_event(data.as_bytes(), &mut text, &mut calls);
        assert_eq!(read(r#"{"choices":[{"delta":{"content":"hi"}}]}"#), ControlFlow::Continue(()));
        assert_eq!(read(" [DONE] "), ControlFlow::Break(Ok(())));
        let ControlFlow::Break(Err(broken)) = read("{not json") else { panic!("broken JSON ends the stream") };
        assert!(broken.to_string().starts_with("The model sent a chunk that is not valid JSON"), "{broken}");
        let ControlFlow::Break(Err(failed)) = read(r#"{"error":{"message":"overloaded"}}"#) else { panic!() };
        assert_eq!(failed, ModelError::Stream("overloaded".into()));
        assert_eq!(failed.to_string(), "The model stream failed: overloaded");
        assert_eq!(text, "hi");
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
        acc.add(fragment(0, Some("a"), Some("run_shell_command"), Some(""))).unwrap();
        acc.add(fragment(1, Some("b"), Some("read_file"), Some("{\"file_"))).unwrap();
        acc.add(fragment(0, None, None, Some("{\"command\":"))).unwrap();
        acc.add(fragment(1, None, None, Some("path\":\"x\"}"))).unwrap();
        acc.add(fragment(0, None, None, Some("\"ls\"}"))).unwrap();
        let calls = acc.finish(1);
        assert_eq!(calls.len(), 2);
        assert_eq!((calls[0].id.as_str(), calls[0].name.as_str()), ("a", "run_shell_command"));
        assert_eq!(calls[0].arguments, "{\"command\":\"ls\"}");
        assert_eq!(calls[1].arguments, "{\"file_path\":\"x\"}");
    }

    #[test]
    fn a_reply_with_more_calls_than_the_cap_is_refused_at_the_first_extra_one() {
        let mut acc = ToolCallAccumulator::default();
        for index in 0..MAX_CALLS_PER_REPLY {
            acc.add(fragment(index * 7, None, Some("glob"), Some("{"))).unwrap();
        }
        // More pieces of a call already started are fine…
        acc.add(fragment(0, None, None, Some("}"))).unwrap();
        // …a new one past the cap is not, whatever its index.
        assert_eq!(acc.add(fragment(1, None, Some("glob"), Some("{}"))), Err(ModelError::TooManyCalls));
        assert_eq!(ModelError::TooManyCalls.code(), "too_many_calls");
        assert_eq!(ModelError::ReplyTooLarge.code(), "model_error");
    }

    #[test]
    fn missing_ids_are_made_up_and_distinct() {
        let mut acc = ToolCallAccumulator::default();
        acc.add(fragment(0, None, Some("glob"), Some("{}"))).unwrap();
        acc.add(fragment(1, Some(""), Some("glob"), Some("{}"))).unwrap();
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
