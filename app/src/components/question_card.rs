//! The agent's question (seed design 003), with the approval card's look and
//! keyboard habits. Approval: two buttons, keys a / r. Choice: a list, keys
//! 1..N, ↑/↓ and Enter, r rejects, the highlighted one marked ▸. Text: an
//! input, Enter answers, `/reject` (or Esc, then r) rejects.

use leptos::prelude::*;
use serde_json::{json, Value};

use crate::parts::{wasm_split, PartMissing};
use crate::transcript::Question;
use protocol::api::InputAnswer;
use protocol::events::InputType;

#[derive(Debug, Clone, PartialEq)]
pub enum QuestionAction {
    Answer(Value),
    Highlight(usize),
    FocusInput,
}

/// The answer that rejects any kind of question.
pub fn reject() -> Value {
    json!("reject")
}

/// What a key does while the card (not the text input) has the focus.
pub fn question_key(question: &Question, key: &str, highlighted: usize) -> Option<QuestionAction> {
    let count = question.choices.len();
    let choose = |index: usize| {
        let value = question.choices.get(index)?;
        Some(QuestionAction::Answer(json!({"index": index, "value": value})))
    };
    match (question.input_type, key) {
        (_, "r") => Some(QuestionAction::Answer(reject())),
        (InputType::Approval, "a") => Some(QuestionAction::Answer(json!("approve"))),
        (InputType::Choice, "ArrowDown") if count > 0 => Some(QuestionAction::Highlight((highlighted + 1) % count)),
        (InputType::Choice, "ArrowUp") if count > 0 => {
            Some(QuestionAction::Highlight((highlighted + count - 1) % count))
        }
        (InputType::Choice, "Enter") => choose(highlighted),
        (InputType::Choice, digit) => {
            let number: usize = digit.parse().ok()?;
            choose(number.checked_sub(1)?)
        }
        (InputType::Text, "Enter" | "i") => Some(QuestionAction::FocusInput),
        _ => None,
    }
}

/// What Enter in the text input sends; `None` for blank text.
pub fn text_answer(text: &str) -> Option<Value> {
    match text.trim() {
        "" => None,
        "/reject" => Some(reject()),
        text => Some(json!(text)),
    }
}

/// The card, from the `cards` part of the wasm (see `parts`).
#[wasm_split(cards, wasm_split_path = ::leptos::wasm_split, fallible)]
pub fn question_card_view(
    question: Question,
    on_answer: Callback<InputAnswer>,
    busy: Signal<bool>,
    deadline: Signal<Option<u64>>,
) -> Result<AnyView, PartMissing> {
    Ok(view! { <QuestionCard question on_answer busy deadline /> }.into_any())
}

#[component]
pub fn QuestionCard(
    question: Question,
    on_answer: Callback<InputAnswer>,
    busy: Signal<bool>,
    /// When the hub answers "no answer" (the folder's approval timeout).
    #[prop(optional, into)]
    deadline: Signal<Option<u64>>,
) -> impl IntoView {
    let highlighted = RwSignal::new(0usize);
    let text = RwSignal::new(String::new());
    let input_ref = NodeRef::<leptos::html::Input>::new();
    let card_ref = NodeRef::<leptos::html::Section>::new();
    let stored = StoredValue::new(question.clone());

    let answer = move |response: Value| {
        if !busy.get_untracked() {
            on_answer.run(InputAnswer {
                request_id: stored.with_value(|q| q.request_id.clone()),
                response,
                stream: None,
            });
        }
    };
    Effect::new(move |_| {
        // A text question goes straight to its input; the others take the keys.
        // The input is disabled while the answer before is still streaming, and
        // a disabled input takes no focus: wait for that.
        if busy.get() {
            return;
        }
        if stored.with_value(|q| q.input_type == InputType::Text) {
            if let Some(input) = input_ref.get() {
                let _ = input.focus();
            }
        } else if let Some(section) = card_ref.get() {
            let _ = section.focus();
        }
    });

    #[cfg(feature = "hydrate")]
    {
        use wasm_bindgen::JsCast;
        let act = move |action: QuestionAction| match action {
            QuestionAction::Answer(response) => answer(response),
            QuestionAction::Highlight(index) => highlighted.set(index),
            QuestionAction::FocusInput => {
                if let Some(input) = input_ref.get_untracked() {
                    let _ = input.focus();
                }
            }
        };
        let handle = window_event_listener(leptos::ev::keydown, move |event| {
            let in_field = event
                .target()
                .and_then(|target| target.dyn_into::<web_sys::HtmlElement>().ok())
                .is_some_and(|element| matches!(element.tag_name().as_str(), "INPUT" | "TEXTAREA"));
            if busy.get_untracked() || in_field || event.ctrl_key() || event.meta_key() || event.alt_key() {
                return;
            }
            let Some(action) = stored.with_value(|q| question_key(q, &event.key(), highlighted.get_untracked())) else {
                return;
            };
            event.prevent_default();
            act(action);
        });
        on_cleanup(move || handle.remove());
    }

    let on_input_key = move |event: leptos::ev::KeyboardEvent| match event.key().as_str() {
        "Enter" => {
            event.prevent_default();
            if let Some(response) = text_answer(&text.get_untracked()) {
                answer(response);
            }
        }
        "Escape" => {
            event.prevent_default();
            if let Some(section) = card_ref.get_untracked() {
                let _ = section.focus();
            }
        }
        _ => {}
    };

    let button = "max-sm:min-h-11 rounded-md px-3 py-1.5 font-medium disabled:opacity-50";
    let body = match question.input_type {
        InputType::Approval => {
            let label = |index: usize, fallback: &str| question.choices.get(index).cloned().unwrap_or(fallback.into());
            view! {
                <div class="flex flex-wrap gap-2 text-sm">
                    <button type="button" data-testid="question-approve" disabled=move || busy.get()
                        class=format!("{button} bg-emerald-600 text-white hover:bg-emerald-700")
                        on:click=move |_| answer(json!("approve"))>
                        <kbd class="mr-1 opacity-75">"a"</kbd>{label(0, "Approve")}
                    </button>
                    <button type="button" data-testid="question-reject" disabled=move || busy.get()
                        class=format!("{button} text-red-700 hover:bg-red-50 dark:text-red-400 dark:hover:bg-red-950")
                        on:click=move |_| answer(reject())>
                        <kbd class="mr-1 opacity-75">"r"</kbd>{label(1, "Reject")}
                    </button>
                </div>
            }
            .into_any()
        }
        InputType::Choice => view! {
            <ol class="flex flex-col gap-1 text-sm" role="listbox" data-testid="question-choices">
                {question
                    .choices
                    .iter()
                    .enumerate()
                    .map(|(index, choice)| {
                        let value = choice.clone();
                        let is_highlighted = move || highlighted.get() == index;
                        view! {
                            <li role="option" aria-selected=move || is_highlighted().to_string()>
                                <button type="button" data-testid="question-choice" disabled=move || busy.get()
                                    class=move || format!("{button} w-full text-left {}", if is_highlighted() {
                                        "bg-sky-100 font-semibold dark:bg-sky-900/60"
                                    } else {
                                        "hover:bg-slate-100 dark:hover:bg-slate-800"
                                    })
                                    on:mouseenter=move |_| highlighted.set(index)
                                    on:click=move |_| answer(json!({"index": index, "value": value.clone()}))>
                                    <span class="inline-block w-4 text-sky-600">{move || if is_highlighted() { "▸" } else { "" }}</span>
                                    <span class="mr-2 font-mono text-slate-500 dark:text-slate-400">{format!("{})", index + 1)}</span>
                                    {choice.clone()}
                                </button>
                            </li>
                        }
                    })
                    .collect_view()}
                <li>
                    <button type="button" data-testid="question-reject" disabled=move || busy.get()
                        class=format!("{button} w-full text-left text-red-700 hover:bg-red-50 dark:text-red-400 dark:hover:bg-red-950")
                        on:click=move |_| answer(reject())>
                        <span class="inline-block w-4"></span><span class="mr-2 font-mono">"r)"</span>"Reject"
                    </button>
                </li>
            </ol>
        }
        .into_any(),
        InputType::Text => view! {
            <div class="flex items-center gap-2 text-sm">
                <span class="text-sky-600">"?"</span>
                <input type="text" node_ref=input_ref data-testid="question-text" autocomplete="off"
                    placeholder="Type your answer and press Enter"
                    bind:value=text disabled=move || busy.get() on:keydown=on_input_key
                    class="max-sm:min-h-11 min-w-0 flex-1 rounded-md border border-slate-300 bg-white px-2 py-1.5 focus:border-sky-500 focus:outline-none focus:ring-2 focus:ring-sky-500/30 dark:border-slate-700 dark:bg-slate-950" />
            </div>
        }
        .into_any(),
    };
    let hint = match question.input_type {
        InputType::Approval => "a Approve • r Reject",
        InputType::Choice => "1–9 Choose • ↑/↓ Move • Enter Confirm • r Reject",
        InputType::Text => "Enter Answer • /reject or Esc then r Reject",
    };

    view! {
        <section
            node_ref=card_ref
            tabindex="-1"
            data-testid="question-card"
            data-request-id=question.request_id.clone()
            role="dialog"
            aria-label="The agent asks"
            class="rounded-xl border-2 border-sky-400 bg-sky-50/60 p-4 shadow-sm focus:outline-none focus-visible:ring-2 focus-visible:ring-sky-500 dark:border-sky-600 dark:bg-sky-950/30"
        >
            <header class="mb-2 flex items-center gap-3 text-xs font-semibold uppercase tracking-wide text-sky-700 dark:text-sky-400">
                <span class="flex-1">"The agent asks"</span>
                <crate::components::countdown::Countdown deadline testid="question-countdown" />
            </header>
            <p data-testid="question-prompt" class="mb-3 whitespace-pre-wrap">{question.prompt.clone()}</p>
            {body}
            <p data-testid="question-hint" class="mt-3 text-xs text-slate-500 dark:text-slate-400">{hint}</p>
        </section>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn question(input_type: InputType, choices: &[&str]) -> Question {
        Question {
            request_id: "q".into(),
            input_type,
            prompt: "?".into(),
            choices: choices.iter().map(|c| c.to_string()).collect(),
            answer: None,
        }
    }

    #[test]
    fn approval_keys() {
        let q = question(InputType::Approval, &["Delete", "Keep"]);
        assert_eq!(question_key(&q, "a", 0), Some(QuestionAction::Answer(json!("approve"))));
        assert_eq!(question_key(&q, "r", 0), Some(QuestionAction::Answer(reject())));
        assert_eq!(question_key(&q, "1", 0), None);
        assert_eq!(question_key(&q, "Enter", 0), None, "no default: approving takes a deliberate key");
    }

    #[test]
    fn choice_keys_pick_move_and_confirm() {
        let q = question(InputType::Choice, &["red", "green", "blue"]);
        assert_eq!(question_key(&q, "2", 0), Some(QuestionAction::Answer(json!({"index": 1, "value": "green"}))));
        assert_eq!(question_key(&q, "4", 0), None, "no fourth choice");
        assert_eq!(question_key(&q, "0", 0), None);
        assert_eq!(question_key(&q, "ArrowDown", 2), Some(QuestionAction::Highlight(0)), "wraps");
        assert_eq!(question_key(&q, "ArrowUp", 0), Some(QuestionAction::Highlight(2)));
        assert_eq!(question_key(&q, "Enter", 2), Some(QuestionAction::Answer(json!({"index": 2, "value": "blue"}))));
        assert_eq!(question_key(&q, "r", 1), Some(QuestionAction::Answer(reject())));
    }

    #[test]
    fn text_answers_are_trimmed_and_slash_reject_rejects() {
        assert_eq!(text_answer("  blue "), Some(json!("blue")));
        assert_eq!(text_answer(" /reject"), Some(reject()));
        assert_eq!(text_answer("   "), None);
        let q = question(InputType::Text, &[]);
        assert_eq!(question_key(&q, "r", 0), Some(QuestionAction::Answer(reject())), "Esc, then r");
        assert_eq!(question_key(&q, "Enter", 0), Some(QuestionAction::FocusInput));
    }
}
