//! The audit trail: every decision on a call and how the call ended, in two
//! append-only tables (triggers in the database refuse UPDATE and DELETE).
//! Rows are written with the writer's next batch, like streamed events; an
//! outcome is filed under the last decision recorded for its call, so a call
//! decided twice (after a restart) never shows one outcome twice.

use protocol::audit::{AuditDecision, AuditEntry, Decider, Outcome};
use rusqlite::types::Value;
use rusqlite::{params, Transaction};

use super::{sql_ms, Command, Store, StoreError, Ticket};

/// The most rows [`Store::audit`] returns, and how many when no limit is given.
pub const AUDIT_LIMIT: usize = 10_000;

/// A decision on a call, as recorded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecisionRecord {
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// The canonical folder.
    pub folder: String,
    pub session_id: String,
    pub tool_id: String,
    pub tool_name: String,
    /// The arguments, readable and short (see [`crate::audit::summarize`]).
    pub summary: String,
    pub decision: AuditDecision,
    pub decided_by: Decider,
    /// The source of the rule that decided, when one did.
    pub rule: Option<String>,
    /// The paired device the user decided from (the remote listener).
    pub device: Option<protocol::audit::DecidingDevice>,
}

/// How a call ended (see [`AuditEntry::outcome`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeRecord {
    pub at_ms: u64,
    pub session_id: String,
    pub tool_id: String,
    pub outcome: Outcome,
}

/// Which decisions [`Store::audit`] returns. `folder` is compared as given:
/// pass the canonical folder.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditFilter {
    pub folder: Option<String>,
    pub session_id: Option<String>,
    /// Only decisions made after this time (ms since the epoch), not at it.
    pub after_ms: Option<u64>,
    /// At most this many, the newest; default and maximum [`AUDIT_LIMIT`].
    pub limit: Option<usize>,
}

impl Store {
    /// Records a decision with the writer's next batch. A failure to write it
    /// is reported by the session's next flush, as for its events.
    pub fn record_decision(&self, record: DecisionRecord) -> Ticket {
        self.send(Command::Decision(record))
    }

    /// Records how a call ended, under the last decision recorded for the
    /// same `(session_id, tool_id)` (none: it is kept, and shows nowhere).
    pub fn record_outcome(&self, record: OutcomeRecord) -> Ticket {
        self.send(Command::Outcome(record))
    }

    /// The decisions that match, oldest first (by time, then as recorded);
    /// when more match than the limit, the newest of them. Each comes with the
    /// first outcome recorded for it. Only what is committed shows: flush first
    /// to see what was just recorded.
    pub fn audit(&self, filter: &AuditFilter) -> Result<Vec<AuditEntry>, StoreError> {
        let mut conditions = Vec::new();
        let mut values: Vec<Value> = Vec::new();
        if let Some(folder) = &filter.folder {
            values.push(Value::Text(folder.clone()));
            conditions.push(format!("folder = ?{}", values.len()));
        }
        if let Some(session) = &filter.session_id {
            values.push(Value::Text(session.clone()));
            conditions.push(format!("session_id = ?{}", values.len()));
        }
        if let Some(after) = filter.after_ms {
            values.push(Value::Integer(sql_ms(after)));
            conditions.push(format!("at_ms > ?{}", values.len()));
        }
        let limit = filter.limit.unwrap_or(AUDIT_LIMIT).min(AUDIT_LIMIT);
        values.push(Value::Integer(limit as i64));
        let limit_param = values.len();
        let condition =
            if conditions.is_empty() { String::new() } else { format!("WHERE {}", conditions.join(" AND ")) };
        // The newest `limit` decisions, then each one's first outcome (the
        // index on decision_id gives its smallest id at once).
        let sql = format!(
            "SELECT d.id, d.at_ms, d.folder, d.session_id, d.tool_id, d.tool_name, d.summary, d.decision,
                    d.decided_by, d.rule, o.outcome, o.at_ms, d.device_id, d.device_name
             FROM (SELECT * FROM audit_decisions {condition} ORDER BY at_ms DESC, id DESC LIMIT ?{limit_param}) AS d
             LEFT JOIN audit_outcomes AS o
               ON o.id = (SELECT min(first.id) FROM audit_outcomes AS first WHERE first.decision_id = d.id)
             ORDER BY d.at_ms, d.id"
        );
        self.read(|db| {
            let mut statement = db.prepare_cached(&sql)?;
            let rows = statement.query_map(rusqlite::params_from_iter(values), |row| {
                Ok(AuditEntry {
                    id: row.get::<_, i64>(0)? as u64,
                    at: ms(row.get(1)?),
                    folder_path: row.get(2)?,
                    session_id: row.get(3)?,
                    tool_id: row.get(4)?,
                    tool_name: row.get(5)?,
                    summary: row.get(6)?,
                    // A word a newer hub wrote is kept as it is (`Other`): the
                    // rows cannot be changed, so one must never hide the rest.
                    decision: AuditDecision::from_word(&row.get::<_, String>(7)?),
                    decided_by: Decider::from_word(&row.get::<_, String>(8)?),
                    rule: row.get(9)?,
                    outcome: row.get::<_, Option<String>>(10)?.map(|word| Outcome::from_word(&word)),
                    outcome_at: row.get::<_, Option<i64>>(11)?.map(ms),
                    device: match (row.get::<_, Option<String>>(12)?, row.get::<_, Option<String>>(13)?) {
                        (Some(id), name) => {
                            Some(protocol::audit::DecidingDevice { id, name: name.unwrap_or_default() })
                        }
                        (None, _) => None,
                    },
                })
            })?;
            rows.collect()
        })
    }
}

/// The user's own approvals of a call, as a habit counts them (issue 27): a
/// plain "Yes", one with the user's edit, "for this session" and "for this
/// turn". Not "Always in this folder" (a rule exists then), nor anything a
/// rule, a grant or YOLO let run: those were not the user's choice.
const HABIT_DECISIONS: [AuditDecision; 4] = [
    AuditDecision::Approved,
    AuditDecision::ApprovedEdited,
    AuditDecision::ApprovedSession,
    AuditDecision::ApprovedTurn,
];

impl Store {
    /// How many times the user approved a call of `tool_name` in `folder` (the
    /// canonical folder, compared as given), and with `prefix` only a command
    /// whose summary is the prefix or starts with it and a space: `cargo test`
    /// counts `cargo test -p x`, never `cargo testing`. Read from the audit
    /// trail itself, so the count cannot drift from what was decided; a summary
    /// cut short or with an escaped line break counts only up to where it still
    /// reads as the command, which can only count fewer. Only what is committed
    /// counts: flush first.
    pub fn user_approvals(&self, folder: &str, tool_name: &str, prefix: Option<&str>) -> Result<u32, StoreError> {
        let [approved, edited, session, turn] = HABIT_DECISIONS.map(|decision| decision.as_str().to_string());
        self.read(|db| {
            db.prepare_cached(
                "SELECT count(*) FROM audit_decisions
                 WHERE folder = ?1 AND tool_name = ?2 AND decided_by = ?3 AND decision IN (?4, ?5, ?6, ?7)
                   AND (?8 IS NULL OR summary = ?8 OR substr(summary, 1, length(?8) + 1) = ?8 || ' ')",
            )?
            .query_row(
                params![folder, tool_name, Decider::User.as_str(), approved, edited, session, turn, prefix],
                |row| row.get::<_, i64>(0),
            )
            .map(|count| u32::try_from(count).unwrap_or(u32::MAX))
        })
    }
}

fn ms(value: i64) -> u64 {
    value.max(0) as u64
}

pub(super) fn insert_decision(tx: &Transaction<'_>, record: &DecisionRecord) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO audit_decisions
           (at_ms, folder, session_id, tool_id, tool_name, summary, decision, decided_by, rule, device_id, device_name)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?
    .execute(params![
        sql_ms(record.at_ms),
        record.folder,
        record.session_id,
        record.tool_id,
        record.tool_name,
        record.summary,
        record.decision.as_str(),
        record.decided_by.as_str(),
        record.rule,
        record.device.as_ref().map(|device| device.id.as_str()),
        record.device.as_ref().map(|device| device.name.as_str()),
    ])?;
    Ok(())
}

/// Files the outcome under the call's last decision: the writer writes in the
/// order things were sent, so that is the decision it answers.
pub(super) fn insert_outcome(tx: &Transaction<'_>, record: &OutcomeRecord) -> rusqlite::Result<()> {
    tx.prepare_cached(
        "INSERT INTO audit_outcomes (at_ms, session_id, tool_id, outcome, decision_id)
         VALUES (?1, ?2, ?3, ?4,
                 (SELECT max(id) FROM audit_decisions WHERE session_id = ?2 AND tool_id = ?3))",
    )?
    .execute(params![sql_ms(record.at_ms), record.session_id, record.tool_id, record.outcome.as_str()])?;
    Ok(())
}
