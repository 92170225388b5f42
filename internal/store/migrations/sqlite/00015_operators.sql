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

-- The console's contact search (D19): by phone (users_brand_phone_live, a
-- prefix range), by email (exact, any case) and by name (a prefix of the
-- first or last name, any case). PostgreSQL compares the names in the "C"
-- collation so that a prefix is a range whatever the database's locale.
CREATE INDEX users_brand_email ON users (brand_id, lower(email_address)) WHERE is_deleted = FALSE;
CREATE INDEX users_brand_first_name ON users (brand_id, (lower(first_name))) WHERE is_deleted = FALSE;
CREATE INDEX users_brand_last_name ON users (brand_id, (lower(last_name))) WHERE is_deleted = FALSE;
-- The dashboard's counts of contacts by consent, from the index alone.
CREATE INDEX users_brand_consent ON users (brand_id, messaging_consent) WHERE is_deleted = FALSE;
-- The inbox: contacts whose last inbound text came after their last sent
-- reply, newest first. The predicate is the inbox query's own, so the index
-- holds only the unanswered contacts.
CREATE INDEX users_brand_unanswered ON users (brand_id, last_inbound_at)
	WHERE is_deleted = FALSE AND last_inbound_at > COALESCE(last_outbound_at, 0);

-- +goose Down
DROP INDEX users_brand_unanswered;
DROP INDEX users_brand_consent;
DROP INDEX users_brand_last_name;
DROP INDEX users_brand_first_name;
DROP INDEX users_brand_email;
DROP TABLE operator_tokens;
DROP TABLE operators;
