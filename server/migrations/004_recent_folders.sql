-- The folders opened last (canonical paths), for the folder browser: one row a
-- folder, its last opening in ms since the epoch, and `seq`, which orders the
-- openings as they came (two in the same millisecond too). The writer keeps the newest few.
CREATE TABLE recent_folders (
    folder        TEXT PRIMARY KEY,
    opened_at_ms  INTEGER NOT NULL,
    seq           INTEGER NOT NULL
);
CREATE INDEX recent_folders_by_seq ON recent_folders (seq);
