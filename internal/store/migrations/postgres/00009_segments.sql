-- Segments (D14, issue #16). The same as migrations/sqlite/00009_segments.sql.
--
-- Messaging activity per user, kept on the users row so a segment's query
-- reads one table: counting 1,000,000 contacts cannot afford an aggregate
-- over messages per user, nor a join per row. A trigger keeps the columns
-- in the same transaction as every insert and status change of a message,
-- whatever path writes it. Outbound counts only messages handed to the
-- provider (sent, delivered, undelivered), dated by date_sent;
-- last_delivered_at by date_delivered; inbound by receipt (date_created).
--
-- segment_members holds the frozen members of POINT IN TIME segments.

-- +goose Up
ALTER TABLE users ADD COLUMN inbound_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN outbound_count BIGINT NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN last_inbound_at BIGINT;
ALTER TABLE users ADD COLUMN last_outbound_at BIGINT;
ALTER TABLE users ADD COLUMN last_delivered_at BIGINT;

UPDATE users SET inbound_count = a.inbound_count, outbound_count = a.outbound_count,
	last_inbound_at = a.last_inbound_at, last_outbound_at = a.last_outbound_at,
	last_delivered_at = a.last_delivered_at
FROM (SELECT user_id,
	count(*) FILTER (WHERE direction = 'inbound') AS inbound_count,
	count(*) FILTER (WHERE direction = 'outbound' AND status IN ('sent', 'delivered', 'undelivered')) AS outbound_count,
	max(date_created) FILTER (WHERE direction = 'inbound') AS last_inbound_at,
	max(date_sent) FILTER (WHERE direction = 'outbound' AND status IN ('sent', 'delivered', 'undelivered')) AS last_outbound_at,
	max(date_delivered) FILTER (WHERE direction = 'outbound' AND status = 'delivered') AS last_delivered_at
	FROM messages GROUP BY user_id) a
WHERE users.id = a.user_id;

-- +goose StatementBegin
CREATE FUNCTION messages_activity() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	counted CONSTANT text[] := ARRAY['sent', 'delivered', 'undelivered'];
BEGIN
	-- Transactions that move activity take turns, from their first such
	-- change to their commit: the group commits of status changes run side
	-- by side and each updates its users' rows in its own order, so without
	-- one lock taken first two of them deadlock on two users' rows (each
	-- deadlock stalls both for deadlock_timeout; delivery at 1,000/s fell to
	-- ~100/s). The key is an arbitrary constant of this trigger's own.
	PERFORM pg_advisory_xact_lock(1600900916);
	IF TG_OP = 'INSERT' THEN
		IF NEW.direction = 'inbound' THEN
			UPDATE users SET inbound_count = inbound_count + 1,
				last_inbound_at = GREATEST(last_inbound_at, NEW.date_created)
			WHERE id = NEW.user_id;
		ELSE
			UPDATE users SET outbound_count = outbound_count + 1,
				last_outbound_at = GREATEST(last_outbound_at, NEW.date_sent),
				last_delivered_at = CASE WHEN NEW.status = 'delivered'
					THEN GREATEST(last_delivered_at, NEW.date_delivered) ELSE last_delivered_at END
			WHERE id = NEW.user_id;
		END IF;
	ELSIF TG_OP = 'UPDATE' THEN
		IF OLD.status = ANY (counted) AND NOT NEW.status = ANY (counted) THEN
			-- sent → failed: the message takes its date with it.
			UPDATE users SET outbound_count = outbound_count - 1,
				last_outbound_at = (SELECT max(m.date_sent) FROM messages m WHERE m.user_id = NEW.user_id
					AND m.brand_id = NEW.brand_id AND m.direction = 'outbound' AND m.status = ANY (counted))
			WHERE id = NEW.user_id;
		ELSIF NEW.status = ANY (counted) THEN
			UPDATE users SET
				outbound_count = outbound_count + CASE WHEN OLD.status = ANY (counted) THEN 0 ELSE 1 END,
				last_outbound_at = GREATEST(last_outbound_at, NEW.date_sent),
				last_delivered_at = CASE WHEN NEW.status = 'delivered'
					THEN GREATEST(last_delivered_at, NEW.date_delivered) ELSE last_delivered_at END
			WHERE id = NEW.user_id;
		END IF;
	ELSE
		-- Messages are not deleted today; should they be, the user's
		-- activity is read again from what is left.
		UPDATE users u SET inbound_count = a.inbound_count, outbound_count = a.outbound_count,
			last_inbound_at = a.last_inbound_at, last_outbound_at = a.last_outbound_at,
			last_delivered_at = a.last_delivered_at
		FROM (SELECT count(*) FILTER (WHERE direction = 'inbound') AS inbound_count,
			count(*) FILTER (WHERE direction = 'outbound' AND status = ANY (counted)) AS outbound_count,
			max(date_created) FILTER (WHERE direction = 'inbound') AS last_inbound_at,
			max(date_sent) FILTER (WHERE direction = 'outbound' AND status = ANY (counted)) AS last_outbound_at,
			max(date_delivered) FILTER (WHERE direction = 'outbound' AND status = 'delivered') AS last_delivered_at
			FROM messages WHERE user_id = OLD.user_id AND brand_id = OLD.brand_id) a
		WHERE u.id = OLD.user_id;
	END IF;
	RETURN NULL;
END
$$;
-- +goose StatementEnd

-- A queued outbound insert (every API send, every campaign message) does
-- not fire: only messages that count.
CREATE TRIGGER messages_activity_insert AFTER INSERT ON messages FOR EACH ROW
	WHEN (NEW.direction = 'inbound' OR NEW.status IN ('sent', 'delivered', 'undelivered'))
	EXECUTE FUNCTION messages_activity();
CREATE TRIGGER messages_activity_update AFTER UPDATE OF status ON messages FOR EACH ROW
	WHEN (NEW.direction = 'outbound' AND NEW.status IS DISTINCT FROM OLD.status)
	EXECUTE FUNCTION messages_activity();
CREATE TRIGGER messages_activity_delete AFTER DELETE ON messages FOR EACH ROW
	EXECUTE FUNCTION messages_activity();

-- The live users of a brand in id order: members pages walk it (keyset by
-- id) and counts read the brand's rows only.
CREATE INDEX users_brand_live_id ON users (brand_id, id) WHERE is_deleted = FALSE;

CREATE TABLE segment_members (
	segment_id BIGINT NOT NULL REFERENCES segments (id),
	user_id    BIGINT NOT NULL REFERENCES users (id),
	brand_id   BIGINT NOT NULL REFERENCES brands (id),
	PRIMARY KEY (segment_id, user_id)
);

-- +goose Down
DROP TABLE segment_members;
DROP INDEX users_brand_live_id;
DROP TRIGGER messages_activity_delete ON messages;
DROP TRIGGER messages_activity_update ON messages;
DROP TRIGGER messages_activity_insert ON messages;
DROP FUNCTION messages_activity();
ALTER TABLE users DROP COLUMN last_delivered_at;
ALTER TABLE users DROP COLUMN last_outbound_at;
ALTER TABLE users DROP COLUMN last_inbound_at;
ALTER TABLE users DROP COLUMN outbound_count;
ALTER TABLE users DROP COLUMN inbound_count;
