-- Input bounds (issue #31).
--
-- Item 8: an inbound text longer than a message body may be (1,600
-- characters) is stored cut, never refused; body_truncated tells its
-- readers.
--
-- Item 9: send_at was unbounded, and 9999-12-31T23:59:59-23:59 was stored
-- as year 10000, which RFC 3339 cannot write: no client could list the
-- brand's campaigns. Such a campaign (it could never have started) gets
-- the last instant of year 9999, so it can be read and canceled. Not
-- undone by Down: the year-10000 value was never readable.

-- +goose Up
ALTER TABLE messages ADD COLUMN body_truncated BOOLEAN NOT NULL DEFAULT FALSE;
UPDATE campaigns SET send_at = 253402300799999999 WHERE send_at > 253402300799999999;

-- +goose Down
ALTER TABLE messages DROP COLUMN body_truncated;
