-- Segments (D14, issue #16).
--
-- Messaging activity per user, kept on the users row so a segment's query
-- reads one table: counting 1,000,000 contacts cannot afford an aggregate
-- over messages per user, nor a join per row. Triggers keep the columns in
-- the same transaction as every insert and status change of a message,
-- whatever path writes it. Outbound counts only messages handed to the
-- provider (sent, delivered, undelivered), dated by date_sent;
-- last_delivered_at by date_delivered; inbound by receipt (date_created).
--
-- segment_members holds the frozen members of POINT IN TIME segments.

-- +goose Up
ALTER TABLE users ADD COLUMN inbound_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN outbound_count INTEGER NOT NULL DEFAULT 0;
ALTER TABLE users ADD COLUMN last_inbound_at INTEGER;
ALTER TABLE users ADD COLUMN last_outbound_at INTEGER;
ALTER TABLE users ADD COLUMN last_delivered_at INTEGER;

UPDATE users SET inbound_count = a.inbound_count, outbound_count = a.outbound_count,
	last_inbound_at = a.last_inbound_at, last_outbound_at = a.last_outbound_at,
	last_delivered_at = a.last_delivered_at
FROM (SELECT user_id,
	sum(direction = 'inbound') AS inbound_count,
	sum(direction = 'outbound' AND status IN ('sent', 'delivered', 'undelivered')) AS outbound_count,
	max(CASE WHEN direction = 'inbound' THEN date_created END) AS last_inbound_at,
	max(CASE WHEN direction = 'outbound' AND status IN ('sent', 'delivered', 'undelivered') THEN date_sent END) AS last_outbound_at,
	max(CASE WHEN direction = 'outbound' AND status = 'delivered' THEN date_delivered END) AS last_delivered_at
	FROM messages GROUP BY user_id) a
WHERE users.id = a.user_id;

-- A queued outbound insert (every API send, every campaign message) does
-- not fire: only messages that count.
-- +goose StatementBegin
CREATE TRIGGER messages_activity_insert AFTER INSERT ON messages
WHEN NEW.direction = 'inbound' OR NEW.status IN ('sent', 'delivered', 'undelivered')
BEGIN
	UPDATE users SET
		inbound_count = inbound_count + (NEW.direction = 'inbound'),
		last_inbound_at = CASE WHEN NEW.direction = 'inbound'
			AND (last_inbound_at IS NULL OR last_inbound_at < NEW.date_created)
			THEN NEW.date_created ELSE last_inbound_at END,
		outbound_count = outbound_count + (NEW.direction = 'outbound'),
		last_outbound_at = CASE WHEN NEW.direction = 'outbound' AND NEW.date_sent IS NOT NULL
			AND (last_outbound_at IS NULL OR last_outbound_at < NEW.date_sent)
			THEN NEW.date_sent ELSE last_outbound_at END,
		last_delivered_at = CASE WHEN NEW.direction = 'outbound' AND NEW.status = 'delivered'
			AND NEW.date_delivered IS NOT NULL
			AND (last_delivered_at IS NULL OR last_delivered_at < NEW.date_delivered)
			THEN NEW.date_delivered ELSE last_delivered_at END
	WHERE id = NEW.user_id;
END;
-- +goose StatementEnd

-- A message leaving the counted statuses (sent → failed) takes its date
-- with it: the latest date_sent of those left is read again.
-- +goose StatementBegin
CREATE TRIGGER messages_activity_update AFTER UPDATE OF status ON messages
WHEN NEW.direction = 'outbound' AND NEW.status <> OLD.status
BEGIN
	UPDATE users SET
		outbound_count = outbound_count
			+ (NEW.status IN ('sent', 'delivered', 'undelivered'))
			- (OLD.status IN ('sent', 'delivered', 'undelivered')),
		last_outbound_at = CASE
			WHEN OLD.status IN ('sent', 'delivered', 'undelivered') AND NEW.status NOT IN ('sent', 'delivered', 'undelivered')
			THEN (SELECT max(m.date_sent) FROM messages m WHERE m.brand_id = NEW.brand_id AND m.user_id = NEW.user_id
				AND m.direction = 'outbound' AND m.status IN ('sent', 'delivered', 'undelivered'))
			WHEN NEW.status IN ('sent', 'delivered', 'undelivered') AND NEW.date_sent IS NOT NULL
				AND (last_outbound_at IS NULL OR last_outbound_at < NEW.date_sent)
			THEN NEW.date_sent ELSE last_outbound_at END,
		last_delivered_at = CASE WHEN NEW.status = 'delivered' AND NEW.date_delivered IS NOT NULL
			AND (last_delivered_at IS NULL OR last_delivered_at < NEW.date_delivered)
			THEN NEW.date_delivered ELSE last_delivered_at END
	WHERE id = NEW.user_id;
END;
-- +goose StatementEnd

-- Messages are not deleted today; should they be, the user's activity is
-- read again from what is left.
-- +goose StatementBegin
CREATE TRIGGER messages_activity_delete AFTER DELETE ON messages
BEGIN
	UPDATE users SET
		inbound_count = (SELECT count(*) FROM messages m WHERE m.brand_id = OLD.brand_id AND m.user_id = OLD.user_id
			AND m.direction = 'inbound'),
		outbound_count = (SELECT count(*) FROM messages m WHERE m.brand_id = OLD.brand_id AND m.user_id = OLD.user_id
			AND m.direction = 'outbound' AND m.status IN ('sent', 'delivered', 'undelivered')),
		last_inbound_at = (SELECT max(m.date_created) FROM messages m WHERE m.brand_id = OLD.brand_id
			AND m.user_id = OLD.user_id AND m.direction = 'inbound'),
		last_outbound_at = (SELECT max(m.date_sent) FROM messages m WHERE m.brand_id = OLD.brand_id
			AND m.user_id = OLD.user_id AND m.direction = 'outbound' AND m.status IN ('sent', 'delivered', 'undelivered')),
		last_delivered_at = (SELECT max(m.date_delivered) FROM messages m WHERE m.brand_id = OLD.brand_id
			AND m.user_id = OLD.user_id AND m.direction = 'outbound' AND m.status = 'delivered')
	WHERE id = OLD.user_id;
END;
-- +goose StatementEnd

-- The live users of a brand in id order: members pages walk it (keyset by
-- id) and counts read the brand's rows only.
CREATE INDEX users_brand_live_id ON users (brand_id, id) WHERE is_deleted = FALSE;

CREATE TABLE segment_members (
	segment_id INTEGER NOT NULL REFERENCES segments (id),
	user_id    INTEGER NOT NULL REFERENCES users (id),
	brand_id   INTEGER NOT NULL REFERENCES brands (id),
	PRIMARY KEY (segment_id, user_id)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE segment_members;
DROP INDEX users_brand_live_id;
DROP TRIGGER messages_activity_delete;
DROP TRIGGER messages_activity_update;
DROP TRIGGER messages_activity_insert;
ALTER TABLE users DROP COLUMN last_delivered_at;
ALTER TABLE users DROP COLUMN last_outbound_at;
ALTER TABLE users DROP COLUMN last_inbound_at;
ALTER TABLE users DROP COLUMN outbound_count;
ALTER TABLE users DROP COLUMN inbound_count;
