-- Rules saved in the hub ("Always in this folder") and the audit trail of decisions.

-- A rule saved from a card: it applies in `folder` (canonical path) to calls of
-- `tool_name`, and for a shell command only to those starting with `command_prefix`.
CREATE TABLE saved_rules (
    id             INTEGER PRIMARY KEY,
    folder         TEXT NOT NULL,
    tool_name      TEXT NOT NULL,
    command_prefix TEXT,
    decision       TEXT NOT NULL DEFAULT 'allow',
    created_at_ms  INTEGER,
    -- The call whose card saved it.
    session_id     TEXT,
    tool_id        TEXT
);
CREATE INDEX saved_rules_by_folder ON saved_rules (folder);

-- Every decision on a call: when (ms since the epoch), where, what, and who decided.
CREATE TABLE audit_decisions (
    id         INTEGER PRIMARY KEY,
    at_ms      INTEGER NOT NULL,
    folder     TEXT NOT NULL,
    session_id TEXT NOT NULL,
    tool_id    TEXT NOT NULL,
    tool_name  TEXT NOT NULL,
    summary    TEXT NOT NULL,
    decision   TEXT NOT NULL,
    decided_by TEXT NOT NULL,
    -- The source of the rule that decided, when one did.
    rule       TEXT
);
CREATE INDEX audit_decisions_by_folder ON audit_decisions (folder, at_ms);
CREATE INDEX audit_decisions_by_call ON audit_decisions (session_id, tool_id);

-- How a call ended. `decision_id`: the last decision recorded for the same
-- (session_id, tool_id) before this row, set when it is written; so a call
-- decided twice (after a restart) has each outcome under one decision only,
-- whatever the clock did.
CREATE TABLE audit_outcomes (
    id          INTEGER PRIMARY KEY,
    at_ms       INTEGER NOT NULL,
    session_id  TEXT NOT NULL,
    tool_id     TEXT NOT NULL,
    outcome     TEXT NOT NULL,
    decision_id INTEGER
);
CREATE INDEX audit_outcomes_by_call ON audit_outcomes (session_id, tool_id);
CREATE INDEX audit_outcomes_by_decision ON audit_outcomes (decision_id);

-- Append-only, held by the database itself: nothing edits or deletes a row.
CREATE TRIGGER audit_decisions_no_update BEFORE UPDATE ON audit_decisions
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
CREATE TRIGGER audit_decisions_no_delete BEFORE DELETE ON audit_decisions
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
CREATE TRIGGER audit_outcomes_no_update BEFORE UPDATE ON audit_outcomes
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
CREATE TRIGGER audit_outcomes_no_delete BEFORE DELETE ON audit_outcomes
BEGIN SELECT RAISE(ABORT, 'audit rows are append-only'); END;
