-- Issue #35: import_phones, where an import claims each number of its
-- file (in-file duplicates, D22), becomes a table without rowid and without
-- foreign keys. A claim wrote a row and an entry in its primary key's
-- index, and looked the import and the brand up; now it writes one entry
-- in one B-tree. Measured in sqlite3, 200,000 claims in batches of 500 and
-- the delete at the end: 0.53 s before, 0.33 s after. What the foreign keys
-- guarded cannot happen: imports and brands are never deleted, and the
-- table is emptied when its import ends (PostgreSQL's 00060).

-- +goose Up
CREATE TABLE import_phones_keyed (
	import_id    INTEGER NOT NULL,
	brand_id     INTEGER NOT NULL,
	phone_number TEXT    NOT NULL,
	line         INTEGER NOT NULL,
	PRIMARY KEY (import_id, phone_number)
) WITHOUT ROWID;
INSERT INTO import_phones_keyed (import_id, brand_id, phone_number, line)
	SELECT import_id, brand_id, phone_number, line FROM import_phones;
DROP TABLE import_phones;
ALTER TABLE import_phones_keyed RENAME TO import_phones;

-- +goose Down
CREATE TABLE import_phones_rows (
	import_id    INTEGER NOT NULL REFERENCES imports (id),
	brand_id     INTEGER NOT NULL REFERENCES brands (id),
	phone_number TEXT    NOT NULL,
	line         INTEGER NOT NULL,
	PRIMARY KEY (import_id, phone_number)
);
INSERT INTO import_phones_rows (import_id, brand_id, phone_number, line)
	SELECT import_id, brand_id, phone_number, line FROM import_phones;
DROP TABLE import_phones;
ALTER TABLE import_phones_rows RENAME TO import_phones;
