//! Browser-side calls to the hub's JSON API. The page's HttpOnly cookie carries
//! the token, so no secret lives in the wasm or the DOM.

use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::types::{ChatConfig, ProjectsResponse, SetConfigRequest};

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
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;

    let js_error = |err: JsValue| format!("The hub could not be reached ({err:?}).");
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
    let response: web_sys::Response =
        JsFuture::from(window.fetch_with_request(&request)).await.map_err(js_error)?.unchecked_into();
    let text =
        JsFuture::from(response.text().map_err(js_error)?).await.map_err(js_error)?.as_string().unwrap_or_default();
    decode_response(response.ok(), response.status(), &text)
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
}
