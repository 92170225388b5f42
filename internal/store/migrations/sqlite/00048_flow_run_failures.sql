-- A run whose step fails (issue #33) is put off and tried again later,
-- failures counting how often, rather than failing its whole batch again
-- and again and holding up every other run behind it; after
-- maxRunFailures it ends exited with the reason "error".

-- +goose Up
ALTER TABLE flow_runs ADD COLUMN failures INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE flow_runs DROP COLUMN failures;
