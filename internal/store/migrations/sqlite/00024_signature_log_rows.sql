-- Replay protection on SQLite (D2, issue #15): the signatures log (00023)
-- keeps one row per transaction instead of one per signature. Each row
-- holds the transaction's signatures as entries of 24 bytes, the expiry
-- (micros, big-endian) then the signature, and the latest of those
-- expiries, by which the purge deletes it. A row per signature cost the
-- single writer a B-tree insert, its index entry and its binding each.
-- Ids are kept, and so is the table's AUTOINCREMENT counter, which may be
-- past them all (a purge empties the log): a new row's id is never one
-- an index has read.

-- +goose Up
CREATE TABLE seen_signatures_rows (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	expires_at INTEGER NOT NULL, -- the latest expiry of its entries
	entries    BLOB    NOT NULL
);
INSERT INTO seen_signatures_rows (id, expires_at, entries)
SELECT id, expires_at, unhex(printf('%016X', expires_at) || hex(sig)) FROM seen_signatures ORDER BY id;
DELETE FROM sqlite_sequence WHERE name = 'seen_signatures_rows';
INSERT INTO sqlite_sequence (name, seq) SELECT 'seen_signatures_rows', seq FROM sqlite_sequence WHERE name = 'seen_signatures';
DROP TABLE seen_signatures;
ALTER TABLE seen_signatures_rows RENAME TO seen_signatures;
CREATE INDEX seen_signatures_expires ON seen_signatures (expires_at);

-- +goose Down
CREATE TABLE seen_signatures_log (
	id         INTEGER PRIMARY KEY AUTOINCREMENT,
	expires_at INTEGER NOT NULL,
	sig        BLOB    NOT NULL
);
-- Each entry becomes a row again; its expiry, read digit by digit.
WITH RECURSIVE
e (id, entries, n) AS (
	SELECT id, entries, 0 FROM seen_signatures
	UNION ALL
	SELECT id, entries, n + 1 FROM e WHERE (n + 1) * 24 < length(entries)
),
d (id, n, h, sig, i, v) AS (
	SELECT id, n, hex(substr(entries, n * 24 + 1, 8)), substr(entries, n * 24 + 9, 16), 0, 0 FROM e
	UNION ALL
	SELECT id, n, h, sig, i + 1, v * 16 + instr('0123456789ABCDEF', substr(h, i + 1, 1)) - 1 FROM d WHERE i < 16
)
INSERT INTO seen_signatures_log (expires_at, sig) SELECT v, sig FROM d WHERE i = 16 ORDER BY id, n;
DROP TABLE seen_signatures;
ALTER TABLE seen_signatures_log RENAME TO seen_signatures;
CREATE INDEX seen_signatures_expires ON seen_signatures (expires_at);
