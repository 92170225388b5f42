-- A user's messages are indexed (user_id, brand_id, id), no longer
-- (brand_id, user_id, id). Leading with brand_id, the index was as good to
-- PostgreSQL's planner as (brand_id, id) for a message by id (brand_id = $1
-- AND id = $2) while the table was young and never analyzed, and a prepared
-- statement keeps the plan it chose: every status change then read the
-- brand's messages. A user's messages (brand_id, user_id) are found as before.
--
-- Built CONCURRENTLY, outside a transaction, so a large installation keeps
-- taking writes while it builds; IF [NOT] EXISTS lets an interrupted run go
-- again.

-- +goose NO TRANSACTION
-- +goose Up
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_user_brand_id ON messages (user_id, brand_id, id);
DROP INDEX CONCURRENTLY IF EXISTS messages_brand_user_id;

-- +goose Down
CREATE INDEX CONCURRENTLY IF NOT EXISTS messages_brand_user_id ON messages (brand_id, user_id, id);
DROP INDEX CONCURRENTLY IF EXISTS messages_user_brand_id;
