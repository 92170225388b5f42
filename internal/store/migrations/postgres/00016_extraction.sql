-- D20 (#19): whether a brand's auto-collected custom data is also read from
-- the texts of contacts who opted out (messaging_consent false). Default:
-- no.

-- +goose Up
ALTER TABLE brands ADD COLUMN extract_when_opted_out BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE brands DROP COLUMN extract_when_opted_out;
