-- The agent a session works with (its id in the hub's agent list). NULL: a
-- session from before there was a choice; it gets the hub's default agent.
ALTER TABLE sessions ADD COLUMN agent TEXT;
