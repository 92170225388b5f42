-- Sending campaigns (D16, D17; issue #21). The same as migrations/sqlite/00014_campaign_sending.sql.
--
-- messages_campaign_queue is the campaign sender's work list: only the
-- campaign's queued messages are in it (a message leaves when it is sent
-- or fails), ordered by when they may go (0 = now, else the opening of
-- the sending window they are held for) and id. Claiming a batch reads
-- its first rows; without it each batch would step over every message
-- already sent, quadratic in the audience.
--
-- send_pacing holds, per brand with a send_rate, the next instant a send
-- may start (microseconds): every node reserves its batch by moving it
-- forward in a transaction, so a brand's rate holds across nodes (D16).

-- +goose Up
CREATE INDEX messages_campaign_queue ON messages (campaign_id, COALESCE(scheduled_at, 0), id)
	WHERE status = 'queued' AND campaign_id IS NOT NULL;

CREATE TABLE send_pacing (
	brand_id BIGINT NOT NULL PRIMARY KEY REFERENCES brands (id),
	next_at  BIGINT NOT NULL
);

-- +goose Down
DROP TABLE send_pacing;
DROP INDEX messages_campaign_queue;
