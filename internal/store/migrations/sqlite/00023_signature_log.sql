-- Replay protection on SQLite (D2, issue #15): seen_signatures becomes an
-- append-only log. Keyed by (expiry, signature) as 00004 made it, the
-- signatures of one group commit landed on as many random pages of the
-- B-tree, each written to the WAL whole; appended, they share the page at
-- the end. The store finds a copy with an index of the log kept in memory
-- (internal/store/replayindex.go), which reads the rows it has not seen
-- by id: AUTOINCREMENT, so that an id is never reused, not even after a
-- purge deleted the last row. The rows of 00004's table stay recorded.

-- +goose Up
CREATE TABLE seen_signatures_log (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	expires_at INTEGER NOT NULL, -- the signature's x-date plus the clock skew
	sig        BLOB    NOT NULL  -- SHA-256 of username and signature, first 16 bytes
);
INSERT INTO seen_signatures_log (expires_at, sig) SELECT expires_at, sig FROM seen_signatures ORDER BY expires_at;
DROP TABLE seen_signatures;
ALTER TABLE seen_signatures_log RENAME TO seen_signatures;
-- The purge deletes by expiry; appended near the end, like the rows.
CREATE INDEX seen_signatures_expires ON seen_signatures (expires_at);

-- +goose Down
CREATE TABLE seen_signatures_keyed (
	expires_at INTEGER NOT NULL,
	sig        BLOB  NOT NULL,
	PRIMARY KEY (expires_at, sig)
) WITHOUT ROWID;
INSERT OR IGNORE INTO seen_signatures_keyed SELECT expires_at, sig FROM seen_signatures;
DROP TABLE seen_signatures;
ALTER TABLE seen_signatures_keyed RENAME TO seen_signatures;
