-- Bulk CSV imports of users (issue #7): the import and its progress, the
-- rows it rejected, and the phone numbers its rows have claimed so far.

-- +goose Up
CREATE TABLE imports (
	id                        INTEGER PRIMARY KEY,
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
CREATE INDEX imports_brand ON imports (brand_id, id);

CREATE TABLE import_errors (
	id        INTEGER PRIMARY KEY,
	brand_id  INTEGER NOT NULL REFERENCES brands (id),
	import_id INTEGER NOT NULL REFERENCES imports (id),
	line      INTEGER NOT NULL,
	field     TEXT    NOT NULL DEFAULT '',
	type      TEXT    NOT NULL,
	msg       TEXT    NOT NULL
);
CREATE INDEX import_errors_import ON import_errors (brand_id, import_id, id);

-- A number belongs to the first row of the file that has it; later rows
-- with it are reported. Emptied when the import ends.
CREATE TABLE import_phones (
	import_id    INTEGER NOT NULL REFERENCES imports (id),
	brand_id     INTEGER NOT NULL REFERENCES brands (id),
	phone_number TEXT    NOT NULL,
	line         INTEGER NOT NULL,
	PRIMARY KEY (import_id, phone_number)
);

-- +goose Down
DROP TABLE import_phones;
DROP TABLE import_errors;
DROP TABLE imports;
