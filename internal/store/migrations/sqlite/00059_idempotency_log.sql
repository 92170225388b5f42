-- Idempotency keys on SQLite (D13, issue #35): idempotency_keys becomes a
-- log with its index in memory, as seen_signatures did (00023). The
-- UNIQUE (brand_id, idem_key) index of 00018 put every stored key's entry
-- on a random page of its B-tree, which each commit wrote to the WAL
-- whole: most of what a key on every POST cost a create. Now a key's row
-- and its expiry's index entry go at the end of their trees, and the store
-- finds a key with an index of its rows kept in memory
-- (internal/store/keyindex.go), which reads the rows it has not seen by id:
-- AUTOINCREMENT, so that an id is never reused, even after a purge or a
-- release deleted the last row. A row is never changed in place: a key's
-- new state is a new row, so every process sees it by its id.

-- +goose Up
CREATE TABLE idempotency_keys_log (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	brand_id      INTEGER NOT NULL REFERENCES brands (id),
	idem_key      TEXT    NOT NULL,
	request_hash  BLOB    NOT NULL,
	locked_until  INTEGER,
	status        INTEGER,
	content_type  TEXT,
	body          BLOB,
	created_at    INTEGER NOT NULL,
	expires_at    INTEGER NOT NULL
);
INSERT INTO idempotency_keys_log (brand_id, idem_key, request_hash, locked_until, status, content_type, body,
	created_at, expires_at)
SELECT brand_id, idem_key, request_hash, locked_until, status, content_type, body, created_at, expires_at
FROM idempotency_keys ORDER BY created_at;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_log RENAME TO idempotency_keys;
-- The purge deletes by expiry; appended near the end, like the rows.
CREATE INDEX idempotency_keys_expires ON idempotency_keys (expires_at);

-- +goose Down
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
INSERT OR REPLACE INTO idempotency_keys_rows (brand_id, idem_key, request_hash, locked_until, status, content_type,
	body, created_at, expires_at)
SELECT brand_id, idem_key, request_hash, locked_until, status, content_type, body, created_at, expires_at
FROM idempotency_keys ORDER BY id;
DROP TABLE idempotency_keys;
ALTER TABLE idempotency_keys_rows RENAME TO idempotency_keys;
