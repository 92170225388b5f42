-- Two indexes that led with brand_id now lead with the column that makes
-- them selective. PostgreSQL plans a prepared statement for a young table,
-- never analyzed, rating indexes that share the leading brand_id alike, and
-- keeps the plan it chose: a lookup by id (brand_id = $1 AND id = $2) could
-- then read every user of the brand through the phone index, or every
-- message of the brand through the user index (measured: ~1,000 index
-- entries read per user lookup at 1,000 users).
--
-- ON CONFLICT (brand_id, phone_number) infers the phone index whatever its
-- column order; a user's messages (user_id, brand_id, id) are found as before.
--
-- Built CONCURRENTLY, outside a transaction, so a large installation keeps
-- taking writes while they build; IF [NOT] EXISTS lets an interrupted run
-- go again.

-- +goose NO TRANSACTION
-- +goose Up
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS users_phone_brand_live ON users (phone_number, brand_id) WHERE is_deleted = FALSE;
DROP INDEX CONCURRENTLY IF EXISTS users_brand_phone_live;
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_user_brand_id ON messages (user_id, brand_id, id);
DROP INDEX CONCURRENTLY IF EXISTS messages_brand_user_id;

-- +goose Down
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS users_brand_phone_live ON users (brand_id, phone_number) WHERE is_deleted = FALSE;
DROP INDEX CONCURRENTLY IF EXISTS users_phone_brand_live;
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_brand_user_id ON messages (brand_id, user_id, id);
DROP INDEX CONCURRENTLY IF EXISTS messages_user_brand_id;
