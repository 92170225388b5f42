-- Fewer index entries for the drain (issue #35), items 3 and 4 of
-- migrations/sqlite/00057_drain_writes.sql (its items 1 and 2 are done here
-- by 00026's and 00053's statement triggers):
-- - the simulator's ledger is keyed by message id (the key its accept and
--   its reports' mark look it up by; the provider id's key went) and its
--   pending index holds only unreported records;
-- - users_brand_unanswered (00015) goes: the inbox reads conversations
--   since issue #32 and no query reads the index, while each contact's
--   sent write, never a HOT update (users_brand_activity reads
--   last_outbound_at), wrote an entry in it, one of users' eleven.

-- +goose Up
DROP INDEX sim_messages_pending;
ALTER TABLE sim_messages DROP CONSTRAINT sim_messages_pkey;
ALTER TABLE sim_messages DROP CONSTRAINT sim_messages_message_id_key;
ALTER TABLE sim_messages ADD PRIMARY KEY (message_id);
CREATE INDEX sim_messages_pending ON sim_messages (due_at, message_id) WHERE reported = FALSE;

DROP INDEX users_brand_unanswered;

-- +goose Down
CREATE INDEX users_brand_unanswered ON users (brand_id, last_inbound_at)
	WHERE is_deleted = FALSE AND last_inbound_at > COALESCE(last_outbound_at, 0);

DROP INDEX sim_messages_pending;
ALTER TABLE sim_messages DROP CONSTRAINT sim_messages_pkey;
ALTER TABLE sim_messages ADD PRIMARY KEY (provider_id);
ALTER TABLE sim_messages ADD CONSTRAINT sim_messages_message_id_key UNIQUE (message_id);
CREATE INDEX sim_messages_pending ON sim_messages (reported, due_at, provider_id);
