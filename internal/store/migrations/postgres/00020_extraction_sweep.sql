-- Auto-collected custom data is found by a sweep over the inbound texts
-- (issue #19, D20), not by a job row per text: that row, inserted in every
-- inbound text's transaction, moved the inbound p99.
--
-- extraction_cursor is the one row saying where the sweep is: the last
-- text whose extraction is written (xact, message_id), and until when a
-- sweeper claims the batch after it (claimed_until, microseconds), so two
-- nodes never ask the extractor about the same texts. The cursor moves in
-- the transaction that writes a batch's values.
--
-- messages.xact is the id of the transaction that stored the message.
-- Message ids are taken before their transactions commit, so a text with a
-- lower id can become visible after one with a higher id: a cursor on ids
-- alone would pass it. The sweep reads texts by (xact, id), only those of
-- transactions that have all ended, so none ever appears behind the
-- cursor. Messages stored before this migration have none and are not
-- swept. messages_inbound_xact is the sweep's scan.

-- +goose Up
ALTER TABLE messages ADD COLUMN xact xid8;
ALTER TABLE messages ALTER COLUMN xact SET DEFAULT pg_current_xact_id();
CREATE INDEX messages_inbound_xact ON messages (xact, id) WHERE direction = 'inbound' AND xact IS NOT NULL;
CREATE TABLE extraction_cursor (
	id            INTEGER PRIMARY KEY CHECK (id = 1),
	xact          xid8    NOT NULL,
	message_id    BIGINT  NOT NULL,
	claimed_until BIGINT  NOT NULL DEFAULT 0
);
INSERT INTO extraction_cursor (id, xact, message_id) VALUES (1, '0', 0);

-- +goose Down
DROP TABLE extraction_cursor;
DROP INDEX messages_inbound_xact;
ALTER TABLE messages DROP COLUMN xact;
