//! A scripted OpenAI-compatible model server speaking the real wire format:
//! `POST /v1/chat/completions` answered with server-sent events, tool-call
//! arguments split across chunks, and a closing `data: [DONE]`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use futures::StreamExt;
use serde_json::{json, Value};

#[derive(Clone, Debug)]
pub enum Reply {
    /// Assistant text, streamed in these pieces.
    Text(Vec<String>),
    /// Tool calls: (id, name, arguments JSON).
    Calls(Vec<(String, String, Value)>),
    /// Wait before answering with the inner reply (to hold a turn open).
    Slow(Duration, Box<Reply>),
    /// An HTTP error.
    Fail(u16, String),
    /// These server-sent events' data, as written (no `[DONE]` added).
    Events(Vec<String>),
    /// A whole body rendered beforehand by [`render`]: serving it costs the fake
    /// model nothing per token, so a benchmark times the reader alone.
    Rendered(Bytes),
    /// The inner text or tool-call reply, its server-sent events sent one at a
    /// time with this gap between them (a reply that is still streaming).
    Trickle(Duration, Box<Reply>),
}

/// Decides each reply from the request body, for a model that outlives the
/// script: it answers whatever the hub asks, across kills and restarts.
pub type Responder = Arc<dyn Fn(&Value) -> Reply + Send + Sync>;

pub fn text(pieces: &[&str]) -> Reply {
    Reply::Text(pieces.iter().map(|p| p.to_string()).collect())
}

pub fn call(id: &str, name: &str, args: Value) -> Reply {
    Reply::Calls(vec![(id.into(), name.into(), args)])
}

pub fn calls(list: &[(&str, &str, Value)]) -> Reply {
    Reply::Calls(list.iter().map(|(id, name, args)| (id.to_string(), name.to_string(), args.clone())).collect())
}

#[derive(Default)]
struct Script {
    replies: Mutex<VecDeque<Reply>>,
    requests: Mutex<Vec<Value>>,
    /// Answers when no scripted reply is left.
    responder: Option<Responder>,
}

pub struct FakeModel {
    pub base_url: String,
    script: Arc<Script>,
}

impl FakeModel {
    pub async fn start(replies: Vec<Reply>) -> Self {
        Self::serve(Script { replies: Mutex::new(replies.into()), ..Script::default() }).await
    }

    /// A model that answers every request with what `responder` makes of it
    /// (after any replies [`FakeModel::push`]ed, which still come first).
    pub async fn with_responder(responder: impl Fn(&Value) -> Reply + Send + Sync + 'static) -> Self {
        Self::serve(Script { responder: Some(Arc::new(responder)), ..Script::default() }).await
    }

    async fn serve(script: Script) -> Self {
        let script = Arc::new(script);
        let app = Router::new().route("/v1/chat/completions", post(complete)).with_state(script.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base_url = format!("http://{}/v1", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { base_url, script }
    }

    pub fn push(&self, reply: Reply) {
        self.script.replies.lock().unwrap().push_back(reply);
    }

    /// Every request body received, in order.
    pub fn requests(&self) -> Vec<Value> {
        self.script.requests.lock().unwrap().clone()
    }

    /// The `messages` of the last request.
    pub fn last_messages(&self) -> Vec<Value> {
        self.requests().last().map(|r| r["messages"].as_array().unwrap().clone()).unwrap_or_default()
    }
}

async fn complete(State(script): State<Arc<Script>>, Json(request): Json<Value>) -> Response {
    assert_eq!(request["stream"], true, "the hub streams");
    let scripted = script.replies.lock().unwrap().pop_front();
    let reply = scripted.or_else(|| script.responder.as_ref().map(|responder| responder(&request)));
    script.requests.lock().unwrap().push(request);
    let Some(mut reply) = reply else {
        return (StatusCode::INTERNAL_SERVER_ERROR, "the fake model has no reply scripted").into_response();
    };
    while let Reply::Slow(delay, inner) = reply {
        tokio::time::sleep(delay).await;
        reply = *inner;
    }
    let body = match reply {
        Reply::Fail(status, message) => {
            let body = json!({"error": {"message": message, "type": "invalid_request_error"}});
            return (StatusCode::from_u16(status).unwrap(), Json(body)).into_response();
        }
        Reply::Events(events) => events.iter().map(|data| format!("data: {data}\n\n")).collect::<String>().into(),
        Reply::Rendered(body) => body,
        Reply::Trickle(gap, inner) => return trickle(gap, &inner),
        reply => render(&reply),
    };
    ([("content-type", "text/event-stream")], Body::from(body)).into_response()
}

/// A rendered reply sent one event at a time, `gap` apart.
fn trickle(gap: Duration, reply: &Reply) -> Response {
    let body = String::from_utf8(render(reply).to_vec()).unwrap();
    let events: Vec<Bytes> = body.split_inclusive("\n\n").map(|event| Bytes::from(event.to_string())).collect();
    let stream = futures::stream::iter(events.into_iter().enumerate()).then(move |(index, event)| async move {
        if index > 0 {
            tokio::time::sleep(gap).await;
        }
        Ok::<_, std::io::Error>(event)
    });
    ([("content-type", "text/event-stream")], Body::from_stream(stream)).into_response()
}

/// The server-sent events of a text or tool-call reply, ending with `[DONE]`.
pub fn render(reply: &Reply) -> Bytes {
    let chunks = match reply {
        Reply::Text(pieces) => {
            let mut chunks: Vec<Value> = pieces.iter().map(|piece| delta(json!({"content": piece}))).collect();
            chunks.push(finish("stop"));
            chunks
        }
        Reply::Calls(list) => {
            let mut chunks = vec![delta(json!({"role": "assistant", "content": null}))];
            for (index, (id, name, args)) in list.iter().enumerate() {
                let args = args.to_string();
                chunks.push(delta(json!({"tool_calls": [{"index": index, "id": id, "type": "function",
                    "function": {"name": name, "arguments": ""}}]})));
                // Arguments arrive in pieces, as real servers send them.
                let cut1 = floor_boundary(&args, args.len() / 3);
                let cut2 = floor_boundary(&args, 2 * args.len() / 3);
                for piece in [&args[..cut1], &args[cut1..cut2], &args[cut2..]] {
                    chunks.push(delta(json!({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})));
                }
            }
            chunks.push(finish("tool_calls"));
            chunks
        }
        other => panic!("only text and tool calls are rendered, not {other:?}"),
    };
    let mut body = String::new();
    for chunk in chunks {
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    body.push_str("data: [DONE]\n\n");
    body.into()
}

fn floor_boundary(text: &str, mut index: usize) -> usize {
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

fn delta(delta: Value) -> Value {
    json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake",
           "choices": [{"index": 0, "delta": delta, "finish_reason": null}]})
}

fn finish(reason: &str) -> Value {
    json!({"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": 1, "model": "fake",
           "choices": [{"index": 0, "delta": {}, "finish_reason": reason}]})
}
