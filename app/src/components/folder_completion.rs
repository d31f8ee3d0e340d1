//! Completing a folder's path as the user types it: the recent folders first,
//! then the sub-directories of the folder typed so far (`GET /api/fs/dirs`).
//! The input is an ARIA combobox (`↓`/`↑` mark a suggestion, `Enter` takes it,
//! `Esc` closes the list); what fetches and lists the suggestions is in the
//! `session` part of the wasm, so the first load carries only the keys. Until
//! that part is there, or when a listing fails, the input is a plain text box.

use leptos::prelude::*;

use crate::parts::{wasm_split, when_loaded, PartMissing};

/// At most this many sub-directories are offered at once.
const MAX_COMPLETIONS: usize = 50;

/// What the combobox shows. One signal for all of it: each signal type costs
/// the first load its own copy of the reactive code.
#[derive(Clone, Default)]
struct State {
    /// `(value, label)`: what the list offers for what is typed.
    options: Vec<(String, &'static str)>,
    /// The suggestion marked with the arrow keys.
    active: Option<usize>,
    /// The user wants the list (typing, focus); `Esc` and leaving the input close it.
    open: bool,
    /// The hub user's home, once a listing of `~/…` said it.
    home: Option<String>,
}

/// The combobox's state, shared by the input (in the main module) and its list
/// (in the `session` part).
#[derive(Clone, Copy)]
pub struct Combo {
    path: RwSignal<String>,
    state: RwSignal<State>,
    /// The input had the focus once: the list is made (and its part fetched) then.
    used: RwSignal<bool>,
}

impl Combo {
    pub const LIST_ID: &'static str = "folder-suggestions";

    pub fn new(path: RwSignal<String>) -> Self {
        Self { path, state: RwSignal::new(State::default()), used: RwSignal::new(false) }
    }

    /// `typed` with `~` replaced by the home the hub said (the API takes absolute
    /// paths only); as it is when there is no `~` or the home is not known.
    pub fn expand_home(self, typed: &str) -> String {
        match (typed.strip_prefix('~'), self.state.with_untracked(|state| state.home.clone())) {
            (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
                format!("{}{rest}", home.trim_end_matches('/'))
            }
            _ => typed.to_string(),
        }
    }

    pub fn expanded(self) -> bool {
        self.state.with(|state| state.open && !state.options.is_empty())
    }

    /// For `aria-activedescendant`.
    pub fn active_id(self) -> Option<String> {
        self.state.with(|state| state.active.filter(|_| state.open && !state.options.is_empty())).map(option_id)
    }

    pub fn set_open(self, open: bool) {
        self.state.update(|state| {
            state.open = open;
            state.active = state.active.filter(|_| open);
        });
        if open && !self.used.get_untracked() {
            self.used.set(true);
        }
    }

    /// The input's keys; `Enter` takes the marked suggestion (else the form is sent).
    pub fn on_key(self, event: leptos::ev::KeyboardEvent) {
        let key = event.key();
        let (count, open, marked) = self.state.with_untracked(|state| {
            let marked = state.active.filter(|_| state.open).and_then(|at| state.options.get(at)).map(|o| o.0.clone());
            (state.options.len(), state.open, marked)
        });
        match key.as_str() {
            "ArrowDown" | "ArrowUp" if count > 0 => {
                event.prevent_default();
                let down = key == "ArrowDown";
                self.state.update(|state| {
                    state.open = true;
                    state.active = Some(match state.active {
                        None if down => 0,
                        None => count - 1,
                        Some(at) if down => (at + 1) % count,
                        Some(at) => (at + count - 1) % count,
                    })
                });
            }
            "Enter" => {
                if let Some(value) = marked {
                    event.prevent_default();
                    self.pick(value);
                }
            }
            "Escape" if open => {
                event.prevent_default();
                self.set_open(false);
            }
            _ => {}
        }
    }

    /// Puts a suggestion in the input; the list goes on with what is under it.
    fn pick(self, value: String) {
        self.path.set(value);
        self.state.update(|state| {
            state.active = None;
            state.open = true;
        });
    }

    /// The list's id for `aria-controls`, once the list is made (an id that names
    /// no element is an error to a screen reader).
    pub fn controls(self) -> Option<&'static str> {
        self.used.get().then_some(Self::LIST_ID)
    }

    /// The list, from the `session` part, once the input had the focus (in the
    /// browser only: the server renders no focus).
    pub fn list(self) -> impl IntoView {
        move || {
            self.used.get().then(|| {
                // A part that cannot be loaded leaves a plain text box: nothing to say.
                when_loaded(folder_suggestions(self), |list| list.unwrap_or_else(|PartMissing| ().into_any()))
            })
        }
    }
}

fn option_id(at: usize) -> String {
    format!("folder-suggestion-{at}")
}

/// The suggestions' list and what fills it: the parent of what is typed is
/// listed whenever it changes, the recent folders whenever the input is empty.
#[wasm_split(session, wasm_split_path = ::leptos::wasm_split, fallible)]
pub fn folder_suggestions(combo: Combo) -> Result<AnyView, PartMissing> {
    use leptos::task::spawn_local;

    use crate::client;
    use protocol::api::DirListing;

    let path = combo.path;
    let recent = RwSignal::new(Vec::<String>::new());
    // The last listing, under the parent as typed (`~/code/`).
    let listing = RwSignal::new(None::<(String, DirListing)>);
    let parent = Memo::new(move |_| path.with(|typed| split_typed(typed).map(|(parent, _)| parent.to_string())));
    Effect::new(move |_| {
        let Some(wanted) = parent.get() else { return };
        spawn_local(async move {
            // A listing that fails (no such folder yet, no permission) completes
            // nothing; typing the path by hand goes on as before.
            let dirs = client::list_dirs(&wanted).await.unwrap_or_default();
            if let Some(home) = home_of(&wanted, &dirs.path) {
                combo.state.try_update(|state| state.home = Some(home));
            }
            if parent.try_get_untracked().flatten().as_ref() == Some(&wanted) {
                listing.try_set(Some((wanted, dirs)));
            }
        });
    });
    // At the start and after each folder opened (the input is emptied then).
    let empty = Memo::new(move |_| path.with(String::is_empty));
    Effect::new(move |_| {
        if empty.get() {
            spawn_local(async move {
                if let Ok(answer) = client::recent_folders().await {
                    recent.try_set(answer.folders.into_iter().map(|folder| folder.folder_path).collect());
                }
            });
        }
    });
    Effect::new(move |_| {
        let typed = path.get();
        let found = listing.with(|listing| match (listing, split_typed(&typed)) {
            (Some((listed, listing)), Some((parent, prefix))) if listed == parent => {
                completions(parent, prefix, &listing.dirs)
            }
            _ => Vec::new(),
        });
        let options = recent.with(|recent| suggestions(&typed, recent, found));
        combo.state.update(|state| {
            state.options = options;
            state.active = None;
        });
    });
    let items = move || {
        let (active, options) = combo.state.with(|state| (state.active, state.options.clone()));
        options
            .into_iter()
            .enumerate()
            .map(|(at, (value, label))| {
                let marked = active == Some(at);
                let (pick, title) = (value.clone(), value.clone());
                view! {
                    <li
                        id=option_id(at)
                        role="option"
                        aria-selected=if marked { "true" } else { "false" }
                        class="flex cursor-pointer gap-2 truncate px-2 py-1 font-mono text-sm hover:bg-slate-100 dark:hover:bg-slate-800"
                        class=("bg-sky-100", marked)
                        class=("dark:bg-sky-900", marked)
                        title=title
                        // Not a click: the input keeps the focus (a blur would close the list first).
                        on:mousedown=move |event| {
                            event.prevent_default();
                            combo.pick(pick.clone());
                        }
                    >
                        <span class="truncate">{value}</span>
                        <span class="ml-auto text-xs text-slate-600 dark:text-slate-300">{label}</span>
                    </li>
                }
            })
            .collect_view()
    };
    Ok(view! {
        <ul
            id=Combo::LIST_ID
            role="listbox"
            aria-label="Folder suggestions"
            data-testid="folder-suggestions"
            class="absolute z-10 mt-1 max-h-64 w-full overflow-auto rounded-md border border-slate-300 bg-white shadow-lg dark:border-slate-700 dark:bg-slate-950"
            class=("hidden", move || !combo.expanded())
        >
            {items}
        </ul>
    }
    .into_any())
}

/// Where completing `typed` lists from: its text up to the last `/`, and the
/// name begun after it. `None` unless it is absolute or starts with `~`
/// (`~` alone lists the home).
pub fn split_typed(typed: &str) -> Option<(&str, &str)> {
    if typed == "~" {
        return Some(("~/", ""));
    }
    if !typed.starts_with('/') && !typed.starts_with("~/") {
        return None;
    }
    let cut = typed.rfind('/')? + 1;
    Some((&typed[..cut], &typed[cut..]))
}

/// The home, from a listing of `~/…` (`typed`) and the path the hub expanded it to.
pub fn home_of(typed: &str, expanded: &str) -> Option<String> {
    let rest = typed.strip_prefix('~')?;
    let home = expanded.strip_suffix(rest)?;
    (!home.is_empty() && home.starts_with('/')).then(|| home.to_string())
}

/// The listed names that begin with `prefix`, as paths under `parent` ending in
/// `/` (so the next level lists at once). Hidden folders only when the prefix
/// starts with a dot.
pub fn completions(parent: &str, prefix: &str, dirs: &[String]) -> Vec<String> {
    let hidden = prefix.starts_with('.');
    dirs.iter()
        .filter(|name| name.starts_with(prefix) && (hidden || !name.starts_with('.')))
        .take(MAX_COMPLETIONS)
        .map(|name| format!("{parent}{name}/"))
        .collect()
}

/// The datalist's options, `(value, label)`: the recent folders that begin with
/// what is typed (all of them while nothing is), then the completions, each
/// folder once.
pub fn suggestions(typed: &str, recent: &[String], completions: Vec<String>) -> Vec<(String, &'static str)> {
    let mut options: Vec<(String, &'static str)> = recent
        .iter()
        .filter(|folder| folder.starts_with(typed) && folder.as_str() != typed)
        .map(|folder| (folder.clone(), "recent"))
        .collect();
    for completion in completions {
        let already = options.iter().any(|(value, _)| value.trim_end_matches('/') == completion.trim_end_matches('/'));
        if !already {
            options.push((completion, ""));
        }
    }
    options
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(names: &[&str]) -> Vec<String> {
        names.iter().map(|name| name.to_string()).collect()
    }

    #[test]
    fn typed_paths_split_at_their_last_slash() {
        assert_eq!(split_typed("/home/me/pro"), Some(("/home/me/", "pro")));
        assert_eq!(split_typed("/home/me/"), Some(("/home/me/", "")));
        assert_eq!(split_typed("/"), Some(("/", "")));
        assert_eq!(split_typed("~/co"), Some(("~/", "co")));
        assert_eq!(split_typed("~"), Some(("~/", "")), "the home's folders");
        assert_eq!(split_typed("relative/pa"), None);
        assert_eq!(split_typed(""), None);
    }

    #[test]
    fn the_home_is_what_the_hub_put_for_the_tilde() {
        assert_eq!(home_of("~/", "/home/me/").as_deref(), Some("/home/me"));
        assert_eq!(home_of("~/code/", "/home/me/code/").as_deref(), Some("/home/me"));
        assert_eq!(home_of("/srv/", "/srv/"), None);
        assert_eq!(home_of("~/code/", "/elsewhere/"), None);
        let owner = Owner::new();
        owner.set();
        let combo = Combo::new(RwSignal::new(String::new()));
        assert_eq!(combo.expand_home("~/code"), "~/code", "not known yet: left for the hub to refuse");
        combo.state.update(|state| state.home = Some("/home/me".into()));
        assert_eq!(combo.expand_home("~/code"), "/home/me/code");
        assert_eq!(combo.expand_home("~"), "/home/me");
        assert_eq!(combo.expand_home("~other/x"), "~other/x");
        assert_eq!(combo.expand_home("/srv/~/x"), "/srv/~/x");
    }

    #[test]
    fn completions_match_the_prefix_and_hide_dot_folders_unless_asked() {
        let dirs = strings(&[".git", ".github", "app", "apps", "server"]);
        assert_eq!(completions("/p/", "ap", &dirs), ["/p/app/", "/p/apps/"]);
        assert_eq!(completions("/p/", "", &dirs), ["/p/app/", "/p/apps/", "/p/server/"]);
        assert_eq!(completions("~/", ".g", &dirs), ["~/.git/", "~/.github/"]);
        assert!(completions("/p/", "x", &dirs).is_empty());
        let many: Vec<String> = (0..80).map(|n| format!("d{n}")).collect();
        assert_eq!(completions("/", "d", &many).len(), MAX_COMPLETIONS);
    }

    #[test]
    fn recent_folders_come_first_and_each_folder_once() {
        let recent = strings(&["/p/apps", "/q/other", "/p/server"]);
        let found = strings(&["/p/app/", "/p/apps/"]);
        let options = suggestions("/p/ap", &recent, found);
        assert_eq!(options, [("/p/apps".to_string(), "recent"), ("/p/app/".to_string(), "")]);
        let all = suggestions("", &recent, Vec::new());
        assert_eq!(
            all.iter().map(|(value, _)| value.as_str()).collect::<Vec<_>>(),
            ["/p/apps", "/q/other", "/p/server"]
        );
        assert!(
            suggestions("/p/apps", &recent, Vec::new()).is_empty(),
            "the folder typed in full is not offered again"
        );
    }
}
