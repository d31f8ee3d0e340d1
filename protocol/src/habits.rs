//! Rules from habits (`GET /api/habits`, issue 27): how often the user has
//! approved calls like the one waiting on a card, in its folder, and whether
//! the card offers the matching "Always in this folder" rule.

use serde::{Deserialize, Serialize};

/// How many of the user's own approvals a habit needs before the card offers its rule.
pub const HABIT_APPROVALS: u32 = 3;

/// `GET /api/habits?sessionId=&toolId=`: the call waiting on the session's card.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HabitQuery {
    pub session_id: String,
    pub tool_id: String,
}

words! {
    /// Why a card does not offer the habit's rule (a habit's `withheld`).
    pub enum Withheld {
        /// Fewer than [`HABIT_APPROVALS`] approvals so far.
        TooFew = "too_few",
        /// The prefix would allow running anything: never offered, however often approved.
        TooBroad = "too_broad",
        /// A rule already lets the call run (saved while the card waited).
        AlreadyAllowed = "already_allowed",
        /// The rule would not let this call run (a rule that asks or denies ranks
        /// higher, or a part of the command it does not cover).
        WouldNotAllow = "would_not_allow",
        /// Not a shell command or a file tool, or a call that says nothing of what it does.
        NotAHabit = "not_a_habit",
    }
}

/// The answer of `GET /api/habits`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Habit {
    pub tool_id: String,
    /// The call's tool under Gemini CLI's names (also an ACP agent's call).
    pub tool_name: String,
    /// For a shell command, the prefix counted and offered (what "Always in this
    /// folder" proposes); none for a file tool, whose rule allows the tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prefix: Option<String>,
    /// The user's own approvals in this folder of earlier calls like it: a
    /// command starting with `prefix` (at a word's end), or the same tool.
    pub approvals: u32,
    /// Whether the card offers the rule.
    pub offered: bool,
    /// Why not, when it is not offered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub withheld: Option<Withheld>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_habit_reads_and_writes_the_contracts_words() {
        let text = r#"{"toolId":"t1","toolName":"run_shell_command","prefix":"cargo test","approvals":3,
            "offered":false,"withheld":"too_broad"}"#;
        let habit: Habit = serde_json::from_str(text).unwrap();
        assert_eq!((habit.prefix.as_deref(), habit.withheld.clone()), (Some("cargo test"), Some(Withheld::TooBroad)));
        let back = serde_json::to_value(&habit).unwrap();
        assert_eq!((back["withheld"].as_str(), back["approvals"].as_u64()), (Some("too_broad"), Some(3)));
        let offered = Habit { prefix: None, offered: true, withheld: None, ..habit };
        let back = serde_json::to_value(&offered).unwrap();
        assert!(back.get("prefix").is_none() && back.get("withheld").is_none(), "{back}");
        for word in Withheld::ALL {
            assert_eq!(Withheld::from_word(word.as_str()), *word);
        }
    }
}
