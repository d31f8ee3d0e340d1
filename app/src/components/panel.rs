//! A panel beside the chat (Rules, Changes, Decisions): a titled section with
//! its own tools in the header, that takes the focus when it opens and closes
//! on Esc or its Close button.

use leptos::prelude::*;

/// `name` names its parts for tests and assistive technology: the section is
/// `id`, its title `<name>-title`, its Close button `<name>-close`. Without
/// `on_close` it is a page of its own (Decisions at /decisions): no Close, and
/// it leaves the focus where it is.
#[component]
pub fn Panel(
    id: &'static str,
    testid: &'static str,
    name: &'static str,
    #[prop(into)] title: ViewFn,
    /// Between the title and Close: a mode line, Refresh, a download…
    #[prop(optional, into)]
    tools: Option<ViewFn>,
    on_close: Option<Callback<()>>,
    children: Children,
) -> impl IntoView {
    let panel_ref = NodeRef::<leptos::html::Section>::new();
    if on_close.is_some() {
        Effect::new(move |_| {
            if let Some(panel) = panel_ref.get() {
                let _ = panel.focus();
            }
        });
    }
    let on_key = move |event: leptos::ev::KeyboardEvent| {
        if let (Some(close), "Escape") = (on_close, event.key().as_str()) {
            event.prevent_default();
            close.run(());
        }
    };
    view! {
        <section
            id=id
            data-testid=testid
            node_ref=panel_ref
            tabindex="-1"
            aria-labelledby=format!("{name}-title")
            on:keydown=on_key
            class="flex flex-col gap-4 rounded-xl border border-slate-200 bg-white p-4 text-sm shadow-sm focus:outline-none focus-visible:ring-2 focus-visible:ring-sky-500 dark:border-slate-800 dark:bg-slate-900"
        >
            <header class="flex flex-wrap items-center gap-3">
                <h2 id=format!("{name}-title") class="text-base font-semibold">
                    {title.run()}
                </h2>
                {tools.map(|tools| tools.run())}
                {on_close
                    .map(|close| {
                        view! {
                            <button
                                type="button"
                                data-testid=format!("{name}-close")
                                on:click=move |_| close.run(())
                                class="rounded-md border border-slate-300 px-2 py-0.5 text-xs font-medium text-slate-700 hover:bg-slate-100 dark:border-slate-700 dark:text-slate-300 dark:hover:bg-slate-800"
                            >
                                "Close"
                            </button>
                        }
                    })}
            </header>
            {children()}
        </section>
    }
}
