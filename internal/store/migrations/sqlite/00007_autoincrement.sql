-- Ids are never reused (#15, D11). Without AUTOINCREMENT, SQLite hands out
-- the id of a deleted last row again, and a client holding the old id, or a
-- queued job naming it (a webhook delivery), reaches the new row. Every
-- table whose ids clients see is rebuilt with AUTOINCREMENT, rows, indexes
-- and constraints unchanged (SQLite's table-rebuild procedure; there are no
-- triggers or views). credentials, consent_events and import_errors keep
-- their ids inside the server and are left as they are.
--
-- Foreign keys must be off while a referenced table is dropped: with them
-- on, dropping webhook_endpoints would cascade to webhook_deliveries. The
-- pragma does nothing inside a transaction, so this migration opens its own
-- on goose's single connection, and checks every foreign key before it
-- commits. Each new table is renamed to the old name, so the references of
-- the other tables, which name it, stay right.

-- +goose NO TRANSACTION
-- +goose Up
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

CREATE TABLE brands_new (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	name         TEXT    NOT NULL,
	phone_number TEXT    NOT NULL,
	help_text    TEXT    NOT NULL DEFAULT '',
	date_created INTEGER NOT NULL,
	help_reply   TEXT    NOT NULL DEFAULT '',
	stop_reply   TEXT    NOT NULL DEFAULT '',
	start_reply  TEXT    NOT NULL DEFAULT ''
);
INSERT INTO brands_new (id, name, phone_number, help_text, date_created, help_reply, stop_reply, start_reply)
SELECT id, name, phone_number, help_text, date_created, help_reply, stop_reply, start_reply FROM brands;
DROP TABLE brands;
ALTER TABLE brands_new RENAME TO brands;

CREATE TABLE users_new (
	id                INTEGER PRIMARY KEY AUTOINCREMENT,
	brand_id          INTEGER NOT NULL REFERENCES brands (id),
	phone_number      TEXT    NOT NULL,
	first_name        TEXT,
	last_name         TEXT,
	email_address     TEXT,
	date_of_birth     TEXT,
	messaging_consent INTEGER CHECK (messaging_consent IN (0, 1)),
	postal_code       TEXT,
	city              TEXT,
	county            TEXT,
	state             TEXT,
	state_code        TEXT,
	custom_data       TEXT,
	channel           TEXT,
	is_deleted        INTEGER NOT NULL DEFAULT 0 CHECK (is_deleted IN (0, 1)),
	date_created      INTEGER NOT NULL,
	date_last_updated INTEGER NOT NULL
);
INSERT INTO users_new (id, brand_id, phone_number, first_name, last_name, email_address, date_of_birth,
	messaging_consent, postal_code, city, county, state, state_code, custom_data, channel, is_deleted,
	date_created, date_last_updated)
SELECT id, brand_id, phone_number, first_name, last_name, email_address, date_of_birth,
	messaging_consent, postal_code, city, county, state, state_code, custom_data, channel, is_deleted,
	date_created, date_last_updated FROM users;
DROP TABLE users;
ALTER TABLE users_new RENAME TO users;
-- D5: a phone number is unique among a brand's users that are not deleted.
CREATE UNIQUE INDEX users_brand_phone_live ON users (brand_id, phone_number) WHERE is_deleted = FALSE;

CREATE TABLE custom_fields_new (
	id                    INTEGER PRIMARY KEY AUTOINCREMENT,
	brand_id              INTEGER NOT NULL REFERENCES brands (id),
	field_name            TEXT    NOT NULL,
	field_key             TEXT    NOT NULL, -- snake_case of field_name: the custom_data key
	custom_data_type      INTEGER NOT NULL CHECK (custom_data_type BETWEEN 1 AND 6),
	description           TEXT    NOT NULL DEFAULT '',
	subtype               INTEGER NOT NULL DEFAULT 0,
	available_enum_values TEXT    NOT NULL DEFAULT '[]',
	include_in_ai_prompt  INTEGER NOT NULL DEFAULT 0,
	include_user_answers  INTEGER NOT NULL DEFAULT 0,
	is_append             INTEGER NOT NULL DEFAULT 0,
	is_auto_collected     INTEGER NOT NULL DEFAULT 0,
	extraction_prompt     TEXT    NOT NULL DEFAULT '',
	is_emphasize_current  INTEGER NOT NULL DEFAULT 0,
	is_emphasize_personal INTEGER NOT NULL DEFAULT 0,
	UNIQUE (brand_id, field_key)
);
INSERT INTO custom_fields_new (id, brand_id, field_name, field_key, custom_data_type, description, subtype,
	available_enum_values, include_in_ai_prompt, include_user_answers, is_append, is_auto_collected,
	extraction_prompt, is_emphasize_current, is_emphasize_personal)
SELECT id, brand_id, field_name, field_key, custom_data_type, description, subtype,
	available_enum_values, include_in_ai_prompt, include_user_answers, is_append, is_auto_collected,
	extraction_prompt, is_emphasize_current, is_emphasize_personal FROM custom_fields;
DROP TABLE custom_fields;
ALTER TABLE custom_fields_new RENAME TO custom_fields;

CREATE TABLE segments_new (
	id                         INTEGER PRIMARY KEY AUTOINCREMENT,
	brand_id                   INTEGER NOT NULL REFERENCES brands (id),
	name                       TEXT    NOT NULL,
	source                     TEXT    NOT NULL DEFAULT 'USER_DEFINED',
	type                       TEXT    NOT NULL DEFAULT 'STANDARD',
	is_active                  INTEGER NOT NULL DEFAULT 1,
	is_archived                INTEGER NOT NULL DEFAULT 0,
	criteria                   TEXT    NOT NULL DEFAULT '[]',
	description                TEXT    NOT NULL DEFAULT '',
	is_pinned                  INTEGER NOT NULL DEFAULT 0,
	color_id                   INTEGER NOT NULL DEFAULT 0,
	ltv                        REAL    NOT NULL DEFAULT 0,
	average_order_value        REAL    NOT NULL DEFAULT 0,
	average_purchase_frequency REAL    NOT NULL DEFAULT 0,
	date_created               INTEGER NOT NULL,
	date_last_updated          INTEGER NOT NULL,
	UNIQUE (brand_id, name)
);
INSERT INTO segments_new (id, brand_id, name, source, type, is_active, is_archived, criteria, description,
	is_pinned, color_id, ltv, average_order_value, average_purchase_frequency, date_created, date_last_updated)
SELECT id, brand_id, name, source, type, is_active, is_archived, criteria, description,
	is_pinned, color_id, ltv, average_order_value, average_purchase_frequency, date_created, date_last_updated
FROM segments;
DROP TABLE segments;
ALTER TABLE segments_new RENAME TO segments;

CREATE TABLE messages_new (
	id               INTEGER PRIMARY KEY AUTOINCREMENT,
	brand_id         INTEGER NOT NULL REFERENCES brands (id),
	user_id          INTEGER NOT NULL REFERENCES users (id),
	direction        TEXT    NOT NULL CHECK (direction IN ('inbound', 'outbound')),
	status           TEXT    NOT NULL CHECK (status IN ('queued', 'sent', 'delivered', 'failed', 'undelivered')),
	body             TEXT    NOT NULL DEFAULT '',
	media_item_uuids TEXT    NOT NULL DEFAULT '[]',
	type             TEXT    NOT NULL,
	error_code       TEXT,
	error_message    TEXT,
	date_created     INTEGER NOT NULL,
	date_sent        INTEGER,
	date_delivered   INTEGER,
	provider         TEXT,
	provider_id      TEXT,
	-- Set before every provider call: a retried job that finds it knows a
	-- send may already have happened.
	sending_at       INTEGER,
	attempts         INTEGER NOT NULL DEFAULT 0
);
INSERT INTO messages_new (id, brand_id, user_id, direction, status, body, media_item_uuids, type, error_code,
	error_message, date_created, date_sent, date_delivered, provider, provider_id, sending_at, attempts)
SELECT id, brand_id, user_id, direction, status, body, media_item_uuids, type, error_code,
	error_message, date_created, date_sent, date_delivered, provider, provider_id, sending_at, attempts
FROM messages;
DROP TABLE messages;
ALTER TABLE messages_new RENAME TO messages;
CREATE INDEX messages_brand_id ON messages (brand_id, id);
CREATE INDEX messages_brand_user_id ON messages (brand_id, user_id, id);
CREATE UNIQUE INDEX messages_provider_id ON messages (provider, provider_id);

CREATE TABLE imports_new (
	id                        INTEGER PRIMARY KEY AUTOINCREMENT,
	brand_id                  INTEGER NOT NULL REFERENCES brands (id),
	status                    TEXT    NOT NULL CHECK (status IN ('queued', 'running', 'completed', 'failed')),
	file_name                 TEXT    NOT NULL,
	blob_key                  TEXT    NOT NULL, -- the uploaded file in the blob store, until the import ends
	on_duplicate              TEXT    NOT NULL CHECK (on_duplicate IN ('skip', 'update')),
	messaging_consent_default INTEGER CHECK (messaging_consent_default IN (0, 1)),
	delimiter                 TEXT    NOT NULL,
	columns                   TEXT    NOT NULL, -- JSON array: the header as written
	total_rows                INTEGER NOT NULL,
	processed_rows            INTEGER NOT NULL DEFAULT 0,
	created                   INTEGER NOT NULL DEFAULT 0,
	updated                   INTEGER NOT NULL DEFAULT 0,
	skipped                   INTEGER NOT NULL DEFAULT 0,
	failed                    INTEGER NOT NULL DEFAULT 0,
	-- Where the first row not yet committed starts: committed with each
	-- batch, so a resumed import goes on from there and imports no row twice.
	next_offset               INTEGER NOT NULL,
	next_line                 INTEGER NOT NULL,
	error                     TEXT,
	date_created              INTEGER NOT NULL,
	date_completed            INTEGER
);
INSERT INTO imports_new (id, brand_id, status, file_name, blob_key, on_duplicate, messaging_consent_default,
	delimiter, columns, total_rows, processed_rows, created, updated, skipped, failed, next_offset, next_line,
	error, date_created, date_completed)
SELECT id, brand_id, status, file_name, blob_key, on_duplicate, messaging_consent_default,
	delimiter, columns, total_rows, processed_rows, created, updated, skipped, failed, next_offset, next_line,
	error, date_created, date_completed FROM imports;
DROP TABLE imports;
ALTER TABLE imports_new RENAME TO imports;
CREATE INDEX imports_brand ON imports (brand_id, id);

CREATE TABLE webhook_endpoints_new (
	id                 INTEGER PRIMARY KEY AUTOINCREMENT,
	brand_id           INTEGER NOT NULL REFERENCES brands (id),
	url                TEXT    NOT NULL,
	description        TEXT    NOT NULL DEFAULT '',
	event_types        TEXT    NOT NULL, -- JSON array; ["*"] for all
	secret             BLOB    NOT NULL, -- sealed under the server key
	old_secret         BLOB,             -- sealed; signs alongside until old_secret_until
	old_secret_until   INTEGER,
	disabled           INTEGER NOT NULL DEFAULT 0,
	failing_since      INTEGER,
	date_created       INTEGER NOT NULL,
	date_last_updated  INTEGER NOT NULL
);
INSERT INTO webhook_endpoints_new (id, brand_id, url, description, event_types, secret, old_secret,
	old_secret_until, disabled, failing_since, date_created, date_last_updated)
SELECT id, brand_id, url, description, event_types, secret, old_secret,
	old_secret_until, disabled, failing_since, date_created, date_last_updated FROM webhook_endpoints;
DROP TABLE webhook_endpoints;
ALTER TABLE webhook_endpoints_new RENAME TO webhook_endpoints;
CREATE INDEX webhook_endpoints_brand ON webhook_endpoints (brand_id);

CREATE TABLE webhook_deliveries_new (
	id           INTEGER PRIMARY KEY AUTOINCREMENT,
	brand_id     INTEGER NOT NULL REFERENCES brands (id),
	endpoint_id  INTEGER NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
	event_id     TEXT    NOT NULL REFERENCES events (id),
	event_type   TEXT    NOT NULL,
	attempt      INTEGER NOT NULL,
	status       INTEGER,          -- HTTP status; NULL when none was received
	latency_ms   INTEGER NOT NULL,
	response     TEXT    NOT NULL DEFAULT '', -- first 1 KiB
	error        TEXT    NOT NULL DEFAULT '',
	outcome      TEXT    NOT NULL, -- delivered, retrying, failed, disabled
	date_created INTEGER NOT NULL
);
INSERT INTO webhook_deliveries_new (id, brand_id, endpoint_id, event_id, event_type, attempt, status,
	latency_ms, response, error, outcome, date_created)
SELECT id, brand_id, endpoint_id, event_id, event_type, attempt, status,
	latency_ms, response, error, outcome, date_created FROM webhook_deliveries;
DROP TABLE webhook_deliveries;
ALTER TABLE webhook_deliveries_new RENAME TO webhook_deliveries;
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (brand_id, endpoint_id, id);

-- Fails the migration, which then never commits, if a reference went wrong.
CREATE TEMP TABLE m00007_check (foreign_key_violations INTEGER CHECK (foreign_key_violations = 0));
INSERT INTO m00007_check SELECT count(*) FROM pragma_foreign_key_check;
DROP TABLE m00007_check;

COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
-- Nothing: taking AUTOINCREMENT off would let ids repeat again.
