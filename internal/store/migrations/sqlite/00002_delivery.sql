-- Delivery pipeline (issue #4): provider bookkeeping on messages, consent
-- history, the brand's keyword replies, and the simulator's carrier state.

-- +goose Up
ALTER TABLE messages ADD COLUMN provider TEXT;
ALTER TABLE messages ADD COLUMN provider_id TEXT;
-- Set before every provider call: a retried job that finds it knows a send
-- may already have happened.
ALTER TABLE messages ADD COLUMN sending_at INTEGER;
ALTER TABLE messages ADD COLUMN attempts INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX messages_provider_id ON messages (provider, provider_id);

-- Append-only: every change of a user's messaging_consent, who made it and how.
CREATE TABLE consent_events (
	id             INTEGER PRIMARY KEY,
	brand_id       INTEGER NOT NULL REFERENCES brands (id),
	user_id        INTEGER NOT NULL REFERENCES users (id),
	previous_value INTEGER,
	new_value      INTEGER,
	source         TEXT    NOT NULL, -- api, keyword, provider
	detail         TEXT    NOT NULL DEFAULT '', -- e.g. the keyword, or the provider's error code
	message_id     INTEGER,
	date_created   INTEGER NOT NULL
);
CREATE INDEX consent_events_user ON consent_events (brand_id, user_id, id);

ALTER TABLE brands ADD COLUMN help_reply TEXT NOT NULL DEFAULT '';
ALTER TABLE brands ADD COLUMN stop_reply TEXT NOT NULL DEFAULT '';
ALTER TABLE brands ADD COLUMN start_reply TEXT NOT NULL DEFAULT '';

-- What the sim provider has accepted, keyed by Parley's message id (its
-- idempotency key), with the final status it will report and when.
CREATE TABLE sim_messages (
	provider_id   TEXT    PRIMARY KEY,
	message_id    INTEGER NOT NULL UNIQUE,
	final_status  TEXT    NOT NULL,
	error_code    TEXT,
	error_message TEXT,
	due_at        INTEGER NOT NULL,
	reported      INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX sim_messages_pending ON sim_messages (reported, due_at);

-- +goose Down
DROP TABLE sim_messages;
DROP TABLE consent_events;
DROP INDEX messages_provider_id;
ALTER TABLE messages DROP COLUMN attempts;
ALTER TABLE messages DROP COLUMN sending_at;
ALTER TABLE messages DROP COLUMN provider_id;
ALTER TABLE messages DROP COLUMN provider;
ALTER TABLE brands DROP COLUMN help_reply;
ALTER TABLE brands DROP COLUMN stop_reply;
ALTER TABLE brands DROP COLUMN start_reply;
