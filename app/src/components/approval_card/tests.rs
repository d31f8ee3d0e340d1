use super::*;
use protocol::events::{AgentChoice, ChoiceKind};

/// The built-in agent's card.
fn key(key: &str, shift: bool, selected: usize, kind: CardKind) -> Option<CardAction> {
    card_key(key, shift, selected, kind, &card_choices(kind, None))
}

#[test]
fn number_keys_decide() {
    assert_eq!(key("1", false, 2, CardKind::Call), Some(CardAction::Decide(ApprovalDecision::Approve)));
    assert_eq!(key("2", false, 0, CardKind::Call), Some(CardAction::Decide(ApprovalDecision::Reject)));
    assert_eq!(key("3", false, 0, CardKind::Call), Some(CardAction::Decide(ApprovalDecision::ApproveSession)));
    assert_eq!(key("4", false, 0, CardKind::Call), Some(CardAction::Select(BUTTONS.len())));
    assert_eq!(key("5", false, 0, CardKind::Call), Some(CardAction::OpenAlways), "shows the rule first");
    assert_eq!(key("t", false, 0, CardKind::Call), Some(CardAction::Decide(ApprovalDecision::ApproveTurn)));
    assert_eq!(key("n", false, 0, CardKind::Call), Some(CardAction::Decide(ApprovalDecision::ApproveNetwork)));
    assert_eq!(key("n", false, 0, EDIT), None, "an edit takes no network");
    assert_eq!(key("6", false, 0, CardKind::Call), None);
    assert_eq!(key("a", false, 0, CardKind::Call), None);
    assert_eq!(key("c", false, 0, CardKind::Call), Some(CardAction::CopyCommand));
    assert_eq!(key("c", false, 0, EDIT), None, "an edit has no command");
}

#[test]
fn tab_and_arrows_cycle_through_buttons_and_input() {
    assert_eq!(key("ArrowRight", false, 0, CardKind::Call), Some(CardAction::Select(1)));
    assert_eq!(key("Tab", false, 2, CardKind::Call), Some(CardAction::Select(3)), "to Yes, for this turn");
    assert_eq!(key("Tab", false, 4, CardKind::Call), Some(CardAction::Select(5)), "to Yes, with network");
    assert_eq!(key("Tab", false, 5, CardKind::Call), Some(CardAction::Select(BUTTONS.len())));
    assert_eq!(key("ArrowRight", false, BUTTONS.len(), CardKind::Call), Some(CardAction::Select(0)));
    assert_eq!(key("ArrowLeft", false, 0, CardKind::Call), Some(CardAction::Select(BUTTONS.len())));
    assert_eq!(key("Tab", true, 1, CardKind::Call), Some(CardAction::Select(0)));
}

#[test]
fn enter_acts_on_the_selected_button() {
    assert_eq!(key("Enter", false, 1, CardKind::Call), Some(CardAction::Decide(ApprovalDecision::Reject)));
    assert_eq!(key("Enter", false, 2, CardKind::Call), Some(CardAction::Decide(ApprovalDecision::ApproveSession)));
    assert_eq!(key("Enter", false, 3, CardKind::Call), Some(CardAction::Decide(ApprovalDecision::ApproveTurn)));
    assert_eq!(key("Enter", false, 4, CardKind::Call), Some(CardAction::OpenAlways));
    assert_eq!(key("Enter", false, BUTTONS.len(), CardKind::Call), Some(CardAction::Select(BUTTONS.len())));
}

#[test]
fn always_in_this_folder_sends_the_prefix_or_covers_the_tool() {
    let command = always_request("t", Some("  git status ")).unwrap();
    assert_eq!((command.decision.as_str(), command.command_prefix.as_deref()), ("approve_always", Some("git status")));
    let file = always_request("t", None).unwrap();
    assert_eq!((file.decision.as_str(), file.command_prefix), ("approve_always", None));
    assert_eq!(always_request("t", Some(" ")), None, "a blank prefix would allow every command");
    let json = serde_json::to_value(&command).unwrap();
    assert_eq!(json, serde_json::json!({"toolId": "t", "decision": "approve_always", "commandPrefix": "git status"}));
}

#[test]
fn blank_instructions_send_nothing() {
    assert_eq!(request("t", ApprovalDecision::Edit, "  \n"), None);
    let edit = request("t", ApprovalDecision::Edit, " only .log files ").unwrap();
    assert_eq!(edit.edit_instruction.as_deref(), Some("only .log files"));
    let approve = request("t", ApprovalDecision::Approve, "").unwrap();
    assert_eq!((approve.decision.as_str(), approve.edit_instruction), ("approve", None));
}

const EDIT: CardKind = CardKind::Edit { editor: true };

#[test]
fn an_edit_card_without_the_editor_has_no_edit_button_or_key() {
    let kind = CardKind::Edit { editor: false };
    assert_eq!(card_choices(kind, None).len(), 5);
    assert_eq!(key("e", false, 0, kind), None);
    assert_eq!(key("a", false, 0, kind), Some(CardAction::Decide(ApprovalDecision::ApproveSession)));
    assert_eq!(key("t", false, 0, kind), Some(CardAction::Decide(ApprovalDecision::ApproveTurn)));
    assert_eq!(key("5", false, 0, kind), Some(CardAction::OpenAlways));
    assert_eq!(key("Tab", false, 4, kind), Some(CardAction::Select(5)), "past Always to the instruction");
}

#[test]
fn edit_cards_take_the_review_keys_too() {
    assert_eq!(key("Enter", false, 0, EDIT), Some(CardAction::Decide(ApprovalDecision::Approve)));
    assert_eq!(key("a", false, 0, EDIT), Some(CardAction::Decide(ApprovalDecision::ApproveSession)));
    assert_eq!(key("d", false, 0, EDIT), Some(CardAction::Decide(ApprovalDecision::Reject)));
    assert_eq!(key("e", false, 0, EDIT), Some(CardAction::OpenEditor));
    assert_eq!(key("Enter", false, 4, EDIT), Some(CardAction::OpenAlways), "Always in this folder");
    assert_eq!(key("Enter", false, 5, EDIT), Some(CardAction::OpenEditor), "the Edit button");
    assert_eq!(key("1", false, 0, EDIT), Some(CardAction::Decide(ApprovalDecision::Approve)), "numbers still work");
    assert_eq!(key("4", false, 0, EDIT), Some(CardAction::Select(EDIT_BUTTONS.len())));
    assert_eq!(key("5", false, 0, EDIT), Some(CardAction::OpenAlways));
    assert_eq!(key("Tab", false, 5, EDIT), Some(CardAction::Select(6)), "past Edit to the instruction");
    for letter in ["a", "d", "e"] {
        assert_eq!(key(letter, false, 0, CardKind::Call), None, "{letter} is only an edit card's key");
    }
}

#[test]
fn the_editor_sends_the_users_text_or_approves_an_unchanged_proposal() {
    let same = content_request("t", "fn a() {}\n", "fn a() {}\n");
    assert_eq!((same.decision.as_str(), same.modified_content), ("approve", None));
    let changed = content_request("t", "fn a() {}\n", "fn b() {}\n");
    assert_eq!((changed.decision.as_str(), changed.modified_content.as_deref()), ("edit", Some("fn b() {}\n")));
    assert_eq!(changed.edit_instruction, None);
    let emptied = content_request("t", "x", "");
    assert_eq!(emptied.modified_content.as_deref(), Some(""), "an emptied file is the user's choice");
}

fn option(id: &str, name: &str, kind: ChoiceKind) -> AgentChoice {
    AgentChoice { id: id.into(), name: name.into(), kind }
}

/// What Claude Code offers for a command.
fn claude() -> Vec<AgentChoice> {
    vec![
        option("allow_always", "Always Allow", ChoiceKind::AllowAlways),
        option("allow", "Allow", ChoiceKind::AllowOnce),
        option("reject", "Reject", ChoiceKind::RejectOnce),
    ]
}

fn labels(buttons: &[CardButton]) -> Vec<&str> {
    buttons.iter().map(|button| button.label.as_str()).collect()
}

#[test]
fn the_built_in_agents_card_keeps_the_hubs_buttons() {
    let call = card_choices(CardKind::Call, None);
    assert_eq!(
        labels(&call.hub),
        ["Yes", "No", "Yes, for this session", "Yes, for this turn", "Always in this folder", "Yes, with network"]
    );
    assert!(call.agent.is_empty() && !call.from_agent);
    assert!(call.hub.iter().all(|button| button.description.is_none()));
    let testids: Vec<String> = call.hub.iter().map(CardButton::testid).collect();
    assert_eq!(
        testids,
        [
            "card-approve",
            "card-reject",
            "card-approve_session",
            "card-approve_turn",
            "card-approve_always",
            "card-approve_network"
        ]
    );
    let edit = card_choices(EDIT, None);
    assert_eq!(
        labels(&edit.hub),
        ["Apply", "Reject", "Always for this session", "Yes, for this turn", "Always in this folder", "Edit"]
    );
    assert_eq!(
        card_hint(CardKind::Call, &call),
        "1/2/3 Quick Select • t For this turn • n With network • 4 Edit • Tab/←→ Navigate • 5 Always in this folder"
    );
    assert_eq!(
        card_hint(EDIT, &edit),
        "Enter Apply • a Always • t For this turn • d Reject • e Edit • 4 Instruct • Tab/←→ Navigate • 5 Always in \
         this folder"
    );
    let no_editor = CardKind::Edit { editor: false };
    assert_eq!(
        card_hint(no_editor, &card_choices(no_editor, None)),
        "Enter Apply • a Always • t For this turn • d Reject • 4 Instruct • Tab/←→ Navigate • 5 Always in this folder"
    );
}

#[test]
fn an_agents_options_label_approve_and_reject_and_its_persistent_ones_stand_apart() {
    let options = claude();
    let choices = card_choices(CardKind::Call, Some(&options));
    assert_eq!(
        labels(&choices.hub),
        ["Allow", "Reject", "Yes, for this session", "Yes, for this turn", "Always in this folder"]
    );
    assert_eq!(choices.hub[0].action, ButtonAction::Decide(ApprovalDecision::Approve));
    assert_eq!(choices.hub[0].description.as_deref(), Some("Yes — runs this call once (key 1)"));
    assert_eq!(choices.hub[1].action, ButtonAction::Decide(ApprovalDecision::Reject));
    assert_eq!(labels(&choices.agent), ["Always Allow"]);
    assert_eq!(choices.agent[0].action, ButtonAction::AgentOption("allow_always".into()));
    assert_eq!(choices.agent[0].testid(), "card-agent-option");
    assert!(agent_remembers(&options, &choices));
    // Keys name decisions; the agent's own choice has none, Tab and Enter reach it.
    assert_eq!(card_key("1", false, 0, CardKind::Call, &choices), Some(CardAction::Decide(ApprovalDecision::Approve)));
    assert_eq!(card_key("5", false, 0, CardKind::Call, &choices), Some(CardAction::OpenAlways));
    assert_eq!(card_key("6", false, 0, CardKind::Call, &choices), None);
    assert_eq!(card_key("Tab", false, 4, CardKind::Call, &choices), Some(CardAction::Select(5)));
    assert_eq!(
        card_key("Enter", false, 5, CardKind::Call, &choices),
        Some(CardAction::AgentOption("allow_always".into()))
    );
    assert_eq!(card_key("4", false, 0, CardKind::Call, &choices), Some(CardAction::Select(6)), "the instruction");
    assert_eq!(card_key("Tab", false, 6, CardKind::Call, &choices), Some(CardAction::Select(0)));
}

#[test]
fn codex_words_and_a_second_allow_once_are_the_agents_own() {
    let options = vec![
        option("approved", "Yes, proceed", ChoiceKind::AllowOnce),
        option("approved-for-session", "Yes, and don't ask again for this command", ChoiceKind::AllowAlways),
        option("approved-host", "Yes, and allow this host for this session", ChoiceKind::AllowOnce),
        option("abort", "No, and tell Codex what to do differently", ChoiceKind::RejectOnce),
    ];
    let choices = card_choices(CardKind::Call, Some(&options));
    assert_eq!(labels(&choices.hub)[..2], ["Yes, proceed", "No, and tell Codex what to do differently"]);
    assert_eq!(
        labels(&choices.agent),
        ["Yes, and don't ask again for this command", "Yes, and allow this host for this session"]
    );
    assert_eq!(
        choices.agent[1].description.as_deref(),
        Some("The agent's own choice, answered as it is"),
        "a 'once' the agent adds is not said to be remembered"
    );
}

#[test]
fn without_an_allow_once_the_card_has_no_approve_buttons() {
    let options = vec![
        option("always", "Always Allow", ChoiceKind::AllowAlways),
        option("never", "Never", ChoiceKind::RejectAlways),
    ];
    let choices = card_choices(CardKind::Call, Some(&options));
    assert_eq!(labels(&choices.hub), ["No"], "the hub can always turn it down");
    assert_eq!(labels(&choices.agent), ["Always Allow", "Never"]);
    for key in ["1", "3", "5", "t"] {
        assert_eq!(card_key(key, false, 0, CardKind::Call, &choices), None, "{key} approves nothing");
    }
    assert_eq!(card_key("2", false, 0, CardKind::Call, &choices), Some(CardAction::Decide(ApprovalDecision::Reject)));
    assert_eq!(card_hint(CardKind::Call, &choices), "2 No • 4 Edit • Tab/←→ Navigate");
    let edit = card_choices(EDIT, Some(&options));
    assert_eq!(labels(&edit.hub), ["Reject"], "no editor either");
    assert_eq!(card_key("a", false, 0, EDIT, &edit), None);
    assert_eq!(card_key("e", false, 0, EDIT, &edit), None);
    assert_eq!(card_hint(EDIT, &edit), "d Reject • 4 Instruct • Tab/←→ Navigate");
}

#[test]
fn an_agents_edit_card_names_its_keys_in_the_agents_words() {
    let options = claude();
    let kind = CardKind::Edit { editor: false };
    let choices = card_choices(kind, Some(&options));
    assert_eq!(
        labels(&choices.hub),
        ["Allow", "Reject", "Yes, for this session", "Yes, for this turn", "Always in this folder"]
    );
    assert_eq!(choices.hub[0].description.as_deref(), Some("Apply — writes this edit once (key 1)"));
    assert_eq!(
        card_hint(kind, &choices),
        "Enter Allow • a For this session • t For this turn • d Reject • 4 Instruct • Tab/←→ Navigate • 5 Always in \
         this folder"
    );
    assert_eq!(card_key("a", false, 0, kind, &choices), Some(CardAction::Decide(ApprovalDecision::ApproveSession)));
    let unnamed = [option("ok", " ", ChoiceKind::AllowOnce), option("x", "", ChoiceKind::AllowAlways)];
    let choices = card_choices(kind, Some(&unnamed));
    assert_eq!(labels(&choices.hub)[..2], ["Apply", "Reject"], "the hub's words where the agent gave none");
    assert_eq!(labels(&choices.agent), ["x"]);
}

#[test]
fn the_agents_option_is_sent_as_it_is() {
    let answer = option_request("t", "allow_always");
    assert_eq!(
        serde_json::to_value(&answer).unwrap(),
        serde_json::json!({"toolId": "t", "decision": "agent_option", "optionId": "allow_always"})
    );
    let plain = serde_json::to_value(request("t", ApprovalDecision::Approve, "").unwrap()).unwrap();
    assert_eq!(plain, serde_json::json!({"toolId": "t", "decision": "approve"}), "no optionId otherwise");
}

#[test]
fn u_runs_outside_the_sandbox_only_where_the_card_offers_it() {
    let plain = card_choices(CardKind::Call, None);
    assert_eq!(card_key("u", false, 0, CardKind::Call, &plain), None, "not offered: u does nothing");
    let refused = card_choices(CardKind::Call, None).with_unsandboxed();
    assert_eq!(
        card_key("u", false, 0, CardKind::Call, &refused),
        Some(CardAction::Decide(ApprovalDecision::ApproveUnsandboxed))
    );
    assert!(card_hint(CardKind::Call, &refused).contains("u Outside the sandbox"));
    assert!(!card_hint(CardKind::Call, &plain).contains("sandbox"));
}
