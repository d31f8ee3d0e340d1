//! What a key does on a card, and the hint line that says so.

use super::{ButtonAction, CardChoices, CardKind};
use protocol::api::ApprovalDecision;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CardAction {
    Decide(ApprovalDecision),
    /// Answers the agent's own option (its id).
    AgentOption(String),
    /// Move the ❯ to this place (the place after the buttons focuses the instruction).
    Select(usize),
    OpenEditor,
    /// Show the rule "Always in this folder" would save, to confirm or change.
    OpenAlways,
    /// Press the card's "Copy command" (the card keeps Tab for its choices).
    CopyCommand,
}

/// What a key does while the buttons have the focus (the input handles its
/// own keys). Keys name decisions, not places: 1 approves only where the card
/// offers approving. The agent's own choices have no key of their own.
pub fn card_key(key: &str, shift: bool, selected: usize, kind: CardKind, choices: &CardChoices) -> Option<CardAction> {
    let edit_card = kind != CardKind::Call;
    let input = choices.len();
    let places = input + 1;
    let next = (selected + 1) % places;
    let previous = (selected + places - 1) % places;
    let decide = |decision: ApprovalDecision| {
        choices.has(&ButtonAction::Decide(decision.clone())).then_some(CardAction::Decide(decision))
    };
    Some(match key {
        "1" => return decide(ApprovalDecision::Approve),
        "2" => return decide(ApprovalDecision::Reject),
        "3" => return decide(ApprovalDecision::ApproveSession),
        "4" => CardAction::Select(input),
        "5" => return choices.has(&ButtonAction::OpenAlways).then_some(CardAction::OpenAlways),
        "t" | "T" => return decide(ApprovalDecision::ApproveTurn),
        "n" | "N" if !edit_card => return decide(ApprovalDecision::ApproveNetwork),
        "u" | "U" if !edit_card => return decide(ApprovalDecision::ApproveUnsandboxed),
        "a" if edit_card => return decide(ApprovalDecision::ApproveSession),
        "d" if edit_card => return decide(ApprovalDecision::Reject),
        "e" if edit_card => return choices.has(&ButtonAction::OpenEditor).then_some(CardAction::OpenEditor),
        "c" | "C" if !edit_card => CardAction::CopyCommand,
        "ArrowRight" => CardAction::Select(next),
        "ArrowLeft" => CardAction::Select(previous),
        "Tab" if shift => CardAction::Select(previous),
        "Tab" => CardAction::Select(next),
        "Enter" => match choices.get(selected).map(|button| &button.action) {
            Some(ButtonAction::Decide(decision)) => CardAction::Decide(decision.clone()),
            Some(ButtonAction::OpenEditor) => CardAction::OpenEditor,
            Some(ButtonAction::OpenAlways) => CardAction::OpenAlways,
            Some(ButtonAction::AgentOption(id)) => CardAction::AgentOption(id.clone()),
            None => CardAction::Select(input),
        },
        _ => return None,
    })
}

/// The keys the card takes, as its last line says them (while the ❯ is on a button).
pub fn card_hint(kind: CardKind, choices: &CardChoices) -> String {
    let approve = choices.label(&ButtonAction::Decide(ApprovalDecision::Approve));
    let reject = choices.label(&ButtonAction::Decide(ApprovalDecision::Reject)).unwrap_or("Reject");
    let session = choices.has(&ButtonAction::Decide(ApprovalDecision::ApproveSession));
    let turn = choices.has(&ButtonAction::Decide(ApprovalDecision::ApproveTurn));
    let always = choices.has(&ButtonAction::OpenAlways);
    let mut parts: Vec<String> = Vec::new();
    match kind {
        CardKind::Call => {
            parts.push(if approve.is_some() { "1/2/3 Quick Select".to_string() } else { format!("2 {reject}") });
            if turn {
                parts.push("t For this turn".to_string());
            }
            if choices.has(&ButtonAction::Decide(ApprovalDecision::ApproveNetwork)) {
                parts.push("n With network".to_string());
            }
            if choices.has(&ButtonAction::Decide(ApprovalDecision::ApproveUnsandboxed)) {
                parts.push("u Outside the sandbox".to_string());
            }
            parts.push("4 Edit".to_string());
        }
        CardKind::Edit { .. } => {
            if let Some(approve) = approve {
                parts.push(format!("Enter {approve}"));
            }
            if session {
                parts.push(if choices.from_agent { "a For this session" } else { "a Always" }.to_string());
            }
            if turn {
                parts.push("t For this turn".to_string());
            }
            parts.push(format!("d {reject}"));
            if choices.has(&ButtonAction::OpenEditor) {
                parts.push("e Edit".to_string());
            }
            parts.push("4 Instruct".to_string());
        }
    }
    parts.push("Tab/←→ Navigate".to_string());
    if always {
        parts.push("5 Always in this folder".to_string());
    }
    parts.join(" • ")
}

/// The card's keys are pressed in the card, or with the focus nowhere in
/// particular (on the page itself). A key pressed on another control is that
/// control's: text typed in the prompt box, Tab moving on from a header button,
/// Enter pressing it, keys in the Rules panel. So is text typed in the card's
/// own fields, which handle their keys themselves.
#[cfg(feature = "hydrate")]
pub(super) fn typing_elsewhere(event: &leptos::ev::KeyboardEvent) -> bool {
    use wasm_bindgen::JsCast;
    let Some(element) = event.target().and_then(|target| target.dyn_into::<web_sys::HtmlElement>().ok()) else {
        return false;
    };
    if element.closest("[data-testid='approval-card']").ok().flatten().is_some() {
        return is_text_field(&element);
    }
    !matches!(element.tag_name().as_str(), "BODY" | "HTML")
}

/// Clicks the card's "Copy command", if it has one.
#[cfg(feature = "hydrate")]
pub(super) fn press_copy_command(card: leptos::prelude::NodeRef<leptos::html::Section>) -> bool {
    use leptos::prelude::GetUntracked;
    use wasm_bindgen::JsCast;
    let selector = format!("button[data-label='{}']", crate::components::copy_button::COPY_COMMAND);
    let button = card.get_untracked().and_then(|card| card.query_selector(&selector).ok().flatten());
    match button.and_then(|button| button.dyn_into::<web_sys::HtmlElement>().ok()) {
        Some(button) => {
            button.click();
            true
        }
        None => false,
    }
}

#[cfg(feature = "hydrate")]
fn is_text_field(element: &web_sys::HtmlElement) -> bool {
    matches!(element.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT") || element.is_content_editable()
}

/// Whether the focus is in a text field that holds unsent text.
#[cfg(feature = "hydrate")]
pub(super) fn typing_elsewhere_now() -> bool {
    use wasm_bindgen::JsCast;
    let Some(active) =
        leptos::prelude::document().active_element().and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok())
    else {
        return false;
    };
    let has_text = active
        .dyn_ref::<web_sys::HtmlTextAreaElement>()
        .map(|area| area.value())
        .or_else(|| active.dyn_ref::<web_sys::HtmlInputElement>().map(|input| input.value()))
        .is_some_and(|text| !text.is_empty());
    is_text_field(&active) && has_text
}

#[cfg(not(feature = "hydrate"))]
pub(super) fn typing_elsewhere_now() -> bool {
    false
}
