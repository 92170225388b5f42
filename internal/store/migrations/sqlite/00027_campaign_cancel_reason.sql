-- A campaign the server ends because its segment can no longer be
-- evaluated (issue #31: over D14's limit of expanded criteria, or
-- otherwise unresolvable) is canceled with the reason here, so the
-- scheduler never tries it again; NULL for every other campaign.

-- +goose Up
ALTER TABLE campaigns ADD COLUMN cancel_reason TEXT;

-- +goose Down
ALTER TABLE campaigns DROP COLUMN cancel_reason;
