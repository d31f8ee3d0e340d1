//! A session whose stored agent state this hub cannot read (written by
//! another version, or damaged). It used to be started afresh, silently, and
//! its state written over at the next save. Now it is said: the session shows
//! an error, takes no turn, and its stored state is kept as it was for a
//! version that reads it (or for whoever looks into the database).

use protocol::events::{AgentEvent, ResultStatus, Severity};

use super::log::EventLog;

/// The code of the `error` event and of the 409 a turn gets.
pub const STATE_UNREADABLE: &str = "state_unreadable";

/// The stored state, or why it cannot be read.
pub(super) fn decode<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text)
        .map_err(|err| format!("The agent's saved state of this session could not be read ({err})."))
}

/// After a restart: the session is in error, and its log says why (once per start).
pub(super) fn report(log: &EventLog, why: &str) {
    log.push(AgentEvent::Error {
        severity: Severity::Error,
        message: format!(
            "{why} It is kept as it was, not reset: this session takes no new prompt. Start a new session to go on."
        ),
        code: Some(STATE_UNREADABLE.into()),
    });
    log.push(AgentEvent::Result { status: ResultStatus::Error, pending: None });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_that_does_not_read_says_why() {
        assert!(decode::<super::super::AgentState>(
            r#"{"messages":[],"paused":null,"allowed_tools":[],"completions":0}"#
        )
        .is_ok());
        let why = decode::<super::super::AgentState>(r#"{"allowed_tools": [], "messages": 5}"#).unwrap_err();
        assert!(why.starts_with("The agent's saved state of this session could not be read (invalid type"), "{why}");
        let why = decode::<super::super::AgentState>(r#"{"messages": []}"#).unwrap_err();
        assert!(why.contains("missing field `allowed_tools`"), "{why}");
    }
}
