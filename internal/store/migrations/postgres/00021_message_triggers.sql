-- A campaign's messages counted by status (D16's stats), kept by the
-- triggers below as messages are written and change, so that GET
-- /campaigns/{id} (polled while a campaign drains) and a page of GET
-- /campaigns read one row per campaign: counting the messages took about
-- 60 ms of CPU per request at 100,000 of them, and grew with every one.
-- canceled is failed with error_code 'canceled' (D16), not counted in
-- failed. The same as migrations/sqlite/00021_message_triggers.sql, but
-- once per statement (transition tables): a batch of 500 status changes
-- updates its campaign's row once, not 500 times.
--
-- Locks: the rows of campaign_counts are updated in campaign id order.
-- A statement that also moves contacts' activity has taken 00009's
-- activity lock already (its row triggers fire before this statement
-- trigger), so no transaction holds a campaign's counts while it waits
-- for that lock; the ones that take counts without it (a resolution's
-- INSERTs of queued messages, a cancel's queued → failed) wait for
-- nothing after.

-- +goose Up
CREATE TABLE campaign_counts (
	campaign_id BIGINT PRIMARY KEY REFERENCES campaigns (id),
	queued      BIGINT NOT NULL DEFAULT 0,
	sent        BIGINT NOT NULL DEFAULT 0,
	delivered   BIGINT NOT NULL DEFAULT 0,
	undelivered BIGINT NOT NULL DEFAULT 0,
	failed      BIGINT NOT NULL DEFAULT 0,
	canceled    BIGINT NOT NULL DEFAULT 0
);

INSERT INTO campaign_counts (campaign_id, queued, sent, delivered, undelivered, failed, canceled)
SELECT c.id,
	count(m.id) FILTER (WHERE m.status = 'queued'),
	count(m.id) FILTER (WHERE m.status = 'sent'),
	count(m.id) FILTER (WHERE m.status = 'delivered'),
	count(m.id) FILTER (WHERE m.status = 'undelivered'),
	count(m.id) FILTER (WHERE m.status = 'failed' AND m.error_code IS DISTINCT FROM 'canceled'),
	count(m.id) FILTER (WHERE m.status = 'failed' AND m.error_code = 'canceled')
FROM campaigns c LEFT JOIN messages m ON m.campaign_id = c.id
GROUP BY c.id;

-- +goose StatementBegin
CREATE FUNCTION messages_campaign_counts() RETURNS trigger LANGUAGE plpgsql AS $$
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

CREATE TRIGGER messages_campaign_insert AFTER INSERT ON messages
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION messages_campaign_counts();
CREATE TRIGGER messages_campaign_update AFTER UPDATE ON messages
	REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION messages_campaign_counts();
CREATE TRIGGER messages_campaign_delete AFTER DELETE ON messages
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION messages_campaign_counts();

-- +goose Down
DROP TRIGGER messages_campaign_delete ON messages;
DROP TRIGGER messages_campaign_update ON messages;
DROP TRIGGER messages_campaign_insert ON messages;
DROP FUNCTION messages_campaign_counts();
DROP TABLE campaign_counts;
