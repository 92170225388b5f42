-- Ids are never reused (#15, D11). SQLite needed its tables rebuilt with
-- AUTOINCREMENT for that (migrations/sqlite/00007_autoincrement.sql); here
-- every id is an identity column, whose sequence only moves forward, even
-- when the row with the highest id is deleted or a transaction rolls back.
-- Nothing to change: the migration keeps the version numbers of both
-- engines the same.

-- +goose Up
SELECT 1;

-- +goose Down
SELECT 1;
