//! Streaming chat completions from any OpenAI-compatible endpoint (Ollama,
//! llama.cpp, vLLM, OpenAI, Gemini) through async-openai. The chunk types are
//! our own and lenient (byot): local servers omit fields OpenAI always sends.

use std::collections::BTreeMap;

use async_openai::config::OpenAIConfig;
use async_openai::Client;
use futures::StreamExt;
use serde::Deserialize;
use serde_json::{json, Value};

#[derive(Debug, Clone)]
pub struct ModelConfig {
    pub base_url: String,
    pub model: String,
    pub api_key: Option<String>,
}

pub struct ModelClient {
    client: Client<OpenAIConfig>,
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

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Vec<ChunkChoice>,
}

#[derive(Deserialize)]
struct ChunkChoice {
    #[serde(default)]
    delta: Delta,
}

#[derive(Deserialize, Default)]
struct Delta {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<ToolCallDelta>>,
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
        let mut openai = OpenAIConfig::new().with_api_base(config.base_url.trim_end_matches('/'));
        // Local servers need no key, but the header must not carry a stray one from the environment.
        openai = openai.with_api_key(config.api_key.clone().unwrap_or_default());
        Self { client: Client::with_config(openai), model: config.model.clone() }
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
        let request = json!({"model": self.model, "messages": messages, "tools": tools, "stream": true});
        let stream = self
            .client
            .chat()
            .create_stream_byot::<Value, Chunk>(request)
            .await
            .map_err(|err| format!("The model endpoint failed: {err}"))?;
        let mut content = String::new();
        let mut calls = ToolCallAccumulator::default();
        // Chunks that have already arrived are taken together, and their text is
        // one delta: a model faster than the browser costs fewer events, a slow
        // one gets no added latency.
        let mut batches = stream.ready_chunks(1024);
        while let Some(batch) = batches.next().await {
            let mut text = String::new();
            for chunk in batch {
                let chunk = chunk.map_err(|err| format!("The model stream failed: {err}"))?;
                for choice in chunk.choices {
                    text.push_str(choice.delta.content.as_deref().unwrap_or_default());
                    for call in choice.delta.tool_calls.unwrap_or_default() {
                        calls.add(call);
                    }
                }
            }
            if !text.is_empty() {
                on_text(&text);
                content.push_str(&text);
            }
        }
        Ok(ModelReply { content, tool_calls: calls.finish(turn) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
