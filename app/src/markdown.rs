//! Model output rendered as markdown, safely: raw HTML in the text is shown as
//! text (never parsed by the browser), links keep only harmless schemes, and
//! images become links so a transcript never fetches anything by itself.
//! A code block comes in a box with its language and a copy button (see
//! `components::copy_button`); the page highlights it once it is on screen
//! (see `highlight`).

use pulldown_cmark::{html, CodeBlockKind, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

use crate::components::copy_button::{COPY, COPY_CODE};
use crate::highlight::{fence_language, GRAMMAR_ATTRIBUTE};
use crate::parts::{wasm_split, PartMissing};

/// [`to_safe_html`] from the `markdown` part of the wasm (see `parts`): the
/// parser and its entity tables are needed only once an answer is shown.
#[wasm_split(markdown, wasm_split_path = ::leptos::wasm_split, preload(preload_markdown), fallible)]
pub fn safe_html(text: String) -> Result<String, PartMissing> {
    Ok(to_safe_html(&text))
}

/// HTML for `text`, safe to set as `innerHTML`.
pub fn to_safe_html(text: &str) -> String {
    let options = Options::ENABLE_TABLES | Options::ENABLE_STRIKETHROUGH | Options::ENABLE_TASKLISTS;
    let events = Parser::new_ext(text, options).flat_map(|event| match event {
        // Escaped by push_html like any other text.
        Event::Html(raw) | Event::InlineHtml(raw) => one(Event::Text(raw)),
        Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
            one(Event::Start(Tag::Link { link_type, dest_url: safe_url(dest_url), title, id }))
        }
        Event::Start(Tag::Image { dest_url, title, id, .. }) => {
            one(Event::Start(Tag::Link { link_type: LinkType::Inline, dest_url: safe_url(dest_url), title, id }))
        }
        Event::End(TagEnd::Image) => one(Event::End(TagEnd::Link)),
        Event::Start(Tag::CodeBlock(kind)) => {
            let head = code_block_head(&kind);
            // The `<code>`'s class names only a grammar listed here: the fence's own
            // words would split on a tab into classes of the page's stylesheet.
            let known = match &kind {
                CodeBlockKind::Fenced(info) => fence_language(info).map(|(_, grammar)| grammar),
                CodeBlockKind::Indented => None,
            };
            let kind = known.map_or(CodeBlockKind::Indented, |grammar| CodeBlockKind::Fenced(grammar.into()));
            two(Event::Html(head.into()), Event::Start(Tag::CodeBlock(kind)))
        }
        Event::End(TagEnd::CodeBlock) => two(Event::End(TagEnd::CodeBlock), Event::Html("</div>".into())),
        other => one(other),
    });
    let mut out = String::with_capacity(text.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
}

type Events<'a> = std::iter::Chain<std::iter::Once<Event<'a>>, std::option::IntoIter<Event<'a>>>;

fn one(event: Event<'_>) -> Events<'_> {
    std::iter::once(event).chain(None)
}

fn two<'a>(first: Event<'a>, second: Event<'a>) -> Events<'a> {
    std::iter::once(first).chain(Some(second))
}

/// What comes before a code block's `<pre>`: the box around it (naming the
/// grammar its fence names, for the highlighter), and a bar with its language
/// and the copy button, whose status follows it for screen readers. Only names
/// known here go into this HTML, as listed (`highlight`): nothing of the
/// model's text.
fn code_block_head(kind: &CodeBlockKind<'_>) -> String {
    let language = match kind {
        CodeBlockKind::Fenced(info) => fence_language(info),
        CodeBlockKind::Indented => None,
    };
    let (name, grammar) = match language {
        Some((name, grammar)) => (name, format!(" {GRAMMAR_ATTRIBUTE}=\"{grammar}\"")),
        None => ("", String::new()),
    };
    format!(
        "<div class=\"code-block\"{grammar}><div class=\"code-head\"><span class=\"code-language\">{name}</span>\
         <button type=\"button\" class=\"copy-button\" data-copy=\"code\" aria-label=\"{COPY_CODE}\" data-label=\"{COPY_CODE}\">{COPY}</button>\
         <span role=\"status\" class=\"sr-only\"></span></div>"
    )
}

/// Keeps web, mail and in-page links; anything else (javascript:, data:, file:) goes nowhere.
fn safe_url(url: CowStr<'_>) -> CowStr<'_> {
    let lower = url.trim_start().to_ascii_lowercase();
    let has_scheme = lower.split(['/', '?', '#']).next().is_some_and(|head| head.contains(':'));
    let allowed = ["http://", "https://", "mailto:"].iter().any(|scheme| lower.starts_with(scheme));
    if allowed || !has_scheme {
        url
    } else {
        CowStr::Borrowed("#")
    }
}

#[cfg(test)]
mod tests {
    use super::to_safe_html;

    #[test]
    fn markdown_becomes_html() {
        let html = to_safe_html("# Title\n\nSome **bold** and `code`.\n\n```rust\nfn main() {}\n```\n");
        assert!(html.contains("<h1>Title</h1>"), "{html}");
        assert!(html.contains("<strong>bold</strong>") && html.contains("<code>code</code>"), "{html}");
        assert!(html.contains("<pre><code class=\"language-rust\">fn main() {}\n</code></pre>"), "{html}");
    }

    #[test]
    fn html_in_model_output_is_escaped_not_executed() {
        let html = to_safe_html("hi <script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n");
        assert!(!html.contains("<script") && !html.contains("<img"), "{html}");
        assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"), "{html}");
        assert!(html.contains("&lt;img src=x onerror=alert(2)&gt;"), "{html}");
    }

    #[test]
    fn dangerous_links_go_nowhere_and_images_are_not_loaded() {
        let html = to_safe_html(
            "[a](javascript:alert(1)) [b](https://example.org/x) [c](docs/readme.md) ![d](http://t/p.png)",
        );
        assert!(!html.contains("javascript:"), "{html}");
        assert!(html.contains("href=\"#\""), "{html}");
        assert!(html.contains("href=\"https://example.org/x\"") && html.contains("href=\"docs/readme.md\""), "{html}");
        assert!(!html.contains("<img") && html.contains("href=\"http://t/p.png\">d</a>"), "{html}");
        assert!(!to_safe_html("[x]( JAVASCRIPT:alert(1))").to_lowercase().contains("javascript"));
    }

    #[test]
    fn a_code_block_comes_in_a_box_with_its_language_and_a_copy_button() {
        let html = to_safe_html("Run:\n\n```rs,ignore\nfn main() {}\n```\n\n    indented\n");
        let boxes: Vec<&str> = html.split("<div class=\"code-block\"").skip(1).collect();
        assert_eq!(boxes.len(), 2, "{html}");
        assert!(
            boxes[0]
                .starts_with(" data-grammar=\"rust\"><div class=\"code-head\"><span class=\"code-language\">rs</span>"),
            "{html}"
        );
        assert!(
            boxes[0].contains(
                "<button type=\"button\" class=\"copy-button\" data-copy=\"code\" aria-label=\"Copy code\" data-label=\"Copy code\">Copy</button><span role=\"status\" class=\"sr-only\"></span></div>"
            ),
            "{html}"
        );
        assert!(boxes[0].contains("<pre><code class=\"language-rust\">fn main() {}\n</code></pre>\n</div>"), "{html}");
        assert!(
            boxes[1].starts_with("><div class=\"code-head\"><span class=\"code-language\"></span>"),
            "no grammar: {html}"
        );
        assert!(boxes[1].contains("<pre><code>indented\n</code></pre>\n</div>"), "{html}");
    }

    #[test]
    fn a_fences_other_words_never_become_classes() {
        for fence in ["rust\tfixed\tinset-0\tz-50", "rust\u{c}hidden", "nope\tfixed"] {
            let html = to_safe_html(&format!("```{fence}\nx\n```\n"));
            assert!(!html.contains("fixed") && !html.contains("hidden"), "{fence:?}: {html}");
            let code = html.split("<pre>").nth(1).unwrap();
            assert!(
                code.starts_with("<code class=\"language-rust\">") || code.starts_with("<code>"),
                "{fence:?}: {html}"
            );
        }
    }

    #[test]
    fn a_fence_names_no_html_and_the_model_cannot_make_a_copy_button() {
        let html =
            to_safe_html("```<img/src=x/onerror=alert(1)>\nx\n```\n\n<button data-copy=\"code\">Copy</button>\n");
        assert!(!html.contains("<img") && !html.contains("<button data-copy"), "{html}");
        assert!(html.contains("<span class=\"code-language\"></span>"), "an unknown language is not shown: {html}");
        assert!(!html.contains("data-grammar"), "{html}");
        assert_eq!(html.matches("<button").count(), 1, "{html}");
    }
}
