-- The console's contacts list (issue #32): each filter and order takes an
-- index, so a page reads tens of rows, not the brand's million
-- (docs/performance.md names the index of each).
--
-- users_brand_state: the state filter, newest or oldest first.
-- users_brand_name_sort: the order by name (first and last, any case;
-- nameless contacts last: U+10FFFF sorts after every name).
-- users_brand_activity: the order by latest activity (a text in or out).
-- The consent filter takes users_brand_consent (00015): SQLite's index
-- ends with the rowid, which is id.
-- The search by the beginning of an email takes users_brand_email (00015).

-- +goose Up
CREATE INDEX users_brand_state ON users (brand_id, state_code, id) WHERE is_deleted = FALSE;
CREATE INDEX users_brand_name_sort ON users (brand_id,
	(coalesce(lower(first_name) || ' ' || lower(last_name), lower(first_name), lower(last_name), char(1114111))), id)
	WHERE is_deleted = FALSE;
CREATE INDEX users_brand_activity ON users (brand_id,
	(max(coalesce(last_inbound_at, 0), coalesce(last_outbound_at, 0))), id)
	WHERE is_deleted = FALSE;

-- +goose Down
DROP INDEX users_brand_activity;
DROP INDEX users_brand_name_sort;
DROP INDEX users_brand_state;
