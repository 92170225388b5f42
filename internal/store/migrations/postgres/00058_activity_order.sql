-- The contacts list's order by latest activity (issue #32) is read from
-- the audience engine's memory (internal/audience/contactorder.go), and
-- from a sort of the brand's contacts while a brand loads, not from an
-- index (issue #35): every text out moved the contact's entry in
-- users_brand_activity, an index write in the drain's hottest statement,
-- and on PostgreSQL it made each contact's sent update a new row version
-- with an entry in each of users' indexes instead of a HOT update.

-- +goose Up
DROP INDEX users_brand_activity;

-- +goose Down
CREATE INDEX users_brand_activity ON users (brand_id,
	(GREATEST(coalesce(last_inbound_at, 0), coalesce(last_outbound_at, 0))), id)
	WHERE is_deleted = FALSE;
