//! The Action Required card (seed design 000): Yes / No / Yes, for this session,
//! or an instruction that replaces the tool's result. Keys 1/2/3 decide, 4 goes
//! to the instruction, Tab/←→ move, Enter acts, Esc leaves the instruction.
//! File edits (seed design 001) show their diff and add Enter Apply, a Always,
//! d Reject and e Edit: an editor holding the proposed file, whose saved text
//! is written instead. On both, 5 (or the button) opens "Always in this
//! folder": the rule to save (a command's prefix, editable; or the tool),
//! confirmed before it is sent. The card is keyed by its tool call, so a
//! regenerated call starts fresh.
//!
//! An ACP agent's card is built from the options it sent: its "allow once"
//! and "reject once" on the hub's keys 1 and 2, in its words; the hub's own
//! scopes (session, folder) only where it can allow once; its persistent
//! options apart, as "the agent's own choices", answered as they are
//! (`agent_option`). A card whose call says nothing of what it does says so.

use leptos::prelude::*;

use crate::components::always_step::AlwaysStep;
pub use crate::components::card_choices::*;
use crate::components::diff_view::DiffView;
use crate::components::tool_call::{has_details, ParameterList};
use crate::parts::{wasm_split, PartMissing};
use crate::transcript::Card;
use protocol::api::{ApprovalDecision, ApproveRequest, PolicyDecision};

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
    let always = choices.has(&ButtonAction::OpenAlways);
    let mut parts: Vec<String> = Vec::new();
    match kind {
        CardKind::Call => {
            parts.push(if approve.is_some() { "1/2/3 Quick Select".to_string() } else { format!("2 {reject}") });
            parts.push("4 Edit".to_string());
        }
        CardKind::Edit { .. } => {
            if let Some(approve) = approve {
                parts.push(format!("Enter {approve}"));
            }
            if session {
                parts.push(if choices.from_agent { "a For this session" } else { "a Always" }.to_string());
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

/// What saving the editor sends: the user's text, or a plain approval when it
/// is still the proposal (closing the editor unchanged applies as proposed).
pub fn content_request(tool_id: &str, proposed: &str, content: &str) -> ApproveRequest {
    let changed = content != proposed;
    ApproveRequest {
        tool_id: tool_id.to_string(),
        decision: if changed { ApprovalDecision::Edit } else { ApprovalDecision::Approve },
        edit_instruction: None,
        modified_content: changed.then(|| content.to_string()),
        command_prefix: None,
        option_id: None,
        stream: None,
    }
}

/// The request a decision sends; `None` for an instruction that is blank.
pub fn request(tool_id: &str, decision: ApprovalDecision, instruction: &str) -> Option<ApproveRequest> {
    let edit = decision == ApprovalDecision::Edit;
    if edit && instruction.trim().is_empty() {
        return None;
    }
    Some(ApproveRequest {
        tool_id: tool_id.to_string(),
        decision,
        edit_instruction: edit.then(|| instruction.trim().to_string()),
        modified_content: None,
        command_prefix: None,
        option_id: None,
        stream: None,
    })
}

/// "Always in this folder": the call is approved and an allow rule saved; for
/// a shell command the rule covers `prefix` (`None` for other tools, whose
/// rule covers the tool). `None` when a command's prefix is blank.
pub fn always_request(tool_id: &str, prefix: Option<&str>) -> Option<ApproveRequest> {
    let prefix = match prefix.map(str::trim) {
        Some("") => return None,
        prefix => prefix.map(str::to_string),
    };
    Some(ApproveRequest {
        tool_id: tool_id.to_string(),
        decision: ApprovalDecision::ApproveAlways,
        command_prefix: prefix,
        edit_instruction: None,
        modified_content: None,
        option_id: None,
        stream: None,
    })
}

/// The agent's own option, answered as it is.
pub fn option_request(tool_id: &str, option_id: &str) -> ApproveRequest {
    ApproveRequest {
        tool_id: tool_id.to_string(),
        decision: ApprovalDecision::AgentOption,
        option_id: Some(option_id.to_string()),
        command_prefix: None,
        edit_instruction: None,
        modified_content: None,
        stream: None,
    }
}

/// The card, from the `cards` part of the wasm (see `parts`).
#[wasm_split(cards, wasm_split_path = ::leptos::wasm_split, preload(preload_cards), fallible)]
pub fn approval_card_view(
    card: Card,
    on_decide: Callback<ApproveRequest>,
    busy: Signal<bool>,
    editor: bool,
) -> Result<AnyView, PartMissing> {
    Ok(view! { <ApprovalCard card on_decide busy editor /> }.into_any())
}

#[component]
pub fn ApprovalCard(
    card: Card,
    on_decide: Callback<ApproveRequest>,
    busy: Signal<bool>,
    /// Whether the hub can write the user's own version of an edit.
    editor: bool,
) -> impl IntoView {
    let diff = card.call.diff.clone();
    let kind = if diff.is_some() { CardKind::Edit { editor } } else { CardKind::Call };
    let options = card.call.choices.clone();
    let blind = !has_details(&card.call);
    let choices = card_choices(kind, options.as_deref());
    let choices = if blind { choices.without_scopes() } else { choices };
    // A rule (or the hub's own check) made this call ask: no allow that would pass it unseen next time.
    let rule_asks = card.call.policy.as_ref().is_some_and(|note| note.decision == PolicyDecision::AskUser);
    let choices = match (&options, rule_asks) {
        (Some(options), true) => choices.without_agent_always(options),
        _ => choices,
    };
    let remembers = options.as_deref().is_some_and(|options| agent_remembers(options, &choices));
    let input_place = choices.len();
    let has_command = ["command", "cmd"].iter().any(|key| {
        card.call.parameters.get(key).and_then(|value| value.as_str()).is_some_and(|c| !c.trim().is_empty())
    });
    let hint_keys = match has_command && diff.is_none() {
        true => format!("{} • c Copy command", card_hint(kind, &choices)),
        false => card_hint(kind, &choices),
    };
    let selected = RwSignal::new(0usize);
    let instruction = RwSignal::new(String::new());
    let input_ref = NodeRef::<leptos::html::Input>::new();
    let tool_id = StoredValue::new(card.call.tool_id.clone());
    let proposed = StoredValue::new(diff.as_ref().map(|diff| diff.new_text.clone()).unwrap_or_default());
    let editing = RwSignal::new(false);
    let content = RwSignal::new(proposed.get_value());
    let editor_ref = NodeRef::<leptos::html::Textarea>::new();
    let card_ref = NodeRef::<leptos::html::Section>::new();
    let scoping = RwSignal::new(false);
    // Why a card shows even in YOLO: the rule, and its message when it has one.
    let asks_by_rule = card
        .call
        .policy
        .as_ref()
        .filter(|note| note.decision == PolicyDecision::AskUser)
        .map(|note| (format!("A rule makes this call ask · {}", note.source), note.message.clone()));

    let send = move |decision: ApprovalDecision| {
        if busy.get_untracked() {
            return;
        }
        if let Some(request) = request(&tool_id.get_value(), decision, &instruction.get_untracked()) {
            on_decide.run(request);
        }
    };
    let send_option = move |option_id: &str| {
        if !busy.get_untracked() {
            on_decide.run(option_request(&tool_id.get_value(), option_id));
        }
    };
    let select = move |place: usize| {
        selected.set(place);
        if let Some(input) = input_ref.get_untracked() {
            if place == input_place {
                let _ = input.focus();
            } else {
                let _ = input.blur();
            }
        }
    };
    let open_editor = move || {
        editing.set(true);
        if let Some(editor) = editor_ref.get_untracked() {
            let _ = editor.focus();
        }
    };
    let save_editor = move || {
        if !busy.get_untracked() {
            on_decide.run(content_request(&tool_id.get_value(), &proposed.get_value(), &content.get_untracked()));
        }
    };
    let close_editor = move || {
        editing.set(false);
        if let Some(section) = card_ref.get_untracked() {
            let _ = section.focus();
        }
    };
    let open_always = move || scoping.set(true);
    let close_always = Callback::new(move |()| {
        scoping.set(false);
        if let Some(section) = card_ref.get_untracked() {
            let _ = section.focus();
        }
    });
    let save_always = Callback::new(move |prefix: Option<String>| {
        if !busy.get_untracked() {
            if let Some(request) = always_request(&tool_id.get_value(), prefix.as_deref()) {
                on_decide.run(request);
            }
        }
    });

    // The keys work at once, unless the user is typing something elsewhere.
    Effect::new(move |_| {
        if let Some(section) = card_ref.get() {
            if !typing_elsewhere_now() {
                let _ = section.focus();
            }
        }
    });
    // The editor takes the focus when it opens (it is rendered hidden before).
    Effect::new(move |_| {
        if editing.get() {
            if let Some(editor) = editor_ref.get() {
                let _ = editor.focus();
            }
        }
    });

    #[cfg(feature = "hydrate")]
    {
        let choices = StoredValue::new(choices.clone());
        let handle = window_event_listener(leptos::ev::keydown, move |event| {
            if busy.get_untracked()
                || editing.get_untracked()
                || scoping.get_untracked()
                || event.ctrl_key()
                || event.meta_key()
                || event.alt_key()
                || typing_elsewhere(&event)
            {
                return;
            }
            let action = choices.with_value(|choices| {
                card_key(&event.key(), event.shift_key(), selected.get_untracked(), kind, choices)
            });
            match action {
                Some(CardAction::Decide(decision)) => send(decision),
                Some(CardAction::AgentOption(option_id)) => send_option(&option_id),
                Some(CardAction::Select(place)) => select(place),
                Some(CardAction::OpenEditor) => open_editor(),
                Some(CardAction::OpenAlways) => open_always(),
                Some(CardAction::CopyCommand) => {
                    if !press_copy_command(card_ref) {
                        return;
                    }
                }
                None => return,
            }
            event.prevent_default();
        });
        on_cleanup(move || handle.remove());
    }

    let on_input_key = move |event: leptos::ev::KeyboardEvent| match event.key().as_str() {
        "Enter" => {
            event.prevent_default();
            send(ApprovalDecision::Edit);
        }
        "Escape" => {
            event.prevent_default();
            select(0);
        }
        _ => {}
    };
    let on_editor_key = move |event: leptos::ev::KeyboardEvent| match event.key().as_str() {
        "Enter" if event.ctrl_key() || event.meta_key() => {
            event.prevent_default();
            save_editor();
        }
        "Escape" => {
            event.prevent_default();
            close_editor();
        }
        _ => {}
    };
    let marker = move |place: usize| if selected.get() == place { "❯" } else { "\u{a0}" };
    let button_class = move |place: usize| {
        if selected.get() == place {
            "rounded-md bg-amber-700 px-3 py-1.5 font-medium text-white disabled:opacity-50"
        } else {
            "rounded-md px-3 py-1.5 font-medium text-slate-700 hover:bg-amber-100 disabled:opacity-50 dark:text-slate-200 dark:hover:bg-amber-900/40"
        }
    };
    let hint = move || {
        if selected.get() == input_place {
            "Enter Submit • Esc Cancel".to_string()
        } else {
            hint_keys.clone()
        }
    };
    // One button of the card: its place in the Tab order, and what it does.
    let button_view = move |place: usize, button: CardButton| {
        let testid = button.testid();
        let option_id = match &button.action {
            ButtonAction::AgentOption(id) => Some(id.clone()),
            _ => None,
        };
        let action = StoredValue::new(button.action);
        let act = move || {
            action.with_value(|action| match action {
                ButtonAction::OpenEditor => open_editor(),
                ButtonAction::OpenAlways => open_always(),
                ButtonAction::Decide(decision) => send(decision.clone()),
                ButtonAction::AgentOption(option_id) => send_option(option_id),
            })
        };
        view! {
            <button
                type="button"
                data-testid=testid
                data-option-id=option_id
                title=button.description.clone()
                aria-description=button.description
                class=move || button_class(place)
                disabled=move || busy.get()
                on:click=move |_| act()
            >
                <span class="mr-1 inline-block w-3" aria-hidden="true">{move || marker(place)}</span>
                {button.label}
            </button>
        }
    };
    let first_agent_place = choices.hub.len();
    let hub_buttons =
        choices.hub.into_iter().enumerate().map(|(place, button)| button_view(place, button)).collect_view();
    let agent_buttons = (!choices.agent.is_empty()).then(|| {
        let buttons = choices
            .agent
            .into_iter()
            .enumerate()
            .map(|(index, button)| button_view(first_agent_place + index, button))
            .collect_view();
        view! {
            <div
                role="group"
                aria-labelledby="card-agent-choices-title"
                data-testid="card-agent-choices"
                class="mt-3 flex flex-col gap-1 rounded-lg border border-dashed border-amber-300 px-2 py-1.5 text-sm dark:border-amber-800"
                class:hidden=move || editing.get() || scoping.get()
            >
                <div class="flex flex-wrap items-center gap-1">
                    <span id="card-agent-choices-title" class="mr-1 text-xs font-medium text-slate-600 dark:text-slate-400">
                        "The agent's own choices:"
                    </span>
                    {buttons}
                </div>
                {remembers.then(|| view! { <p data-testid="card-agent-remembers" class="text-xs text-slate-500 dark:text-slate-400">{AGENT_REMEMBERS}</p> })}
            </div>
        }
    });
    let parameters = match &diff {
        // The diff says what the content arguments say; the path is in its header.
        Some(_) => None,
        None => Some(card.call.parameters.clone()),
    };
    let path = diff.as_ref().map(|diff| diff.path.clone()).unwrap_or_default();
    let is_edit = diff.is_some();
    let call = card.call.clone();

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
                <span data-testid="card-position" class="font-mono text-sm text-slate-500 dark:text-slate-400">
                    {format!("{}/{}", card.position, card.total)}
                </span>
            </header>
            {asks_by_rule
                .map(|(rule, message)| {
                    view! {
                        <p data-testid="card-policy" class="mb-2 flex flex-col text-xs text-amber-800 dark:text-amber-300">
                            <span>{rule}</span>
                            {message.map(|message| view! { <span class="text-slate-700 dark:text-slate-300">{message}</span> })}
                        </p>
                    }
                })}
            {blind
                .then(|| {
                    view! {
                        <p
                            data-testid="card-no-details"
                            role="note"
                            class="mb-2 rounded-md bg-amber-100 px-2 py-1 text-sm font-medium text-amber-900 dark:bg-amber-900/40 dark:text-amber-200"
                        >
                            {NO_DETAILS}
                        </p>
                    }
                })}
            {parameters.map(|parameters| view! { <ParameterList parameters /> })}
            {diff.map(|diff| view! { <div class:hidden=move || editing.get()><DiffView diff /></div> })}
            <div class="flex flex-col gap-2" class:hidden=move || !editing.get()>
                <label class="text-xs text-slate-600 dark:text-slate-400" for="card-editor">
                    {format!("The whole of {path} as it will be written; change it, then save.")}
                </label>
                <textarea
                    id="card-editor"
                    node_ref=editor_ref
                    data-testid="card-editor"
                    rows="16"
                    spellcheck="false"
                    bind:value=content
                    on:keydown=on_editor_key
                    class="w-full resize-y rounded-md border border-slate-300 bg-white p-2 font-mono text-xs focus:border-amber-500 focus:outline-none focus:ring-2 focus:ring-amber-500/30 dark:border-slate-700 dark:bg-slate-950"
                ></textarea>
                <div class="flex items-center gap-2 text-sm">
                    <button
                        type="button"
                        data-testid="card-editor-save"
                        disabled=move || busy.get()
                        on:click=move |_| save_editor()
                        class="rounded-md bg-amber-700 px-3 py-1.5 font-medium text-white disabled:opacity-50"
                    >
                        "Save and apply"
                    </button>
                    <button
                        type="button"
                        data-testid="card-editor-cancel"
                        on:click=move |_| close_editor()
                        class="rounded-md px-3 py-1.5 text-slate-700 hover:bg-amber-100 dark:text-slate-200 dark:hover:bg-amber-900/40"
                    >
                        "Back to the diff"
                    </button>
                    <span class="text-xs text-slate-500 dark:text-slate-400">"Ctrl+Enter Save • Esc Back"</span>
                </div>
            </div>
            <div
                class="mt-4 flex flex-wrap items-center gap-1 text-sm"
                class:hidden=move || editing.get() || scoping.get()
                role="group"
                aria-label="Decision"
            >
                {hub_buttons}
            </div>
            {agent_buttons}
            <AlwaysStep call open=scoping.into() busy edit=is_edit on_save=save_always on_back=close_always />
            <div class="mt-3 flex items-center gap-2 text-sm" class:hidden=move || editing.get() || scoping.get()>
                <span class="inline-block w-3 text-amber-600">{move || if selected.get() == input_place { "❯" } else { "│" }}</span>
                <input
                    type="text"
                    node_ref=input_ref
                    data-testid="card-feedback"
                    placeholder="Input your changes here"
                    autocomplete="off"
                    bind:value=instruction
                    disabled=move || busy.get()
                    on:focus=move |_| selected.set(input_place)
                    on:keydown=on_input_key
                    class="min-w-0 flex-1 rounded-md border border-slate-300 bg-white px-2 py-1.5 focus:border-amber-500 focus:outline-none focus:ring-2 focus:ring-amber-500/30 dark:border-slate-700 dark:bg-slate-950"
                />
            </div>
            <p
                data-testid="card-hint"
                class="mt-3 text-xs text-slate-500 dark:text-slate-400"
                class:hidden=move || editing.get() || scoping.get()
            >
                {hint}
            </p>
        </section>
    }
}

/// The card's keys are pressed in the card, or with the focus nowhere in
/// particular (on the page itself). A key pressed on another control is that
/// control's: text typed in the prompt box, Tab moving on from a header button,
/// Enter pressing it, keys in the Rules panel. So is text typed in the card's
/// own fields, which handle their keys themselves.
#[cfg(feature = "hydrate")]
fn typing_elsewhere(event: &leptos::ev::KeyboardEvent) -> bool {
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
fn press_copy_command(card: NodeRef<leptos::html::Section>) -> bool {
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
    use protocol::events::{AgentChoice, ChoiceKind};

    /// The built-in agent's card.
    fn key(key: &str, shift: bool, selected: usize, kind: CardKind) -> Option<CardAction> {
        card_key(key, shift, selected, kind, &card_choices(kind, None))
    }

    #[test]
    fn number_keys_decide() {
        assert_eq!(key("1", false, 2, CardKind::Call), Some(CardAction::Decide(ApprovalDecision::Approve)));
        assert_eq!(key("2", false, 0, CardKind::Call), Some(CardAction::Decide(ApprovalDecision::Reject)));
        assert_eq!(key("3", false, 0, CardKind::Call), Some(CardAction::Decide(ApprovalDecision::ApproveSession)));
        assert_eq!(key("4", false, 0, CardKind::Call), Some(CardAction::Select(BUTTONS.len())));
        assert_eq!(key("5", false, 0, CardKind::Call), Some(CardAction::OpenAlways), "shows the rule first");
        assert_eq!(key("6", false, 0, CardKind::Call), None);
        assert_eq!(key("a", false, 0, CardKind::Call), None);
        assert_eq!(key("c", false, 0, CardKind::Call), Some(CardAction::CopyCommand));
        assert_eq!(key("c", false, 0, EDIT), None, "an edit has no command");
    }

    #[test]
    fn tab_and_arrows_cycle_through_buttons_and_input() {
        assert_eq!(key("ArrowRight", false, 0, CardKind::Call), Some(CardAction::Select(1)));
        assert_eq!(key("Tab", false, 2, CardKind::Call), Some(CardAction::Select(3)), "to Always in this folder");
        assert_eq!(key("Tab", false, 3, CardKind::Call), Some(CardAction::Select(BUTTONS.len())));
        assert_eq!(key("ArrowRight", false, BUTTONS.len(), CardKind::Call), Some(CardAction::Select(0)));
        assert_eq!(key("ArrowLeft", false, 0, CardKind::Call), Some(CardAction::Select(BUTTONS.len())));
        assert_eq!(key("Tab", true, 1, CardKind::Call), Some(CardAction::Select(0)));
    }

    #[test]
    fn enter_acts_on_the_selected_button() {
        assert_eq!(key("Enter", false, 1, CardKind::Call), Some(CardAction::Decide(ApprovalDecision::Reject)));
        assert_eq!(key("Enter", false, 2, CardKind::Call), Some(CardAction::Decide(ApprovalDecision::ApproveSession)));
        assert_eq!(key("Enter", false, 3, CardKind::Call), Some(CardAction::OpenAlways));
        assert_eq!(key("Enter", false, BUTTONS.len(), CardKind::Call), Some(CardAction::Select(BUTTONS.len())));
    }

    #[test]
    fn always_in_this_folder_sends_the_prefix_or_covers_the_tool() {
        let command = always_request("t", Some("  git status ")).unwrap();
        assert_eq!(
            (command.decision.as_str(), command.command_prefix.as_deref()),
            ("approve_always", Some("git status"))
        );
        let file = always_request("t", None).unwrap();
        assert_eq!((file.decision.as_str(), file.command_prefix), ("approve_always", None));
        assert_eq!(always_request("t", Some(" ")), None, "a blank prefix would allow every command");
        let json = serde_json::to_value(&command).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"toolId": "t", "decision": "approve_always", "commandPrefix": "git status"})
        );
    }

    #[test]
    fn blank_instructions_send_nothing() {
        assert_eq!(request("t", ApprovalDecision::Edit, "  \n"), None);
        let edit = request("t", ApprovalDecision::Edit, " only .log files ").unwrap();
        assert_eq!(edit.edit_instruction.as_deref(), Some("only .log files"));
        let approve = request("t", ApprovalDecision::Approve, "").unwrap();
        assert_eq!((approve.decision.as_str(), approve.edit_instruction), ("approve", None));
    }

    const EDIT: CardKind = CardKind::Edit { editor: true };

    #[test]
    fn an_edit_card_without_the_editor_has_no_edit_button_or_key() {
        let kind = CardKind::Edit { editor: false };
        assert_eq!(card_choices(kind, None).len(), 4);
        assert_eq!(key("e", false, 0, kind), None);
        assert_eq!(key("a", false, 0, kind), Some(CardAction::Decide(ApprovalDecision::ApproveSession)));
        assert_eq!(key("5", false, 0, kind), Some(CardAction::OpenAlways));
        assert_eq!(key("Tab", false, 3, kind), Some(CardAction::Select(4)), "past Always to the instruction");
    }

    #[test]
    fn edit_cards_take_the_review_keys_too() {
        assert_eq!(key("Enter", false, 0, EDIT), Some(CardAction::Decide(ApprovalDecision::Approve)));
        assert_eq!(key("a", false, 0, EDIT), Some(CardAction::Decide(ApprovalDecision::ApproveSession)));
        assert_eq!(key("d", false, 0, EDIT), Some(CardAction::Decide(ApprovalDecision::Reject)));
        assert_eq!(key("e", false, 0, EDIT), Some(CardAction::OpenEditor));
        assert_eq!(key("Enter", false, 3, EDIT), Some(CardAction::OpenAlways), "Always in this folder");
        assert_eq!(key("Enter", false, 4, EDIT), Some(CardAction::OpenEditor), "the Edit button");
        assert_eq!(key("1", false, 0, EDIT), Some(CardAction::Decide(ApprovalDecision::Approve)), "numbers still work");
        assert_eq!(key("4", false, 0, EDIT), Some(CardAction::Select(EDIT_BUTTONS.len())));
        assert_eq!(key("5", false, 0, EDIT), Some(CardAction::OpenAlways));
        assert_eq!(key("Tab", false, 4, EDIT), Some(CardAction::Select(5)), "past Edit to the instruction");
        for letter in ["a", "d", "e"] {
            assert_eq!(key(letter, false, 0, CardKind::Call), None, "{letter} is only an edit card's key");
        }
    }

    #[test]
    fn the_editor_sends_the_users_text_or_approves_an_unchanged_proposal() {
        let same = content_request("t", "fn a() {}\n", "fn a() {}\n");
        assert_eq!((same.decision.as_str(), same.modified_content), ("approve", None));
        let changed = content_request("t", "fn a() {}\n", "fn b() {}\n");
        assert_eq!((changed.decision.as_str(), changed.modified_content.as_deref()), ("edit", Some("fn b() {}\n")));
        assert_eq!(changed.edit_instruction, None);
        let emptied = content_request("t", "x", "");
        assert_eq!(emptied.modified_content.as_deref(), Some(""), "an emptied file is the user's choice");
    }

    fn option(id: &str, name: &str, kind: ChoiceKind) -> AgentChoice {
        AgentChoice { id: id.into(), name: name.into(), kind }
    }

    /// What Claude Code offers for a command.
    fn claude() -> Vec<AgentChoice> {
        vec![
            option("allow_always", "Always Allow", ChoiceKind::AllowAlways),
            option("allow", "Allow", ChoiceKind::AllowOnce),
            option("reject", "Reject", ChoiceKind::RejectOnce),
        ]
    }

    fn labels(buttons: &[CardButton]) -> Vec<&str> {
        buttons.iter().map(|button| button.label.as_str()).collect()
    }

    #[test]
    fn the_built_in_agents_card_keeps_the_hubs_buttons() {
        let call = card_choices(CardKind::Call, None);
        assert_eq!(labels(&call.hub), ["Yes", "No", "Yes, for this session", "Always in this folder"]);
        assert!(call.agent.is_empty() && !call.from_agent);
        assert!(call.hub.iter().all(|button| button.description.is_none()));
        let testids: Vec<String> = call.hub.iter().map(CardButton::testid).collect();
        assert_eq!(testids, ["card-approve", "card-reject", "card-approve_session", "card-approve_always"]);
        let edit = card_choices(EDIT, None);
        assert_eq!(labels(&edit.hub), ["Apply", "Reject", "Always for this session", "Always in this folder", "Edit"]);
        assert_eq!(
            card_hint(CardKind::Call, &call),
            "1/2/3 Quick Select • 4 Edit • Tab/←→ Navigate • 5 Always in this folder"
        );
        assert_eq!(
            card_hint(EDIT, &edit),
            "Enter Apply • a Always • d Reject • e Edit • 4 Instruct • Tab/←→ Navigate • 5 Always in this folder"
        );
        let no_editor = CardKind::Edit { editor: false };
        assert_eq!(
            card_hint(no_editor, &card_choices(no_editor, None)),
            "Enter Apply • a Always • d Reject • 4 Instruct • Tab/←→ Navigate • 5 Always in this folder"
        );
    }

    #[test]
    fn an_agents_options_label_approve_and_reject_and_its_persistent_ones_stand_apart() {
        let options = claude();
        let choices = card_choices(CardKind::Call, Some(&options));
        assert_eq!(labels(&choices.hub), ["Allow", "Reject", "Yes, for this session", "Always in this folder"]);
        assert_eq!(choices.hub[0].action, ButtonAction::Decide(ApprovalDecision::Approve));
        assert_eq!(choices.hub[0].description.as_deref(), Some("Yes — runs this call once (key 1)"));
        assert_eq!(choices.hub[1].action, ButtonAction::Decide(ApprovalDecision::Reject));
        assert_eq!(labels(&choices.agent), ["Always Allow"]);
        assert_eq!(choices.agent[0].action, ButtonAction::AgentOption("allow_always".into()));
        assert_eq!(choices.agent[0].testid(), "card-agent-option");
        assert!(agent_remembers(&options, &choices));
        // Keys name decisions; the agent's own choice has none, Tab and Enter reach it.
        assert_eq!(
            card_key("1", false, 0, CardKind::Call, &choices),
            Some(CardAction::Decide(ApprovalDecision::Approve))
        );
        assert_eq!(card_key("5", false, 0, CardKind::Call, &choices), Some(CardAction::OpenAlways));
        assert_eq!(card_key("6", false, 0, CardKind::Call, &choices), None);
        assert_eq!(card_key("Tab", false, 3, CardKind::Call, &choices), Some(CardAction::Select(4)));
        assert_eq!(
            card_key("Enter", false, 4, CardKind::Call, &choices),
            Some(CardAction::AgentOption("allow_always".into()))
        );
        assert_eq!(card_key("4", false, 0, CardKind::Call, &choices), Some(CardAction::Select(5)), "the instruction");
        assert_eq!(card_key("Tab", false, 5, CardKind::Call, &choices), Some(CardAction::Select(0)));
    }

    #[test]
    fn codex_words_and_a_second_allow_once_are_the_agents_own() {
        let options = vec![
            option("approved", "Yes, proceed", ChoiceKind::AllowOnce),
            option("approved-for-session", "Yes, and don't ask again for this command", ChoiceKind::AllowAlways),
            option("approved-host", "Yes, and allow this host for this session", ChoiceKind::AllowOnce),
            option("abort", "No, and tell Codex what to do differently", ChoiceKind::RejectOnce),
        ];
        let choices = card_choices(CardKind::Call, Some(&options));
        assert_eq!(labels(&choices.hub)[..2], ["Yes, proceed", "No, and tell Codex what to do differently"]);
        assert_eq!(
            labels(&choices.agent),
            ["Yes, and don't ask again for this command", "Yes, and allow this host for this session"]
        );
        assert_eq!(
            choices.agent[1].description.as_deref(),
            Some("The agent's own choice, answered as it is"),
            "a 'once' the agent adds is not said to be remembered"
        );
    }

    #[test]
    fn without_an_allow_once_the_card_has_no_approve_buttons() {
        let options = vec![
            option("always", "Always Allow", ChoiceKind::AllowAlways),
            option("never", "Never", ChoiceKind::RejectAlways),
        ];
        let choices = card_choices(CardKind::Call, Some(&options));
        assert_eq!(labels(&choices.hub), ["No"], "the hub can always turn it down");
        assert_eq!(labels(&choices.agent), ["Always Allow", "Never"]);
        for key in ["1", "3", "5"] {
            assert_eq!(card_key(key, false, 0, CardKind::Call, &choices), None, "{key} approves nothing");
        }
        assert_eq!(
            card_key("2", false, 0, CardKind::Call, &choices),
            Some(CardAction::Decide(ApprovalDecision::Reject))
        );
        assert_eq!(card_hint(CardKind::Call, &choices), "2 No • 4 Edit • Tab/←→ Navigate");
        let edit = card_choices(EDIT, Some(&options));
        assert_eq!(labels(&edit.hub), ["Reject"], "no editor either");
        assert_eq!(card_key("a", false, 0, EDIT, &edit), None);
        assert_eq!(card_key("e", false, 0, EDIT, &edit), None);
        assert_eq!(card_hint(EDIT, &edit), "d Reject • 4 Instruct • Tab/←→ Navigate");
    }

    #[test]
    fn an_agents_edit_card_names_its_keys_in_the_agents_words() {
        let options = claude();
        let kind = CardKind::Edit { editor: false };
        let choices = card_choices(kind, Some(&options));
        assert_eq!(labels(&choices.hub), ["Allow", "Reject", "Yes, for this session", "Always in this folder"]);
        assert_eq!(choices.hub[0].description.as_deref(), Some("Apply — writes this edit once (key 1)"));
        assert_eq!(
            card_hint(kind, &choices),
            "Enter Allow • a For this session • d Reject • 4 Instruct • Tab/←→ Navigate • 5 Always in this folder"
        );
        assert_eq!(card_key("a", false, 0, kind, &choices), Some(CardAction::Decide(ApprovalDecision::ApproveSession)));
        let unnamed = [option("ok", " ", ChoiceKind::AllowOnce), option("x", "", ChoiceKind::AllowAlways)];
        let choices = card_choices(kind, Some(&unnamed));
        assert_eq!(labels(&choices.hub)[..2], ["Apply", "Reject"], "the hub's words where the agent gave none");
        assert_eq!(labels(&choices.agent), ["x"]);
    }

    #[test]
    fn the_agents_option_is_sent_as_it_is() {
        let answer = option_request("t", "allow_always");
        assert_eq!(
            serde_json::to_value(&answer).unwrap(),
            serde_json::json!({"toolId": "t", "decision": "agent_option", "optionId": "allow_always"})
        );
        let plain = serde_json::to_value(request("t", ApprovalDecision::Approve, "").unwrap()).unwrap();
        assert_eq!(plain, serde_json::json!({"toolId": "t", "decision": "approve"}), "no optionId otherwise");
    }
}
