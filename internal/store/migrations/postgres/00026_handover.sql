-- The hand-over of a message to the provider (issue #31 items 5 and 12,
-- D8, D17). messages.handed_at is when the last statement that handed the
-- message over (consent and frequency cap checked in it) ran: a queued
-- message with handed_at set is in flight, and counts against its
-- recipient's frequency cap as a sent one does. A campaign message that
-- the cap refuses there fails with error_code frequency_capped and is
-- counted in the campaign's skipped_frequency_cap (campaign_counts.capped,
-- added to the count fixed at resolution), not in failed. No message had
-- that error before this migration, so capped starts at 0. The function
-- is 00021's with that column. Same as migrations/sqlite/00026_handover.sql.

-- +goose Up
ALTER TABLE messages ADD COLUMN handed_at BIGINT;
ALTER TABLE campaign_counts ADD COLUMN capped BIGINT NOT NULL DEFAULT 0;

-- The simulator's reporter reads due records in the order of due_at, then
-- provider_id, from where its last read stopped (issue #31 item 13): the
-- index gives that order, so a read sorts nothing however many are due.
DROP INDEX sim_messages_pending;
CREATE INDEX sim_messages_pending ON sim_messages (reported, due_at, provider_id);

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION messages_campaign_counts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	changes refcursor;
	d record;
BEGIN
	-- Most statements touch no campaign's message: one look at the rows
	-- they wrote, no join. Each statement's changes are +1 for what a
	-- message is and -1 for what it was, summed by campaign.
	IF TG_OP = 'INSERT' THEN
		IF NOT EXISTS (SELECT 1 FROM new_rows WHERE campaign_id IS NOT NULL) THEN
			RETURN NULL;
		END IF;
		OPEN changes FOR WITH changed AS (
			SELECT campaign_id, 1 AS sign, status, error_code FROM new_rows WHERE campaign_id IS NOT NULL)
		SELECT campaign_id,
			sum(sign) FILTER (WHERE status = 'queued') AS queued,
			sum(sign) FILTER (WHERE status = 'sent') AS sent,
			sum(sign) FILTER (WHERE status = 'delivered') AS delivered,
			sum(sign) FILTER (WHERE status = 'undelivered') AS undelivered,
			sum(sign) FILTER (WHERE status = 'failed' AND COALESCE(error_code, '') NOT IN ('canceled', 'frequency_capped')) AS failed,
			sum(sign) FILTER (WHERE status = 'failed' AND error_code = 'canceled') AS canceled,
			sum(sign) FILTER (WHERE status = 'failed' AND error_code = 'frequency_capped') AS capped
		FROM changed GROUP BY campaign_id ORDER BY campaign_id;
	ELSIF TG_OP = 'DELETE' THEN
		IF NOT EXISTS (SELECT 1 FROM old_rows WHERE campaign_id IS NOT NULL) THEN
			RETURN NULL;
		END IF;
		OPEN changes FOR WITH changed AS (
			SELECT campaign_id, -1 AS sign, status, error_code FROM old_rows WHERE campaign_id IS NOT NULL)
		SELECT campaign_id,
			sum(sign) FILTER (WHERE status = 'queued') AS queued,
			sum(sign) FILTER (WHERE status = 'sent') AS sent,
			sum(sign) FILTER (WHERE status = 'delivered') AS delivered,
			sum(sign) FILTER (WHERE status = 'undelivered') AS undelivered,
			sum(sign) FILTER (WHERE status = 'failed' AND COALESCE(error_code, '') NOT IN ('canceled', 'frequency_capped')) AS failed,
			sum(sign) FILTER (WHERE status = 'failed' AND error_code = 'canceled') AS canceled,
			sum(sign) FILTER (WHERE status = 'failed' AND error_code = 'frequency_capped') AS capped
		FROM changed GROUP BY campaign_id ORDER BY campaign_id;
	ELSE
		IF NOT EXISTS (SELECT 1 FROM new_rows WHERE campaign_id IS NOT NULL) THEN
			RETURN NULL;
		END IF;
		-- A message's campaign never changes; its status and error code do.
		OPEN changes FOR WITH changed AS (
			SELECT n.campaign_id, s.sign, s.status, s.error_code
			FROM new_rows n JOIN old_rows o ON o.id = n.id
			CROSS JOIN LATERAL (VALUES (-1, o.status, o.error_code), (1, n.status, n.error_code))
				AS s (sign, status, error_code)
			WHERE n.campaign_id IS NOT NULL
				AND (n.status IS DISTINCT FROM o.status OR n.error_code IS DISTINCT FROM o.error_code))
		SELECT campaign_id,
			sum(sign) FILTER (WHERE status = 'queued') AS queued,
			sum(sign) FILTER (WHERE status = 'sent') AS sent,
			sum(sign) FILTER (WHERE status = 'delivered') AS delivered,
			sum(sign) FILTER (WHERE status = 'undelivered') AS undelivered,
			sum(sign) FILTER (WHERE status = 'failed' AND COALESCE(error_code, '') NOT IN ('canceled', 'frequency_capped')) AS failed,
			sum(sign) FILTER (WHERE status = 'failed' AND error_code = 'canceled') AS canceled,
			sum(sign) FILTER (WHERE status = 'failed' AND error_code = 'frequency_capped') AS capped
		FROM changed GROUP BY campaign_id ORDER BY campaign_id;
	END IF;
	LOOP
		FETCH changes INTO d;
		EXIT WHEN NOT FOUND;
		UPDATE campaign_counts SET
			queued = queued + COALESCE(d.queued, 0), sent = sent + COALESCE(d.sent, 0),
			delivered = delivered + COALESCE(d.delivered, 0), undelivered = undelivered + COALESCE(d.undelivered, 0),
			failed = failed + COALESCE(d.failed, 0), canceled = canceled + COALESCE(d.canceled, 0),
			capped = capped + COALESCE(d.capped, 0)
		WHERE campaign_id = d.campaign_id;
	END LOOP;
	CLOSE changes;
	RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP INDEX sim_messages_pending;
CREATE INDEX sim_messages_pending ON sim_messages (reported, due_at);
-- +goose StatementBegin
CREATE OR REPLACE FUNCTION messages_campaign_counts() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	changes refcursor;
	d record;
BEGIN
	-- Most statements touch no campaign's message: one look at the rows
	-- they wrote, no join. Each statement's changes are +1 for what a
	-- message is and -1 for what it was, summed by campaign.
	IF TG_OP = 'INSERT' THEN
		IF NOT EXISTS (SELECT 1 FROM new_rows WHERE campaign_id IS NOT NULL) THEN
			RETURN NULL;
		END IF;
		OPEN changes FOR WITH changed AS (
			SELECT campaign_id, 1 AS sign, status, error_code FROM new_rows WHERE campaign_id IS NOT NULL)
		SELECT campaign_id,
			sum(sign) FILTER (WHERE status = 'queued') AS queued,
			sum(sign) FILTER (WHERE status = 'sent') AS sent,
			sum(sign) FILTER (WHERE status = 'delivered') AS delivered,
			sum(sign) FILTER (WHERE status = 'undelivered') AS undelivered,
			sum(sign) FILTER (WHERE status = 'failed' AND error_code IS DISTINCT FROM 'canceled') AS failed,
			sum(sign) FILTER (WHERE status = 'failed' AND error_code = 'canceled') AS canceled
		FROM changed GROUP BY campaign_id ORDER BY campaign_id;
	ELSIF TG_OP = 'DELETE' THEN
		IF NOT EXISTS (SELECT 1 FROM old_rows WHERE campaign_id IS NOT NULL) THEN
			RETURN NULL;
		END IF;
		OPEN changes FOR WITH changed AS (
			SELECT campaign_id, -1 AS sign, status, error_code FROM old_rows WHERE campaign_id IS NOT NULL)
		SELECT campaign_id,
			sum(sign) FILTER (WHERE status = 'queued') AS queued,
			sum(sign) FILTER (WHERE status = 'sent') AS sent,
			sum(sign) FILTER (WHERE status = 'delivered') AS delivered,
			sum(sign) FILTER (WHERE status = 'undelivered') AS undelivered,
			sum(sign) FILTER (WHERE status = 'failed' AND error_code IS DISTINCT FROM 'canceled') AS failed,
			sum(sign) FILTER (WHERE status = 'failed' AND error_code = 'canceled') AS canceled
		FROM changed GROUP BY campaign_id ORDER BY campaign_id;
	ELSE
		IF NOT EXISTS (SELECT 1 FROM new_rows WHERE campaign_id IS NOT NULL) THEN
			RETURN NULL;
		END IF;
		-- A message's campaign never changes; its status and error code do.
		OPEN changes FOR WITH changed AS (
			SELECT n.campaign_id, s.sign, s.status, s.error_code
			FROM new_rows n JOIN old_rows o ON o.id = n.id
			CROSS JOIN LATERAL (VALUES (-1, o.status, o.error_code), (1, n.status, n.error_code))
				AS s (sign, status, error_code)
			WHERE n.campaign_id IS NOT NULL
				AND (n.status IS DISTINCT FROM o.status OR n.error_code IS DISTINCT FROM o.error_code))
		SELECT campaign_id,
			sum(sign) FILTER (WHERE status = 'queued') AS queued,
			sum(sign) FILTER (WHERE status = 'sent') AS sent,
			sum(sign) FILTER (WHERE status = 'delivered') AS delivered,
			sum(sign) FILTER (WHERE status = 'undelivered') AS undelivered,
			sum(sign) FILTER (WHERE status = 'failed' AND error_code IS DISTINCT FROM 'canceled') AS failed,
			sum(sign) FILTER (WHERE status = 'failed' AND error_code = 'canceled') AS canceled
		FROM changed GROUP BY campaign_id ORDER BY campaign_id;
	END IF;
	LOOP
		FETCH changes INTO d;
		EXIT WHEN NOT FOUND;
		UPDATE campaign_counts SET
			queued = queued + COALESCE(d.queued, 0), sent = sent + COALESCE(d.sent, 0),
			delivered = delivered + COALESCE(d.delivered, 0), undelivered = undelivered + COALESCE(d.undelivered, 0),
			failed = failed + COALESCE(d.failed, 0), canceled = canceled + COALESCE(d.canceled, 0)
		WHERE campaign_id = d.campaign_id;
	END LOOP;
	CLOSE changes;
	RETURN NULL;
END
$$;
-- +goose StatementEnd

-- Capped messages count as failed again, as before.
UPDATE campaign_counts SET failed = failed + capped;
ALTER TABLE campaign_counts DROP COLUMN capped;
ALTER TABLE messages DROP COLUMN handed_at;
