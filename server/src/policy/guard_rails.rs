//! The hub's built-in guard rails (issue 15): dangerous calls that ask even in YOLO.
//! Written as a Gemini CLI policy file (`guard_rails.toml`) and read by the same
//! loader, so they mean exactly what the same rules would mean in a file.

use std::sync::LazyLock;

use protocol::api::{RuleOrigin, RuleTier};
use toml::{Table, Value};

use super::rule::Rule;
use super::toml_file::parse_policy_file;

const GUARD_RAILS: &str = include_str!("guard_rails.toml");
const SOURCE_PREFIX: &str = "built-in guard rail: ";

static RULES: LazyLock<Vec<Rule>> = LazyLock::new(load);

/// The guard rails: tier Default, origin BuiltIn, ids `builtin-<name>`, sources
/// `built-in guard rail: <name>`, each with a description in `deny_message`.
pub fn guard_rails() -> Vec<Rule> {
    RULES.clone()
}

fn load() -> Vec<Rule> {
    let names = names();
    let (rules, problems) = parse_policy_file(GUARD_RAILS, "guard_rails.toml", RuleTier::Default, "guard");
    // The file is part of the build and tested; a broken rule would only be skipped.
    debug_assert!(problems.is_empty(), "guard rails do not load: {problems:?}");
    rules
        .into_iter()
        .map(|mut rule| {
            let number: usize = rule.id.trim_start_matches("guard-").parse().unwrap_or(0);
            let name = names.get(number.wrapping_sub(1)).cloned().unwrap_or_else(|| format!("rule-{number}"));
            rule.id = format!("builtin-{name}");
            rule.source = format!("{SOURCE_PREFIX}{name}");
            rule.origin = RuleOrigin::BuiltIn;
            rule
        })
        .collect()
}

/// The hub's own `name` field of each `[[rule]]`, in order.
fn names() -> Vec<String> {
    let table: Table = GUARD_RAILS.parse().unwrap_or_default();
    let Some(Value::Array(rules)) = table.get("rule") else { return Vec::new() };
    rules
        .iter()
        .enumerate()
        .map(|(i, rule)| {
            rule.get("name").and_then(Value::as_str).map_or_else(|| format!("rule-{}", i + 1), str::to_string)
        })
        .collect()
}
