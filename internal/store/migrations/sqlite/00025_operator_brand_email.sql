-- Operators are unique per (brand, email), not per email (issue #31 item
-- 10): a brand's admin adding an operator learns nothing of other brands'
-- operators and cannot reserve another company's address. A person who
-- works for several brands has one row, and one password, in each; the
-- sign-in asks which brand after the password is checked, with a one-time
-- 'choice' token per matching brand.
--
-- SQLite changes a UNIQUE or CHECK constraint only by rebuilding the table
-- (its table-rebuild procedure, as in 00007): foreign keys off, on goose's
-- single connection, checked before the commit. Both tables are rebuilt,
-- operator_tokens for its kind CHECK.
--
-- Down puts the global uniqueness back; it fails, changing nothing, while
-- an email belongs to operators of several brands (remove them first).

-- +goose NO TRANSACTION
-- +goose Up
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

CREATE TABLE operators_new (
	id            INTEGER PRIMARY KEY AUTOINCREMENT, -- ids a client sees are never reused
	brand_id      INTEGER NOT NULL REFERENCES brands (id),
	email         TEXT    NOT NULL,
	role          TEXT    NOT NULL CHECK (role IN ('admin', 'agent')),
	password_hash TEXT, -- NULL until the operator chooses one (sign-in link)
	date_created  INTEGER NOT NULL,
	UNIQUE (brand_id, email)
);
INSERT INTO operators_new (id, brand_id, email, role, password_hash, date_created)
SELECT id, brand_id, email, role, password_hash, date_created FROM operators;
-- AUTOINCREMENT's high-water mark, even when the operators with the
-- highest ids were deleted: their ids stay unused.
DELETE FROM sqlite_sequence WHERE name = 'operators_new';
INSERT INTO sqlite_sequence (name, seq) SELECT 'operators_new', seq FROM sqlite_sequence WHERE name = 'operators';
DROP TABLE operators;
ALTER TABLE operators_new RENAME TO operators;
CREATE INDEX operators_brand_id ON operators (brand_id, id);
CREATE INDEX operators_email ON operators (email);

CREATE TABLE operator_tokens_new (
	token_hash   BLOB    NOT NULL PRIMARY KEY,
	operator_id  INTEGER NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
	kind         TEXT    NOT NULL CHECK (kind IN ('session', 'link', 'choice')),
	created_at   INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL,
	via_link     INTEGER NOT NULL DEFAULT 0 CHECK (via_link IN (0, 1))
);
INSERT INTO operator_tokens_new (token_hash, operator_id, kind, created_at, expires_at, via_link)
SELECT token_hash, operator_id, kind, created_at, expires_at, via_link FROM operator_tokens;
DROP TABLE operator_tokens;
ALTER TABLE operator_tokens_new RENAME TO operator_tokens;
CREATE INDEX operator_tokens_operator ON operator_tokens (operator_id);
CREATE INDEX operator_tokens_expires ON operator_tokens (expires_at);

-- Fails the migration, which then never commits, if a reference went wrong.
CREATE TEMP TABLE m00025_check (foreign_key_violations INTEGER CHECK (foreign_key_violations = 0));
INSERT INTO m00025_check SELECT count(*) FROM pragma_foreign_key_check;
DROP TABLE m00025_check;

COMMIT;
PRAGMA foreign_keys = ON;

-- +goose Down
-- Refuses, before anything changes, while an email is in several brands:
-- a failure inside the explicit transaction below would leave it open.
CREATE TEMP TABLE IF NOT EXISTS m00025_down_check (emails_in_several_brands INTEGER CHECK (emails_in_several_brands = 0));
INSERT INTO m00025_down_check SELECT count(*) FROM (SELECT email FROM operators GROUP BY email HAVING count(*) > 1);
DROP TABLE m00025_down_check;
PRAGMA foreign_keys = OFF;
BEGIN IMMEDIATE;

CREATE TABLE operators_old (
	id            INTEGER PRIMARY KEY AUTOINCREMENT,
	brand_id      INTEGER NOT NULL REFERENCES brands (id),
	email         TEXT    NOT NULL UNIQUE,
	role          TEXT    NOT NULL CHECK (role IN ('admin', 'agent')),
	password_hash TEXT,
	date_created  INTEGER NOT NULL
);
INSERT INTO operators_old (id, brand_id, email, role, password_hash, date_created)
SELECT id, brand_id, email, role, password_hash, date_created FROM operators;
DELETE FROM sqlite_sequence WHERE name = 'operators_old';
INSERT INTO sqlite_sequence (name, seq) SELECT 'operators_old', seq FROM sqlite_sequence WHERE name = 'operators';
DROP TABLE operators;
ALTER TABLE operators_old RENAME TO operators;
CREATE INDEX operators_brand_id ON operators (brand_id, id);

CREATE TABLE operator_tokens_old (
	token_hash   BLOB    NOT NULL PRIMARY KEY,
	operator_id  INTEGER NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
	kind         TEXT    NOT NULL CHECK (kind IN ('session', 'link')),
	created_at   INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL,
	via_link     INTEGER NOT NULL DEFAULT 0 CHECK (via_link IN (0, 1))
);
INSERT INTO operator_tokens_old (token_hash, operator_id, kind, created_at, expires_at, via_link)
SELECT token_hash, operator_id, kind, created_at, expires_at, via_link FROM operator_tokens WHERE kind <> 'choice';
DROP TABLE operator_tokens;
ALTER TABLE operator_tokens_old RENAME TO operator_tokens;
CREATE INDEX operator_tokens_operator ON operator_tokens (operator_id);
CREATE INDEX operator_tokens_expires ON operator_tokens (expires_at);

CREATE TEMP TABLE m00025_check (foreign_key_violations INTEGER CHECK (foreign_key_violations = 0));
INSERT INTO m00025_check SELECT count(*) FROM pragma_foreign_key_check;
DROP TABLE m00025_check;

COMMIT;
PRAGMA foreign_keys = ON;
