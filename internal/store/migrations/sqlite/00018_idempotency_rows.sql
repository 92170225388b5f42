-- Issue #15: idempotency keys' rows in the order they are stored, with
-- the (brand, key) lookup in an index of its own. As a WITHOUT ROWID
-- table keyed by the client's random key, every stored answer (~0.5 KB)
-- landed on a random page of the whole table, splitting it often, and
-- each commit wrote those pages to the WAL whole; now the answers of a
-- group fill a few pages at the end of the table, and only the small
-- index entries land at random.

-- +goose Up
-- A plain rowid table: its rows go in the order stored (the rowid is
-- internal, never shown, so it needs no AUTOINCREMENT).
CREATE TABLE idempotency_keys_rows (
	brand_id      INTEGER NOT NULL REFERENCES brands (id),
	idem_key      TEXT    NOT NULL,
	request_hash  BLOB    NOT NULL,
	locked_until  INTEGER,
	status        INTEGER,
	content_type  TEXT,
	body          BLOB,
	created_at    INTEGER NOT NULL,
	expires_at    INTEGER NOT NULL,
	UNIQUE (brand_id, idem_key)
);
INSERT INTO idempotency_keys_rows (brand_id, idem_key, request_hash, locked_until, status, content_type, body,
	created_at, expires_at)
SELECT brand_id, idem_key, request_hash, locked_until, status, content_type, body, created_at, expires_at
FROM idempotency_keys ORDER BY created_at;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_rows RENAME TO idempotency_keys;

-- +goose Down
CREATE TABLE idempotency_keys_keyed (
	brand_id      INTEGER NOT NULL REFERENCES brands (id),
	idem_key      TEXT    NOT NULL,
	request_hash  BLOB    NOT NULL,
	locked_until  INTEGER,
	status        INTEGER,
	content_type  TEXT,
	body          BLOB,
	created_at    INTEGER NOT NULL,
	expires_at    INTEGER NOT NULL,
	PRIMARY KEY (brand_id, idem_key)
) WITHOUT ROWID;
INSERT INTO idempotency_keys_keyed SELECT brand_id, idem_key, request_hash, locked_until, status, content_type, body,
	created_at, expires_at FROM idempotency_keys;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_keyed RENAME TO idempotency_keys;
