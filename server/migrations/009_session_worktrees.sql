-- An isolated session's git worktree (issue 29), as JSON: its directory, its
-- branch, the commit it started from, the folder's place in the repository,
-- the repository's top and the worktree's admin dir. NULL: not isolated.
ALTER TABLE sessions ADD COLUMN worktree TEXT;
