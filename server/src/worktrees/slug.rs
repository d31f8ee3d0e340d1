//! A session's worktree name and branch: a slug of its title (ASCII, lower
//! case, bounded) and a suffix of its id, so two sessions never collide.

use super::WorktreeError;

/// The title's part of a slug, at most this many characters.
const SLUG_MAX: usize = 32;

/// `<slug of the title>-<first 8 characters of the id>`; `session-…` without
/// a title or one with no ASCII letter or digit.
pub fn slug_of(title: Option<&str>, id: &str) -> String {
    let mut slug = String::new();
    for c in title.unwrap_or_default().chars() {
        if slug.len() >= SLUG_MAX {
            break;
        }
        if c.is_ascii_alphanumeric() {
            slug.push(c.to_ascii_lowercase());
        } else if !slug.is_empty() && !slug.ends_with('-') {
            slug.push('-');
        }
    }
    let slug = slug.trim_end_matches('-');
    let slug = if slug.is_empty() { "session" } else { slug };
    let suffix: String = id.chars().filter(char::is_ascii_alphanumeric).take(8).collect();
    let suffix = if suffix.is_empty() { "x".to_string() } else { suffix.to_ascii_lowercase() };
    format!("{slug}-{suffix}")
}

/// `agent-hub/<slug>`, checked to be a plain branch name of ASCII letters,
/// digits and single dashes (what [`slug_of`] makes).
pub fn branch_name(slug: &str) -> Result<String, WorktreeError> {
    let plain = !slug.is_empty()
        && slug.len() <= 64
        && slug.bytes().all(|byte| byte.is_ascii_lowercase() || byte.is_ascii_digit() || byte == b'-')
        && !slug.starts_with('-')
        && !slug.ends_with('-')
        && !slug.contains("--");
    if !plain {
        return Err(WorktreeError::Invalid(format!("'{slug}' cannot name a branch")));
    }
    Ok(format!("agent-hub/{slug}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_ascii_bounded_and_end_with_the_ids_start() {
        let (long, long_slug) = ("a".repeat(100), format!("{}-9", "a".repeat(32)));
        let rows = [
            (Some("Fix the login bug"), "0123456789abcdef", "fix-the-login-bug-01234567"),
            (Some("  Ünïcödé & symbols!! "), "abcdef12", "n-c-d-symbols-abcdef12"),
            (Some("日本語"), "ab", "session-ab"),
            (None, "ffffffffffffffff", "session-ffffffff"),
            (Some("../../etc/passwd"), "1234567890", "etc-passwd-12345678"),
            (Some(long.as_str()), "9", long_slug.as_str()),
            (Some("x"), "../..", "x-x"),
            (Some("--lead and trail--"), "Abc", "lead-and-trail-abc"),
        ];
        for (title, id, expected) in rows {
            assert_eq!(slug_of(title, id), expected, "title {title:?}, id {id:?}");
            assert!(branch_name(&slug_of(title, id)).is_ok(), "{expected} makes a branch");
        }
    }

    #[test]
    fn only_plain_slugs_make_branches() {
        assert_eq!(branch_name("fix-1a2b").unwrap(), "agent-hub/fix-1a2b");
        for bad in ["", "-a", "a-", "a--b", "A", "a/b", "a..b", "a b", "a~1", "a^", "a:b", "a.lock", &"a".repeat(65)] {
            assert!(branch_name(bad).is_err(), "{bad:?} is refused");
        }
    }
}
