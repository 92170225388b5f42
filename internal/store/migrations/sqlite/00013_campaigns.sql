-- Campaigns (D16, issue #21).
--
-- recipients and the skipped counts are fixed when the segment is
-- resolved; the other stats are read from the campaign's messages.
--
-- A campaign writes its messages with campaign_id set; the partial unique
-- index on (campaign_id, user_id) is what makes "exactly one message per
-- consenting member" hold across a crash, a retry and two nodes: a second
-- resolution's INSERT … ON CONFLICT DO NOTHING writes nothing.
--
-- messages.campaign_id has no foreign key: only a resolution writes it,
-- with its own campaign's id, and campaigns are never deleted; a key would
-- add a check per row to the one statement that writes 100,000 of them.

-- +goose Up
CREATE TABLE campaigns (
	id                    INTEGER PRIMARY KEY AUTOINCREMENT, -- ids a client sees are never reused
	brand_id              INTEGER NOT NULL REFERENCES brands (id),
	name                  TEXT    NOT NULL,
	segment_id            INTEGER NOT NULL REFERENCES segments (id),
	body                  TEXT    NOT NULL DEFAULT '',
	media_item_uuids      TEXT    NOT NULL DEFAULT '[]',
	type                  TEXT    NOT NULL CHECK (type IN ('MARKETING', 'TRANSACTIONAL')),
	status                TEXT    NOT NULL CHECK (status IN ('scheduled', 'sending', 'completed', 'canceled')),
	send_at               INTEGER NOT NULL,
	started_at            INTEGER,
	completed_at          INTEGER,
	date_created          INTEGER NOT NULL,
	recipients            INTEGER NOT NULL DEFAULT 0,
	skipped_unsubscribed  INTEGER NOT NULL DEFAULT 0,
	skipped_frequency_cap INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX campaigns_brand_id ON campaigns (brand_id, id);
-- The scheduler's scan: campaigns due to be resolved.
CREATE INDEX campaigns_due ON campaigns (send_at) WHERE status = 'scheduled';

ALTER TABLE messages ADD COLUMN campaign_id INTEGER; -- NULL outside campaigns
ALTER TABLE messages ADD COLUMN scheduled_at INTEGER; -- NULL unless held for the sending window (D17)
CREATE UNIQUE INDEX messages_campaign_user ON messages (campaign_id, user_id) WHERE campaign_id IS NOT NULL;
-- GET /messages?campaign_id= and the campaign's stats.
CREATE INDEX messages_brand_campaign ON messages (brand_id, campaign_id, id) WHERE campaign_id IS NOT NULL;

-- +goose Down
DROP INDEX messages_brand_campaign;
DROP INDEX messages_campaign_user;
ALTER TABLE messages DROP COLUMN scheduled_at;
ALTER TABLE messages DROP COLUMN campaign_id;
DROP TABLE campaigns;
