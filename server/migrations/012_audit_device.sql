-- Which paired device decided a call from the remote listener (NULL: the
-- hub's own machine, or no user).
ALTER TABLE audit_decisions ADD COLUMN device_id TEXT;
ALTER TABLE audit_decisions ADD COLUMN device_name TEXT;
