-- Paths the sandbox masks for a folder's commands and agents besides its
-- default list (a JSON array of absolute paths). Empty by default.
ALTER TABLE folder_settings ADD COLUMN masks TEXT NOT NULL DEFAULT '[]';
