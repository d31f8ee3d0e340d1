-- A session's title: the user's name for it, else its first prompt's first line.
ALTER TABLE sessions ADD COLUMN title TEXT;
