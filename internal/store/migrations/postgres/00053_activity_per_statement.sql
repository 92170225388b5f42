-- The contacts' activity (00009) once per statement, and its change log
-- (00049) written by the same statement (issue #35, the PostgreSQL drain).
-- PostgreSQL only: SQLite's triggers are per row whatever is declared.
--
-- A campaign batch's sent write and a batch of reports each move 500
-- messages in one UPDATE. With 00009's row trigger each message then ran
-- an UPDATE of its contact's row, whose row trigger (00049's
-- users_changes_activity) ran an INSERT into user_changes: a thousand
-- statements per batch, twice per message. Now the UPDATE of messages runs
-- one statement trigger that sums its changes by contact and updates
-- those contacts in one UPDATE, whose RETURNING feeds one INSERT into
-- user_changes. The rules are 00009's, rolled up per contact:
-- outbound_count moves by the number of the contact's messages entering
-- less those leaving sent/delivered/undelivered; last_outbound_at is the
-- latest date_sent of the entering ones, or, when one of them leaves
-- (sent → failed), read again from what is left; last_delivered_at the
-- latest date_delivered of those now delivered.
--
-- The old and new rows are matched by an aggregate over UNION ALL of the
-- two transition tables, not a join: PL/pgSQL keeps the plan of its first
-- run, and with a one-row first run a join of the two was planned as a
-- nested loop, 250,000 comparisons for a batch of 500 (performance.md,
-- "Session 9").
--
-- users_changes_activity (00049) goes: the activity columns are written
-- only by these triggers, which now log the change themselves; a future
-- writer of those columns must log it too.
--
-- users gets fillfactor 80: a message's delivered report changes only
-- last_delivered_at, which no index reads, so with room on the page the
-- contact's new version is a HOT update (no entry in users' 14 indexes);
-- without it every report wrote 14 index entries (scratch, 500 reports:
-- 276 ms before, 94 – 129 ms after, load 20). Its sent write moves
-- last_outbound_at, which the inbox's indexes read, and stays a full
-- update. Pages written before this migration fill to 100 % until the
-- table is rewritten (VACUUM FULL, CLUSTER).
--
-- Inserts and deletes keep their row triggers: an insert that counts (an
-- inbound message) is one row, and queued inserts must not pay for a
-- transition table.

-- +goose Up
-- +goose StatementBegin
CREATE FUNCTION messages_activity_rows() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	counted CONSTANT text[] := ARRAY['sent', 'delivered', 'undelivered'];
	uid bigint;
BEGIN
	-- 00009's lock: writers of activity take turns (two batches updating
	-- the same contacts in different orders deadlocked).
	PERFORM pg_advisory_xact_lock(1600900916);
	IF TG_OP = 'INSERT' THEN
		uid := NEW.user_id;
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
	ELSE
		uid := OLD.user_id;
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
	INSERT INTO user_changes (brand_id, user_id) SELECT brand_id, id FROM users WHERE id = uid;
	RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION messages_activity_statement() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	-- Most updates of messages move nothing that counts (a claim, a
	-- queued message failing): one look at each table, no lock.
	IF NOT EXISTS (SELECT 1 FROM new_rows WHERE direction = 'outbound' AND status IN ('sent', 'delivered', 'undelivered'))
		AND NOT EXISTS (SELECT 1 FROM old_rows WHERE direction = 'outbound' AND status IN ('sent', 'delivered', 'undelivered')) THEN
		RETURN NULL;
	END IF;
	PERFORM pg_advisory_xact_lock(1600900916);
	WITH s AS (
		SELECT id, user_id, direction, status, date_sent, date_delivered, 1 AS side FROM new_rows
		UNION ALL
		SELECT id, user_id, direction, status, NULL, NULL, 0 FROM old_rows
	), m AS (
		-- Each message once: what it was and what it is.
		SELECT id, max(user_id) AS user_id,
			bool_or(side = 0 AND status IN ('sent', 'delivered', 'undelivered')) AS was,
			bool_or(side = 1 AND status IN ('sent', 'delivered', 'undelivered')) AS is_now,
			max(status) FILTER (WHERE side = 0) IS DISTINCT FROM max(status) FILTER (WHERE side = 1) AS moved,
			bool_or(side = 1 AND direction = 'outbound') AS outbound,
			max(date_sent) FILTER (WHERE side = 1) AS date_sent,
			max(date_delivered) FILTER (WHERE side = 1 AND status = 'delivered') AS date_delivered
		FROM s GROUP BY id
	), d AS (
		SELECT user_id, sum(is_now::int - was::int) AS delta,
			max(date_sent) FILTER (WHERE is_now) AS sent_at,
			max(date_delivered) AS delivered_at,
			bool_or(was AND NOT is_now) AS left_counted
		FROM m WHERE outbound AND moved AND (was OR is_now)
		GROUP BY user_id
	), u AS (
		UPDATE users SET outbound_count = outbound_count + d.delta,
			last_outbound_at = CASE WHEN d.left_counted THEN
				-- sent → failed: the message takes its date with it.
				(SELECT max(x.date_sent) FROM messages x WHERE x.user_id = users.id AND x.brand_id = users.brand_id
					AND x.direction = 'outbound' AND x.status IN ('sent', 'delivered', 'undelivered'))
				ELSE GREATEST(last_outbound_at, d.sent_at) END,
			last_delivered_at = GREATEST(last_delivered_at, d.delivered_at)
		FROM d WHERE users.id = d.user_id
		RETURNING users.brand_id, users.id
	)
	INSERT INTO user_changes (brand_id, user_id) SELECT brand_id, id FROM u;
	RETURN NULL;
END
$$;
-- +goose StatementEnd

DROP TRIGGER messages_activity_update ON messages;
DROP TRIGGER messages_activity_insert ON messages;
DROP TRIGGER messages_activity_delete ON messages;
DROP TRIGGER users_changes_activity ON users;
CREATE TRIGGER messages_activity_insert AFTER INSERT ON messages FOR EACH ROW
	WHEN (NEW.direction = 'inbound' OR NEW.status IN ('sent', 'delivered', 'undelivered'))
	EXECUTE FUNCTION messages_activity_rows();
CREATE TRIGGER messages_activity_delete AFTER DELETE ON messages FOR EACH ROW
	EXECUTE FUNCTION messages_activity_rows();
CREATE TRIGGER messages_activity_update AFTER UPDATE ON messages
	REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows
	FOR EACH STATEMENT EXECUTE FUNCTION messages_activity_statement();
ALTER TABLE users SET (fillfactor = 80);

-- +goose Down
ALTER TABLE users RESET (fillfactor);
DROP TRIGGER messages_activity_update ON messages;
DROP TRIGGER messages_activity_delete ON messages;
DROP TRIGGER messages_activity_insert ON messages;
DROP FUNCTION messages_activity_statement();
DROP FUNCTION messages_activity_rows();
CREATE TRIGGER messages_activity_insert AFTER INSERT ON messages FOR EACH ROW
	WHEN (NEW.direction = 'inbound' OR NEW.status IN ('sent', 'delivered', 'undelivered'))
	EXECUTE FUNCTION messages_activity();
CREATE TRIGGER messages_activity_update AFTER UPDATE OF status ON messages FOR EACH ROW
	WHEN (NEW.direction = 'outbound' AND NEW.status IS DISTINCT FROM OLD.status)
	EXECUTE FUNCTION messages_activity();
CREATE TRIGGER messages_activity_delete AFTER DELETE ON messages FOR EACH ROW
	EXECUTE FUNCTION messages_activity();
CREATE TRIGGER users_changes_activity AFTER UPDATE OF
	inbound_count, outbound_count, last_inbound_at, last_outbound_at, last_delivered_at
	ON users FOR EACH ROW
	WHEN ((NEW.inbound_count, NEW.outbound_count, NEW.last_inbound_at, NEW.last_outbound_at, NEW.last_delivered_at)
	IS DISTINCT FROM (OLD.inbound_count, OLD.outbound_count, OLD.last_inbound_at, OLD.last_outbound_at, OLD.last_delivered_at))
	EXECUTE FUNCTION users_changes_update();
