//! A session's chat: the transcript, the Action Required card, a working
//! indicator and the prompt box. Events come from the streams of the prompt and
//! decision requests, and from the stored log (on open, and whenever the hub
//! says the session changed); the transcript drops what it has already seen.

use leptos::prelude::*;
use leptos::task::spawn_local;

use crate::client;
use crate::components::alert::Alert;
use crate::components::approval_card::approval_card_view;
use crate::components::changes::SessionActivity;
use crate::components::copy_button::{copy_code_block, keep_copy_keys};
use crate::components::inbox::notify;
use crate::components::question_card::question_card_view;
use crate::components::rewind::{rewind_to_turn, SessionCheckpoints};
use crate::components::tool_call::{QuestionEntry, ToolEntry};
use crate::highlight::code_blocks_when_seen;
use crate::markdown;
use crate::parts::{deferred, when_loaded, PartMissing};
use crate::state::HubState;
use crate::transcript::{Entry, Item, Transcript};
use protocol::api::{ApproveRequest, InputAnswer, PromptRequest};
use protocol::events::SeqEvent;

/// The chat's state, owned by `ChatPanel`. Its streams outlive the panel (the
/// user opens another folder or closes the chat while a turn streams), so
/// what runs after an `.await` reaches the panel's signals only through
/// `try_*`: once they are disposed the task stops instead of panicking (a
/// panic stops the whole wasm page). `streams` ends those streams then.
#[derive(Clone, Copy)]
struct Chat {
    folder_path: StoredValue<String>,
    session_id: StoredValue<String>,
    transcript: RwSignal<Transcript>,
    /// Streams open (prompt, decision, following the log).
    open_streams: RwSignal<usize>,
    /// A decision is on its way: the card waits for it.
    deciding: RwSignal<bool>,
    error: RwSignal<Option<client::HubError>>,
    streams: client::Streams,
    /// Where the Changes panel hears that a call ended.
    activity: Option<SessionActivity>,
}

impl Chat {
    fn apply(self, events: Vec<SeqEvent>) {
        if let Some(activity) = self.activity {
            activity.saw(&events);
        }
        self.transcript.try_update(|transcript| {
            for event in &events {
                transcript.apply(event);
            }
        });
    }

    /// Catches up from the stored log, then follows a running turn: what another
    /// tab did, or what happened while this page was away or its stream broke.
    fn follow(self) {
        if self.open_streams.try_get_untracked() != Some(0) {
            return;
        }
        let (Some(session_id), Some(after)) =
            (self.session_id.try_get_value(), self.transcript.try_with_untracked(Transcript::last_seq))
        else {
            return;
        };
        self.stream(Stream::Follow, async move {
            client::follow(self.streams, &session_id, after, move |events| self.apply(events)).await
        });
    }

    fn send(self, message: String) {
        if self.open_streams.try_get_untracked() != Some(0) {
            return;
        }
        let (Some(folder_path), Some(session_id)) = (self.folder_path.try_get_value(), self.session_id.try_get_value())
        else {
            return;
        };
        // A user gesture, and the moment waiting cards start to matter.
        notify::ask_once();
        let request = PromptRequest { folder_path, session_id: Some(session_id), message, stream: None, agent: None };
        self.stream(Stream::Prompt, async move {
            client::prompt(self.streams, &request, move |events| self.apply(events)).await
        });
    }

    /// A decision goes out even while another stream ends or the log is being
    /// followed: the card is on screen, so the hub is waiting for it.
    fn decide(self, request: ApproveRequest) {
        if self.deciding.try_get_untracked() != Some(false) {
            return;
        }
        let Some(session_id) = self.session_id.try_get_value() else { return };
        self.stream(Stream::Decision, async move {
            client::decide(self.streams, &session_id, &request, move |events| self.apply(events)).await
        });
    }

    /// Stops the running turn; its own stream ends with the `cancelled` result.
    fn stop(self) {
        let Some(session_id) = self.session_id.try_get_value() else { return };
        spawn_local(async move {
            if let Err(error) = client::cancel(self.streams, &session_id, move |events| self.apply(events)).await {
                self.error.try_set(Some(error));
            }
        });
    }

    /// An answer to the agent's question goes out like a decision.
    fn answer(self, answer: InputAnswer) {
        if self.deciding.try_get_untracked() != Some(false) {
            return;
        }
        let Some(session_id) = self.session_id.try_get_value() else { return };
        self.stream(Stream::Decision, async move {
            client::answer(self.streams, &session_id, &answer, move |events| self.apply(events)).await
        });
    }

    /// Runs a stream. After a prompt's or decision's own stream, follow the log
    /// once more: if the connection dropped mid-turn, the rest comes from there.
    fn stream(self, kind: Stream, work: impl std::future::Future<Output = Result<(), client::HubError>> + 'static) {
        if self.open_streams.try_update(|open| *open += 1).is_none() {
            return;
        }
        if kind != Stream::Follow {
            // A new prompt or decision: the last one's error is old news.
            self.error.try_set(None);
        }
        if kind == Stream::Decision {
            self.deciding.try_set(true);
        }
        spawn_local(async move {
            let result = work.await;
            // The panel is gone (another folder, or the chat closed): nothing more to do.
            if self.open_streams.try_update(|open| *open -= 1).is_none() {
                return;
            }
            if kind == Stream::Decision {
                self.deciding.try_set(false);
            }
            match result {
                Err(error) => {
                    self.error.try_set(Some(error));
                }
                // The log answered: the hub is reachable again.
                Ok(()) if kind == Stream::Follow => client::clear_unreachable(self.error),
                Ok(()) => {}
            }
            if kind != Stream::Follow {
                self.follow();
            }
        });
    }
}

/// Rows drawn when a session opens, and how many more each "show earlier" adds:
/// a session of thousands of events opens at its end without building every row.
const FIRST_ROWS: usize = 150;
const MORE_ROWS: usize = 500;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Stream {
    Prompt,
    Decision,
    Follow,
}

#[component]
pub fn ChatPanel(folder_path: String, session_id: String) -> impl IntoView {
    let state = expect_context::<HubState>();
    // Under each prompt whose turn changed files: rewind to before it.
    let follow_checkpoints = SessionCheckpoints::provide(session_id.clone());
    let chat = Chat {
        folder_path: StoredValue::new(folder_path),
        session_id: StoredValue::new(session_id),
        transcript: RwSignal::new(Transcript::default()),
        open_streams: RwSignal::new(0),
        deciding: RwSignal::new(false),
        error: RwSignal::new(None),
        streams: client::Streams::scoped(),
        activity: use_context::<SessionActivity>(),
    };
    // On open, and whenever the hub reports a change (or the page reconnects).
    Effect::new(move |_| {
        state.projects.track();
        chat.follow();
    });

    let card = Memo::new(move |_| chat.transcript.with(Transcript::card));
    let question = Memo::new(move |_| chat.transcript.with(Transcript::question));
    let shown = RwSignal::new(FIRST_ROWS);
    let items = move || {
        let shown = shown.get();
        chat.transcript.with(|transcript| {
            let items = transcript.items();
            items[items.len().saturating_sub(shown)..].to_vec()
        })
    };
    let hidden = move || chat.transcript.with(|transcript| transcript.items().len().saturating_sub(shown.get()));
    let working = move || chat.open_streams.get() > 0 && card.with(Option::is_none) && question.with(Option::is_none);
    let busy = Signal::derive(move || chat.open_streams.get() > 0);
    let editor = Memo::new(move |_| {
        state.config.with(|config| config.as_ref().is_none_or(|config| config.accepts_modified_content))
    });
    let deciding = Signal::derive(move || chat.deciding.get());
    let deadline = Signal::derive(move || {
        let session_id = chat.session_id.get_value();
        state.projects.with(|projects| crate::waiting::deadline(projects, &session_id))
    });
    let on_decide = Callback::new(move |request: ApproveRequest| chat.decide(request));
    let on_answer = Callback::new(move |answer: InputAnswer| chat.answer(answer));

    view! {
        <section class="flex min-h-0 flex-1 flex-col gap-3" data-testid="chat">
            <div data-testid="transcript" class="flex flex-col gap-3">
                <Show when=move || { hidden() > 0 }>
                    <button
                        type="button"
                        data-testid="show-earlier"
                        class="self-center rounded-md px-3 py-1 text-sm text-sky-700 hover:bg-sky-50 dark:text-sky-400 dark:hover:bg-slate-900"
                        on:click=move |_| shown.update(|shown| *shown += MORE_ROWS)
                    >
                        {move || format!("Show earlier ({} more)", hidden())}
                    </button>
                </Show>
                <For each=items key=|item| (item.key, item.version) let:item>
                    <TranscriptItem item />
                </For>
                <Show when=move || chat.transcript.with(|transcript| transcript.items().is_empty())>
                    <p class="text-sm text-slate-500 dark:text-slate-400">"Ask the agent to do something in this folder."</p>
                </Show>
            </div>
            <Show when=working>
                <div class="flex items-center gap-3">
                    <p data-testid="working" class="flex items-center gap-2 text-sm text-slate-500 dark:text-slate-400" role="status">
                        <span class="inline-block h-2 w-2 animate-pulse rounded-full bg-sky-500"></span>
                        "Working…"
                    </p>
                    <button
                        type="button"
                        data-testid="stop-button"
                        title="Stop the agent's turn"
                        class="rounded-md border border-slate-300 px-2 py-0.5 text-xs font-medium text-slate-700 hover:bg-slate-100 dark:border-slate-700 dark:text-slate-300 dark:hover:bg-slate-800"
                        on:click=move |_| chat.stop()
                    >
                        "Stop"
                    </button>
                </div>
            </Show>
            {move || {
                card.get().map(|card| {
                    let session_id = chat.session_id.get_value();
                    deferred(approval_card_view(card, session_id, on_decide, deciding, editor.get_untracked(), deadline))
                })
            }}
            {move || {
                question.get().map(|question| deferred(question_card_view(question, on_answer, deciding, deadline)))
            }}
            {move || chat.error.get().map(|error| view! { <Alert message=error.message testid="chat-error" /> })}
            <PromptBox on_send=Callback::new(move |text: String| chat.send(text)) busy />
            {follow_checkpoints}
        </section>
    }
}

#[component]
fn TranscriptItem(item: Item) -> impl IntoView {
    let seq = item.key;
    match item.entry {
        Entry::User(text) => view! {
            <div data-testid="user-message" class="ml-auto max-w-[85%] rounded-2xl rounded-br-sm bg-sky-700 px-4 py-2 whitespace-pre-wrap text-white">
                {text}
            </div>
            {deferred(rewind_to_turn(seq))}
        }
        .into_any(),
        Entry::Assistant(text) => when_loaded(markdown::safe_html(text.clone()), move |html| match html {
            Ok(html) => {
                let node = NodeRef::<leptos::html::Div>::new();
                code_blocks_when_seen(node, &html);
                view! {
                    <div
                        node_ref=node
                        data-testid="assistant-message"
                        class="markdown max-w-full"
                        inner_html=html
                        on:click=|event| copy_code_block(&event)
                        on:keydown=|event| keep_copy_keys(&event)
                    ></div>
                }
                .into_any()
            }
            // Without the renderer the answer still reads, as the text it is.
            Err(PartMissing) => view! {
                <div data-testid="assistant-message" class="max-w-full whitespace-pre-wrap">{text}</div>
            }
            .into_any(),
        }),
        Entry::Thought(text) => view! {
            <details data-testid="thought" class="max-w-full text-sm text-slate-500 dark:text-slate-400">
                <summary class="cursor-pointer select-none italic">"Thinking…"</summary>
                <div class="mt-1 border-l-2 border-slate-200 pl-3 whitespace-pre-wrap">{text}</div>
            </details>
        }
        .into_any(),
        Entry::Tool(call) => view! { <ToolEntry call=*call /> }.into_any(),
        Entry::Question(question) => view! { <QuestionEntry question /> }.into_any(),
        Entry::Error { message, code } => view! { <Alert message testid="agent-error" code=code.unwrap_or_default() /> }.into_any(),
        Entry::Notice(text) => view! {
            <p data-testid="notice" class="text-center text-xs text-slate-500 dark:text-slate-400">{text}</p>
        }
        .into_any(),
    }
}

/// Enter sends, Shift+Enter makes a new line. While the agent waits on a card,
/// `yes`, `no` or `approve all` typed here decide it.
#[component]
fn PromptBox(on_send: Callback<String>, busy: Signal<bool>) -> impl IntoView {
    let text = RwSignal::new(String::new());
    let send = move || {
        let message = text.get_untracked();
        if message.trim().is_empty() || busy.get_untracked() {
            return;
        }
        text.set(String::new());
        on_send.run(message);
    };
    view! {
        <form
            data-testid="prompt-form"
            class="sticky bottom-0 flex items-end gap-2 border-t border-slate-200 bg-slate-50 pt-3 pb-1 dark:border-slate-800 dark:bg-slate-950"
            on:submit=move |event| {
                event.prevent_default();
                send();
            }
        >
            <textarea
                id="prompt-input"
                rows="2"
                placeholder="Message the agent (Enter to send, Shift+Enter for a new line)"
                bind:value=text
                on:keydown=move |event| {
                    if event.key() == "Enter" && !event.shift_key() {
                        event.prevent_default();
                        send();
                    }
                }
                class="min-w-0 flex-1 resize-y rounded-lg border border-slate-300 bg-white px-3 py-2 text-sm focus:border-sky-500 focus:outline-none focus:ring-2 focus:ring-sky-500/30 dark:border-slate-700 dark:bg-slate-900"
            ></textarea>
            <button
                type="submit"
                disabled=move || busy.get()
                class="rounded-lg bg-sky-700 px-4 py-2 text-sm font-medium text-white hover:bg-sky-800 disabled:opacity-50"
            >
                "Send"
            </button>
        </form>
    }
}
