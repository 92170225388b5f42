-- The simulator's pending index holds only unreported records (issue #35):
-- marking one reported removes its entry instead of writing a new one.
-- Same as item 3 of migrations/sqlite/00057_drain_writes.sql; SQLite's
-- items 1 and 2 are done here by 00026's and 00053's statement triggers.

-- +goose Up
DROP INDEX sim_messages_pending;
CREATE INDEX sim_messages_pending ON sim_messages (due_at, provider_id) WHERE reported = FALSE;

-- +goose Down
DROP INDEX sim_messages_pending;
CREATE INDEX sim_messages_pending ON sim_messages (reported, due_at, provider_id);
