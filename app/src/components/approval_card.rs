//! The Action Required card (seed design 000): Yes / No / Yes, for this session,
//! or an instruction that replaces the tool's result. Keys 1/2/3 decide, 4 goes
//! to the instruction, Tab/←→ move, Enter acts, Esc leaves the instruction.
//! The card is keyed by its tool call, so a regenerated call starts fresh.

use leptos::prelude::*;

use crate::components::tool_call::ParameterList;
use crate::transcript::Card;
use crate::types::ApproveRequest;

/// The card's buttons: label and the decision they send.
pub const BUTTONS: [(&str, &str); 3] =
    [("Yes", "approve"), ("No", "reject"), ("Yes, for this session", "approve_session")];
/// The instruction input comes after the buttons in the navigation order.
const INPUT: usize = BUTTONS.len();

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardAction {
    Decide(&'static str),
    /// Move the ❯ to this place (`INPUT` focuses the instruction).
    Select(usize),
}

/// What a key does while the buttons have the focus (the input handles its own keys).
pub fn card_key(key: &str, shift: bool, selected: usize) -> Option<CardAction> {
    let places = INPUT + 1;
    let next = (selected + 1) % places;
    let previous = (selected + places - 1) % places;
    Some(match key {
        "1" | "2" | "3" => CardAction::Decide(BUTTONS[key.parse::<usize>().ok()? - 1].1),
        "4" => CardAction::Select(INPUT),
        "ArrowRight" => CardAction::Select(next),
        "ArrowLeft" => CardAction::Select(previous),
        "Tab" if shift => CardAction::Select(previous),
        "Tab" => CardAction::Select(next),
        "Enter" => match BUTTONS.get(selected) {
            Some((_, decision)) => CardAction::Decide(decision),
            None => CardAction::Select(INPUT),
        },
        _ => return None,
    })
}

/// The request a decision sends; `None` for an instruction that is blank.
pub fn request(tool_id: &str, decision: &str, instruction: &str) -> Option<ApproveRequest> {
    let edit = decision == "edit";
    if edit && instruction.trim().is_empty() {
        return None;
    }
    Some(ApproveRequest {
        tool_id: tool_id.to_string(),
        decision: decision.to_string(),
        edit_instruction: edit.then(|| instruction.trim().to_string()),
        modified_content: None,
        stream: None,
    })
}

#[component]
pub fn ApprovalCard(card: Card, on_decide: Callback<ApproveRequest>, busy: Signal<bool>) -> impl IntoView {
    let selected = RwSignal::new(0usize);
    let instruction = RwSignal::new(String::new());
    let input_ref = NodeRef::<leptos::html::Input>::new();
    let tool_id = StoredValue::new(card.call.tool_id.clone());

    let send = move |decision: &str| {
        if busy.get_untracked() {
            return;
        }
        if let Some(request) = request(&tool_id.get_value(), decision, &instruction.get_untracked()) {
            on_decide.run(request);
        }
    };
    let select = move |place: usize| {
        selected.set(place);
        if let Some(input) = input_ref.get_untracked() {
            if place == INPUT {
                let _ = input.focus();
            } else {
                let _ = input.blur();
            }
        }
    };

    let card_ref = NodeRef::<leptos::html::Section>::new();
    // The keys work at once, unless the user is typing something elsewhere.
    Effect::new(move |_| {
        if let Some(section) = card_ref.get() {
            if !typing_elsewhere_now() {
                let _ = section.focus();
            }
        }
    });

    #[cfg(feature = "hydrate")]
    {
        let handle = window_event_listener(leptos::ev::keydown, move |event| {
            if busy.get_untracked()
                || event.ctrl_key()
                || event.meta_key()
                || event.alt_key()
                || typing_elsewhere(&event)
            {
                return;
            }
            match card_key(&event.key(), event.shift_key(), selected.get_untracked()) {
                Some(CardAction::Decide(decision)) => send(decision),
                Some(CardAction::Select(place)) => select(place),
                None => return,
            }
            event.prevent_default();
        });
        on_cleanup(move || handle.remove());
    }

    let on_input_key = move |event: leptos::ev::KeyboardEvent| match event.key().as_str() {
        "Enter" => {
            event.prevent_default();
            send("edit");
        }
        "Escape" => {
            event.prevent_default();
            select(0);
        }
        _ => {}
    };
    let marker = move |place: usize| if selected.get() == place { "❯" } else { "\u{a0}" };
    let button_class = move |place: usize| {
        if selected.get() == place {
            "rounded-md bg-amber-500 px-3 py-1.5 font-medium text-white disabled:opacity-50"
        } else {
            "rounded-md px-3 py-1.5 font-medium text-slate-700 hover:bg-amber-100 disabled:opacity-50 dark:text-slate-200 dark:hover:bg-amber-900/40"
        }
    };

    view! {
        <section
            node_ref=card_ref
            tabindex="-1"
            data-testid="approval-card"
            data-tool-id=card.call.tool_id.clone()
            role="dialog"
            aria-label="Action Required"
            class="rounded-xl border-2 border-amber-400 bg-amber-50/60 p-4 shadow-sm focus:outline-none focus-visible:ring-2 focus-visible:ring-amber-500 dark:border-amber-600 dark:bg-amber-950/30"
        >
            <header class="mb-3 flex items-center gap-3">
                <span class="text-xs font-semibold uppercase tracking-wide text-amber-700 dark:text-amber-400">
                    "Action Required"
                </span>
                <span data-testid="card-tool" class="font-mono font-semibold">{card.call.tool_name.clone()}</span>
                <span class="flex-1"></span>
                <span data-testid="card-position" class="font-mono text-sm text-slate-500">
                    {format!("{}/{}", card.position, card.total)}
                </span>
            </header>
            <ParameterList parameters=card.call.parameters.clone() />
            <div class="mt-4 flex flex-wrap items-center gap-1 text-sm" role="group" aria-label="Decision">
                {BUTTONS
                    .iter()
                    .enumerate()
                    .map(|(place, (label, decision))| {
                        view! {
                            <button
                                type="button"
                                data-testid=format!("card-{decision}")
                                class=move || button_class(place)
                                disabled=move || busy.get()
                                on:click=move |_| send(decision)
                            >
                                <span class="mr-1 inline-block w-3">{move || marker(place)}</span>
                                {*label}
                            </button>
                        }
                    })
                    .collect_view()}
            </div>
            <div class="mt-3 flex items-center gap-2 text-sm">
                <span class="inline-block w-3 text-amber-600">{move || if selected.get() == INPUT { "❯" } else { "│" }}</span>
                <input
                    type="text"
                    node_ref=input_ref
                    data-testid="card-feedback"
                    placeholder="Input your changes here"
                    autocomplete="off"
                    bind:value=instruction
                    disabled=move || busy.get()
                    on:focus=move |_| selected.set(INPUT)
                    on:keydown=on_input_key
                    class="min-w-0 flex-1 rounded-md border border-slate-300 bg-white px-2 py-1.5 focus:border-amber-500 focus:outline-none focus:ring-2 focus:ring-amber-500/30 dark:border-slate-700 dark:bg-slate-950"
                />
            </div>
            <p data-testid="card-hint" class="mt-3 text-xs text-slate-500">
                {move || {
                    if selected.get() == INPUT {
                        "Enter Submit • Esc Cancel"
                    } else {
                        "1/2/3 Quick Select • 4 Edit • Tab/←→ Navigate"
                    }
                }}
            </p>
        </section>
    }
}

/// Keys typed into another text field (the prompt box) are not card keys.
#[cfg(feature = "hydrate")]
fn typing_elsewhere(event: &leptos::ev::KeyboardEvent) -> bool {
    use wasm_bindgen::JsCast;
    event.target().and_then(|target| target.dyn_into::<web_sys::HtmlElement>().ok()).is_some_and(|e| is_text_field(&e))
}

#[cfg(feature = "hydrate")]
fn is_text_field(element: &web_sys::HtmlElement) -> bool {
    matches!(element.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT") || element.is_content_editable()
}

/// Whether the focus is in a text field that holds unsent text.
#[cfg(feature = "hydrate")]
fn typing_elsewhere_now() -> bool {
    use wasm_bindgen::JsCast;
    let Some(active) = document().active_element().and_then(|e| e.dyn_into::<web_sys::HtmlElement>().ok()) else {
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
fn typing_elsewhere_now() -> bool {
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn number_keys_decide() {
        assert_eq!(card_key("1", false, 2), Some(CardAction::Decide("approve")));
        assert_eq!(card_key("2", false, 0), Some(CardAction::Decide("reject")));
        assert_eq!(card_key("3", false, 0), Some(CardAction::Decide("approve_session")));
        assert_eq!(card_key("4", false, 0), Some(CardAction::Select(INPUT)));
        assert_eq!(card_key("5", false, 0), None);
        assert_eq!(card_key("a", false, 0), None);
    }

    #[test]
    fn tab_and_arrows_cycle_through_buttons_and_input() {
        assert_eq!(card_key("ArrowRight", false, 0), Some(CardAction::Select(1)));
        assert_eq!(card_key("Tab", false, 2), Some(CardAction::Select(INPUT)));
        assert_eq!(card_key("ArrowRight", false, INPUT), Some(CardAction::Select(0)));
        assert_eq!(card_key("ArrowLeft", false, 0), Some(CardAction::Select(INPUT)));
        assert_eq!(card_key("Tab", true, 1), Some(CardAction::Select(0)));
    }

    #[test]
    fn enter_acts_on_the_selected_button() {
        assert_eq!(card_key("Enter", false, 1), Some(CardAction::Decide("reject")));
        assert_eq!(card_key("Enter", false, 2), Some(CardAction::Decide("approve_session")));
    }

    #[test]
    fn blank_instructions_send_nothing() {
        assert_eq!(request("t", "edit", "  \n"), None);
        let edit = request("t", "edit", " only .log files ").unwrap();
        assert_eq!(edit.edit_instruction.as_deref(), Some("only .log files"));
        let approve = request("t", "approve", "").unwrap();
        assert_eq!((approve.decision.as_str(), approve.edit_instruction), ("approve", None));
    }
}
