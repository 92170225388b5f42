-- An inbound text longer than a message body may be (1,600 characters) is
-- stored cut, never refused; the flag tells its readers (issue #31 item 8).

-- +goose Up
ALTER TABLE messages ADD COLUMN body_truncated BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE messages DROP COLUMN body_truncated;
