-- Per-folder settings kept by the hub. approval_timeout_secs: NULL waits
-- forever; a wait counts from its start or from when the timeout was set,
-- whichever came later.
CREATE TABLE folder_settings (
  folder TEXT PRIMARY KEY NOT NULL,
  approval_timeout_secs INTEGER,
  approval_timeout_set_at_ms INTEGER NOT NULL DEFAULT 0
);
