-- Issue #15: SQLite's idempotency_keys became a table with rowids (see
-- sqlite/00018); PostgreSQL's heap already keeps rows in the order stored.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
