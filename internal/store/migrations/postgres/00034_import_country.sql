-- Issue #32, D22: a brand's default country (national phone numbers of its
-- imports), an import's own default country and column mapping, and the
-- original cells of every rejected row, so the rejected-rows file can be
-- fixed and uploaded again as it is.

-- +goose Up
ALTER TABLE brands ADD COLUMN default_country TEXT NOT NULL DEFAULT 'US';
ALTER TABLE imports ADD COLUMN default_country TEXT NOT NULL DEFAULT 'US';
ALTER TABLE imports ADD COLUMN mapping TEXT; -- JSON object: file column -> Parley column ("" = not imported); NULL = by name
ALTER TABLE import_errors ADD COLUMN cells TEXT; -- JSON array: the row's cells as uploaded; NULL when the row is not valid CSV

-- +goose Down
ALTER TABLE import_errors DROP COLUMN cells;
ALTER TABLE imports DROP COLUMN mapping;
ALTER TABLE imports DROP COLUMN default_country;
ALTER TABLE brands DROP COLUMN default_country;
