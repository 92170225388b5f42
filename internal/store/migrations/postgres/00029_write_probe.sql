-- Issue #31 item 15: one row that /readyz and the job workers rewrite,
-- after a write failed for want of space, to learn whether writes succeed
-- again. Reads alone cannot tell: a full disk still answers them.

-- +goose Up
CREATE TABLE write_probe (
	id        INTEGER PRIMARY KEY CHECK (id = 1),
	probed_at BIGINT NOT NULL -- micros; a new value each time, so a page is written
);
INSERT INTO write_probe (id, probed_at) VALUES (1, 0);

-- +goose Down
DROP TABLE write_probe;
