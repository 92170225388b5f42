-- A campaign's messages held for their sending window (D22's stats.held
-- and held_until, issue #32): queued with scheduled_at set.
--
-- held is counted in campaign_counts (00021) by the trigger below, so that
-- reading a campaign stays one row: counting 100,000 held messages when
-- read took 10–25 ms on SQLite and 50 ms on PostgreSQL (a busy machine),
-- and the campaign page asks every second while it waits. A message is
-- held when it is queued with scheduled_at set; it stops being held when
-- it leaves queued (sent, failed, canceled).
--
-- messages_campaign_held orders a campaign's held messages by
-- scheduled_at: held_until is its first entry (one seek), and so is the
-- recipient whose hold the campaign page explains. Same as
-- migrations/postgres/00031_campaign_held.sql.

-- +goose Up
ALTER TABLE campaign_counts ADD COLUMN held INTEGER NOT NULL DEFAULT 0;

UPDATE campaign_counts SET held = (SELECT count(*) FROM messages m
	WHERE m.campaign_id = campaign_counts.campaign_id AND m.status = 'queued' AND m.scheduled_at IS NOT NULL);

CREATE INDEX messages_campaign_held ON messages (campaign_id, scheduled_at)
	WHERE status = 'queued' AND scheduled_at IS NOT NULL AND campaign_id IS NOT NULL;

-- +goose StatementBegin
CREATE TRIGGER messages_campaign_held_insert AFTER INSERT ON messages
WHEN NEW.campaign_id IS NOT NULL AND NEW.status = 'queued' AND NEW.scheduled_at IS NOT NULL
BEGIN
	UPDATE campaign_counts SET held = held + 1 WHERE campaign_id = NEW.campaign_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER messages_campaign_held_update AFTER UPDATE OF status, scheduled_at ON messages
WHEN NEW.campaign_id IS NOT NULL
	AND (NEW.status = 'queued' AND NEW.scheduled_at IS NOT NULL) <> (OLD.status = 'queued' AND OLD.scheduled_at IS NOT NULL)
BEGIN
	UPDATE campaign_counts SET held = held + (NEW.status = 'queued' AND NEW.scheduled_at IS NOT NULL)
		- (OLD.status = 'queued' AND OLD.scheduled_at IS NOT NULL)
	WHERE campaign_id = NEW.campaign_id;
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER messages_campaign_held_delete AFTER DELETE ON messages
WHEN OLD.campaign_id IS NOT NULL AND OLD.status = 'queued' AND OLD.scheduled_at IS NOT NULL
BEGIN
	UPDATE campaign_counts SET held = held - 1 WHERE campaign_id = OLD.campaign_id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER messages_campaign_held_delete;
DROP TRIGGER messages_campaign_held_update;
DROP TRIGGER messages_campaign_held_insert;
DROP INDEX messages_campaign_held;
ALTER TABLE campaign_counts DROP COLUMN held;
