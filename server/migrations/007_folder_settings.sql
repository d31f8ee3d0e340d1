-- Per-folder settings kept by the hub. approval_timeout_secs: NULL waits forever.
CREATE TABLE folder_settings (
  folder TEXT PRIMARY KEY NOT NULL,
  approval_timeout_secs INTEGER
);
