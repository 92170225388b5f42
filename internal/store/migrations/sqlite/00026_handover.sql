-- The hand-over of a message to the provider (issue #31 items 5 and 12,
-- D8, D17). messages.handed_at is when the last statement that handed the
-- message over (consent and frequency cap checked in it) ran: a queued
-- message with handed_at set is in flight, and counts against its
-- recipient's frequency cap as a sent one does. A campaign message that
-- the cap refuses there fails with error_code frequency_capped and is
-- counted in the campaign's skipped_frequency_cap (campaign_counts.capped,
-- added to the count fixed at resolution), not in failed. No message had
-- that error before this migration, so capped starts at 0. The triggers
-- compare rather than use IN lists, as 00021's do (a trigger builds an IN
-- list's lookup table again for each row: measured, the drain of a
-- 100,000-message campaign took twice as long with them). Same as
-- migrations/postgres/00026_handover.sql.

-- +goose Up
ALTER TABLE messages ADD COLUMN handed_at INTEGER;
ALTER TABLE campaign_counts ADD COLUMN capped INTEGER NOT NULL DEFAULT 0;

-- The simulator's reporter reads due records in the order of due_at, then
-- provider_id, from where its last read stopped (issue #31 item 13): the
-- index gives that order, so a read sorts nothing however many are due.
DROP INDEX sim_messages_pending;
CREATE INDEX sim_messages_pending ON sim_messages (reported, due_at, provider_id);

DROP TRIGGER messages_campaign_insert;
DROP TRIGGER messages_campaign_update;
DROP TRIGGER messages_campaign_delete;

-- +goose StatementBegin
CREATE TRIGGER messages_campaign_insert AFTER INSERT ON messages
WHEN NEW.campaign_id IS NOT NULL
BEGIN
	UPDATE campaign_counts SET
		queued = queued + (NEW.status = 'queued'),
		sent = sent + (NEW.status = 'sent'),
		delivered = delivered + (NEW.status = 'delivered'),
		undelivered = undelivered + (NEW.status = 'undelivered'),
		failed = failed + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') <> 'canceled' AND coalesce(NEW.error_code, '') <> 'frequency_capped'),
		canceled = canceled + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') = 'canceled'),
		capped = capped + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') = 'frequency_capped')
	WHERE campaign_id = NEW.campaign_id;
END;
-- +goose StatementEnd

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

-- +goose StatementBegin
CREATE TRIGGER messages_campaign_delete AFTER DELETE ON messages
WHEN OLD.campaign_id IS NOT NULL
BEGIN
	UPDATE campaign_counts SET
		queued = queued - (OLD.status = 'queued'),
		sent = sent - (OLD.status = 'sent'),
		delivered = delivered - (OLD.status = 'delivered'),
		undelivered = undelivered - (OLD.status = 'undelivered'),
		failed = failed - (OLD.status = 'failed' AND coalesce(OLD.error_code, '') <> 'canceled' AND coalesce(OLD.error_code, '') <> 'frequency_capped'),
		canceled = canceled - (OLD.status = 'failed' AND coalesce(OLD.error_code, '') = 'canceled'),
		capped = capped - (OLD.status = 'failed' AND coalesce(OLD.error_code, '') = 'frequency_capped')
	WHERE campaign_id = OLD.campaign_id;
END;
-- +goose StatementEnd

-- +goose Down
DROP INDEX sim_messages_pending;
CREATE INDEX sim_messages_pending ON sim_messages (reported, due_at);
DROP TRIGGER messages_campaign_insert;
DROP TRIGGER messages_campaign_update;
DROP TRIGGER messages_campaign_delete;

-- Capped messages count as failed again, as before.
UPDATE campaign_counts SET failed = failed + capped;

-- +goose StatementBegin
CREATE TRIGGER messages_campaign_insert AFTER INSERT ON messages
WHEN NEW.campaign_id IS NOT NULL
BEGIN
	UPDATE campaign_counts SET
		queued = queued + (NEW.status = 'queued'),
		sent = sent + (NEW.status = 'sent'),
		delivered = delivered + (NEW.status = 'delivered'),
		undelivered = undelivered + (NEW.status = 'undelivered'),
		failed = failed + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') <> 'canceled'),
		canceled = canceled + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') = 'canceled')
	WHERE campaign_id = NEW.campaign_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER messages_campaign_update AFTER UPDATE OF status, error_code ON messages
WHEN NEW.campaign_id IS NOT NULL AND (NEW.status <> OLD.status OR NEW.error_code IS NOT OLD.error_code)
BEGIN
	UPDATE campaign_counts SET
		queued = queued + (NEW.status = 'queued') - (OLD.status = 'queued'),
		sent = sent + (NEW.status = 'sent') - (OLD.status = 'sent'),
		delivered = delivered + (NEW.status = 'delivered') - (OLD.status = 'delivered'),
		undelivered = undelivered + (NEW.status = 'undelivered') - (OLD.status = 'undelivered'),
		failed = failed + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') <> 'canceled')
			- (OLD.status = 'failed' AND coalesce(OLD.error_code, '') <> 'canceled'),
		canceled = canceled + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') = 'canceled')
			- (OLD.status = 'failed' AND coalesce(OLD.error_code, '') = 'canceled')
	WHERE campaign_id = NEW.campaign_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER messages_campaign_delete AFTER DELETE ON messages
WHEN OLD.campaign_id IS NOT NULL
BEGIN
	UPDATE campaign_counts SET
		queued = queued - (OLD.status = 'queued'),
		sent = sent - (OLD.status = 'sent'),
		delivered = delivered - (OLD.status = 'delivered'),
		undelivered = undelivered - (OLD.status = 'undelivered'),
		failed = failed - (OLD.status = 'failed' AND coalesce(OLD.error_code, '') <> 'canceled'),
		canceled = canceled - (OLD.status = 'failed' AND coalesce(OLD.error_code, '') = 'canceled')
	WHERE campaign_id = OLD.campaign_id;
END;
-- +goose StatementEnd

ALTER TABLE campaign_counts DROP COLUMN capped;
ALTER TABLE messages DROP COLUMN handed_at;
