//! Model output rendered as markdown, safely: raw HTML in the text is shown as
//! text (never parsed by the browser), links keep only harmless schemes, and
//! images become links so a transcript never fetches anything by itself.

use pulldown_cmark::{html, CowStr, Event, LinkType, Options, Parser, Tag, TagEnd};

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
    let events = Parser::new_ext(text, options).map(|event| match event {
        // Escaped by push_html like any other text.
        Event::Html(raw) | Event::InlineHtml(raw) => Event::Text(raw),
        Event::Start(Tag::Link { link_type, dest_url, title, id }) => {
            Event::Start(Tag::Link { link_type, dest_url: safe_url(dest_url), title, id })
        }
        Event::Start(Tag::Image { dest_url, title, id, .. }) => {
            Event::Start(Tag::Link { link_type: LinkType::Inline, dest_url: safe_url(dest_url), title, id })
        }
        Event::End(TagEnd::Image) => Event::End(TagEnd::Link),
        other => other,
    });
    let mut out = String::with_capacity(text.len() * 3 / 2);
    html::push_html(&mut out, events);
    out
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
}
