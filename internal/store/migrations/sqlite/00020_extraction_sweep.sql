-- Auto-collected custom data is found by a sweep over the inbound texts
-- (issue #19, D20), not by a job row per text: that row, inserted in every
-- inbound text's transaction, moved the inbound p99.
--
-- extraction_cursor is the one row saying where the sweep is: the last
-- message id it has passed (message_id), and until when a sweeper claims
-- the batch after it (claimed_until, microseconds), so two sweepers never
-- ask the extractor about the same texts. The cursor moves in the
-- transaction that writes a batch's values. SQLite's one writer commits
-- ids in order, so the cursor is an id; it starts after the messages
-- already stored.

-- +goose Up
CREATE TABLE extraction_cursor (
	id            INTEGER PRIMARY KEY CHECK (id = 1),
	message_id    INTEGER NOT NULL,
	claimed_until INTEGER NOT NULL DEFAULT 0
);
INSERT INTO extraction_cursor (id, message_id) SELECT 1, COALESCE(max(id), 0) FROM messages;

-- +goose Down
DROP TABLE extraction_cursor;
