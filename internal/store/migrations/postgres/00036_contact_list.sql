-- The console's contacts list (issue #32): each filter and order takes an
-- index, so a page reads tens of rows, not the brand's million
-- (docs/performance.md names the index of each).
--
-- users_brand_state: the state filter, newest or oldest first.
-- users_brand_consent_id: the consent filter in id order (PostgreSQL's
-- users_brand_consent of 00015 orders equal keys by row address, not id).
-- users_brand_name_sort: the order by name (first and last, any case, in
-- the "C" collation as the name search; nameless contacts last: U+10FFFF
-- sorts after every name).
-- users_brand_activity: the order by latest activity (a text in or out).
-- users_brand_email_c: the search by the beginning of an email, a range of
-- bytes whatever the database's locale.

-- +goose Up
CREATE INDEX users_brand_state ON users (brand_id, state_code, id) WHERE is_deleted = FALSE;
CREATE INDEX users_brand_consent_id ON users (brand_id, messaging_consent, id) WHERE is_deleted = FALSE;
CREATE INDEX users_brand_name_sort ON users (brand_id,
	(coalesce(lower(first_name) || ' ' || lower(last_name), lower(first_name), lower(last_name), chr(1114111)) COLLATE "C"), id)
	WHERE is_deleted = FALSE;
CREATE INDEX users_brand_activity ON users (brand_id,
	(GREATEST(coalesce(last_inbound_at, 0), coalesce(last_outbound_at, 0))), id)
	WHERE is_deleted = FALSE;
CREATE INDEX users_brand_email_c ON users (brand_id, (lower(email_address) COLLATE "C")) WHERE is_deleted = FALSE;

-- +goose Down
DROP INDEX users_brand_email_c;
DROP INDEX users_brand_activity;
DROP INDEX users_brand_name_sort;
DROP INDEX users_brand_consent_id;
DROP INDEX users_brand_state;
