-- Timestamps are INTEGER microseconds since the Unix epoch (UTC): exact,
-- sortable and the same on both engines. Every table carries brand_id.

-- +goose Up
CREATE TABLE brands (
	id           INTEGER PRIMARY KEY,
	name         TEXT    NOT NULL,
	phone_number TEXT    NOT NULL,
	help_text    TEXT    NOT NULL DEFAULT '',
	date_created INTEGER NOT NULL
);

CREATE TABLE credentials (
	id           INTEGER PRIMARY KEY,
	brand_id     INTEGER NOT NULL REFERENCES brands (id),
	username     TEXT    NOT NULL UNIQUE,
	secret       BLOB    NOT NULL, -- AES-256-GCM sealed under the server key
	created_at   INTEGER NOT NULL,
	revoked_at   INTEGER,
	last_used_at INTEGER
);
CREATE INDEX credentials_brand ON credentials (brand_id);

CREATE TABLE users (
	id                INTEGER PRIMARY KEY,
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
-- D5: a phone number is unique among a brand's users that are not deleted.
CREATE UNIQUE INDEX users_brand_phone_live ON users (brand_id, phone_number) WHERE is_deleted = FALSE;

CREATE TABLE custom_fields (
	id                    INTEGER PRIMARY KEY,
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

CREATE TABLE segments (
	id                         INTEGER PRIMARY KEY,
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

CREATE TABLE files (
	id          TEXT    PRIMARY KEY, -- UUID v4
	brand_id    INTEGER NOT NULL REFERENCES brands (id),
	file_name   TEXT    NOT NULL,
	mime_type   TEXT    NOT NULL,
	size        INTEGER NOT NULL,
	blob_key    TEXT    NOT NULL,
	uploaded_at INTEGER NOT NULL
);
CREATE INDEX files_brand ON files (brand_id);

CREATE TABLE messages (
	id               INTEGER PRIMARY KEY,
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
	date_delivered   INTEGER
);
CREATE INDEX messages_brand_id ON messages (brand_id, id);
CREATE INDEX messages_brand_user_id ON messages (brand_id, user_id, id);

-- +goose Down
DROP TABLE messages;
DROP TABLE files;
DROP TABLE segments;
DROP TABLE custom_fields;
DROP TABLE users;
DROP TABLE credentials;
DROP TABLE brands;
