-- The operator console (D19, issue #18): the people who sign in, and their
-- sessions and one-time sign-in links.
--
-- An operator signs in with an email alone (no brand to pick), so emails
-- are unique across brands. Tokens are kept only as their SHA-256: a copy
-- of the database does not sign anyone in.

-- +goose Up
CREATE TABLE operators (
	id            INTEGER PRIMARY KEY AUTOINCREMENT, -- ids a client sees are never reused
	brand_id      INTEGER NOT NULL REFERENCES brands (id),
	email         TEXT    NOT NULL UNIQUE,
	role          TEXT    NOT NULL CHECK (role IN ('admin', 'agent')),
	password_hash TEXT, -- NULL until the operator chooses one (sign-in link)
	date_created  INTEGER NOT NULL
);
CREATE INDEX operators_brand_id ON operators (brand_id, id);

CREATE TABLE operator_tokens (
	token_hash   BLOB   NOT NULL PRIMARY KEY,
	operator_id  INTEGER NOT NULL REFERENCES operators (id) ON DELETE CASCADE,
	kind         TEXT    NOT NULL CHECK (kind IN ('session', 'link')),
	created_at   INTEGER NOT NULL,
	expires_at   INTEGER NOT NULL
);
CREATE INDEX operator_tokens_operator ON operator_tokens (operator_id);
CREATE INDEX operator_tokens_expires ON operator_tokens (expires_at);

-- +goose Down
DROP TABLE operator_tokens;
DROP TABLE operators;
