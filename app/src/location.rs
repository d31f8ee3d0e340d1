//! Where the page is: its path and query, read from the request on the server and
//! from `window.location` in the browser, kept in a signal that [`Location::navigate`] and
//! the browser's back and forward buttons move.
//!
//! The hub has two pages and names what it shows in the query (`?folder=…`), so
//! leptos_router and leptos_meta did not earn their bytes in the first load (docs/measurements.md,
//! "Weight"). What they did for us is here: the page chosen by path, the query as a
//! signal, links that change only the query followed without a reload, and the
//! document title.

use leptos::prelude::*;

/// A page address: its path and its decoded query pairs, in order.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Url {
    pub path: String,
    pub query: Vec<(String, String)>,
}

impl Url {
    /// Reads `/path?a=1&b=x%20y` (a leading `?` or none before the query; a
    /// fragment is dropped). Undecodable escapes are kept as written.
    pub fn parse(path_and_query: &str) -> Self {
        let without_fragment = path_and_query.split('#').next().unwrap_or_default();
        let (path, query) = without_fragment.split_once('?').unwrap_or((without_fragment, ""));
        let query = query
            .split('&')
            .filter(|pair| !pair.is_empty())
            .map(|pair| {
                let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
                (decode_component(key), decode_component(value))
            })
            .collect();
        let path = if path.is_empty() { "/".to_string() } else { path.to_string() };
        Url { path, query }
    }

    /// The address being served (on the server) or shown (in the browser).
    pub fn current() -> Self {
        Self::parse(&current_address())
    }

    /// The first value of `key` that is not empty.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.query.iter().find(|(name, value)| name == key && !value.is_empty()).map(|(_, value)| value.as_str())
    }
}

fn decode_component(text: &str) -> String {
    let spaced = text.replace('+', " ");
    match urlencoding::decode(&spaced) {
        Ok(decoded) => decoded.into_owned(),
        Err(_) => spaced,
    }
}

/// The page's address as a signal (in context, from [`provide_location`]).
#[derive(Clone, Copy)]
pub struct Location(RwSignal<Url>);

impl Location {
    /// The query parameter `key`, tracked.
    pub fn query(self, key: &'static str) -> Memo<Option<String>> {
        let url = self.0;
        Memo::new(move |_| url.with(|url| url.get(key).map(str::to_string)))
    }

    /// The folder and session the address names now, untracked.
    pub fn place_untracked(self) -> (Option<String>, Option<String>) {
        self.0.with_untracked(|url| (url.get("folder").map(str::to_string), url.get("session").map(str::to_string)))
    }

    /// The path when the page loaded, untracked: it chooses the page, and a
    /// change of path is always a full load.
    pub fn path_untracked(self) -> String {
        self.0.with_untracked(|url| url.path.clone())
    }

    /// Opens `href` (a path with a query) in this page: the address bar changes,
    /// the page follows the signal, and back returns.
    pub fn navigate(self, href: &str) {
        #[cfg(feature = "hydrate")]
        browser::go(self.0, href, browser::History::Push);
        #[cfg(not(feature = "hydrate"))]
        let _ = href;
    }

    /// Like [`Location::navigate`], in place of the current entry: back does not
    /// return to what the address named before (a session that is gone).
    pub fn replace(self, href: &str) {
        #[cfg(feature = "hydrate")]
        browser::go(self.0, href, browser::History::Replace);
        #[cfg(not(feature = "hydrate"))]
        let _ = href;
    }
}

pub fn use_location() -> Location {
    expect_context::<Location>()
}

/// Puts the page's address into context; in the browser, it follows back and
/// forward and same-page links from then on.
pub fn provide_location() -> Location {
    let location = Location(RwSignal::new(Url::current()));
    provide_context(location);
    #[cfg(feature = "hydrate")]
    browser::follow(location.0);
    location
}

/// The document's title; the server writes the first one into the HTML (`shell`).
pub fn set_title(title: &str) {
    #[cfg(feature = "hydrate")]
    if document().title() != title {
        document().set_title(title);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = title;
}

#[cfg(feature = "ssr")]
fn current_address() -> String {
    use_context::<http::request::Parts>()
        .and_then(|parts| parts.uri.path_and_query().map(|path| path.as_str().to_string()))
        .unwrap_or_else(|| "/".to_string())
}

#[cfg(feature = "hydrate")]
fn current_address() -> String {
    let location = window().location();
    format!("{}{}", location.pathname().unwrap_or_default(), location.search().unwrap_or_default())
}

#[cfg(not(any(feature = "ssr", feature = "hydrate")))]
fn current_address() -> String {
    "/".to_string()
}

#[cfg(feature = "hydrate")]
mod browser {
    use leptos::prelude::*;
    use wasm_bindgen::JsCast;

    use super::Url;

    pub fn follow(address: RwSignal<Url>) {
        // The listeners live as long as the page: one page, one location.
        window_event_listener(leptos::ev::popstate, move |_| {
            address.try_set(Url::current());
        });
        window_event_listener(leptos::ev::click, move |event| follow_same_page_link(address, event));
    }

    pub enum History {
        Push,
        Replace,
    }

    pub fn go(address: RwSignal<Url>, href: &str, entry: History) {
        let written = window().history().and_then(|history| match entry {
            History::Push => history.push_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(href)),
            History::Replace => history.replace_state_with_url(&wasm_bindgen::JsValue::NULL, "", Some(href)),
        });
        if written.is_err() {
            // Without history (never in a browser the hub supports): load it.
            let _ = window().location().set_href(href);
            return;
        }
        address.try_set(Url::current());
    }

    /// A plain click on a link to this same page with another query (a folder in
    /// the list, a waiting session) changes the query in place; every other link
    /// (another page, a new tab, a download) is the browser's.
    fn follow_same_page_link(address: RwSignal<Url>, event: web_sys::MouseEvent) {
        if event.default_prevented()
            || event.button() != 0
            || event.meta_key()
            || event.ctrl_key()
            || event.shift_key()
            || event.alt_key()
        {
            return;
        }
        let Some(anchor) = event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
            .and_then(|element| element.closest("a[href]").ok().flatten())
            .and_then(|element| element.dyn_into::<web_sys::HtmlAnchorElement>().ok())
        else {
            return;
        };
        let here = window().location();
        if !anchor.target().is_empty()
            || anchor.has_attribute("download")
            || anchor.origin() != here.origin().unwrap_or_default()
            || anchor.pathname() != here.pathname().unwrap_or_default()
            // A fragment (`#top`, the markdown's `#` for a link it dropped) is the browser's.
            || !anchor.hash().is_empty()
            || anchor.get_attribute("href").is_some_and(|href| href.starts_with('#'))
        {
            return;
        }
        event.prevent_default();
        // The page already shows it: no second history entry.
        if anchor.search() != here.search().unwrap_or_default() {
            go(address, &format!("{}{}", anchor.pathname(), anchor.search()), History::Push);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Url;

    #[test]
    fn addresses_read_as_path_and_decoded_query() {
        for (address, path, query) in [
            ("/", "/", vec![]),
            ("", "/", vec![]),
            ("/decisions", "/decisions", vec![]),
            ("/?folder=%2Ftmp%2Fa%20b", "/", vec![("folder", "/tmp/a b")]),
            ("/?folder=/x+y&session=s1", "/", vec![("folder", "/x y"), ("session", "s1")]),
            ("/?folder=%2Fa%2B", "/", vec![("folder", "/a+")]),
            ("/?a&b=", "/", vec![("a", ""), ("b", "")]),
            ("/?folder=%ZZ", "/", vec![("folder", "%ZZ")]),
            ("/decisions?folder=%2Fp#top", "/decisions", vec![("folder", "/p")]),
        ] {
            let url = Url::parse(address);
            assert_eq!(url.path, path, "{address}");
            let pairs: Vec<(&str, &str)> = url.query.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            assert_eq!(pairs, query, "{address}");
        }
    }

    #[test]
    fn get_skips_empty_values_and_takes_the_first() {
        let url = Url::parse("/?folder=&folder=%2Fa&folder=%2Fb");
        assert_eq!(url.get("folder"), Some("/a"));
        assert_eq!(url.get("session"), None);
        assert_eq!(Url::parse("/?folder=").get("folder"), None);
    }
}
