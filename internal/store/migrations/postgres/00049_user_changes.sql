-- The audience engine's change log (issue #34, D14). Each node keeps the
-- users of a brand in memory (internal/audience) and, before answering,
-- reads the users that changed since its last answer. Transactions commit
-- out of xid order, so a reader takes the xmin of its snapshot as its
-- position and next reads every change whose xid is at least that: any
-- transaction below it had ended, and was seen, when the position was
-- taken. Statement triggers with transition tables: a bulk import's
-- INSERT of 10,000 users writes its 10,000 changes in one statement. Only
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
	INSERT INTO user_changes (brand_id, user_id)
	SELECT n.brand_id, n.id FROM new_users n JOIN old_users o ON o.id = n.id
	WHERE (n.first_name, n.last_name, n.email_address, n.phone_number, n.date_of_birth, n.messaging_consent,
		n.postal_code, n.city, n.county, n.state, n.state_code, n.time_zone, n.custom_data::text, n.is_deleted,
		n.date_created, n.brand_id, n.inbound_count, n.outbound_count, n.last_inbound_at, n.last_outbound_at,
		n.last_delivered_at)
	IS DISTINCT FROM (o.first_name, o.last_name, o.email_address, o.phone_number, o.date_of_birth, o.messaging_consent,
		o.postal_code, o.city, o.county, o.state, o.state_code, o.time_zone, o.custom_data::text, o.is_deleted,
		o.date_created, o.brand_id, o.inbound_count, o.outbound_count, o.last_inbound_at, o.last_outbound_at,
		o.last_delivered_at);
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
CREATE TRIGGER users_changes_update AFTER UPDATE ON users REFERENCING OLD TABLE AS old_users NEW TABLE AS new_users
	FOR EACH STATEMENT EXECUTE FUNCTION users_changes_update();
CREATE TRIGGER users_changes_delete AFTER DELETE ON users REFERENCING OLD TABLE AS old_users
	FOR EACH STATEMENT EXECUTE FUNCTION users_changes_delete();

-- +goose Down
DROP TRIGGER users_changes_delete ON users;
DROP TRIGGER users_changes_update ON users;
DROP TRIGGER users_changes_insert ON users;
DROP FUNCTION users_changes_delete();
DROP FUNCTION users_changes_update();
DROP FUNCTION users_changes_insert();
DROP TABLE user_changes;
