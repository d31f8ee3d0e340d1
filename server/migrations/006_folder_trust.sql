-- Folders the user trusts: their own .gemini files may loosen what the hub
-- does (allow rules, disableYoloMode false). A folder not listed may only tighten.
CREATE TABLE trusted_folders (
  folder TEXT PRIMARY KEY NOT NULL,
  trusted_at_ms INTEGER NOT NULL
);
