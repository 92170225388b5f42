-- The openai extractor's per-brand daily budget of calls (D20, issue #19):
-- one row per brand and UTC day, counted up by one atomic upsert per call
-- (store/aibudget.go). A row is a few bytes a brand a day; old days are
-- kept as a record of use.

-- +goose Up
CREATE TABLE ai_calls (
	brand_id BIGINT NOT NULL REFERENCES brands (id),
	day      DATE   NOT NULL, -- UTC date
	calls    BIGINT NOT NULL CHECK (calls >= 0),
	PRIMARY KEY (brand_id, day)
);

-- +goose Down
DROP TABLE ai_calls;
