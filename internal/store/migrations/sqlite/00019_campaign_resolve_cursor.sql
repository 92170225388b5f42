-- A campaign's audience is resolved in chunks of users by id, each its own
-- transaction (issue #21, D16): one INSERT … SELECT of 100,000 rows held
-- SQLite's only writer for seconds, and every API write waited for it.
-- resolve_cursor is the last user id whose chunk committed, NULL once the
-- whole segment is resolved (and for every campaign before this column):
-- a resolution a crash interrupted resumes after it, and a campaign
-- completes only once it is NULL. resolve_end is the brand's highest user
-- id when the campaign started: a contact created after send_at is not in
-- the audience, as it was not in the one-statement resolution.
-- campaigns_resolving is the scheduler's scan for resolutions to resume.

-- +goose Up
ALTER TABLE campaigns ADD COLUMN resolve_cursor INTEGER;
ALTER TABLE campaigns ADD COLUMN resolve_end INTEGER;
CREATE INDEX campaigns_resolving ON campaigns (id) WHERE resolve_cursor IS NOT NULL;

-- +goose Down
DROP INDEX campaigns_resolving;
ALTER TABLE campaigns DROP COLUMN resolve_end;
ALTER TABLE campaigns DROP COLUMN resolve_cursor;
