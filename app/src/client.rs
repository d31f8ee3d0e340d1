//! Browser-side calls to the hub's JSON API. The page's HttpOnly cookie carries
//! the token, so no secret lives in the wasm or the DOM.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::events::SeqEvent;
use crate::types::{ApproveRequest, ChatConfig, InputAnswer, ProjectsResponse, PromptRequest, SetConfigRequest};

pub fn config_url(folder_path: &str) -> String {
    format!("/api/chat/config?folderPath={}", urlencoding::encode(folder_path))
}

pub async fn projects() -> Result<ProjectsResponse, String> {
    get_json("/api/projects").await
}

/// Opens (creating on first use) the folder's default session.
pub async fn open_folder(folder_path: &str) -> Result<ChatConfig, String> {
    get_json(&config_url(folder_path)).await
}

pub async fn set_yolo(folder_path: &str, session_id: &str, yolo_mode: bool) -> Result<ChatConfig, String> {
    let body =
        SetConfigRequest { folder_path: folder_path.to_string(), session_id: Some(session_id.to_string()), yolo_mode };
    send_json("POST", "/api/chat/config", Some(&body)).await
}

pub async fn get_json<T: DeserializeOwned>(url: &str) -> Result<T, String> {
    send_json::<(), T>("GET", url, None).await
}

#[cfg(feature = "hydrate")]
pub async fn send_json<B: Serialize, T: DeserializeOwned>(
    method: &str,
    url: &str,
    body: Option<&B>,
) -> Result<T, String> {
    let response = browser::fetch(method, url, body).await?;
    let text = browser::text(&response).await?;
    decode_response(response.ok(), response.status(), &text)
}

/// Sends the request and hands each batch of NDJSON events to `on_events` as the
/// hub streams them. Ends when the hub closes the stream (the turn paused or ended).
#[cfg(feature = "hydrate")]
pub async fn stream_events<B: Serialize>(
    method: &str,
    url: &str,
    body: Option<&B>,
    mut on_events: impl FnMut(Vec<SeqEvent>),
) -> Result<(), String> {
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;

    let response = browser::fetch(method, url, body).await?;
    if !response.ok() {
        let text = browser::text(&response).await?;
        return decode_response::<serde_json::Value>(false, response.status(), &text).map(drop);
    }
    let stream = response.body().ok_or("The hub sent no stream.")?;
    let reader: web_sys::ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    let mut lines = NdjsonLines::default();
    loop {
        let chunk = JsFuture::from(reader.read()).await.map_err(browser::js_error)?;
        let done = js_sys::Reflect::get(&chunk, &"done".into()).map_err(browser::js_error)?;
        if done.as_bool().unwrap_or(true) {
            break;
        }
        let value = js_sys::Reflect::get(&chunk, &"value".into()).map_err(browser::js_error)?;
        let events = lines.push(&js_sys::Uint8Array::new(&value).to_vec())?;
        if !events.is_empty() {
            on_events(events);
        }
    }
    Ok(())
}

#[cfg(feature = "hydrate")]
mod browser {
    use serde::Serialize;
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;

    pub fn js_error(err: JsValue) -> String {
        format!("The hub could not be reached ({err:?}).")
    }

    pub async fn fetch<B: Serialize>(method: &str, url: &str, body: Option<&B>) -> Result<web_sys::Response, String> {
        let init = web_sys::RequestInit::new();
        init.set_method(method);
        init.set_credentials(web_sys::RequestCredentials::SameOrigin);
        if let Some(body) = body {
            let headers = web_sys::Headers::new().map_err(js_error)?;
            headers.set("Content-Type", "application/json").map_err(js_error)?;
            init.set_headers(&headers);
            let text = serde_json::to_string(body).map_err(|err| err.to_string())?;
            init.set_body(&JsValue::from_str(&text));
        }
        let request = web_sys::Request::new_with_str_and_init(url, &init).map_err(js_error)?;
        let window = web_sys::window().ok_or("no window")?;
        Ok(JsFuture::from(window.fetch_with_request(&request)).await.map_err(js_error)?.unchecked_into())
    }

    pub async fn text(response: &web_sys::Response) -> Result<String, String> {
        Ok(JsFuture::from(response.text().map_err(js_error)?).await.map_err(js_error)?.as_string().unwrap_or_default())
    }
}

/// Server rendering never calls the API: these calls run from effects and event
/// handlers, which exist only in the browser.
#[cfg(not(feature = "hydrate"))]
pub async fn send_json<B: Serialize, T: DeserializeOwned>(
    _method: &str,
    url: &str,
    _body: Option<&B>,
) -> Result<T, String> {
    Err(format!("{url} is only called from the browser"))
}

#[cfg(not(feature = "hydrate"))]
pub async fn stream_events<B: Serialize>(
    _method: &str,
    url: &str,
    _body: Option<&B>,
    _on_events: impl FnMut(Vec<SeqEvent>),
) -> Result<(), String> {
    Err(format!("{url} is only called from the browser"))
}

/// Splits a byte stream into NDJSON events; a line may arrive in pieces.
#[derive(Default)]
pub struct NdjsonLines {
    partial: Vec<u8>,
}

impl NdjsonLines {
    pub fn push(&mut self, bytes: &[u8]) -> Result<Vec<SeqEvent>, String> {
        self.partial.extend_from_slice(bytes);
        let Some(end) = self.partial.iter().rposition(|&b| b == b'\n') else { return Ok(Vec::new()) };
        let complete: Vec<u8> = self.partial.drain(..=end).collect();
        complete
            .split(|&b| b == b'\n')
            .filter(|line| !line.iter().all(u8::is_ascii_whitespace))
            .map(|line| serde_json::from_slice(line).map_err(|err| format!("Unexpected event from the hub: {err}")))
            .collect()
    }
}

/// The session's stored events after `after`, then those of a running turn.
pub async fn follow(session_id: &str, after: u64, on_events: impl FnMut(Vec<SeqEvent>)) -> Result<(), String> {
    let url = format!("/api/sessions/{}/events?after={after}", urlencoding::encode(session_id));
    stream_events::<()>("GET", &url, None, on_events).await
}

pub async fn prompt(request: &PromptRequest, on_events: impl FnMut(Vec<SeqEvent>)) -> Result<(), String> {
    stream_events("POST", "/api/chat/prompt", Some(request), on_events).await
}

pub async fn decide(
    session_id: &str,
    request: &ApproveRequest,
    on_events: impl FnMut(Vec<SeqEvent>),
) -> Result<(), String> {
    let url = format!("/api/sessions/{}/approve", urlencoding::encode(session_id));
    stream_events("POST", &url, Some(request), on_events).await
}

/// Answers the agent's question; the continuation streams like a decision's.
pub async fn answer(
    session_id: &str,
    answer: &InputAnswer,
    on_events: impl FnMut(Vec<SeqEvent>),
) -> Result<(), String> {
    let url = format!("/api/sessions/{}/input", urlencoding::encode(session_id));
    stream_events("POST", &url, Some(answer), on_events).await
}

/// Stops the session's turn; the stream holds its last events.
pub async fn cancel(session_id: &str, on_events: impl FnMut(Vec<SeqEvent>)) -> Result<(), String> {
    let url = format!("/api/sessions/{}/cancel", urlencoding::encode(session_id));
    stream_events::<()>("POST", &url, None, on_events).await
}

/// A body of a successful response, or the contract's error message.
pub fn decode_response<T: DeserializeOwned>(ok: bool, status: u16, text: &str) -> Result<T, String> {
    if ok {
        return serde_json::from_str(text).map_err(|err| format!("Unexpected answer from the hub: {err}"));
    }
    match serde_json::from_str::<crate::types::ErrorBody>(text) {
        Ok(body) => Err(body.message),
        Err(_) => Err(format!("The hub answered HTTP {status}.")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_url_encodes_the_path() {
        assert_eq!(config_url("/a b/c&d"), "/api/chat/config?folderPath=%2Fa%20b%2Fc%26d");
    }

    #[test]
    fn errors_surface_the_contract_message() {
        let err = decode_response::<ChatConfig>(
            false,
            400,
            r#"{"error":"folder_not_found","message":"Folder '/x' does not exist."}"#,
        );
        assert_eq!(err.unwrap_err(), "Folder '/x' does not exist.");
        let err = decode_response::<ChatConfig>(false, 502, "<html>");
        assert_eq!(err.unwrap_err(), "The hub answered HTTP 502.");
        assert!(decode_response::<ProjectsResponse>(true, 200, r#"{"projects":[]}"#).unwrap().projects.is_empty());
    }

    #[test]
    fn ndjson_lines_split_across_chunks_are_joined() {
        let mut lines = NdjsonLines::default();
        let first = br#"{"type":"message","role":"assistant","content":"a\nb","delta":true,"seq":1}"#;
        let (head, tail) = first.split_at(20);
        assert!(lines.push(head).unwrap().is_empty(), "half a line waits");
        let mut rest = tail.to_vec();
        rest.extend_from_slice(b"\n{\"type\":\"result\",\"status\":\"success\",\"seq\":2}\n{\"type\"");
        let events = lines.push(&rest).unwrap();
        assert_eq!(events.iter().map(|e| e.seq).collect::<Vec<_>>(), [1, 2]);
        assert!(lines.push(b":oops\n").is_err(), "a broken line is an error, not a silent gap");
    }
}
