//! The choices on an Action Required card: the hub's own buttons for the
//! built-in agent; for an ACP agent, built from the options it sent (its
//! "allow once" and "reject once" in its words on the hub's keys, the hub's
//! scopes only where it can allow once, its persistent options apart).

use protocol::api::ApprovalDecision;
use protocol::events::{AgentChoice, ChoiceKind};

/// The card's buttons: label and what they do ("Always in this folder" first
/// shows what it will save).
pub const BUTTONS: [(&str, ButtonAction); 6] = [
    ("Yes", ButtonAction::Decide(ApprovalDecision::Approve)),
    ("No", ButtonAction::Decide(ApprovalDecision::Reject)),
    ("Yes, for this session", ButtonAction::Decide(ApprovalDecision::ApproveSession)),
    (TURN_LABEL, ButtonAction::Decide(ApprovalDecision::ApproveTurn)),
    ("Always in this folder", ButtonAction::OpenAlways),
    // This one command with the network, the folder's being off (key n).
    (NETWORK_LABEL, ButtonAction::Decide(ApprovalDecision::ApproveNetwork)),
];
/// "Yes, with network": this command only reaches the network (the sandbox
/// keeps every command off it unless the folder's Network is on).
pub const NETWORK_LABEL: &str = "Yes, with network";
/// "Yes, outside the sandbox": a command the sandbox refused before runs
/// once without it, when the user says so (never YOLO or a rule).
pub const UNSANDBOXED_LABEL: &str = "Yes, outside the sandbox";
/// An edit card's buttons; the last opens the editor.
pub const EDIT_BUTTONS: [(&str, ButtonAction); 6] = [
    ("Apply", ButtonAction::Decide(ApprovalDecision::Approve)),
    ("Reject", ButtonAction::Decide(ApprovalDecision::Reject)),
    ("Always for this session", ButtonAction::Decide(ApprovalDecision::ApproveSession)),
    (TURN_LABEL, ButtonAction::Decide(ApprovalDecision::ApproveTurn)),
    ("Always in this folder", ButtonAction::OpenAlways),
    ("Edit", ButtonAction::OpenEditor),
];
/// "Yes, for this turn": the same tool's later calls in this turn run without
/// a card (the rules still judge each); the grant ends with the turn.
pub const TURN_LABEL: &str = "Yes, for this turn";
const TURN_DOES: &str =
    "The hub runs this tool without a card until this turn ends; rules still judge each call (key t)";

/// Said under the agent's own persistent choices.
pub const AGENT_REMEMBERS: &str =
    "The agent remembers these itself, outside the hub: the hub cannot show or withdraw them.";
/// Said when a card has nothing to judge the call by.
pub const NO_DETAILS: &str = "The agent sent no details of this call: no command, path or diff.";

/// What the card decides on, which sets its buttons and keys.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CardKind {
    /// A command or another call: Yes / No / Yes, for this session.
    Call,
    /// A file edit shown as a diff; `editor` when the hub can write the user's
    /// own version instead (an ACP agent applies its edits itself).
    Edit { editor: bool },
}

pub fn buttons(kind: CardKind) -> &'static [(&'static str, ButtonAction)] {
    match kind {
        CardKind::Call => &BUTTONS,
        CardKind::Edit { editor: true } => &EDIT_BUTTONS,
        CardKind::Edit { editor: false } => &EDIT_BUTTONS[..5],
    }
}

/// What a card button does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ButtonAction {
    /// A decision the hub answers: approve, reject, approve for the session.
    Decide(ApprovalDecision),
    /// Shows the rule "Always in this folder" would save.
    OpenAlways,
    OpenEditor,
    /// The agent's own option, answered as it is.
    AgentOption(String),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardButton {
    pub label: String,
    pub action: ButtonAction,
    /// What it does in the hub's words, when the label is the agent's: the
    /// button's accessible description and tooltip.
    pub description: Option<String>,
}

impl CardButton {
    fn hub(label: &str, action: ButtonAction) -> Self {
        Self { label: label.to_string(), action, description: None }
    }

    pub fn testid(&self) -> String {
        match &self.action {
            ButtonAction::Decide(decision) => format!("card-{}", decision.as_str()),
            ButtonAction::OpenAlways => format!("card-{}", ApprovalDecision::ApproveAlways.as_str()),
            ButtonAction::OpenEditor => "card-open_editor".to_string(),
            ButtonAction::AgentOption(_) => "card-agent-option".to_string(),
        }
    }
}

/// A card's choices, in the order Tab moves through them: the hub's (what it
/// answers and enforces itself), then the agent's own, shown apart.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CardChoices {
    pub hub: Vec<CardButton>,
    pub agent: Vec<CardButton>,
    /// Built from an ACP agent's options (else the built-in agent's card).
    pub from_agent: bool,
}

impl CardChoices {
    /// How many buttons; the instruction field's place comes after them.
    pub fn len(&self) -> usize {
        self.hub.len() + self.agent.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn get(&self, place: usize) -> Option<&CardButton> {
        self.hub.iter().chain(&self.agent).nth(place)
    }

    pub fn has(&self, action: &ButtonAction) -> bool {
        self.hub.iter().chain(&self.agent).any(|button| &button.action == action)
    }

    /// Without the hub's scopes ("for this session", "for this turn", "Always in this folder"):
    /// for a call the agent said nothing about, a grant or a rule would cover
    /// whatever that tool does next, unseen.
    /// With "Yes, outside the sandbox" (key u): for a command the sandbox
    /// refused before in this session, the built-in agent's only.
    pub fn with_unsandboxed(mut self) -> Self {
        self.hub.push(CardButton {
            label: UNSANDBOXED_LABEL.to_string(),
            action: ButtonAction::Decide(ApprovalDecision::ApproveUnsandboxed),
            description: Some(
                "Its earlier run looked refused by the sandbox (a command can print that too): this runs it once \
                 outside the sandbox, where it reaches all you can (key u)"
                    .to_string(),
            ),
        });
        self
    }

    pub fn without_scopes(mut self) -> Self {
        self.hub.retain(|button| {
            !matches!(
                button.action,
                ButtonAction::Decide(ApprovalDecision::ApproveSession | ApprovalDecision::ApproveTurn)
                    | ButtonAction::OpenAlways
            )
        });
        self
    }

    /// Without the agent's own "always allow": where a rule or the hub made the
    /// call ask, an allow the agent keeps would let its later calls pass every rule unseen.
    pub fn without_agent_always(mut self, options: &[AgentChoice]) -> Self {
        self.agent.retain(|button| {
            !options.iter().any(|option| {
                option.kind == ChoiceKind::AllowAlways && button.action == ButtonAction::AgentOption(option.id.clone())
            })
        });
        self
    }

    pub fn label(&self, action: &ButtonAction) -> Option<&str> {
        self.hub.iter().find(|button| &button.action == action).map(|button| button.label.as_str())
    }
}

/// The card's choices. The built-in agent's are the hub's own. An ACP agent's
/// options set them: Approve is its `allow_once` (in its words), Reject its
/// `reject_once`; "for this session" and "Always in this folder", which the
/// hub enforces itself by answering `allow_once`, only where it offers one.
/// Without an `allow_once`, the hub approves nothing. Its other options
/// (`allow_always`, `reject_always`: it remembers them itself) are the
/// agent's own choices, answered as they are.
pub fn card_choices(kind: CardKind, options: Option<&[AgentChoice]>) -> CardChoices {
    let Some(options) = options else {
        let hub = buttons(kind).iter().map(|(label, action)| CardButton::hub(label, action.clone())).collect();
        return CardChoices { hub, agent: Vec::new(), from_agent: false };
    };
    let edit = kind != CardKind::Call;
    let allow = options.iter().position(|option| option.kind == ChoiceKind::AllowOnce);
    let reject = options.iter().position(|option| option.kind == ChoiceKind::RejectOnce);
    let named = |index: Option<usize>, fallback: &str| {
        index.map(|index| options[index].name.trim()).filter(|name| !name.is_empty()).unwrap_or(fallback).to_string()
    };
    let described = |label: String, action: ButtonAction, description: &str| CardButton {
        label,
        action,
        description: Some(description.to_string()),
    };
    let mut hub = Vec::new();
    if allow.is_some() {
        let (fallback, does) = if edit {
            ("Apply", "Apply — writes this edit once (key 1)")
        } else {
            ("Yes", "Yes — runs this call once (key 1)")
        };
        hub.push(described(named(allow, fallback), ButtonAction::Decide(ApprovalDecision::Approve), does));
    }
    let (fallback, does) = if edit {
        ("Reject", "Reject — the edit is not written (key 2)")
    } else {
        ("No", "No — the call does not run (key 2)")
    };
    hub.push(described(named(reject, fallback), ButtonAction::Decide(ApprovalDecision::Reject), does));
    if allow.is_some() {
        hub.push(described(
            "Yes, for this session".to_string(),
            ButtonAction::Decide(ApprovalDecision::ApproveSession),
            "The hub runs this tool without a card until the session ends; withdraw it under Rules (key 3)",
        ));
        hub.push(described(TURN_LABEL.to_string(), ButtonAction::Decide(ApprovalDecision::ApproveTurn), TURN_DOES));
        hub.push(described(
            "Always in this folder".to_string(),
            ButtonAction::OpenAlways,
            "Saves an allow rule in the hub for this folder, shown to you first (key 5)",
        ));
        if kind == (CardKind::Edit { editor: true }) {
            hub.push(described("Edit".to_string(), ButtonAction::OpenEditor, "Write your own version (key e)"));
        }
    }
    let agent = options
        .iter()
        .enumerate()
        .filter(|&(index, _)| Some(index) != allow && Some(index) != reject)
        .map(|(_, option)| {
            let does = match option.kind {
                ChoiceKind::AllowAlways | ChoiceKind::RejectAlways => {
                    "The agent's own choice: the agent remembers it itself; the hub cannot show or withdraw it"
                }
                ChoiceKind::AllowOnce | ChoiceKind::RejectOnce => "The agent's own choice, answered as it is",
            };
            let label = if option.name.trim().is_empty() { option.id.clone() } else { option.name.trim().to_string() };
            described(label, ButtonAction::AgentOption(option.id.clone()), does)
        })
        .collect();
    CardChoices { hub, agent, from_agent: true }
}

/// Whether one of the agent's own choices is remembered by the agent itself.
pub fn agent_remembers(options: &[AgentChoice], choices: &CardChoices) -> bool {
    choices.agent.iter().any(|button| {
        options.iter().any(|option| {
            button.action == ButtonAction::AgentOption(option.id.clone())
                && matches!(option.kind, ChoiceKind::AllowAlways | ChoiceKind::RejectAlways)
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_without_details_offers_no_scope() {
        let options = [
            AgentChoice { id: "allow".into(), name: "Allow".into(), kind: ChoiceKind::AllowOnce },
            AgentChoice { id: "reject".into(), name: "Reject".into(), kind: ChoiceKind::RejectOnce },
        ];
        let full = card_choices(CardKind::Call, Some(&options));
        assert!(
            full.has(&ButtonAction::Decide(ApprovalDecision::ApproveSession)) && full.has(&ButtonAction::OpenAlways)
        );
        let blind = full.without_scopes();
        let actions: Vec<&ButtonAction> = blind.hub.iter().map(|button| &button.action).collect();
        assert_eq!(
            actions,
            [&ButtonAction::Decide(ApprovalDecision::Approve), &ButtonAction::Decide(ApprovalDecision::Reject)]
        );
    }

    #[test]
    fn where_a_rule_asks_the_agents_own_always_allow_is_not_offered() {
        let options = [
            AgentChoice { id: "always".into(), name: "Always Allow".into(), kind: ChoiceKind::AllowAlways },
            AgentChoice { id: "allow".into(), name: "Allow".into(), kind: ChoiceKind::AllowOnce },
            AgentChoice { id: "never".into(), name: "Never".into(), kind: ChoiceKind::RejectAlways },
            AgentChoice { id: "reject".into(), name: "Reject".into(), kind: ChoiceKind::RejectOnce },
        ];
        let choices = card_choices(CardKind::Call, Some(&options));
        assert_eq!(choices.agent.len(), 2);
        let kept = choices.without_agent_always(&options);
        let agent: Vec<&ButtonAction> = kept.agent.iter().map(|button| &button.action).collect();
        assert_eq!(agent, [&ButtonAction::AgentOption("never".into())], "a rejection the agent keeps is harmless");
    }
}
