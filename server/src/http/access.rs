//! Every request passes three gates: a loopback (or allowed) Host against DNS
//! rebinding, a same-origin Origin against CSRF, and the launch token.
//! The token comes as `Authorization: Bearer T` or as the HttpOnly cookie that
//! `/?token=T` sets (the page then reloads without the token in its URL).

use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header::{AUTHORIZATION, CONTENT_TYPE, COOKIE, HOST, LOCATION, ORIGIN, SET_COOKIE};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::http::error::ApiError;

const LOOPBACK_HOSTS: [&str; 3] = ["127.0.0.1", "localhost", "[::1]"];

pub struct Access {
    token: String,
    /// Per port, so two hubs on one machine do not overwrite each other's cookie.
    cookie_name: String,
    allowed_hosts: Vec<String>,
}

impl Access {
    pub fn new(token: String, port: u16, extra_hosts: &[String]) -> Self {
        let allowed_hosts = LOOPBACK_HOSTS
            .iter()
            .map(|host| host.to_string())
            .chain(extra_hosts.iter().map(|host| host.to_ascii_lowercase()))
            .collect();
        Self { token, cookie_name: format!("agent_hub_{port}"), allowed_hosts }
    }

    fn host_allowed(&self, host: &str) -> bool {
        let name = host_name(host).to_ascii_lowercase();
        self.allowed_hosts.contains(&name)
    }

    fn token_matches(&self, candidate: &str) -> bool {
        constant_time_eq(candidate.as_bytes(), self.token.as_bytes())
    }

    fn authorized(&self, headers: &HeaderMap) -> bool {
        let bearer = headers
            .get(AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "));
        if bearer.is_some_and(|token| self.token_matches(token.trim())) {
            return true;
        }
        cookies(headers).any(|(name, value)| name == self.cookie_name && self.token_matches(value))
    }

    fn session_cookie(&self) -> String {
        format!("{}={}; HttpOnly; SameSite=Strict; Path=/", self.cookie_name, self.token)
    }
}

/// `host[:port]` → `host`, keeping the brackets of an IPv6 literal.
pub(crate) fn host_name(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    host.rsplit_once(':').map_or(host, |(name, _port)| name)
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// Every `name=value` of the request's Cookie headers, in order.
pub(crate) fn cookies(headers: &HeaderMap) -> impl Iterator<Item = (&str, &str)> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|value| value.to_str().ok())
        .flat_map(|value| value.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
}

/// The host a request names: its Host header, else its URI's authority.
pub(crate) fn request_host(request: &Request) -> String {
    request
        .headers()
        .get(HOST)
        .and_then(|value| value.to_str().ok())
        .map(str::to_string)
        .or_else(|| request.uri().authority().map(|authority| authority.to_string()))
        .unwrap_or_default()
}

/// A request that carries an Origin must come from a page of `scheme://host`
/// (against CSRF); one without an Origin is not a browser's cross-site call.
pub(crate) fn same_origin(headers: &HeaderMap, host: &str, scheme: &str) -> Result<(), ApiError> {
    let Some(origin) = headers.get(ORIGIN) else { return Ok(()) };
    let own = format!("{scheme}://{host}");
    if origin.to_str().is_ok_and(|origin| origin.eq_ignore_ascii_case(&own)) {
        return Ok(());
    }
    Err(ApiError::forbidden(format!(
        "Cross-origin request from {origin:?} refused: only pages of {own} may call the hub."
    )))
}

pub(crate) fn is_api(path: &str) -> bool {
    path == "/api" || path.starts_with("/api/")
}

pub async fn check(State(gate): State<Arc<Access>>, request: Request, next: Next) -> Response {
    let host = request_host(&request);
    if !gate.host_allowed(&host) {
        return ApiError::forbidden(format!(
            "Host '{host}' is not allowed. Open the hub at 127.0.0.1 or localhost, or start it with --allow-host."
        ))
        .into_response();
    }
    if let Err(refused) = same_origin(request.headers(), &host, "http") {
        return refused.into_response();
    }

    let path = request.uri().path();
    if !is_api(path) && request.method() == Method::GET {
        if let Some(query) = request.uri().query() {
            if let Some(response) = exchange_token(&gate, path, query) {
                return response;
            }
        }
    }
    if gate.authorized(request.headers()) {
        return next.run(request).await;
    }
    if is_api(path) {
        ApiError::unauthorized(
            "Missing or wrong token: send 'Authorization: Bearer <token>' or open the URL the hub printed.",
        )
        .into_response()
    } else {
        unauthorized_page()
    }
}

/// `?token=T` on a page: set the cookie and reload the page without the token.
fn exchange_token(gate: &Access, path: &str, query: &str) -> Option<Response> {
    let mut token = None;
    let rest: Vec<(String, String)> = form_urlencoded::parse(query.as_bytes())
        .filter_map(|(key, value)| {
            if key == "token" {
                token = Some(value.into_owned());
                None
            } else {
                Some((key.into_owned(), value.into_owned()))
            }
        })
        .collect();
    let token = token?;
    if !gate.token_matches(&token) {
        return Some(unauthorized_page());
    }
    let mut location = path.to_string();
    if !rest.is_empty() {
        location.push('?');
        location.push_str(&form_urlencoded::Serializer::new(String::new()).extend_pairs(rest).finish());
    }
    let mut response = StatusCode::SEE_OTHER.into_response();
    let headers = response.headers_mut();
    headers.insert(LOCATION, HeaderValue::from_str(&location).ok()?);
    headers.insert(SET_COOKIE, HeaderValue::from_str(&gate.session_cookie()).ok()?);
    Some(response)
}

fn unauthorized_page() -> Response {
    let body = "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>Agent Hub</title></head>\
        <body style=\"font-family:system-ui;max-width:36rem;margin:4rem auto;line-height:1.5\">\
        <h1>Agent Hub needs its launch token</h1>\
        <p>Open the exact URL the hub printed when it started \
        (<code>Agent Hub listening on http://127.0.0.1:PORT/?token=…</code>).</p></body></html>";
    (StatusCode::UNAUTHORIZED, [(CONTENT_TYPE, "text/html; charset=utf-8")], Body::from(body)).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_are_split_from_ports() {
        assert_eq!(host_name("127.0.0.1:8080"), "127.0.0.1");
        assert_eq!(host_name("localhost"), "localhost");
        assert_eq!(host_name("[::1]:9"), "[::1]");
        assert_eq!(host_name("[::1]"), "[::1]");
    }

    #[test]
    fn only_loopback_and_allowed_hosts_pass() {
        let gate = Access::new("t0ken-value".into(), 1, &["Hub.Local".into()]);
        for ok in ["127.0.0.1:1", "localhost:1", "LOCALHOST", "[::1]:1", "hub.local:1"] {
            assert!(gate.host_allowed(ok), "{ok}");
        }
        for bad in ["", "evil.com", "127.0.0.1.evil.com:1", "127.0.0.2:1", "[::2]:1", "localhost.:1"] {
            assert!(!gate.host_allowed(bad), "{bad}");
        }
    }

    #[test]
    fn token_from_bearer_or_own_cookie_only() {
        let gate = Access::new("t0ken-value".into(), 7, &[]);
        let with = |name: axum::http::HeaderName, value: &str| {
            let mut headers = HeaderMap::new();
            headers.insert(name, HeaderValue::from_str(value).unwrap());
            gate.authorized(&headers)
        };
        assert!(with(AUTHORIZATION, "Bearer t0ken-value"));
        assert!(!with(AUTHORIZATION, "Bearer t0ken-valuf"));
        assert!(!with(AUTHORIZATION, "Basic t0ken-value"));
        assert!(with(COOKIE, "a=b; agent_hub_7=t0ken-value"));
        assert!(!with(COOKIE, "agent_hub_8=t0ken-value"));
        assert!(!with(COOKIE, "agent_hub_7=t0ken"));
        assert!(!gate.authorized(&HeaderMap::new()));
    }

    #[test]
    fn cookie_is_http_only_and_strict() {
        let cookie = Access::new("t0ken-value".into(), 7, &[]).session_cookie();
        assert!(cookie.contains("HttpOnly") && cookie.contains("SameSite=Strict"));
    }
}
