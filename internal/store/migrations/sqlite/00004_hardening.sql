-- Production hardening (issue #6): signatures already accepted (replay
-- protection, D2) and idempotency keys with their first response (D13).
-- Rows expire; a periodic job deletes them (a scan of idempotency_keys:
-- an index on expires_at would cost every keyed POST a second insert).

-- +goose Up
-- Keyed by expiry first: a replay carries the same x-date, so it collides
-- all the same, while inserts land at the end of the tree (x-date is about
-- now) and the purge deletes a prefix, with no second index to maintain.
CREATE TABLE seen_signatures (
	expires_at INTEGER NOT NULL, -- the signature's x-date plus the clock skew
	sig        BLOB  NOT NULL, -- SHA-256 of username and signature, first 16 bytes
	PRIMARY KEY (expires_at, sig)
) WITHOUT ROWID;

CREATE TABLE idempotency_keys (
	brand_id      INTEGER NOT NULL REFERENCES brands (id),
	idem_key      TEXT    NOT NULL,
	request_hash  BLOB    NOT NULL, -- SHA-256 of method, target and body digest
	locked_until  INTEGER,            -- set while the first request runs
	status        INTEGER,            -- the first response, once it is known
	content_type  TEXT,
	body          BLOB,
	created_at    INTEGER NOT NULL,
	expires_at    INTEGER NOT NULL,
	PRIMARY KEY (brand_id, idem_key)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE idempotency_keys;
DROP TABLE seen_signatures;
