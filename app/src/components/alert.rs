//! An error the user should read.

use leptos::prelude::*;

/// An error the user should read: a red box, optionally dismissable.
#[component]
pub fn Alert(
    message: String,
    testid: &'static str,
    #[prop(optional, into)] code: Option<String>,
    #[prop(optional)] on_dismiss: Option<Callback<()>>,
) -> impl IntoView {
    view! {
        <div
            role="alert"
            data-testid=testid
            data-code=code
            class="flex items-start justify-between gap-4 rounded-lg border border-red-300 bg-red-50 px-4 py-3 text-sm text-red-800 dark:border-red-800 dark:bg-red-950 dark:text-red-200"
        >
            <span>{message}</span>
            {on_dismiss
                .map(|dismiss| {
                    view! {
                        <button type="button" class="font-medium hover:underline" on:click=move |_| dismiss.run(())>
                            "Dismiss"
                        </button>
                    }
                })}
        </div>
    }
}
