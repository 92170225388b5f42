-- D17: location.time_zone, the IANA zone of the user's ZIP (embedded data),
-- kept beside the other location columns so segments (D14) can select on it.

-- +goose Up
ALTER TABLE users ADD COLUMN time_zone TEXT;

-- +goose Down
ALTER TABLE users DROP COLUMN time_zone;
