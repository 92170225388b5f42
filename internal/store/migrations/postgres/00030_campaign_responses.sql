-- Replies and opt-outs attributed to campaigns (D22, issue #32): an
-- inbound text from a recipient within 72 h after a campaign message was
-- sent to them answers the latest such campaign. campaign_responses holds
-- one row per campaign and contact that answered it, so that a contact
-- counts once in replies and once in opt_outs however many texts they
-- send; campaign_counts keeps the two totals, so that reading a campaign
-- stays one row (00021).
--
-- messages_user_campaign_sent finds, at receive time, the latest campaign
-- message sent to the contact: the contact's campaign messages by
-- date_sent, newest first, one index seek. No FK on user_id: the totals
-- are the campaign's and stay as they are.
-- Same as migrations/sqlite/00030_campaign_responses.sql.

-- +goose Up
ALTER TABLE campaign_counts ADD COLUMN replies BIGINT NOT NULL DEFAULT 0;
ALTER TABLE campaign_counts ADD COLUMN opt_outs BIGINT NOT NULL DEFAULT 0;

CREATE TABLE campaign_responses (
	campaign_id  BIGINT NOT NULL REFERENCES campaigns (id),
	user_id      BIGINT NOT NULL,
	replied_at   BIGINT NOT NULL,
	opted_out_at BIGINT,
	PRIMARY KEY (campaign_id, user_id)
);

CREATE INDEX messages_user_campaign_sent ON messages (user_id, date_sent)
	WHERE campaign_id IS NOT NULL AND date_sent IS NOT NULL;

-- +goose Down
DROP INDEX messages_user_campaign_sent;
DROP TABLE campaign_responses;
ALTER TABLE campaign_counts DROP COLUMN opt_outs;
ALTER TABLE campaign_counts DROP COLUMN replies;
