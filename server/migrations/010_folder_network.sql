-- Whether a folder's commands may reach the network (the sandbox gives each
-- command a network namespace of its own unless this is on). Off by default.
ALTER TABLE folder_settings ADD COLUMN network INTEGER NOT NULL DEFAULT 0;
