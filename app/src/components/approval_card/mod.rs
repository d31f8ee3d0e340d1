//! The Action Required card (seed design 000): Yes / No / Yes, for this session,
//! or an instruction that replaces the tool's result. Keys 1/2/3 decide, 4 goes
//! to the instruction, Tab/←→ move, Enter acts, Esc leaves the instruction.
//! File edits (seed design 001) show their diff and add Enter Apply, a Always,
//! d Reject and e Edit: an editor holding the proposed file, whose saved text
//! is written instead. On both, 5 (or the button) opens "Always in this
//! folder": the rule to save (a command's prefix, editable; or the tool),
//! confirmed before it is sent. The card is keyed by its tool call, so a
//! regenerated call starts fresh. A call like ones the user approved three
//! times in the folder gets a line offering that rule (`HabitOffer`), which
//! opens the same step with its prefix filled in.
//!
//! An ACP agent's card is built from the options it sent: its "allow once"
//! and "reject once" on the hub's keys 1 and 2, in its words; the hub's own
//! scopes (session, folder) only where it can allow once; its persistent
//! options apart, as "the agent's own choices", answered as they are
//! (`agent_option`). A card whose call says nothing of what it does says so.

mod keys;
mod requests;

use leptos::prelude::*;

use crate::components::always_step::AlwaysStep;
pub use crate::components::card_choices::*;
use crate::components::countdown::Countdown;
use crate::components::diff_view::DiffView;
use crate::components::habit_offer::HabitOffer;
use crate::components::tool_call::{has_details, ParameterList};
use crate::parts::{wasm_split, PartMissing};
use crate::transcript::Card;
pub use keys::*;
use protocol::api::{ApprovalDecision, ApproveRequest, PolicyDecision};
pub use requests::*;

/// The card, from the `cards` part of the wasm (see `parts`).
#[wasm_split(cards, wasm_split_path = ::leptos::wasm_split, preload(preload_cards), fallible)]
pub fn approval_card_view(
    card: Card,
    session_id: String,
    on_decide: Callback<ApproveRequest>,
    busy: Signal<bool>,
    editor: bool,
    deadline: Signal<Option<u64>>,
) -> Result<AnyView, PartMissing> {
    Ok(view! { <ApprovalCard card session_id on_decide busy editor deadline /> }.into_any())
}

#[component]
pub fn ApprovalCard(
    card: Card,
    /// The card's session: the habit line asks the hub about its call.
    session_id: String,
    on_decide: Callback<ApproveRequest>,
    busy: Signal<bool>,
    /// Whether the hub can write the user's own version of an edit.
    editor: bool,
    /// When the hub answers "no decision" (the folder's approval timeout).
    #[prop(optional, into)]
    deadline: Signal<Option<u64>>,
) -> impl IntoView {
    let diff = card.call.diff.clone();
    let kind = if diff.is_some() { CardKind::Edit { editor } } else { CardKind::Call };
    let options = card.call.choices.clone();
    let blind = !has_details(&card.call);
    let choices = card_choices(kind, options.as_deref());
    let choices = if blind { choices.without_scopes() } else { choices };
    let choices = if card.refused_before && options.is_none() { choices.with_unsandboxed() } else { choices };
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
    // The habit's prefix, once its line was followed: the Always step opens with it.
    let preset = RwSignal::new(None::<String>);
    let open_habit = Callback::new(move |prefix: Option<String>| {
        if prefix.is_some() {
            preset.set(prefix);
        }
        scoping.set(true);
    });
    let offers_always = choices.has(&ButtonAction::OpenAlways);
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
            "max-sm:min-h-11 rounded-md bg-amber-700 px-3 py-1.5 font-medium text-white disabled:opacity-50"
        } else {
            "max-sm:min-h-11 rounded-md px-3 py-1.5 font-medium text-slate-700 hover:bg-amber-100 disabled:opacity-50 dark:text-slate-200 dark:hover:bg-amber-900/40"
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
                <Countdown deadline testid="card-countdown" />
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
            {offers_always
                .then(|| {
                    let hidden = Signal::derive(move || editing.get() || scoping.get());
                    view! { <HabitOffer session_id tool_id=card.call.tool_id.clone() hidden on_open=open_habit /> }
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
                        class="max-sm:min-h-11 rounded-md bg-amber-700 px-3 py-1.5 font-medium text-white disabled:opacity-50"
                    >
                        "Save and apply"
                    </button>
                    <button
                        type="button"
                        data-testid="card-editor-cancel"
                        on:click=move |_| close_editor()
                        class="max-sm:min-h-11 rounded-md px-3 py-1.5 text-slate-700 hover:bg-amber-100 dark:text-slate-200 dark:hover:bg-amber-900/40"
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
            <AlwaysStep call open=scoping.into() busy edit=is_edit on_save=save_always on_back=close_always preset=preset.into() />
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
                    class="max-sm:min-h-11 min-w-0 flex-1 rounded-md border border-slate-300 bg-white px-2 py-1.5 focus:border-amber-500 focus:outline-none focus:ring-2 focus:ring-amber-500/30 dark:border-slate-700 dark:bg-slate-950"
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

#[cfg(test)]
mod tests;
