-- The openai extractor's per-brand daily budget of calls (D20, issue #19):
-- one row per brand and UTC day, counted up by one atomic upsert per call
-- (store/aibudget.go). A row is a few bytes a brand a day; old days are
-- kept as a record of use.

-- +goose Up
CREATE TABLE ai_calls (
	brand_id INTEGER NOT NULL REFERENCES brands (id),
	day      TEXT    NOT NULL CHECK (day GLOB '[0-9][0-9][0-9][0-9]-[0-9][0-9]-[0-9][0-9]'), -- UTC date, YYYY-MM-DD
	calls    INTEGER NOT NULL CHECK (calls >= 0),
	PRIMARY KEY (brand_id, day)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE ai_calls;
