-- The drain's two status writes, cheaper (issue #35: a 100,000-message
-- campaign delivered in ≤ 5 s). Measured on a copy of the schema with
-- 100,000 queued campaign messages (sqlite3, batches of 500; see
-- docs/performance.md, "SQLite's drain: counts by the statement"), the
-- per-row triggers were most of each write: a batch's sent write 10 µs a
-- message, 5.5 without its triggers; a batch of delivered reports 9 µs,
-- 2.2 without.
--
-- 1. campaign_counts by the statement. messages_campaign_update ran an
--    UPDATE of the campaign's one counts row for each message a batch
--    moved (500 a batch, the same row). Tx.MarkSentMany and
--    Tx.TransitionMany now count what they move themselves, once per
--    campaign and status, and while they run the trigger skips: they set
--    writer_counts.active to 1 in their transaction and back to 0 before
--    it goes on. The flag is a row, not connection state, so any process
--    that opens the file runs the same trigger; SQLite's one writer means
--    no other transaction ever sees it set (a rollback undoes it).
-- 2. A delivered report writes only last_delivered_at. 00021's activity
--    trigger sets outbound_count, last_outbound_at and last_delivered_at
--    on every status change, and SQLite rewrites the entries of every
--    index that reads a column an UPDATE sets, changed or not: each
--    report rewrote the contact's entries in users_brand_activity and
--    users_brand_unanswered. sent → delivered with date_sent unchanged
--    moves neither outbound_count nor last_outbound_at (the sent write
--    set it to at least this date_sent), so it gets a trigger of its own.
-- 3. The simulator's ledger is keyed by message id, the key its accept
--    (ON CONFLICT) and its reports' mark look it up by, and its pending
--    index holds only unreported records: an accept writes the row and one
--    index entry instead of three (the provider id's and the message id's
--    unique indexes went), and a mark removes the entry instead of moving
--    it. It is the simulated carrier's state, not Parley's: its cost is
--    the bench's, not a real provider's.
-- 4. users_brand_unanswered (00015) goes: the inbox reads conversations
--    since issue #32 and no query reads the index any more, while every
--    write of a contact's activity maintained it.
--
-- PostgreSQL's counts and activity triggers run once per statement
-- (00026, 00053); it gets items 3 and 4 only (its 00057).

-- +goose Up
CREATE TABLE writer_counts (active INTEGER NOT NULL);
INSERT INTO writer_counts (active) VALUES (0);

DROP TRIGGER messages_campaign_update;
-- +goose StatementBegin
CREATE TRIGGER messages_campaign_update AFTER UPDATE OF status, error_code ON messages
WHEN NEW.campaign_id IS NOT NULL AND (NEW.status <> OLD.status OR NEW.error_code IS NOT OLD.error_code)
	AND NOT (SELECT active FROM writer_counts)
BEGIN
	UPDATE campaign_counts SET
		queued = queued + (NEW.status = 'queued') - (OLD.status = 'queued'),
		sent = sent + (NEW.status = 'sent') - (OLD.status = 'sent'),
		delivered = delivered + (NEW.status = 'delivered') - (OLD.status = 'delivered'),
		undelivered = undelivered + (NEW.status = 'undelivered') - (OLD.status = 'undelivered'),
		failed = failed + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') <> 'canceled' AND coalesce(NEW.error_code, '') <> 'frequency_capped')
			- (OLD.status = 'failed' AND coalesce(OLD.error_code, '') <> 'canceled' AND coalesce(OLD.error_code, '') <> 'frequency_capped'),
		canceled = canceled + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') = 'canceled')
			- (OLD.status = 'failed' AND coalesce(OLD.error_code, '') = 'canceled'),
		capped = capped + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') = 'frequency_capped')
			- (OLD.status = 'failed' AND coalesce(OLD.error_code, '') = 'frequency_capped')
	WHERE campaign_id = NEW.campaign_id;
END;
-- +goose StatementEnd

DROP TRIGGER messages_activity_update;
-- +goose StatementBegin
CREATE TRIGGER messages_activity_update AFTER UPDATE OF status ON messages
WHEN NEW.direction = 'outbound' AND NEW.status <> OLD.status
	AND NOT (OLD.status = 'sent' AND NEW.status = 'delivered' AND NEW.date_sent IS OLD.date_sent)
BEGIN
	UPDATE users SET
		outbound_count = outbound_count
			+ (NEW.status = 'sent' OR NEW.status = 'delivered' OR NEW.status = 'undelivered')
			- (OLD.status = 'sent' OR OLD.status = 'delivered' OR OLD.status = 'undelivered'),
		last_outbound_at = CASE
			WHEN (OLD.status = 'sent' OR OLD.status = 'delivered' OR OLD.status = 'undelivered') AND NOT (NEW.status = 'sent' OR NEW.status = 'delivered' OR NEW.status = 'undelivered')
			THEN (SELECT max(m.date_sent) FROM messages m WHERE m.brand_id = NEW.brand_id AND m.user_id = NEW.user_id
				AND m.direction = 'outbound' AND (m.status = 'sent' OR m.status = 'delivered' OR m.status = 'undelivered'))
			WHEN (NEW.status = 'sent' OR NEW.status = 'delivered' OR NEW.status = 'undelivered') AND NEW.date_sent IS NOT NULL
				AND (last_outbound_at IS NULL OR last_outbound_at < NEW.date_sent)
			THEN NEW.date_sent ELSE last_outbound_at END,
		last_delivered_at = CASE WHEN NEW.status = 'delivered' AND NEW.date_delivered IS NOT NULL
			AND (last_delivered_at IS NULL OR last_delivered_at < NEW.date_delivered)
			THEN NEW.date_delivered ELSE last_delivered_at END
	WHERE id = NEW.user_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER messages_delivered_activity AFTER UPDATE OF status ON messages
WHEN NEW.direction = 'outbound' AND OLD.status = 'sent' AND NEW.status = 'delivered' AND NEW.date_sent IS OLD.date_sent
	AND NEW.date_delivered IS NOT NULL
BEGIN
	UPDATE users SET last_delivered_at = NEW.date_delivered
	WHERE id = NEW.user_id AND (last_delivered_at IS NULL OR last_delivered_at < NEW.date_delivered);
END;
-- +goose StatementEnd

CREATE TABLE sim_ledger (
	message_id    INTEGER PRIMARY KEY,
	provider_id   TEXT    NOT NULL,
	final_status  TEXT    NOT NULL,
	error_code    TEXT,
	error_message TEXT,
	due_at        INTEGER NOT NULL,
	reported      INTEGER NOT NULL DEFAULT 0
);
INSERT INTO sim_ledger (message_id, provider_id, final_status, error_code, error_message, due_at, reported)
	SELECT message_id, provider_id, final_status, error_code, error_message, due_at, reported FROM sim_messages;
DROP TABLE sim_messages;
ALTER TABLE sim_ledger RENAME TO sim_messages;
CREATE INDEX sim_messages_pending ON sim_messages (due_at, message_id) WHERE reported = FALSE;

DROP INDEX users_brand_unanswered;

-- +goose Down
CREATE INDEX users_brand_unanswered ON users (brand_id, last_inbound_at)
	WHERE is_deleted = FALSE AND last_inbound_at > COALESCE(last_outbound_at, 0);

CREATE TABLE sim_ledger (
	provider_id   TEXT    PRIMARY KEY,
	message_id    INTEGER NOT NULL UNIQUE,
	final_status  TEXT    NOT NULL,
	error_code    TEXT,
	error_message TEXT,
	due_at        INTEGER NOT NULL,
	reported      INTEGER NOT NULL DEFAULT 0
);
INSERT INTO sim_ledger (provider_id, message_id, final_status, error_code, error_message, due_at, reported)
	SELECT provider_id, message_id, final_status, error_code, error_message, due_at, reported FROM sim_messages;
DROP TABLE sim_messages;
ALTER TABLE sim_ledger RENAME TO sim_messages;
CREATE INDEX sim_messages_pending ON sim_messages (reported, due_at, provider_id);

DROP TRIGGER messages_delivered_activity;
DROP TRIGGER messages_activity_update;
-- +goose StatementBegin
CREATE TRIGGER messages_activity_update AFTER UPDATE OF status ON messages
WHEN NEW.direction = 'outbound' AND NEW.status <> OLD.status
BEGIN
	UPDATE users SET
		outbound_count = outbound_count
			+ (NEW.status = 'sent' OR NEW.status = 'delivered' OR NEW.status = 'undelivered')
			- (OLD.status = 'sent' OR OLD.status = 'delivered' OR OLD.status = 'undelivered'),
		last_outbound_at = CASE
			WHEN (OLD.status = 'sent' OR OLD.status = 'delivered' OR OLD.status = 'undelivered') AND NOT (NEW.status = 'sent' OR NEW.status = 'delivered' OR NEW.status = 'undelivered')
			THEN (SELECT max(m.date_sent) FROM messages m WHERE m.brand_id = NEW.brand_id AND m.user_id = NEW.user_id
				AND m.direction = 'outbound' AND (m.status = 'sent' OR m.status = 'delivered' OR m.status = 'undelivered'))
			WHEN (NEW.status = 'sent' OR NEW.status = 'delivered' OR NEW.status = 'undelivered') AND NEW.date_sent IS NOT NULL
				AND (last_outbound_at IS NULL OR last_outbound_at < NEW.date_sent)
			THEN NEW.date_sent ELSE last_outbound_at END,
		last_delivered_at = CASE WHEN NEW.status = 'delivered' AND NEW.date_delivered IS NOT NULL
			AND (last_delivered_at IS NULL OR last_delivered_at < NEW.date_delivered)
			THEN NEW.date_delivered ELSE last_delivered_at END
	WHERE id = NEW.user_id;
END;
-- +goose StatementEnd

DROP TRIGGER messages_campaign_update;
-- +goose StatementBegin
CREATE TRIGGER messages_campaign_update AFTER UPDATE OF status, error_code ON messages
WHEN NEW.campaign_id IS NOT NULL AND (NEW.status <> OLD.status OR NEW.error_code IS NOT OLD.error_code)
BEGIN
	UPDATE campaign_counts SET
		queued = queued + (NEW.status = 'queued') - (OLD.status = 'queued'),
		sent = sent + (NEW.status = 'sent') - (OLD.status = 'sent'),
		delivered = delivered + (NEW.status = 'delivered') - (OLD.status = 'delivered'),
		undelivered = undelivered + (NEW.status = 'undelivered') - (OLD.status = 'undelivered'),
		failed = failed + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') <> 'canceled' AND coalesce(NEW.error_code, '') <> 'frequency_capped')
			- (OLD.status = 'failed' AND coalesce(OLD.error_code, '') <> 'canceled' AND coalesce(OLD.error_code, '') <> 'frequency_capped'),
		canceled = canceled + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') = 'canceled')
			- (OLD.status = 'failed' AND coalesce(OLD.error_code, '') = 'canceled'),
		capped = capped + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') = 'frequency_capped')
			- (OLD.status = 'failed' AND coalesce(OLD.error_code, '') = 'frequency_capped')
	WHERE campaign_id = NEW.campaign_id;
END;
-- +goose StatementEnd

DROP TABLE writer_counts;
