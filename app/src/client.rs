//! Browser-side calls to the hub's JSON API. The page's HttpOnly cookie carries
//! the token, so no secret lives in the wasm or the DOM.

use leptos::prelude::*;
use serde::de::DeserializeOwned;
use serde::Serialize;

use protocol::api::{
    ApproveRequest, ChatConfig, DirListing, InputAnswer, ProjectsResponse, PromptRequest, RecentFolders,
    SetConfigRequest, SetModeRequest,
};
use protocol::events::SeqEvent;

/// Rules, session grants and the audit trail (issue 15).
pub mod approvals;
/// A session's checkpoints, a turn's diff, and rewinding (issue 28).
pub mod checkpoints;
pub mod policy;
/// A folder's sessions: created, renamed, deleted (issue 18).
pub mod sessions;

/// What went wrong with a call to the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubError {
    pub message: String,
    /// No answer came at all: the hub is down or the connection dropped. Old
    /// news as soon as a request gets through again.
    pub unreachable: bool,
    /// The HTTP status of an answer that refused the request.
    pub status: Option<u16>,
}

impl HubError {
    pub fn unreachable(detail: impl std::fmt::Display) -> Self {
        Self { message: format!("The hub could not be reached ({detail})."), unreachable: true, status: None }
    }
}

impl From<String> for HubError {
    fn from(message: String) -> Self {
        Self { message, unreachable: false, status: None }
    }
}

impl From<&str> for HubError {
    fn from(message: &str) -> Self {
        message.to_string().into()
    }
}

impl std::fmt::Display for HubError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// A request just got through: an error the hub's absence caused is over.
/// Other errors stay; a disposed signal is left alone.
pub fn clear_unreachable(error: RwSignal<Option<HubError>>) {
    if error.try_with_untracked(|error| error.as_ref().is_some_and(|error| error.unreachable)) == Some(true) {
        error.try_set(None);
    }
}

/// The streams of one component, made in its body. When the component goes
/// (its owner cleans up) they end, and their callbacks are never called again:
/// a GET is aborted at once; a POST (a prompt, a decision) is still sent whole,
/// only its answer is no longer read, so what the user sent reaches the hub.
#[derive(Clone, Copy)]
pub struct Streams {
    #[cfg(feature = "hydrate")]
    controller: StoredValue<Option<browser::AbortController>, LocalStorage>,
}

impl Streams {
    pub fn scoped() -> Self {
        #[cfg(feature = "hydrate")]
        {
            let controller = StoredValue::new_local(browser::AbortController::new().ok());
            // An owner runs its cleanups before it drops its values: the controller is still there.
            on_cleanup(move || {
                if let Some(Some(controller)) = controller.try_get_value() {
                    controller.abort();
                }
            });
            Self { controller }
        }
        #[cfg(not(feature = "hydrate"))]
        Self {}
    }

    /// The abort signal; `None` once the component is gone.
    #[cfg(feature = "hydrate")]
    fn signal(self) -> Option<browser::AbortSignal> {
        self.controller.try_with_value(|controller| controller.as_ref().map(browser::AbortController::signal)).flatten()
    }
}

pub fn config_url(folder_path: &str) -> String {
    format!("/api/chat/config?folderPath={}", urlencoding::encode(folder_path))
}

pub async fn projects() -> Result<ProjectsResponse, HubError> {
    get_json("/api/projects").await
}

/// Opens (creating on first use) the folder's default session.
pub async fn open_folder(folder_path: &str) -> Result<ChatConfig, HubError> {
    open_session(folder_path, None).await
}

/// Opens one of the folder's sessions (its default one without `session_id`),
/// making it on first use: a POST, since `GET /api/chat/config` only reads.
pub async fn open_session(folder_path: &str, session_id: Option<&str>) -> Result<ChatConfig, HubError> {
    let body =
        protocol::api::ConfigQuery { folder_path: folder_path.to_string(), session_id: session_id.map(str::to_string) };
    send_json("POST", "/api/chat/open", Some(&body)).await
}

/// The hub's agents, with the folder's last choice.
pub async fn agents(folder_path: &str) -> Result<protocol::api::AgentsResponse, HubError> {
    get_json(&format!("/api/agents?folderPath={}", urlencoding::encode(folder_path))).await
}

/// The sub-directory names of `path` (absolute, or `~`/`~/…`: the answer says it expanded).
pub async fn list_dirs(path: &str) -> Result<DirListing, HubError> {
    get_json(&format!("/api/fs/dirs?path={}", urlencoding::encode(path))).await
}

/// The folders opened last, newest first.
pub async fn recent_folders() -> Result<RecentFolders, HubError> {
    get_json("/api/folders/recent").await
}

pub async fn set_yolo(folder_path: &str, session_id: &str, yolo_mode: bool) -> Result<ChatConfig, HubError> {
    let body = SetConfigRequest {
        folder_path: folder_path.to_string(),
        session_id: Some(session_id.to_string()),
        yolo_mode: Some(yolo_mode),
        approval_timeout_secs: None,
        network: None,
        ..Default::default()
    };
    send_json("POST", "/api/chat/config", Some(&body)).await
}

/// Lets the folder's commands reach the network, or not.
pub async fn set_network(folder_path: &str, session_id: &str, network: bool) -> Result<ChatConfig, HubError> {
    let body = SetConfigRequest {
        folder_path: folder_path.to_string(),
        session_id: Some(session_id.to_string()),
        yolo_mode: None,
        approval_timeout_secs: None,
        network: Some(network),
        ..Default::default()
    };
    send_json("POST", "/api/chat/config", Some(&body)).await
}

/// Trusts the folder (its own `.gemini` files may loosen what the hub does),
/// or withdraws that trust.
pub async fn set_trust(folder_path: &str, trusted: bool) -> Result<protocol::api::FolderTrust, HubError> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Body<'a> {
        folder_path: &'a str,
    }
    match trusted {
        true => send_json("POST", "/api/folders/trust", Some(&Body { folder_path })).await,
        false => {
            let url = format!("/api/folders/trust?folderPath={}", urlencoding::encode(folder_path));
            send_json::<(), _>("DELETE", &url, None).await
        }
    }
}

/// Puts the session's ACP agent in one of its modes; answers the session's config.
pub async fn set_mode(session_id: &str, mode_id: &str) -> Result<ChatConfig, HubError> {
    let url = format!("/api/sessions/{}/mode", urlencoding::encode(session_id));
    send_json("POST", &url, Some(&SetModeRequest { mode_id: mode_id.to_string() })).await
}

/// What the session's agent changed, and the folder's git working tree.
pub async fn changes(session_id: &str) -> Result<protocol::changes::ChangesResponse, HubError> {
    get_json(&format!("/api/sessions/{}/changes", urlencoding::encode(session_id))).await
}

pub async fn get_json<T: DeserializeOwned>(url: &str) -> Result<T, HubError> {
    send_json::<(), T>("GET", url, None).await
}

#[cfg(feature = "hydrate")]
pub async fn send_json<B: Serialize, T: DeserializeOwned>(
    method: &str,
    url: &str,
    body: Option<&B>,
) -> Result<T, HubError> {
    let response = browser::fetch(method, url, body, None).await?;
    let text = browser::text(&response).await?;
    let status = (!response.ok()).then(|| response.status());
    decode_response(response.ok(), response.status(), &text)
        .map_err(|message| HubError { status, ..HubError::from(message) })
}

/// A request whose answer says only whether it worked (a DELETE).
#[cfg(feature = "hydrate")]
pub async fn send_for_status(method: &str, url: &str) -> Result<(), HubError> {
    let response = browser::fetch::<()>(method, url, None, None).await?;
    let text = browser::text(&response).await?;
    if response.ok() {
        return Ok(());
    }
    let status = Some(response.status());
    decode_response::<serde_json::Value>(false, response.status(), &text)
        .map(drop)
        .map_err(|message| HubError { status, ..HubError::from(message) })
}

/// A whole NDJSON answer (not a stream that stays open), one value a line.
#[cfg(feature = "hydrate")]
pub async fn get_ndjson<T: DeserializeOwned>(url: &str) -> Result<Vec<T>, HubError> {
    let response = browser::fetch::<()>("GET", url, None, None).await?;
    let text = browser::text(&response).await?;
    if !response.ok() {
        return decode_response::<serde_json::Value>(false, response.status(), &text)
            .map(|_| Vec::new())
            .map_err(HubError::from);
    }
    parse_ndjson(text.as_bytes()).map_err(HubError::from)
}

/// Sends the request and hands each batch of NDJSON events to `on_events` as the
/// hub streams them. Ends when the hub closes the stream (the turn paused or
/// ended), or quietly (`Ok`, no more callbacks) once the owner of `streams` is gone.
#[cfg(feature = "hydrate")]
pub async fn stream_events<B: Serialize>(
    streams: Streams,
    method: &str,
    url: &str,
    body: Option<&B>,
    mut on_events: impl FnMut(Vec<SeqEvent>),
) -> Result<(), HubError> {
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;

    let Some(signal) = streams.signal() else { return Ok(()) };
    let abortable = (method == "GET").then_some(&signal);
    let response = match browser::fetch(method, url, body, abortable).await {
        Err(_) if signal.aborted() => return Ok(()),
        response => response?,
    };
    if signal.aborted() {
        if let Some(stream) = response.body() {
            let _ = stream.cancel();
        }
        return Ok(());
    }
    if !response.ok() {
        let text = browser::text(&response).await?;
        return decode_response::<serde_json::Value>(false, response.status(), &text).map(drop).map_err(HubError::from);
    }
    let stream = response.body().ok_or("The hub sent no stream.")?;
    let reader: web_sys::ReadableStreamDefaultReader = stream.get_reader().unchecked_into();
    // An abort ends the read that waits (it comes back `done`).
    let _listener = browser::on_abort(&signal, {
        let reader = reader.clone();
        move || {
            let _ = reader.cancel();
        }
    });
    let mut lines = NdjsonLines::default();
    loop {
        let chunk = JsFuture::from(reader.read()).await;
        if signal.aborted() {
            return Ok(());
        }
        let chunk = chunk.map_err(browser::unreachable)?;
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
    use wasm_bindgen::prelude::*;
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;

    use super::HubError;

    // The DOM's AbortController and AbortSignal, bound here: web-sys has them
    // behind features this crate does not enable.
    #[wasm_bindgen]
    extern "C" {
        #[derive(Clone, Debug)]
        pub type AbortController;
        #[wasm_bindgen(constructor, catch)]
        pub fn new() -> Result<AbortController, JsValue>;
        #[wasm_bindgen(method)]
        pub fn abort(this: &AbortController);
        #[wasm_bindgen(method, getter)]
        pub fn signal(this: &AbortController) -> AbortSignal;

        #[wasm_bindgen(extends = web_sys::EventTarget)]
        #[derive(Clone, Debug)]
        pub type AbortSignal;
        #[wasm_bindgen(method, getter)]
        pub fn aborted(this: &AbortSignal) -> bool;
    }

    /// The connection failed: the browser's own words (e.g. "Failed to fetch"), not its stack.
    pub fn unreachable(err: JsValue) -> HubError {
        match err.dyn_ref::<js_sys::Error>() {
            Some(error) => HubError::unreachable(String::from(error.message())),
            None => HubError::unreachable(format!("{err:?}")),
        }
    }

    /// The browser refused to make the request at all (not a connection failure).
    pub fn js_error(err: JsValue) -> HubError {
        format!("The browser could not send the request ({err:?}).").into()
    }

    /// With `abort`, the request itself can be aborted (else only its answer is dropped).
    pub async fn fetch<B: Serialize>(
        method: &str,
        url: &str,
        body: Option<&B>,
        abort: Option<&AbortSignal>,
    ) -> Result<web_sys::Response, HubError> {
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
        if let Some(abort) = abort {
            js_sys::Reflect::set(&init, &"signal".into(), abort).map_err(js_error)?;
        }
        let request = web_sys::Request::new_with_str_and_init(url, &init).map_err(js_error)?;
        let window = web_sys::window().ok_or("no window")?;
        Ok(JsFuture::from(window.fetch_with_request(&request)).await.map_err(unreachable)?.unchecked_into())
    }

    pub async fn text(response: &web_sys::Response) -> Result<String, HubError> {
        let text = JsFuture::from(response.text().map_err(js_error)?).await.map_err(unreachable)?;
        Ok(text.as_string().unwrap_or_default())
    }

    /// Runs `then` when `signal` aborts, as long as the returned listener lives.
    pub fn on_abort(signal: &AbortSignal, then: impl FnOnce() + 'static) -> AbortListener {
        let callback = Closure::once(then);
        let _ = signal.add_event_listener_with_callback("abort", callback.as_ref().unchecked_ref());
        AbortListener { signal: signal.clone(), callback }
    }

    pub struct AbortListener {
        signal: AbortSignal,
        callback: Closure<dyn FnMut()>,
    }

    impl Drop for AbortListener {
        fn drop(&mut self) {
            let _ = self.signal.remove_event_listener_with_callback("abort", self.callback.as_ref().unchecked_ref());
        }
    }
}

/// Server rendering never calls the API: these calls run from effects and event
/// handlers, which exist only in the browser.
#[cfg(not(feature = "hydrate"))]
pub async fn send_json<B: Serialize, T: DeserializeOwned>(
    _method: &str,
    url: &str,
    _body: Option<&B>,
) -> Result<T, HubError> {
    Err(format!("{url} is only called from the browser").into())
}

#[cfg(not(feature = "hydrate"))]
pub async fn send_for_status(_method: &str, url: &str) -> Result<(), HubError> {
    Err(format!("{url} is only called from the browser").into())
}

#[cfg(not(feature = "hydrate"))]
pub async fn get_ndjson<T: DeserializeOwned>(url: &str) -> Result<Vec<T>, HubError> {
    Err(format!("{url} is only called from the browser").into())
}

#[cfg(not(feature = "hydrate"))]
pub async fn stream_events<B: Serialize>(
    _streams: Streams,
    _method: &str,
    url: &str,
    _body: Option<&B>,
    _on_events: impl FnMut(Vec<SeqEvent>),
) -> Result<(), HubError> {
    Err(format!("{url} is only called from the browser").into())
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
        parse_ndjson(&complete)
    }
}

/// Complete NDJSON lines, one value each; blank lines are skipped and a broken
/// line is an error, not a silent gap.
pub fn parse_ndjson<T: DeserializeOwned>(bytes: &[u8]) -> Result<Vec<T>, String> {
    bytes.split(|&b| b == b'\n').filter(|line| !line.iter().all(u8::is_ascii_whitespace)).map(decode).collect()
}

/// The session's stored events after `after`, then those of a running turn.
pub async fn follow(
    streams: Streams,
    session_id: &str,
    after: u64,
    on_events: impl FnMut(Vec<SeqEvent>),
) -> Result<(), HubError> {
    let url = format!("/api/sessions/{}/events?after={after}", urlencoding::encode(session_id));
    stream_events::<()>(streams, "GET", &url, None, on_events).await
}

pub async fn prompt(
    streams: Streams,
    request: &PromptRequest,
    on_events: impl FnMut(Vec<SeqEvent>),
) -> Result<(), HubError> {
    stream_events(streams, "POST", "/api/chat/prompt", Some(request), on_events).await
}

pub async fn decide(
    streams: Streams,
    session_id: &str,
    request: &ApproveRequest,
    on_events: impl FnMut(Vec<SeqEvent>),
) -> Result<(), HubError> {
    let url = format!("/api/sessions/{}/approve", urlencoding::encode(session_id));
    stream_events(streams, "POST", &url, Some(request), on_events).await
}

/// Answers the agent's question; the continuation streams like a decision's.
pub async fn answer(
    streams: Streams,
    session_id: &str,
    answer: &InputAnswer,
    on_events: impl FnMut(Vec<SeqEvent>),
) -> Result<(), HubError> {
    let url = format!("/api/sessions/{}/input", urlencoding::encode(session_id));
    stream_events(streams, "POST", &url, Some(answer), on_events).await
}

/// Stops the session's turn; the stream holds its last events.
pub async fn cancel(streams: Streams, session_id: &str, on_events: impl FnMut(Vec<SeqEvent>)) -> Result<(), HubError> {
    let url = format!("/api/sessions/{}/cancel", urlencoding::encode(session_id));
    stream_events::<()>(streams, "POST", &url, None, on_events).await
}

/// One JSON value from the hub. Every JSON the client reads goes through here,
/// as bytes: a decoder is compiled for each type and each kind of input, and
/// `from_str` beside `from_slice` (the NDJSON lines) doubled them in the wasm.
pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, String> {
    serde_json::from_slice(bytes).map_err(|err| format!("Unexpected answer from the hub: {err}"))
}

/// A body of a successful response, or the contract's error message.
pub fn decode_response<T: DeserializeOwned>(ok: bool, status: u16, text: &str) -> Result<T, String> {
    if ok {
        return decode(text.as_bytes());
    }
    match decode::<protocol::api::ErrorBody>(text.as_bytes()) {
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
    fn a_request_that_gets_through_clears_only_the_unreachable_error() {
        let owner = Owner::new();
        owner.set();
        let error = RwSignal::new(Some(HubError::unreachable("connection refused")));
        assert!(error.get_untracked().unwrap().message.starts_with("The hub could not be reached"));
        clear_unreachable(error);
        assert_eq!(error.get_untracked(), None);
        error.set(Some(HubError::from("A turn is already running.")));
        clear_unreachable(error);
        assert!(error.get_untracked().is_some(), "an answer that said no stays");
        owner.cleanup();
        assert!(error.is_disposed());
        clear_unreachable(error);
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
