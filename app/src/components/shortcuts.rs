//! The page's keys: Alt+N starts a new session in the open folder, Alt+J opens
//! the next session with a card or question waiting (its card then takes the
//! focus, so its own keys work at once). Keys are read by `code`, not `key`: on a
//! Mac, Alt with a letter types another character.

#[cfg(feature = "hydrate")]
use leptos::prelude::*;

use crate::location::Location;
#[cfg(feature = "hydrate")]
use crate::state::session_href;
use crate::state::HubState;
#[cfg(feature = "hydrate")]
use crate::waiting::waiting_sessions;
use crate::waiting::Waiting;

/// For `aria-keyshortcuts` and the hints beside the controls.
pub const NEW_SESSION_KEYS: &str = "Alt+N";
pub const NEXT_WAITING_KEYS: &str = "Alt+J";

/// Listens for the keys as long as the page lives (browser only).
pub fn listen(state: HubState, location: Location) {
    #[cfg(feature = "hydrate")]
    {
        let handle = window_event_listener(leptos::ev::keydown, move |event| {
            if !event.alt_key() || event.ctrl_key() || event.meta_key() || event.shift_key() || event.repeat() {
                return;
            }
            // In a text field Alt with a letter may type (a Mac's Option+N starts ñ).
            if typing_now() {
                return;
            }
            let acted = match event.code().as_str() {
                "KeyN" => new_session(state, location),
                "KeyJ" => next_waiting(state, location),
                _ => false,
            };
            if acted {
                event.prevent_default();
            }
        });
        on_cleanup(move || handle.remove());
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (state, location);
}

#[cfg(feature = "hydrate")]
thread_local! {
    static CREATING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// A new session in the open folder, opened once the hub made it.
#[cfg(feature = "hydrate")]
fn new_session(state: HubState, location: Location) -> bool {
    let Some(Some(folder)) = state.config.try_with_untracked(|config| config.as_ref().map(|c| c.folder_path.clone()))
    else {
        return false;
    };
    // One at a time: a held or double-pressed Alt+N makes one session.
    if CREATING.with(|creating| creating.replace(true)) {
        return true;
    }
    // What the address shows, not the config (which may still be the one
    // the page just left, when a deleted session's successor was opened).
    let shown = location.place_untracked();
    leptos::task::spawn_local(async move {
        let agent = state.new_session_agent.try_get_untracked().flatten();
        let created = crate::client::sessions::create(&folder, None, agent, false).await;
        CREATING.with(|creating| creating.set(false));
        match created {
            Ok(session) => {
                state.refresh_projects();
                // Only if the page still shows the place it showed: the user may have moved on.
                if location.place_untracked() == shown {
                    location.navigate(&session_href(&folder, &session.id));
                }
            }
            Err(error) => {
                state.error.try_set(Some(error));
            }
        }
    });
    true
}

/// Whether the focus is in a field that takes text.
#[cfg(feature = "hydrate")]
fn typing_now() -> bool {
    use wasm_bindgen::JsCast;
    document().active_element().is_some_and(|element| match element.tag_name().as_str() {
        // A checkbox or a button takes no text: the keys work there.
        "INPUT" => matches!(
            element.get_attribute("type").unwrap_or_default().to_ascii_lowercase().as_str(),
            "" | "text" | "search" | "url" | "email" | "password" | "tel" | "number"
        ),
        "TEXTAREA" => true,
        _ => element.dyn_ref::<web_sys::HtmlElement>().is_some_and(|element| element.is_content_editable()),
    })
}

#[cfg(feature = "hydrate")]
fn next_waiting(state: HubState, location: Location) -> bool {
    let Some(waiting) = state.projects.try_with_untracked(|projects| waiting_sessions(projects)) else { return false };
    let current = state.config.try_with_untracked(|config| config.as_ref().map(|c| c.session_id.clone())).flatten();
    match next_after(&waiting, current.as_deref()) {
        Some(next) => {
            location.navigate(&session_href(&next.folder_path, &next.session_id));
            true
        }
        None => false,
    }
}

/// The waiting session after `current` in the inbox's order (longest waiting
/// first), round to the first; the first when `current` is not waiting.
pub fn next_after<'a>(waiting: &'a [Waiting], current: Option<&str>) -> Option<&'a Waiting> {
    let at = current.and_then(|current| waiting.iter().position(|item| item.session_id == current));
    match at {
        Some(at) => waiting.get((at + 1) % waiting.len()),
        None => waiting.first(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use protocol::api::SessionStatus;

    fn waiting(ids: &[&str]) -> Vec<Waiting> {
        ids.iter()
            .enumerate()
            .map(|(at, id)| Waiting {
                folder_path: format!("/p/{id}"),
                session_id: id.to_string(),
                status: SessionStatus::WaitingApproval,
                pending_count: 1,
                updated_at: at as u64,
            })
            .collect()
    }

    #[test]
    fn the_next_waiting_session_goes_round() {
        let list = waiting(&["a", "b", "c"]);
        let next = |current| next_after(&list, current).map(|item| item.session_id.as_str());
        for (current, expected) in
            [(None, "a"), (Some("a"), "b"), (Some("b"), "c"), (Some("c"), "a"), (Some("idle"), "a")]
        {
            assert_eq!(next(current), Some(expected), "after {current:?}");
        }
        assert_eq!(next_after(&waiting(&["only"]), Some("only")).map(|item| item.session_id.as_str()), Some("only"));
        assert!(next_after(&[], Some("a")).is_none());
    }
}
