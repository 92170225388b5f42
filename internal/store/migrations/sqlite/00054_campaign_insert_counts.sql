-- A campaign's queued messages are counted by their writer, once per chunk
-- (issue #34: a 1,000,000-recipient audience written in ≤ 10 s). The
-- per-row trigger messages_campaign_insert ran an UPDATE of campaign_counts
-- for each message a chunk's INSERT … SELECT wrote: measured, a fifth of
-- that statement's CPU (docs/performance.md, "A campaign's audience at
-- 1,000,000 contacts"). It now skips queued messages; the only writer of
-- queued campaign messages, Tx.ResolveCampaignChunk, adds its chunk's
-- count (the rows the INSERT wrote) to campaign_counts.queued in the same
-- transaction. A new writer of queued campaign messages must do the same.
-- Messages written in another status, and every UPDATE and DELETE, are
-- counted by the triggers as before. PostgreSQL's counts trigger runs once
-- per statement and stays (messages_campaign_counts, 00026).

-- +goose Up
DROP TRIGGER messages_campaign_insert;

-- +goose StatementBegin
CREATE TRIGGER messages_campaign_insert AFTER INSERT ON messages
WHEN NEW.campaign_id IS NOT NULL AND NEW.status <> 'queued'
BEGIN
	UPDATE campaign_counts SET
		sent = sent + (NEW.status = 'sent'),
		delivered = delivered + (NEW.status = 'delivered'),
		undelivered = undelivered + (NEW.status = 'undelivered'),
		failed = failed + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') <> 'canceled' AND coalesce(NEW.error_code, '') <> 'frequency_capped'),
		canceled = canceled + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') = 'canceled'),
		capped = capped + (NEW.status = 'failed' AND coalesce(NEW.error_code, '') = 'frequency_capped')
	WHERE campaign_id = NEW.campaign_id;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER messages_campaign_insert;

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
