//! The chat header's Rules, Decisions and Changes buttons, and the panel they open
//! above the chat. The chat stays mounted below, so a running turn and its
//! card go on; Esc or Close shuts the panel and gives the focus back to its button.

use leptos::prelude::*;

use crate::components::changes::ChangesPanel;
use crate::components::decisions::decisions_view;
use crate::components::rules_panel::rules_panel_view;
use crate::parts::deferred;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Panel {
    Rules,
    Decisions,
    Changes,
}

#[derive(Clone, Copy)]
pub struct FolderTools {
    open: RwSignal<Option<Panel>>,
    rules_button: NodeRef<leptos::html::Button>,
    decisions_button: NodeRef<leptos::html::Button>,
    changes_button: NodeRef<leptos::html::Button>,
}

impl FolderTools {
    pub fn new() -> Self {
        Self {
            open: RwSignal::new(None),
            rules_button: NodeRef::new(),
            decisions_button: NodeRef::new(),
            changes_button: NodeRef::new(),
        }
    }

    fn toggle(self, panel: Panel) {
        self.open.update(|open| *open = if *open == Some(panel) { None } else { Some(panel) });
    }

    fn close(self) {
        let Some(panel) = self.open.get_untracked() else { return };
        self.open.set(None);
        let button = match panel {
            Panel::Rules => self.rules_button,
            Panel::Decisions => self.decisions_button,
            Panel::Changes => self.changes_button,
        };
        if let Some(button) = button.get_untracked() {
            let _ = button.focus();
        }
    }
}

impl Default for FolderTools {
    fn default() -> Self {
        Self::new()
    }
}

#[component]
pub fn ToolButtons(tools: FolderTools) -> impl IntoView {
    let class = move |panel: Panel| {
        if tools.open.get() == Some(panel) {
            "rounded-md border border-sky-300 bg-sky-50 px-2.5 py-1 text-xs font-medium text-sky-800 dark:border-sky-800 dark:bg-sky-950 dark:text-sky-200"
        } else {
            "rounded-md border border-slate-300 px-2.5 py-1 text-xs font-medium text-slate-700 hover:bg-slate-100 dark:border-slate-700 dark:text-slate-300 dark:hover:bg-slate-800"
        }
    };
    view! {
        <div class="flex flex-wrap items-center gap-2">
            // With the folder's tools (in the session part of the wasm, not the first load).
            <crate::components::timeout_picker::TimeoutPicker />
            <button
                type="button"
                node_ref=tools.rules_button
                data-testid="rules-button"
                aria-controls="rules-panel"
                aria-expanded=move || (tools.open.get() == Some(Panel::Rules)).to_string()
                title="Which rules allow, deny or ask in this folder"
                class=move || class(Panel::Rules)
                on:click=move |_| tools.toggle(Panel::Rules)
            >
                "Rules"
            </button>
            <button
                type="button"
                node_ref=tools.decisions_button
                data-testid="decisions-button"
                aria-controls="decisions-view"
                aria-expanded=move || (tools.open.get() == Some(Panel::Decisions)).to_string()
                title="Every decision on this folder's tool calls"
                class=move || class(Panel::Decisions)
                on:click=move |_| tools.toggle(Panel::Decisions)
            >
                "Decisions"
            </button>
            <button
                type="button"
                node_ref=tools.changes_button
                data-testid="changes-button"
                aria-controls="changes-panel"
                aria-expanded=move || (tools.open.get() == Some(Panel::Changes)).to_string()
                title="Every file the agent changed in this session, and the git working tree"
                class=move || class(Panel::Changes)
                on:click=move |_| tools.toggle(Panel::Changes)
            >
                "Changes"
            </button>
        </div>
    }
}

#[component]
pub fn ToolPanel(tools: FolderTools, folder_path: String, session_id: String) -> impl IntoView {
    let on_close = Callback::new(move |()| tools.close());
    move || match tools.open.get() {
        None => ().into_any(),
        Some(Panel::Rules) => deferred(rules_panel_view(folder_path.clone(), session_id.clone(), on_close)),
        Some(Panel::Decisions) => deferred(decisions_view(Some(folder_path.clone()), Some(on_close), None)),
        // In the `session` part with the rest of the open folder; its diffs come from `cards`.
        Some(Panel::Changes) => view! { <ChangesPanel session_id=session_id.clone() on_close /> }.into_any(),
    }
}
