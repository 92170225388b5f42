-- The audience engine's change log (issue #34, D14). Each node keeps the
-- users of a brand in memory (internal/audience) and, before answering,
-- reads the users that changed since its last answer. Transactions commit
-- out of xid order, so a reader takes the xmin of its snapshot as its
-- position and next reads every change whose xid is at least that: any
-- transaction below it had ended, and was seen, when the position was
-- taken. Statement triggers with transition tables for inserts and deletes: a bulk
-- import's INSERT of 10,000 users writes its 10,000 changes in one statement. Only
-- the columns a segment reads record a change (not date_last_updated);
-- rows older than an hour are purged (PurgeExpired).

-- +goose Up
CREATE TABLE user_changes (
	brand_id BIGINT NOT NULL,
	user_id  BIGINT NOT NULL,
	xid      xid8   NOT NULL DEFAULT pg_current_xact_id(),
	at       BIGINT NOT NULL DEFAULT (extract(epoch FROM clock_timestamp()) * 1000000)::bigint
);
CREATE INDEX user_changes_brand_xid ON user_changes (brand_id, xid);
CREATE INDEX user_changes_at ON user_changes (at);

-- +goose StatementBegin
CREATE FUNCTION users_changes_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO user_changes (brand_id, user_id) SELECT brand_id, id FROM new_users;
	RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION users_changes_update() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO user_changes (brand_id, user_id) VALUES (NEW.brand_id, NEW.id);
	RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE FUNCTION users_changes_delete() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO user_changes (brand_id, user_id) SELECT brand_id, id FROM old_users;
	RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER users_changes_insert AFTER INSERT ON users REFERENCING NEW TABLE AS new_users
	FOR EACH STATEMENT EXECUTE FUNCTION users_changes_insert();
-- Updates are row triggers on the columns a segment reads, whose WHEN
-- skips the function when none of them changed: most updates are one row
-- (a message's activity, an API change), where a statement trigger's
-- transition tables cost more whatever changed (measured, performance.md).
-- The activity columns have a trigger of their own, so each counted
-- message (the hot path) compares five numbers, not the custom data.
CREATE TRIGGER users_changes_activity AFTER UPDATE OF
	inbound_count, outbound_count, last_inbound_at, last_outbound_at, last_delivered_at
	ON users FOR EACH ROW
	WHEN ((NEW.inbound_count, NEW.outbound_count, NEW.last_inbound_at, NEW.last_outbound_at, NEW.last_delivered_at)
	IS DISTINCT FROM (OLD.inbound_count, OLD.outbound_count, OLD.last_inbound_at, OLD.last_outbound_at, OLD.last_delivered_at))
	EXECUTE FUNCTION users_changes_update();
CREATE TRIGGER users_changes_update AFTER UPDATE OF
	first_name, last_name, email_address, phone_number, date_of_birth, messaging_consent, postal_code, city, county,
	state, state_code, time_zone, custom_data, is_deleted, date_created, brand_id
	ON users FOR EACH ROW
	WHEN ((NEW.first_name, NEW.last_name, NEW.email_address, NEW.phone_number, NEW.date_of_birth, NEW.messaging_consent,
		NEW.postal_code, NEW.city, NEW.county, NEW.state, NEW.state_code, NEW.time_zone, NEW.custom_data::text, NEW.is_deleted,
		NEW.date_created, NEW.brand_id)
	IS DISTINCT FROM (OLD.first_name, OLD.last_name, OLD.email_address, OLD.phone_number, OLD.date_of_birth, OLD.messaging_consent,
		OLD.postal_code, OLD.city, OLD.county, OLD.state, OLD.state_code, OLD.time_zone, OLD.custom_data::text, OLD.is_deleted,
		OLD.date_created, OLD.brand_id))
	EXECUTE FUNCTION users_changes_update();
CREATE TRIGGER users_changes_delete AFTER DELETE ON users REFERENCING OLD TABLE AS old_users
	FOR EACH STATEMENT EXECUTE FUNCTION users_changes_delete();

-- +goose Down
DROP TRIGGER users_changes_delete ON users;
DROP TRIGGER users_changes_update ON users;
DROP TRIGGER users_changes_activity ON users;
DROP TRIGGER users_changes_insert ON users;
DROP FUNCTION users_changes_delete();
DROP FUNCTION users_changes_update();
DROP FUNCTION users_changes_insert();
DROP TABLE user_changes;
