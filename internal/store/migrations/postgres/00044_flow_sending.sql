-- Sending flows' messages a batch at a time (D21, issue #33).
--
-- messages_flow_queue is the flow sender's work list, as
-- messages_campaign_queue is the campaign sender's: a flow's queued
-- messages, ordered by when they may go (0 = now, else the opening of the
-- sending window they are held for) and id.
--
-- flow_senders holds a row per flow whose sender job is queued or
-- running: the runner that writes a flow's messages inserts it and queues
-- the job only when the row is new, else bumps gen; the sender deletes the
-- row, when nothing is queued, only if gen is still what it read, so a
-- message written while the sender was finishing is never left without one.

-- +goose Up
CREATE INDEX messages_flow_queue ON messages (flow_id, COALESCE(scheduled_at, 0), id)
	WHERE status = 'queued' AND flow_id IS NOT NULL;

CREATE TABLE flow_senders (
	flow_id BIGINT NOT NULL PRIMARY KEY,
	gen     BIGINT NOT NULL
);

-- +goose Down
DROP TABLE flow_senders;
DROP INDEX messages_flow_queue;
