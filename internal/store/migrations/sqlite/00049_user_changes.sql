-- The audience engine's change log (issue #34, D14). Each node keeps the
-- users of a brand in memory (internal/audience) and, before answering,
-- reads the users that changed since its last answer: a write committed
-- before a request is counted by it, on every node. Only the columns a
-- segment reads record a change (not date_last_updated), and rows older
-- than an hour are purged (PurgeExpired); an engine further behind loads
-- the brand again. One writer: seq grows in commit order.

-- +goose Up
CREATE TABLE user_changes (
	seq      INTEGER PRIMARY KEY AUTOINCREMENT,
	brand_id INTEGER NOT NULL,
	user_id  INTEGER NOT NULL,
	at       INTEGER NOT NULL DEFAULT (CAST((julianday('now') - 2440587.5) * 86400000000 AS INTEGER))
);
CREATE INDEX user_changes_brand_seq ON user_changes (brand_id, seq);

-- +goose StatementBegin
CREATE TRIGGER users_changes_insert AFTER INSERT ON users
BEGIN
	INSERT INTO user_changes (brand_id, user_id) VALUES (NEW.brand_id, NEW.id);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER users_changes_update AFTER UPDATE OF
	first_name, last_name, email_address, phone_number, date_of_birth, messaging_consent, postal_code, city, county, state, state_code, time_zone, custom_data, is_deleted, date_created, brand_id, inbound_count, outbound_count, last_inbound_at, last_outbound_at, last_delivered_at
	ON users
WHEN NEW.first_name IS NOT OLD.first_name OR NEW.last_name IS NOT OLD.last_name
	OR NEW.email_address IS NOT OLD.email_address OR NEW.phone_number IS NOT OLD.phone_number
	OR NEW.date_of_birth IS NOT OLD.date_of_birth OR NEW.messaging_consent IS NOT OLD.messaging_consent
	OR NEW.postal_code IS NOT OLD.postal_code OR NEW.city IS NOT OLD.city OR NEW.county IS NOT OLD.county
	OR NEW.state IS NOT OLD.state OR NEW.state_code IS NOT OLD.state_code OR NEW.time_zone IS NOT OLD.time_zone
	OR NEW.custom_data IS NOT OLD.custom_data OR NEW.is_deleted IS NOT OLD.is_deleted
	OR NEW.date_created IS NOT OLD.date_created OR NEW.brand_id IS NOT OLD.brand_id
	OR NEW.inbound_count IS NOT OLD.inbound_count OR NEW.outbound_count IS NOT OLD.outbound_count
	OR NEW.last_inbound_at IS NOT OLD.last_inbound_at OR NEW.last_outbound_at IS NOT OLD.last_outbound_at
	OR NEW.last_delivered_at IS NOT OLD.last_delivered_at
BEGIN
	INSERT INTO user_changes (brand_id, user_id) VALUES (NEW.brand_id, NEW.id);
END;
-- +goose StatementEnd

-- +goose StatementBegin
CREATE TRIGGER users_changes_delete AFTER DELETE ON users
BEGIN
	INSERT INTO user_changes (brand_id, user_id) VALUES (OLD.brand_id, OLD.id);
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER users_changes_delete;
DROP TRIGGER users_changes_update;
DROP TRIGGER users_changes_insert;
DROP TABLE user_changes;
