//! Gemini CLI's policy engine, honoured by the hub (issue 15): the same
//! `.gemini/policies/*.toml` files (workspace, user, admin tiers) with the same
//! meaning, plus the hub's built-in guard rails and the rules saved from cards.
//!
//! Reference: Gemini CLI 0.61 (`packages/core/src/policy/`). Where the hub differs
//! on purpose, the place says so: a bad rule costs only itself (not its file); at
//! equal priority the stricter decision wins; a shell command is allowed only when
//! every simple command in it is, and never when one sets variables for what it runs
//! (`FOO=1 cmd`), is a bare assignment, or evaluates variables as arithmetic
//! (`$((a))`, `((a))`), nor when a shell's `-c` script cannot be found; deny and ask
//! rules also judge each command unwrapped and unquoted (`sudo git 'push'`), and every
//! one matching the whole line speaks; a command that cannot be checked (an unquoted
//! here-document that runs commands, over 16 KiB or 500 commands) asks, also in YOLO;
//! a policy file over 1 MiB is a problem, not read.
//!
//! Pure except `files` (which reads the directories); no clock, no locks elsewhere.

mod args;
mod bash_words;
mod evaluate;
mod export;
mod files;
mod guard_rails;
mod hidden_runs;
mod prefix;
pub mod render;
mod rule;
mod runners;
mod shell;
mod toml_file;
pub mod widening;

#[cfg(test)]
mod tests_differential;
#[cfg(test)]
mod tests_eval;
#[cfg(test)]
mod tests_files;
#[cfg(test)]
mod tests_gemini;
#[cfg(test)]
mod tests_guard_rails;
#[cfg(test)]
mod tests_render;
#[cfg(test)]
mod tests_shell;

pub use args::stable_stringify;
pub use evaluate::{PolicySet, ToolCall, Verdict, UNPARSED_MESSAGE};
pub use export::export_toml;
pub use files::{PolicyDirs, PolicyFiles};
pub use guard_rails::guard_rails;
pub use prefix::{default_prefix, too_broad};
pub use rule::{check_saved_prefix, Rule, SavedRuleError, ALWAYS_ALLOW_PRIORITY, SAVED_SOURCE, SHELL_TOOL};
pub use shell::{split as command_parts, Inner as InnerScript, Part as CommandPart};
pub use toml_file::parse_policy_file;

/// The approval mode rules are matched in: a folder's YOLO switch.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Mode {
    /// YOLO off: Gemini CLI's `default` mode.
    Default,
    /// YOLO on: Gemini CLI's `yolo` mode.
    Yolo,
}

impl Mode {
    pub fn from_yolo(yolo: bool) -> Mode {
        if yolo {
            Mode::Yolo
        } else {
            Mode::Default
        }
    }

    /// The name rules list in `modes`.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Default => "default",
            Mode::Yolo => "yolo",
        }
    }
}
