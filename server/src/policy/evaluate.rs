//! The rules of one folder, and what they say about a call. Pure: no files, no clock.
//!
//! A non-shell call is decided by its best matching rule, as in Gemini CLI. A shell
//! command is judged part by part (see `shell`): every simple command must be
//! allowed for the command to be allowed, any denied part denies it, any asking
//! part asks, and a part no rule speaks about (or that no rule may allow, see
//! `Part::dynamic`) leaves the call to the caller's own default (YOLO runs it,
//! otherwise it asks). A part with words known only when it runs
//! (`Part::opaque`) asks, in YOLO too: no rule can be checked against it.

use protocol::api::{PolicyDecision, PolicyProblem};
use serde_json::{json, Value};

use super::args::stable_stringify;
use super::render;
use super::rule::{severity, Rule, SHELL_TOOL_NAMES};
use super::shell::{self, Inner, Unparsed};
use super::widening::widening_option;
use super::Mode;

/// `bash -c "bash -c '…'"` is followed this deep; deeper scripts are not allowed by any rule.
const MAX_NESTING: usize = 4;
/// The message of a command that asks because it could not be split.
pub const UNPARSED_MESSAGE: &str = "the command could not be parsed";

/// A call as rules see it: Gemini CLI's tool name and the call's arguments.
#[derive(Debug, Clone, Copy)]
pub struct ToolCall<'a> {
    pub name: &'a str,
    pub args: &'a Value,
}

/// What the rules say about a call.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Verdict {
    /// None: no rule spoke, the caller applies its own default.
    pub decision: Option<PolicyDecision>,
    pub rule_id: Option<String>,
    pub source: Option<String>,
    /// The deny message, or a short reason why it asks.
    pub message: Option<String>,
}

impl Verdict {
    fn by(rule: &Rule, decision: PolicyDecision) -> Verdict {
        Verdict {
            decision: Some(decision),
            rule_id: Some(rule.id.clone()),
            source: Some(rule.source.clone()),
            message: (decision != PolicyDecision::Allow).then(|| rule.deny_message.clone()).flatten(),
        }
    }

    fn asks(reason: String) -> Verdict {
        Verdict { decision: Some(PolicyDecision::AskUser), message: Some(reason), ..Verdict::default() }
    }
}

/// Every rule that applies in one folder, highest first, and the problems found loading them.
#[derive(Debug, Clone, Default)]
pub struct PolicySet {
    rules: Vec<Rule>,
    problems: Vec<PolicyProblem>,
    /// The folder's own allow rules, not applied until the user trusts the folder.
    held_back: Vec<Rule>,
}

impl PolicySet {
    pub fn new(mut rules: Vec<Rule>, problems: Vec<PolicyProblem>) -> Self {
        // Highest effective priority first; at equal priority the stricter decision
        // first (the order; Gemini CLI keeps file order). The sort is stable.
        rules.sort_by(|a, b| b.rank().cmp(&a.rank()).then(severity(b.decision).cmp(&severity(a.decision))));
        PolicySet { rules, problems, held_back: Vec::new() }
    }

    /// With the folder's own allow rules held back (an untrusted folder).
    pub fn holding_back(mut self, rules: Vec<Rule>) -> Self {
        self.held_back = rules;
        self
    }

    /// The folder's own allow rules that would apply once the user trusts it.
    pub fn held_back(&self) -> &[Rule] {
        &self.held_back
    }

    /// Highest effective priority first.
    pub fn rules(&self) -> &[Rule] {
        &self.rules
    }

    pub fn problems(&self) -> &[PolicyProblem] {
        &self.problems
    }

    pub fn evaluate(&self, call: &ToolCall, mode: Mode) -> Verdict {
        let command = call.args.get("command").and_then(Value::as_str).filter(|command| !command.is_empty());
        match command {
            Some(command) if SHELL_TOOL_NAMES.contains(&call.name) => {
                self.judge_shell(call.name, command, call.args, mode, 0).verdict()
            }
            _ => match self.best(call.name, call.args, mode, |_| true) {
                Some(rule) => Verdict::by(rule, rule.decision),
                None => Verdict::default(),
            },
        }
    }

    /// The first (best) active rule that matches, among those `eligible`.
    fn best(&self, tool: &str, args: &Value, mode: Mode, eligible: impl Fn(&Rule) -> bool) -> Option<&Rule> {
        let text = stable_stringify(args);
        self.rules.iter().find(|rule| eligible(rule) && rule.active_in(mode) && rule.matches(tool, Some(&text)))
    }

    fn judge_shell<'r>(&'r self, tool: &str, command: &str, args: &Value, mode: Mode, depth: usize) -> Tally<'r> {
        let mut tally = Tally::default();
        let parts = match shell::split(command) {
            Ok(parts) => parts,
            Err(why) => {
                tally.unparsed(self.best(tool, args, mode, |_| true), command, why);
                // Only a comment to the parser (`\ #;rm x`, `\r#;…`): bash must see nothing either.
                if why == Unparsed::NoCommand && !render::runs_nothing(command) {
                    let shown: String = command.chars().take(80).collect();
                    tally.ask_because(format!("the hub sees no command where bash may see one: `{shown}`"));
                }
                // What tree-sitter did see in it can still be denied.
                if why == Unparsed::HereDocument {
                    for part in shell::split_seen(command).unwrap_or_default() {
                        for text in std::iter::once(&part.text).chain(&part.variants) {
                            let part_args = match args.get("dir_path") {
                                Some(dir) => json!({ "command": text, "dir_path": dir }),
                                None => json!({ "command": text }),
                            };
                            if let Some(rule) = self.best(tool, &part_args, mode, |_| true) {
                                tally.vote(rule);
                            }
                        }
                    }
                }
                return tally;
            }
        };
        // A part is judged by `command` and `dir_path` only: another argument (a
        // `description`) must not lend its text to a rule's regex.
        let part_args = |text: &str| match args.get("dir_path") {
            Some(dir) => json!({ "command": text, "dir_path": dir }),
            None => json!({ "command": text }),
        };
        // The whole line is judged too, for rules about how parts combine
        // (`curl … | sh`): every deny or ask that matches it votes, even under a
        // higher allow of the line (an allow of the line adds nothing). Only such
        // rules: one that also matches a part by itself is that part's business
        // (where a higher allow may override it), and prefix rules are about one
        // simple command.
        let line = stable_stringify(args);
        let in_a_part = |rule: &Rule| {
            parts.iter().any(|part| {
                std::iter::once(&part.text)
                    .chain(&part.variants)
                    .any(|text| rule.matches(tool, Some(&stable_stringify(&part_args(text)))))
            })
        };
        for rule in &self.rules {
            if rule.decision != PolicyDecision::Allow
                && !rule.is_prefix_rule()
                && rule.active_in(mode)
                && rule.matches(tool, Some(&line))
                && !in_a_part(rule)
            {
                tally.vote(rule);
            }
        }
        for part in &parts {
            if part.opaque {
                // What runs is known only when it runs (`$t x`, `git $p`, `git push $f`):
                // no rule can allow it, and a deny or a guard rail could match it. It asks.
                tally.no_rule = true;
                let shown: String = part.text.chars().take(80).collect();
                tally.ask_because(format!(
                    "`{shown}` has words known only when it runs (a variable, $( ), a glob or a brace \
                     expansion): it cannot be checked against the rules"
                ));
            }
            if let Some(why) = &part.unreadable {
                tally.no_rule = true;
                let shown: String = part.text.chars().take(80).collect();
                tally.ask_because(format!("`{shown}`: {why}, so what it runs cannot be checked against the rules"));
            }
            let own = self.best(tool, &part_args(&part.text), mode, |_| true);
            for variant in &part.variants {
                if let Some(rule) = self.best(tool, &part_args(variant), mode, |_| true) {
                    if rule.decision != PolicyDecision::Allow {
                        tally.vote(rule);
                    }
                }
            }
            match own {
                None => tally.no_rule = true,
                Some(rule) if rule.decision != PolicyDecision::Allow => tally.vote(rule),
                // An allow matches the command without its assignments: not enough.
                Some(_) if part.dynamic => tally.no_rule = true,
                // An option that writes files or runs programs is beyond what any allow was written for.
                Some(rule) if widening_option(&part.values).is_some() => match mode {
                    Mode::Yolo => tally.no_rule = true,
                    Mode::Default => tally.ask_because(format!(
                        "`{}` carries {}, which writes files or runs programs: the rule allowing it ({}) does not \
                         cover that",
                        part.text,
                        widening_option(&part.values).unwrap_or_default(),
                        rule.source
                    )),
                },
                Some(rule) if part.redirected && !rule.allow_redirection => match mode {
                    // Gemini CLI does not downgrade for redirection in YOLO: the call
                    // goes to the caller's YOLO default, not to this rule's credit.
                    Mode::Yolo => tally.no_rule = true,
                    Mode::Default => tally.ask_because(format!(
                        "`{}` redirects input or output; the rule allowing it ({}) does not allow redirection",
                        part.text, rule.source
                    )),
                },
                Some(rule) => {
                    tally.first_allow.get_or_insert(rule);
                }
            }
            match &part.inner {
                None => {}
                Some(Inner::Dynamic) => {
                    // What the shell runs is known only when it runs: it asks, in YOLO too.
                    tally.no_rule = true;
                    let shown: String = part.text.chars().take(80).collect();
                    tally.ask_because(format!(
                        "`{shown}` runs a script known only when it runs (a variable, or what it reads on its \
                         input): it cannot be checked against the rules"
                    ));
                }
                Some(Inner::Script(_)) if depth >= MAX_NESTING => tally.no_rule = true,
                Some(Inner::Script(script)) => {
                    let inner = self.judge_shell(tool, script, &part_args(script), mode, depth + 1);
                    tally.merge(inner);
                }
            }
        }
        // What runs without a card is the rendering of this parse (see `render`):
        // where bash would read the text otherwise, or the rendering cannot say
        // it, it asks, in YOLO too (a deny of what was seen still speaks).
        if let Err(why) = render::faithful(command) {
            let shown: String = command.chars().take(80).collect();
            tally.ask_because(format!("the hub cannot be sure bash runs this as judged ({why}): `{shown}`"));
        }
        tally
    }
}

/// The votes of a command's parts.
#[derive(Debug, Default)]
struct Tally<'r> {
    deny: Option<&'r Rule>,
    ask: Option<Ask<'r>>,
    no_rule: bool,
    first_allow: Option<&'r Rule>,
}

#[derive(Debug)]
enum Ask<'r> {
    Rule(&'r Rule),
    Reason(String),
}

impl<'r> Tally<'r> {
    /// A deny or ask vote; among several, the highest-ranked rule speaks.
    fn vote(&mut self, rule: &'r Rule) {
        match rule.decision {
            PolicyDecision::Deny => {
                if self.deny.is_none_or(|held| rule.rank() > held.rank()) {
                    self.deny = Some(rule);
                }
            }
            PolicyDecision::AskUser => match &self.ask {
                Some(Ask::Rule(held)) if held.rank() >= rule.rank() => {}
                _ => self.ask = Some(Ask::Rule(rule)),
            },
            PolicyDecision::Allow => {}
        }
    }

    fn ask_because(&mut self, reason: String) {
        if self.ask.is_none() {
            self.ask = Some(Ask::Reason(reason));
        }
    }

    /// A command that cannot be split (Gemini CLI's fallback, made stricter for
    /// allows): a deny or ask of the whole line still speaks; an allow only asks,
    /// since its parts cannot be checked; no rule leaves it to the caller.
    fn unparsed(&mut self, best: Option<&'r Rule>, command: &str, why: Unparsed) {
        match best {
            // A here-document that runs commands, or a command too long to check,
            // asks even with no rule.
            // Bash may run what tree-sitter could not read: nothing in it could be
            // denied, so it asks too (an empty line or a comment runs nothing).
            None if why == Unparsed::NoCommand => self.no_rule = true,
            Some(rule) if rule.decision != PolicyDecision::Allow => self.vote(rule),
            _ => {
                let detail = match why {
                    Unparsed::Syntax => "",
                    Unparsed::NoCommand => " (no command found)",
                    Unparsed::PromptTransform => " (it expands a prompt string, ${…@P})",
                    Unparsed::TimedOut => " (parsing took too long)",
                    Unparsed::TooLong => " (too long to check, over 16 KiB or 500 commands)",
                    Unparsed::HereDocument => " (a here-document runs commands: `…`, $( ) or ${ })",
                };
                let shown: String = command.chars().take(80).collect();
                self.ask_because(format!("{UNPARSED_MESSAGE}{detail}: `{shown}`"));
            }
        }
    }

    fn merge(&mut self, other: Tally<'r>) {
        if let Some(rule) = other.deny {
            self.vote(rule);
        }
        match other.ask {
            Some(Ask::Rule(rule)) => self.vote(rule),
            Some(Ask::Reason(reason)) => self.ask_because(reason),
            None => {}
        }
        self.no_rule |= other.no_rule;
    }

    fn verdict(self) -> Verdict {
        if let Some(rule) = self.deny {
            return Verdict::by(rule, PolicyDecision::Deny);
        }
        match self.ask {
            Some(Ask::Rule(rule)) => return Verdict::by(rule, PolicyDecision::AskUser),
            Some(Ask::Reason(reason)) => return Verdict::asks(reason),
            None => {}
        }
        match self.first_allow {
            Some(rule) if !self.no_rule => Verdict::by(rule, PolicyDecision::Allow),
            _ => Verdict::default(),
        }
    }
}
