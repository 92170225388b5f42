-- Two indexes for the drain (issue #35), items 3 and 4 of
-- migrations/sqlite/00057_drain_writes.sql (its items 1 and 2 are done here
-- by 00026's and 00053's statement triggers):
-- - the simulator's pending index holds only unreported records: marking
--   one reported removes its entry instead of writing a new one;
-- - users_brand_unanswered (00015) goes: the inbox reads conversations
--   since issue #32 and no query reads the index, while each contact's
--   sent write, never a HOT update (users_brand_activity reads
--   last_outbound_at), wrote an entry in it, one of users' eleven.

-- +goose Up
DROP INDEX sim_messages_pending;
CREATE INDEX sim_messages_pending ON sim_messages (due_at, provider_id) WHERE reported = FALSE;

DROP INDEX users_brand_unanswered;

-- +goose Down
CREATE INDEX users_brand_unanswered ON users (brand_id, last_inbound_at)
	WHERE is_deleted = FALSE AND last_inbound_at > COALESCE(last_outbound_at, 0);

DROP INDEX sim_messages_pending;
CREATE INDEX sim_messages_pending ON sim_messages (reported, due_at, provider_id);
