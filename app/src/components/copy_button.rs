//! Copy buttons: on the code blocks of the agent's answers (written with the
//! markdown, see `markdown.rs`) and on a call's command. A click puts the text
//! on the clipboard (`navigator.clipboard`: the hub is served on loopback, a
//! secure context) and the button says "Copied" for a moment, or that copying
//! failed and why; a status beside it says the same to screen readers.

use leptos::prelude::*;

/// What the button shows; its accessible name says what it copies.
pub const COPY: &str = "Copy";
pub const COPY_CODE: &str = "Copy code";
pub const COPY_COMMAND: &str = "Copy command";
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
const COPIED: &str = "Copied";
#[cfg_attr(not(feature = "hydrate"), allow(dead_code))]
const FAILED: &str = "Copy failed";

/// A code block's text as copied: the code between its fences, without the
/// newline that ends its last line (pasted into a terminal, that newline would
/// run the last command at once).
pub fn code_text(text: &str) -> &str {
    text.strip_suffix('\n').unwrap_or(text)
}

/// A button that copies `text`, named `label` (e.g. [`COPY_COMMAND`]).
#[component]
pub fn CopyButton(text: String, label: &'static str) -> impl IntoView {
    let button = NodeRef::<leptos::html::Button>::new();
    let text = StoredValue::new(text);
    view! {
        <span class="inline-flex shrink-0">
            <button
                type="button"
                node_ref=button
                class="copy-button"
                aria-label=label
                data-label=label
                on:click=move |_| copy_from(button, text)
                on:keydown=keep_keys
            >
                {COPY}
            </button>
            <span role="status" class="sr-only"></span>
        </span>
    }
}

fn copy_from(button: NodeRef<leptos::html::Button>, text: StoredValue<String>) {
    #[cfg(feature = "hydrate")]
    if let Some(button) = button.get_untracked() {
        copy_with_feedback(button.into(), text.get_value());
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (button, text);
}

/// Keys pressed on a copy button are its own (Enter and Space press it, Tab
/// moves on): the page's card and question listeners must not take them for
/// their choices (Enter on a card's copy button would approve the call).
fn keep_keys(event: leptos::ev::KeyboardEvent) {
    if !(event.ctrl_key() || event.alt_key() || event.meta_key()) {
        event.stop_propagation();
    }
}

/// Keys on a code block's copy button are the button's: Enter or Space copies,
/// and no card or question hears them (a question takes Enter from the page).
pub fn keep_copy_keys(event: &leptos::ev::KeyboardEvent) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let on_copy = event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
            .and_then(|element| element.closest("button[data-copy]").ok().flatten())
            .is_some();
        // Shortcuts with a modifier (Alt+N, Alt+J) still reach the page.
        if on_copy && !(event.ctrl_key() || event.alt_key() || event.meta_key()) {
            event.stop_propagation();
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = event;
}

/// A click in rendered markdown: on a code block's copy button, copies that
/// block's code (its text, whether highlighted or not).
pub fn copy_code_block(event: &leptos::ev::MouseEvent) {
    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let Some(button) = event
            .target()
            .and_then(|target| target.dyn_into::<web_sys::Element>().ok())
            .and_then(|element| element.closest("button[data-copy='code']").ok().flatten())
        else {
            return;
        };
        let code = button
            .closest(".code-block")
            .ok()
            .flatten()
            .and_then(|block| block.query_selector("pre > code").ok().flatten())
            .and_then(|code| code.text_content());
        if let Some(code) = code {
            copy_with_feedback(button, code_text(&code).to_string());
        }
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = event;
}

#[cfg(feature = "hydrate")]
fn copy_with_feedback(button: web_sys::Element, text: String) {
    use std::sync::atomic::{AtomicU64, Ordering};
    /// Each copy's number: only the latest puts its button back to "Copy".
    static COPIES: AtomicU64 = AtomicU64::new(0);
    let copy = (COPIES.fetch_add(1, Ordering::Relaxed) + 1).to_string();
    let _ = button.set_attribute("data-copy-seq", &copy);
    leptos::task::spawn_local(async move {
        let result = copy_text(&text).await;
        show(&button, Some(&result));
        set_timeout(
            move || {
                if button.get_attribute("data-copy-seq").as_deref() == Some(copy.as_str()) {
                    show(&button, None);
                }
            },
            std::time::Duration::from_secs(2),
        );
    });
}

/// Puts `text` on the clipboard, or says why it could not.
#[cfg(feature = "hydrate")]
async fn copy_text(text: &str) -> Result<(), String> {
    use wasm_bindgen::{JsCast, JsValue};
    // Looked up, not called through `navigator()`: one binding less in the first load's glue.
    let clipboard = js_sys::Reflect::get(&window(), &JsValue::from_str("navigator"))
        .and_then(|navigator| js_sys::Reflect::get(&navigator, &JsValue::from_str("clipboard")))
        .ok()
        .filter(|clipboard| !clipboard.is_undefined() && !clipboard.is_null())
        .ok_or("the browser gives this page no clipboard (only https and localhost pages get one)")?;
    let clipboard: web_sys::Clipboard = clipboard.unchecked_into();
    wasm_bindgen_futures::JsFuture::from(clipboard.write_text(text)).await.map(drop).map_err(|error| {
        js_sys::Reflect::get(&error, &JsValue::from_str("message"))
            .ok()
            .and_then(|message| message.as_string())
            .filter(|message| !message.is_empty())
            .unwrap_or_else(|| "the browser refused".into())
    })
}

/// The button as it was (`None`), or saying how the copy went.
#[cfg(feature = "hydrate")]
fn show(button: &web_sys::Element, result: Option<&Result<(), String>>) {
    let label = button.get_attribute("data-label").unwrap_or_else(|| COPY.into());
    let (text, name, state, status) = match result {
        None => (COPY, label, "", String::new()),
        Some(Ok(())) => (COPIED, COPIED.to_string(), "done", COPIED.to_string()),
        Some(Err(why)) => (FAILED, format!("{FAILED}: {why}"), "failed", format!("{FAILED}: {why}")),
    };
    button.set_text_content(Some(text));
    let _ = button.set_attribute("aria-label", &name);
    let _ = button.set_attribute("data-state", state);
    match result {
        Some(Err(why)) => drop(button.set_attribute("title", why)),
        _ => drop(button.remove_attribute("title")),
    }
    // The status beside the button is what screen readers announce.
    if let Some(live) =
        button.next_element_sibling().filter(|next| next.get_attribute("role").as_deref() == Some("status"))
    {
        live.set_text_content(Some(&status));
    }
}

#[cfg(test)]
mod tests {
    use super::code_text;

    #[test]
    fn a_code_blocks_text_is_copied_without_its_closing_newline() {
        assert_eq!(code_text("cargo test\n"), "cargo test");
        assert_eq!(code_text("fn main() {\n}\n\n"), "fn main() {\n}\n", "only the one newline the fence adds");
        assert_eq!(code_text("no newline"), "no newline");
        assert_eq!(code_text(""), "");
    }
}
