-- D17: a brand's sending rules. The defaults are D17's: 08:00–21:00 in the
-- recipient's local time, America/New_York when no zone is known, no
-- frequency cap (NULL), no send rate limit (0).

-- +goose Up
ALTER TABLE brands ADD COLUMN sending_window_start TEXT NOT NULL DEFAULT '08:00';
ALTER TABLE brands ADD COLUMN sending_window_end TEXT NOT NULL DEFAULT '21:00';
ALTER TABLE brands ADD COLUMN time_zone TEXT NOT NULL DEFAULT 'America/New_York';
ALTER TABLE brands ADD COLUMN frequency_cap_max INTEGER; -- NULL: no cap
ALTER TABLE brands ADD COLUMN frequency_cap_hours INTEGER;
ALTER TABLE brands ADD COLUMN send_rate REAL NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE brands DROP COLUMN send_rate;
ALTER TABLE brands DROP COLUMN frequency_cap_hours;
ALTER TABLE brands DROP COLUMN frequency_cap_max;
ALTER TABLE brands DROP COLUMN time_zone;
ALTER TABLE brands DROP COLUMN sending_window_end;
ALTER TABLE brands DROP COLUMN sending_window_start;
