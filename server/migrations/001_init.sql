-- Sessions, their event logs, and what the built-in agent needs to resume.
CREATE TABLE sessions (
    id            TEXT PRIMARY KEY,
    folder        TEXT NOT NULL,
    status        TEXT NOT NULL,
    -- The user's runtime YOLO toggle; NULL: the settings file's default holds.
    yolo_override INTEGER,
    pending_count INTEGER NOT NULL DEFAULT 0,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL
);

CREATE TABLE events (
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    -- One stream event as JSON, without its seq.
    body       TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;

-- The built-in agent's conversation, paused turn (pending approvals) and
-- session-wide allowances, as JSON.
CREATE TABLE agent_state (
    session_id TEXT PRIMARY KEY,
    state      TEXT NOT NULL
);
