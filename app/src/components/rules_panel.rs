//! The folder's Rules panel: every rule that applies there, highest first,
//! with what it matches, its priority, tier and source; the policy files or
//! rules that were ignored and why; the session grants ("Yes, for this
//! session"), which can be withdrawn; and the rules saved in the hub, which
//! can be deleted or exported as a Gemini CLI policy file.

use leptos::prelude::*;

use crate::components::panel::Panel;

use crate::client::{self, HubError};
use crate::components::alert::Alert;
use crate::parts::{wasm_split, PartMissing};
use crate::policy::{inactive_reason, mode_label, rule_matches, short_id, tier_label, time_label};
use crate::state::HubState;
use protocol::api::{PolicyDecision, PolicyProblem, RuleOrigin, RuleView, RulesResponse, SessionGrant};

/// Patterns longer than this are folded (the guard rails' regexes run to hundreds of characters).
const LONG: usize = 48;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Change {
    DeleteRule(String),
    Withdraw(SessionGrant),
    /// Trust the folder (`true`) or withdraw its trust.
    Trust(bool),
}

/// The panel, from the `policy` part of the wasm (see `parts`).
#[wasm_split(policy, wasm_split_path = ::leptos::wasm_split, preload(preload_policy), fallible)]
pub fn rules_panel_view(
    folder_path: String,
    session_id: String,
    on_close: Callback<()>,
) -> Result<AnyView, PartMissing> {
    Ok(view! { <RulesPanel folder_path session_id on_close /> }.into_any())
}

#[component]
pub fn RulesPanel(folder_path: String, session_id: String, on_close: Callback<()>) -> impl IntoView {
    let state = use_context::<HubState>();
    let folder = StoredValue::new(folder_path.clone());
    let session = StoredValue::new(session_id);
    // Refetched when the hub reports a change (a grant given, YOLO toggled) and after each change made here.
    let rules = LocalResource::new(move || {
        if let Some(state) = state {
            state.projects.track();
            state.config.track();
        }
        let folder = folder.get_value();
        async move { client::policy::rules(&folder).await }
    });
    let change = Action::new_local(move |change: &Change| {
        let change = change.clone();
        async move {
            match change {
                Change::DeleteRule(id) => client::policy::delete_rule(&id).await,
                Change::Withdraw(grant) => client::policy::withdraw_grant(&grant.session_id, &grant.tool_name).await,
                Change::Trust(trusted) => client::set_trust(&folder.get_value(), trusted).await.map(drop),
            }
        }
    });
    let change_error = RwSignal::new(None::<HubError>);
    Effect::new(move |_| match change.value().get() {
        Some(Ok(())) => {
            change_error.set(None);
            rules.refetch();
        }
        Some(Err(error)) => change_error.set(Some(error)),
        None => {}
    });
    let pending = Signal::derive(move || change.pending().get());

    let body = move || {
        rules.get().map(|result| match result {
            Err(error) => view! { <Alert message=error.message testid="rules-error" /> }.into_any(),
            Ok(response) => {
                let on_delete = Callback::new(move |id: String| {
                    change.dispatch(Change::DeleteRule(id));
                });
                let on_withdraw = Callback::new(move |grant: SessionGrant| {
                    change.dispatch(Change::Withdraw(grant));
                });
                let on_trust = Callback::new(move |trusted: bool| {
                    change.dispatch(Change::Trust(trusted));
                });
                view! {
                    <RulesBody response current_session=session.get_value() pending on_delete on_withdraw on_trust />
                }
                .into_any()
            }
        })
    };

    let tools = move || {
        view! {
            <span class="text-xs text-slate-500 dark:text-slate-400">
                {move || rules.get().and_then(Result::ok).map(|response| mode_line(&response))}
            </span>
            <span class="flex-1"></span>
            <a
                href=client::policy::export_url(&folder_path)
                download="agent-hub-rules.toml"
                data-testid="rules-export"
                title="The rules saved in the hub for this folder, as a policy file Gemini CLI loads"
                class="rounded-md px-2 py-1 text-sky-700 hover:bg-sky-50 hover:underline dark:text-sky-400 dark:hover:bg-slate-800"
            >
                "Export as TOML"
            </a>
        }
    };
    view! {
        <Panel id="rules-panel" testid="rules-panel" name="rules" title=|| "Rules" tools on_close=Some(on_close)>
            <p class="text-slate-600 dark:text-slate-400">
                "The highest rule that matches a call decides (at equal priority, deny beats ask beats allow). "
                "A call no rule matches asks, unless YOLO is on."
            </p>
            {move || change_error.get().map(|error| view! { <Alert message=error.message testid="rules-change-error" /> })}
            {move || {
                body()
                    .unwrap_or_else(|| {
                        view! {
                            <p role="status" class="text-slate-500 dark:text-slate-400">
                                "Loading the rules…"
                            </p>
                        }
                            .into_any()
                    })
            }}
        </Panel>
    }
}

fn mode_line(response: &RulesResponse) -> String {
    let guard = if response.guard_rails { " · guard rails on" } else { "" };
    format!("Matching with {}{guard}", mode_label(&response.mode))
}

#[component]
fn RulesBody(
    response: RulesResponse,
    current_session: String,
    pending: Signal<bool>,
    on_delete: Callback<String>,
    on_withdraw: Callback<SessionGrant>,
    on_trust: Callback<bool>,
) -> impl IntoView {
    let RulesResponse { mode, rules, problems, grants, trusted, held_back, .. } = response;
    let count = rules.len();
    let held = held_back.len();
    view! {
        {(!problems.is_empty()).then(|| view! { <Problems problems /> })}
        <section aria-labelledby="trust-title" class="flex flex-col gap-2" data-testid="rules-trust">
            <h3 id="trust-title" class="text-xs font-semibold uppercase tracking-wide text-slate-500 dark:text-slate-400">
                "Folder trust"
            </h3>
            <div class="flex flex-wrap items-center gap-3">
                <p class="flex-1 text-slate-600 dark:text-slate-400">
                    {match (trusted, held) {
                        (true, _) => {
                            "Trusted: this folder's own .gemini files apply, allow rules and YOLO included.".to_string()
                        }
                        (false, 0) => {
                            "Not trusted: this folder's own .gemini files may only tighten (deny and ask rules apply). None of its allow rules is held back."
                                .to_string()
                        }
                        (false, 1) => {
                            "Not trusted: this folder's own .gemini files may only tighten (deny and ask rules apply). 1 allow rule of its own is held back until you trust it."
                                .to_string()
                        }
                        (false, held) => {
                            format!(
                                "Not trusted: this folder's own .gemini files may only tighten (deny and ask rules apply). {held} allow rules of its own are held back until you trust it."
                            )
                        }
                    }}
                </p>
                <button
                    type="button"
                    data-testid=if trusted { "trust-withdraw" } else { "trust-grant" }
                    disabled=move || pending.get()
                    on:click=move |_| on_trust.run(!trusted)
                    class="rounded-md border border-slate-300 px-2 py-0.5 text-xs font-medium text-slate-700 hover:bg-slate-100 disabled:opacity-50 dark:border-slate-700 dark:text-slate-300 dark:hover:bg-slate-800"
                >
                    {if trusted { "Withdraw trust" } else { "Trust this folder" }}
                </button>
            </div>
        </section>
        <section aria-labelledby="grants-title" class="flex flex-col gap-2">
            <h3 id="grants-title" class="text-xs font-semibold uppercase tracking-wide text-slate-500 dark:text-slate-400">
                "Session grants (“Yes, for this session”)"
            </h3>
            {if grants.is_empty() {
                view! { <p class="text-slate-500 dark:text-slate-400">"None: no tool runs without a card because of a session grant."</p> }
                    .into_any()
            } else {
                view! {
                    <ul class="flex flex-col gap-1">
                        {grants
                            .into_iter()
                            .map(|grant| {
                                let this = grant.session_id == current_session;
                                view! { <GrantRow grant this pending on_withdraw /> }
                            })
                            .collect_view()}
                    </ul>
                }
                    .into_any()
            }}
        </section>
        <section aria-labelledby="rule-list-title" class="flex flex-col gap-2">
            <h3 id="rule-list-title" class="text-xs font-semibold uppercase tracking-wide text-slate-500 dark:text-slate-400">
                {format!("Rules that apply here ({count}), highest first")}
            </h3>
            {if rules.is_empty() {
                view! { <p class="text-slate-500 dark:text-slate-400">"No rules."</p> }.into_any()
            } else {
                view! {
                    <ol class="flex flex-col gap-2">
                        {rules
                            .into_iter()
                            .map(|rule| view! { <RuleRow rule mode=mode.clone() pending on_delete /> })
                            .collect_view()}
                    </ol>
                }
                    .into_any()
            }}
        </section>
    }
}

#[component]
fn Problems(problems: Vec<PolicyProblem>) -> impl IntoView {
    view! {
        <section
            aria-labelledby="problems-title"
            data-testid="rules-problems"
            class="rounded-lg border border-amber-300 bg-amber-50 px-3 py-2 text-amber-900 dark:border-amber-800 dark:bg-amber-950/40 dark:text-amber-200"
        >
            <h3 id="problems-title" class="font-medium">
                <span aria-hidden="true">"⚠ "</span>
                {format!("Ignored ({}): these policy files or rules do not apply", problems.len())}
            </h3>
            <ul class="mt-1 flex flex-col gap-1">
                {problems
                    .into_iter()
                    .map(|problem| {
                        let place = match problem.rule {
                            Some(rule) => format!("{}, rule {rule}", problem.file),
                            None => format!("{} (the whole file)", problem.file),
                        };
                        view! {
                            <li data-testid="rules-problem">
                                <span class="font-mono break-all">{place}</span>
                                ": "
                                {problem.message}
                            </li>
                        }
                    })
                    .collect_view()}
            </ul>
        </section>
    }
}

#[component]
fn GrantRow(
    grant: SessionGrant,
    this: bool,
    pending: Signal<bool>,
    on_withdraw: Callback<SessionGrant>,
) -> impl IntoView {
    let label = format!("Withdraw the session grant for {}", grant.tool_name);
    let session = short_id(&grant.session_id).to_string();
    let (tool_name, tool_attr, session_id) =
        (grant.tool_name.clone(), grant.tool_name.clone(), grant.session_id.clone());
    view! {
        <li
            data-testid="grant-row"
            data-tool-name=tool_attr
            class="flex flex-wrap items-center gap-2 rounded-lg border border-slate-200 px-3 py-2 dark:border-slate-800"
        >
            <code class="font-mono font-medium">{tool_name}</code>
            <span class="text-slate-600 dark:text-slate-400">
                "runs without a card in session "
                <span class="font-mono" title=session_id>
                    {session}
                </span>
                {this.then_some(" (this chat)")}
            </span>
            <span class="flex-1"></span>
            <button
                type="button"
                data-testid="grant-withdraw"
                aria-label=label
                disabled=move || pending.get()
                on:click=move |_| on_withdraw.run(grant.clone())
                class="rounded-md border border-slate-300 px-2 py-0.5 text-xs font-medium text-slate-700 hover:bg-slate-100 disabled:opacity-50 dark:border-slate-700 dark:text-slate-300 dark:hover:bg-slate-800"
            >
                "Withdraw"
            </button>
        </li>
    }
}

/// A rule's decision as a badge: its word, coloured.
#[component]
pub fn DecisionBadge(decision: PolicyDecision) -> impl IntoView {
    let class = match decision {
        PolicyDecision::Allow => "bg-emerald-100 text-emerald-800 dark:bg-emerald-900 dark:text-emerald-200",
        PolicyDecision::Deny => "bg-red-100 text-red-800 dark:bg-red-900 dark:text-red-200",
        PolicyDecision::AskUser => "bg-amber-100 text-amber-800 dark:bg-amber-900 dark:text-amber-200",
    };
    view! {
        <span
            data-testid="rule-decision"
            class=format!("inline-block w-12 rounded-full px-2 py-0.5 text-center text-xs font-semibold {class}")
        >
            {decision.label()}
        </span>
    }
}

#[component]
fn RuleRow(rule: RuleView, mode: String, pending: Signal<bool>, on_delete: Callback<String>) -> impl IntoView {
    let inactive = inactive_reason(&rule, &mode);
    let matches = rule_matches(&rule);
    // "run_shell_command · command starts with “git status”": the tool, then
    // what else must hold; a long pattern is named here and shown folded below.
    let (short, long): (Vec<_>, Vec<_>) =
        matches.into_iter().enumerate().partition(|(place, (_, value))| *place == 0 || value.chars().count() <= LONG);
    let mut parts: Vec<String> = short
        .into_iter()
        .map(|(place, (what, value))| if place == 0 { value } else { format!("{what} {value}") })
        .collect();
    parts.extend(long.iter().map(|(_, (what, _))| format!("{what} a pattern")));
    let headline = parts.join(" · ");
    let patterns = long.into_iter().map(|(_, pair)| pair).collect::<Vec<_>>();
    let priority = format!("priority {} · effective {:.3}", rule.priority, rule.effective_priority);
    let origin = match rule.origin {
        RuleOrigin::File => "policy file",
        RuleOrigin::Hub => "saved in the hub",
        RuleOrigin::BuiltIn => "built-in",
    };
    let saved = rule.created_at.map(|at| format!("saved {}", time_label(at).1));
    let source = [Some(rule.source.clone()), Some(tier_label(rule.tier).to_string()), saved]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" · ");
    let modes =
        (!rule.modes.is_empty()).then(|| rule.modes.iter().map(|mode| mode_label(mode)).collect::<Vec<_>>().join(", "));
    let delete = (rule.origin == RuleOrigin::Hub).then(|| {
        let id = rule.id.clone();
        let label = format!("Delete the saved rule: {} {headline}", rule.decision.label());
        view! {
            <button
                type="button"
                data-testid="rule-delete"
                aria-label=label
                disabled=move || pending.get()
                on:click=move |_| on_delete.run(id.clone())
                class="rounded-md border border-red-300 px-2 py-0.5 text-xs font-medium text-red-700 hover:bg-red-50 disabled:opacity-50 dark:border-red-800 dark:text-red-300 dark:hover:bg-red-950"
            >
                "Delete"
            </button>
        }
    });
    let row_class = if inactive.is_some() {
        "flex flex-col gap-1 rounded-lg border border-dashed border-slate-300 px-3 py-2 opacity-60 dark:border-slate-700"
    } else {
        "flex flex-col gap-1 rounded-lg border border-slate-200 px-3 py-2 dark:border-slate-800"
    };
    view! {
        <li
            data-testid="rule-row"
            data-rule-id=rule.id.clone()
            data-origin=origin
            data-active=rule.active.to_string()
            class=row_class
        >
            <div class="flex flex-wrap items-center gap-2">
                <DecisionBadge decision=rule.decision />
                <span class="min-w-0 flex-1 break-all font-mono">{headline}</span>
                <span class="text-xs text-slate-500 dark:text-slate-400" title="As written (0–999), and as ranked: tier + priority/1000">
                    {priority}
                </span>
                {delete}
            </div>
            <dl class="grid grid-cols-[max-content_1fr] gap-x-3 gap-y-0.5 text-xs text-slate-600 dark:text-slate-400">
                {rule.deny_message.map(|message| view! { <dt>"message"</dt><dd>{message}</dd> })}
                {patterns
                    .into_iter()
                    .map(|(what, value)| {
                        view! {
                            <dt>"pattern"</dt>
                            <dd class="min-w-0">
                                <details>
                                    <summary class="cursor-pointer text-sky-700 dark:text-sky-400">{format!("{what}: show")}</summary>
                                    <code class="block break-all font-mono">{value}</code>
                                </details>
                            </dd>
                        }
                    })
                    .collect_view()}
                {modes.map(|modes| view! { <dt>"modes"</dt><dd>{modes}</dd> })}
                {rule.allow_redirection.then(|| view! { <dt>"redirection"</dt><dd>"allowed (> and < do not make it ask)"</dd> })}
                <dt>"source"</dt>
                <dd data-testid="rule-source" class="min-w-0 break-all">{source}</dd>
            </dl>
            {inactive.map(|reason| view! { <p data-testid="rule-inactive" class="text-xs italic">{reason}</p> })}
        </li>
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_mode_line_says_how_rules_are_matched() {
        let response = |mode: &str, guard_rails| RulesResponse {
            folder_path: "/p".into(),
            mode: mode.into(),
            guard_rails,
            rules: Vec::new(),
            problems: Vec::new(),
            grants: Vec::new(),
            trusted: true,
            held_back: Vec::new(),
        };
        assert_eq!(mode_line(&response("yolo", true)), "Matching with YOLO on · guard rails on");
        assert_eq!(mode_line(&response("default", false)), "Matching with YOLO off");
    }
}
