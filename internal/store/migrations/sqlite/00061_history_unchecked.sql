-- Issue #35: user_history loses its foreign keys on SQLite too, as it did
-- on PostgreSQL (postgres/00056). Each entry looked its brand and its
-- contact up, and an import writes four entries a contact: the 200,000-row
-- import took 7.3 – 7.6 s with them and 6.8 – 7.2 s without
-- (docs/performance.md, "Session 25"). What they guarded cannot happen:
-- users and brands are never deleted (a deleted contact is is_deleted, and
-- its history outlives it, D18), and every writer of user_history takes
-- the contact from its own transaction.
--
-- SQLite drops a foreign key only by rebuilding the table: the entries are
-- copied with their ids, and the AUTOINCREMENT sequence is carried over,
-- so no id a client has seen is given again.

-- +goose Up
CREATE TABLE user_history_unchecked (
	id          INTEGER PRIMARY KEY AUTOINCREMENT, -- ids a client sees are never reused
	brand_id    INTEGER NOT NULL,
	user_id     INTEGER NOT NULL,
	field       TEXT    NOT NULL, -- messaging_consent or custom_data.<key>
	old_value   TEXT,             -- JSON; NULL is null
	new_value   TEXT,
	source      TEXT    NOT NULL, -- api, keyword, carrier, import, console, admin, extraction
	detail      TEXT    NOT NULL DEFAULT '',
	message_id  INTEGER,
	occurred_at INTEGER NOT NULL
);
INSERT INTO user_history_unchecked (id, brand_id, user_id, field, old_value, new_value, source, detail, message_id,
	occurred_at)
	SELECT id, brand_id, user_id, field, old_value, new_value, source, detail, message_id, occurred_at FROM user_history;
INSERT INTO sqlite_sequence (name, seq) SELECT 'user_history_unchecked', 0
	WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'user_history_unchecked');
UPDATE sqlite_sequence SET seq = max(seq, (SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'user_history'))
	WHERE name = 'user_history_unchecked';
DROP TABLE user_history;
ALTER TABLE user_history_unchecked RENAME TO user_history;
CREATE INDEX user_history_user ON user_history (brand_id, user_id, id);

-- +goose Down
CREATE TABLE user_history_checked (
	id          INTEGER PRIMARY KEY AUTOINCREMENT, -- ids a client sees are never reused
	brand_id    INTEGER NOT NULL REFERENCES brands (id),
	user_id     INTEGER NOT NULL REFERENCES users (id),
	field       TEXT    NOT NULL, -- messaging_consent or custom_data.<key>
	old_value   TEXT,             -- JSON; NULL is null
	new_value   TEXT,
	source      TEXT    NOT NULL, -- api, keyword, carrier, import, console, admin, extraction
	detail      TEXT    NOT NULL DEFAULT '',
	message_id  INTEGER,
	occurred_at INTEGER NOT NULL
);
INSERT INTO user_history_checked (id, brand_id, user_id, field, old_value, new_value, source, detail, message_id,
	occurred_at)
	SELECT id, brand_id, user_id, field, old_value, new_value, source, detail, message_id, occurred_at FROM user_history;
INSERT INTO sqlite_sequence (name, seq) SELECT 'user_history_checked', 0
	WHERE NOT EXISTS (SELECT 1 FROM sqlite_sequence WHERE name = 'user_history_checked');
UPDATE sqlite_sequence SET seq = max(seq, (SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = 'user_history'))
	WHERE name = 'user_history_checked';
DROP TABLE user_history;
ALTER TABLE user_history_checked RENAME TO user_history;
CREATE INDEX user_history_user ON user_history (brand_id, user_id, id);
