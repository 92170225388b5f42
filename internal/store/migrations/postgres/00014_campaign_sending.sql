-- Sending campaigns (D16, D17; issue #21). The same as migrations/sqlite/00014_campaign_sending.sql.
--
-- messages_campaign_queue is the campaign sender's work list: only the
-- campaign's queued messages are in it (a message leaves when it is sent
-- or fails), ordered by when they may go (0 = now, else the opening of
-- the sending window they are held for) and id. Claiming a batch reads
-- its first rows; without it each batch would step over every message
-- already sent, quadratic in the audience.
--
-- send_pacing holds, per brand with a send_rate, the next instant a send
-- may start (microseconds): every node reserves its batch by moving it
-- forward in a transaction, so a brand's rate holds across nodes (D16).
--
-- The activity trigger on status changes (00009) becomes a statement
-- trigger here: a campaign moves 500 messages to sent, then to delivered,
-- in one statement each, and the row trigger's PL/pgSQL call, advisory
-- lock and users UPDATE per row were most of the database's work in a
-- 100,000-message campaign (sampled in pg_stat_activity). The statement
-- trigger reads the statement's changed rows (transition tables), adds
-- them up per user and updates each user once, with the same rules:
-- outbound counts only sent, delivered, undelivered, dated by date_sent;
-- last_delivered_at by date_delivered; a message leaving those statuses
-- takes its date with it. PostgreSQL allows no column list (UPDATE OF
-- status) with transition tables, so it fires on every UPDATE of
-- messages and finds nothing to do when no status changed. The lock is
-- the same as the row trigger's, taken only when there is something to
-- write.

-- +goose Up
CREATE INDEX messages_campaign_queue ON messages (campaign_id, COALESCE(scheduled_at, 0), id)
	WHERE status = 'queued' AND campaign_id IS NOT NULL;

CREATE TABLE send_pacing (
	brand_id BIGINT NOT NULL PRIMARY KEY REFERENCES brands (id),
	next_at  BIGINT NOT NULL
);

-- +goose StatementBegin
CREATE FUNCTION messages_activity_statement() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	counted CONSTANT text[] := ARRAY['sent', 'delivered', 'undelivered'];
BEGIN
	IF NOT EXISTS (SELECT 1 FROM new_rows n JOIN old_rows o ON o.id = n.id
		WHERE n.direction = 'outbound' AND n.status IS DISTINCT FROM o.status) THEN
		RETURN NULL;
	END IF;
	PERFORM pg_advisory_xact_lock(1600900916);
	UPDATE users u SET
		outbound_count = u.outbound_count + a.delta,
		last_outbound_at = CASE WHEN a.lost
			THEN (SELECT max(m.date_sent) FROM messages m WHERE m.user_id = a.user_id AND m.brand_id = a.brand_id
				AND m.direction = 'outbound' AND m.status = ANY (counted))
			ELSE GREATEST(u.last_outbound_at, a.sent_at) END,
		last_delivered_at = GREATEST(u.last_delivered_at, a.delivered_at)
	FROM (SELECT n.user_id, n.brand_id,
			sum(CASE WHEN n.status = ANY (counted) AND NOT o.status = ANY (counted) THEN 1
				WHEN o.status = ANY (counted) AND NOT n.status = ANY (counted) THEN -1 ELSE 0 END) AS delta,
			bool_or(o.status = ANY (counted) AND NOT n.status = ANY (counted)) AS lost,
			max(n.date_sent) FILTER (WHERE n.status = ANY (counted)) AS sent_at,
			max(n.date_delivered) FILTER (WHERE n.status = 'delivered') AS delivered_at
		FROM new_rows n JOIN old_rows o ON o.id = n.id
		WHERE n.direction = 'outbound' AND n.status IS DISTINCT FROM o.status
		GROUP BY n.user_id, n.brand_id) a
	WHERE u.id = a.user_id;
	RETURN NULL;
END
$$;
-- +goose StatementEnd
DROP TRIGGER messages_activity_update ON messages;
CREATE TRIGGER messages_activity_update_statement AFTER UPDATE ON messages
	REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION messages_activity_statement();

-- +goose Down
DROP TRIGGER messages_activity_update_statement ON messages;
DROP FUNCTION messages_activity_statement();
CREATE TRIGGER messages_activity_update AFTER UPDATE OF status ON messages FOR EACH ROW
	WHEN (NEW.direction = 'outbound' AND NEW.status IS DISTINCT FROM OLD.status)
	EXECUTE FUNCTION messages_activity();
DROP TABLE send_pacing;
DROP INDEX messages_campaign_queue;
