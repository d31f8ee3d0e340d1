//! Syntax highlighting of code blocks and diffs. The highlighter is
//! highlight.js with a few grammars (`app/js/highlight.js`), bundled by the
//! build into `/pkg/highlighter.js`: a script the page fetches only once a code
//! block or a diff with a language known here is on screen, so it is no part
//! of the first load. Until it is in, and for any other language, the code
//! shows as plain text.
//!
//! Highlighting is applied to what is already on the page: the HTML the
//! highlighter returns (its text escaped, its tokens in `<span class="hljs-…">`)
//! replaces the text it was made from, never anything else.

/// The grammars in `app/js/highlight.js`, each with the words a code fence may
/// name it by and the file extensions it is for (lower case).
const LANGUAGES: &[(&str, &[&str])] = &[
    ("bash", &["bash", "sh", "zsh", "ksh", "shell", "bashrc", "zshrc", "bash_profile"]),
    ("c", &["c", "h"]),
    ("cpp", &["cpp", "c++", "cc", "cxx", "hpp", "hh", "hxx", "h++"]),
    ("csharp", &["csharp", "cs", "c#"]),
    ("css", &["css"]),
    ("diff", &["diff", "patch"]),
    ("dockerfile", &["dockerfile", "docker", "containerfile"]),
    ("go", &["go", "golang"]),
    ("ini", &["toml", "ini", "cfg"]),
    ("java", &["java"]),
    ("javascript", &["javascript", "js", "jsx", "mjs", "cjs", "node"]),
    ("json", &["json", "jsonc", "json5"]),
    ("kotlin", &["kotlin", "kt", "kts"]),
    ("makefile", &["makefile", "make", "mk", "mak"]),
    ("markdown", &["markdown", "md", "mdx"]),
    ("php", &["php"]),
    ("python", &["python", "py", "pyi", "pyw", "python3", "py3"]),
    ("ruby", &["ruby", "rb", "gemspec", "rake"]),
    ("rust", &["rust", "rs"]),
    // A terminal session: `$ ` prompts and the output after them.
    ("shell", &["console", "shellsession", "sh-session"]),
    ("sql", &["sql"]),
    ("swift", &["swift"]),
    ("typescript", &["typescript", "ts", "tsx", "mts", "cts"]),
    ("xml", &["xml", "html", "htm", "xhtml", "svg", "xsd", "xsl", "xslt", "plist"]),
    ("yaml", &["yaml", "yml"]),
];

/// Files known by their whole name (lower case) rather than an extension.
const FILE_NAMES: &[(&str, &str)] = &[
    ("dockerfile", "dockerfile"),
    ("containerfile", "dockerfile"),
    ("makefile", "makefile"),
    ("gnumakefile", "makefile"),
    ("gemfile", "ruby"),
    ("rakefile", "ruby"),
    (".bashrc", "bash"),
    (".bash_profile", "bash"),
    (".profile", "bash"),
    (".zshrc", "bash"),
];

/// The grammar `word` names, with `word` as listed here.
fn by_name(word: &str) -> Option<(&'static str, &'static str)> {
    let word = word.to_ascii_lowercase();
    LANGUAGES
        .iter()
        .find_map(|(language, names)| names.iter().find(|name| **name == word).map(|name| (*name, *language)))
}

/// The grammar for a code fence's info string (` ```rust `, ` ```rs,ignore `,
/// ` ```python title="x" `): its first word. `None` for plain text and
/// anything not known here.
pub fn language_of_fence(info: &str) -> Option<&'static str> {
    fence_language(info).map(|(_, language)| language)
}

/// The first word of a fence's info string, as listed here (so it is safe to
/// show as it is), when it names a grammar; with that grammar.
pub fn fence_language(info: &str) -> Option<(&'static str, &'static str)> {
    let word = info.split(|c: char| c.is_whitespace() || c == ',' || c == '{' || c == '}').find(|w| !w.is_empty())?;
    by_name(word)
}

/// The grammar for a file, by its name (`Dockerfile`) or its extension
/// (`src/main.rs`); `None` for anything not known here.
pub fn language_of_path(path: &str) -> Option<&'static str> {
    let name = path.rsplit(['/', '\\']).next().unwrap_or(path).to_ascii_lowercase();
    if let Some((_, language)) = FILE_NAMES.iter().find(|(file, _)| *file == name) {
        return Some(language);
    }
    let (stem, extension) = name.rsplit_once('.')?;
    if stem.is_empty() {
        return None;
    }
    by_name(extension).map(|(_, language)| language)
}

/// On a code block's box (see `markdown`): the grammar its fence names.
pub const GRAMMAR_ATTRIBUTE: &str = "data-grammar";

/// Both sides of a diff highlighted, one line of HTML per line of the file
/// (line `n` at index `n - 1`).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct DiffLines {
    pub old: Vec<String>,
    pub new: Vec<String>,
}

/// Highlights the code blocks of the markdown `html` shown in `node`, once it
/// is on screen (and only then loads the highlighter, if a block names a
/// language known here).
pub fn code_blocks_when_seen(node: leptos::prelude::NodeRef<leptos::html::Div>, html: &str) {
    #[cfg(feature = "hydrate")]
    // As markdown writes it: the model's own `"` would be escaped.
    if html.contains(&format!(" {GRAMMAR_ATTRIBUTE}=\"")) {
        browser::code_blocks_when_seen(node);
    }
    #[cfg(not(feature = "hydrate"))]
    let _ = (node, html);
}

/// Highlights both sides of a diff of a file in `language` into `lines`,
/// once the element of `node` is on screen (loading the highlighter then).
pub fn diff_when_seen(
    node: leptos::prelude::NodeRef<leptos::html::Figure>,
    language: &'static str,
    old: String,
    new: String,
    lines: leptos::prelude::RwSignal<Option<std::sync::Arc<DiffLines>>>,
) {
    #[cfg(feature = "hydrate")]
    browser::when_seen(node, move |_| {
        leptos::task::spawn_local(async move {
            if !browser::load().await {
                return;
            }
            if let (Some(old), Some(new)) =
                (browser::highlight_lines(&old, language), browser::highlight_lines(&new, language))
            {
                use leptos::prelude::Set;
                lines.try_set(Some(std::sync::Arc::new(DiffLines { old, new })));
            }
        });
    });
    #[cfg(not(feature = "hydrate"))]
    let _ = (node, language, old, new, lines);
}

#[cfg(feature = "hydrate")]
mod browser {
    use std::cell::RefCell;

    use leptos::prelude::*;
    use wasm_bindgen::closure::Closure;
    use wasm_bindgen::{JsCast, JsValue};
    use wasm_bindgen_futures::JsFuture;
    use web_sys::{Element, IntersectionObserver, IntersectionObserverEntry};

    /// Where the build puts the highlighter (`bundle_highlighter` in scripts/lib.sh).
    const SCRIPT: &str = "/pkg/highlighter.js";
    /// The global the script defines.
    const GLOBAL: &str = "hubHighlight";

    thread_local! {
        /// The script's load, once started: every use waits for the same one.
        static LOADING: RefCell<Option<js_sys::Promise>> = const { RefCell::new(None) };
    }

    /// Loads the highlighter, once; false when it could not be (the next use tries again).
    pub async fn load() -> bool {
        let promise = LOADING.with(|loading| loading.borrow_mut().get_or_insert_with(add_script).clone());
        if JsFuture::from(promise.clone()).await.is_ok() {
            return true;
        }
        // This load failed: its element goes, and a later use tries anew (unless
        // one started meanwhile, which is left to finish).
        LOADING.with(|loading| {
            let mut loading = loading.borrow_mut();
            if loading.as_ref().is_some_and(|current| js_sys::Object::is(current, &promise)) {
                loading.take();
                if let Ok(Some(script)) = document().query_selector(&format!("script[src='{SCRIPT}']")) {
                    script.remove();
                }
            }
        });
        false
    }

    /// A promise of the script's `load` (or `error`) event.
    fn add_script() -> js_sys::Promise {
        js_sys::Promise::new(&mut |resolve, reject| {
            let document = document();
            let added = document.create_element("script").and_then(|script| {
                script.set_attribute("src", SCRIPT)?;
                script.add_event_listener_with_callback("load", &resolve)?;
                script.add_event_listener_with_callback("error", &reject)?;
                let head = document.head().ok_or_else(|| JsValue::from_str("no head"))?;
                head.append_child(&script).map(drop)
            });
            if let Err(error) = added {
                let _ = reject.call1(&JsValue::NULL, &error);
            }
        })
    }

    /// `code` highlighted as `language`, one line of HTML per line of `code`
    /// (each line's spans closed at its end). `None` until the highlighter is
    /// loaded, for a language it does not have, or for a text too long.
    pub fn highlight_lines(code: &str, language: &str) -> Option<Vec<String>> {
        let (api, highlight) = function("highlight")?;
        let html = highlight.call2(&api, &JsValue::from_str(code), &JsValue::from_str(language)).ok()?.as_string()?;
        Some(html.split('\n').map(str::to_string).collect())
    }

    /// The highlighter and its function `name`, once it is loaded.
    fn function(name: &str) -> Option<(JsValue, js_sys::Function)> {
        let api = js_sys::Reflect::get(&window(), &JsValue::from_str(GLOBAL)).ok()?;
        let function = js_sys::Reflect::get(&api, &JsValue::from_str(name)).ok()?.dyn_into().ok()?;
        Some((api, function))
    }

    /// Highlights the code blocks of the markdown in `node` once it is on
    /// screen, loading the highlighter then. The highlighter does the work
    /// (`highlightBlocks` in app/js/highlight.js): each block whose box names
    /// a grammar (`data-grammar`, written by `markdown`) has its text replaced
    /// by the same text in tokens.
    pub fn code_blocks_when_seen(node: NodeRef<leptos::html::Div>) {
        when_seen(node, |root| {
            leptos::task::spawn_local(async move {
                if !load().await {
                    return;
                }
                if let Some((api, highlight_blocks)) = function("highlightBlocks") {
                    let _ = highlight_blocks.call1(&api, &root);
                }
            });
        });
    }

    /// Calls `then` with the element of `node` the first time it is on screen
    /// (a closed `<details>` or a part scrolled out of view is not), unless
    /// the owner is cleaned up before.
    pub fn when_seen<E>(node: NodeRef<E>, then: impl FnOnce(Element) + 'static)
    where
        E: leptos::html::ElementType,
        E::Output: JsCast + Clone + 'static,
    {
        node.on_load(move |element| {
            let element: Element = element.unchecked_into();
            let watch = StoredValue::new_local(FirstSight::new(&element.clone(), move || then(element)));
            on_cleanup(move || drop(watch.try_update_value(Option::take)));
        });
    }

    /// An IntersectionObserver that calls back once; dropping it stops it.
    struct FirstSight {
        observer: IntersectionObserver,
        _callback: Closure<dyn FnMut(js_sys::Array, IntersectionObserver)>,
    }

    impl FirstSight {
        fn new(element: &Element, then: impl FnOnce() + 'static) -> Option<Self> {
            let mut then = Some(then);
            let callback = Closure::<dyn FnMut(js_sys::Array, IntersectionObserver)>::new(
                move |entries: js_sys::Array, observer: IntersectionObserver| {
                    let seen = entries
                        .iter()
                        .any(|entry| entry.unchecked_into::<IntersectionObserverEntry>().is_intersecting());
                    if seen {
                        observer.disconnect();
                        if let Some(then) = then.take() {
                            then();
                        }
                    }
                },
            );
            let observer = IntersectionObserver::new(callback.as_ref().unchecked_ref()).ok()?;
            observer.observe(element);
            Some(FirstSight { observer, _callback: callback })
        }
    }

    impl Drop for FirstSight {
        fn drop(&mut self) {
            self.observer.disconnect();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fences_name_a_grammar_by_its_name_or_an_alias() {
        assert_eq!(language_of_fence("rust"), Some("rust"));
        assert_eq!(language_of_fence("rs,ignore"), Some("rust"));
        assert_eq!(language_of_fence("Python title=\"x.py\""), Some("python"));
        assert_eq!(language_of_fence("{toml}"), Some("ini"));
        assert_eq!(language_of_fence("sh"), Some("bash"));
        assert_eq!(language_of_fence("shell"), Some("bash"), "a script more often than a session");
        assert_eq!(language_of_fence("console"), Some("shell"));
        assert_eq!(language_of_fence("html"), Some("xml"));
        assert_eq!(language_of_fence("c++"), Some("cpp"));
        for plain in ["", "text", "plaintext", "brainfuck", "   "] {
            assert_eq!(language_of_fence(plain), None, "{plain:?} stays plain");
        }
    }

    #[test]
    fn files_get_a_grammar_by_extension_or_name() {
        let cases = [
            ("src/main.rs", Some("rust")),
            ("/abs/dir/tool.PY", Some("python")),
            ("web/app.test.mjs", Some("javascript")),
            ("ui/view.tsx", Some("typescript")),
            ("Cargo.toml", Some("ini")),
            (".github/workflows/ci.yml", Some("yaml")),
            ("include/x.hpp", Some("cpp")),
            ("docs/README.md", Some("markdown")),
            ("deploy/Dockerfile", Some("dockerfile")),
            ("Makefile", Some("makefile")),
            ("home/.bashrc", Some("bash")),
            ("C:\\work\\lib.go", Some("go")),
            ("notes.txt", None),
            ("LICENSE", None),
            ("archive.tar.gz", None),
            (".gitignore", None),
            ("dir.rs/", None),
        ];
        for (path, language) in cases {
            assert_eq!(language_of_path(path), language, "{path}");
        }
    }

    /// The names here and the grammars the bundle registers are one list:
    /// a name without its grammar would stay plain, a grammar no name reaches
    /// would be weight for nothing.
    #[test]
    fn every_language_named_here_is_a_grammar_of_the_bundle_and_back() {
        let source = include_str!("../js/highlight.js");
        let list = source.split("const grammars = {").nth(1).and_then(|rest| rest.split('}').next()).unwrap();
        let mut bundled: Vec<&str> = list.split(',').map(str::trim).collect();
        bundled.sort_unstable();
        let mut named: Vec<&str> = LANGUAGES.iter().map(|(language, _)| *language).collect();
        named.sort_unstable();
        assert_eq!(named, bundled);
        for (_, language) in FILE_NAMES {
            assert!(named.contains(language), "{language}");
        }
        for language in &bundled {
            assert!(source.contains(&format!("import {language} from 'highlight.js/lib/languages/{language}';")));
        }
    }

    #[test]
    fn no_alias_names_two_grammars() {
        let mut seen = std::collections::HashSet::new();
        for (_, names) in LANGUAGES {
            for name in *names {
                assert!(seen.insert(*name), "{name} twice");
                assert_eq!(name.to_ascii_lowercase(), *name);
            }
        }
    }
}
