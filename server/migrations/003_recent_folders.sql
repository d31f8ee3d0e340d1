-- The folders opened last (canonical paths), for the folder browser: one row a
-- folder, its last opening in ms since the epoch. The writer keeps the newest few.
CREATE TABLE recent_folders (
    folder        TEXT PRIMARY KEY,
    opened_at_ms  INTEGER NOT NULL
);
CREATE INDEX recent_folders_by_time ON recent_folders (opened_at_ms);
