-- The folders opened last (canonical paths), for the folder browser: one row a
-- folder, its last opening in ms since the epoch, and `seq`, which orders the
-- openings as they came (two in the same millisecond too). The writer keeps the newest few.
-- IF NOT EXISTS: development builds of the folder browser created it as migration 003.
CREATE TABLE IF NOT EXISTS recent_folders (
    folder        TEXT PRIMARY KEY,
    opened_at_ms  INTEGER NOT NULL,
    seq           INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS recent_folders_by_seq ON recent_folders (seq);
