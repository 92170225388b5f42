-- The inbox (issue #32): one row per contact who has texted the brand,
-- with the conversation's state: open or resolved, the operator it is
-- assigned to, when an operator last opened it (unread = a text came in
-- since), and whether the latest text was a keyword Parley answered
-- itself (D12: not waiting for an operator). last_inbound_at copies the
-- contact's, so a page of a view is one range of an index:
-- conversations_brand_view (all) and conversations_brand_assignee (mine,
-- unassigned). A keyword's automatic answer is an outbound message of the
-- conversation, marked by messages.auto_reply (the keyword's kind: stop,
-- start, help). Same as migrations/sqlite/00038_conversations.sql.

-- +goose Up
CREATE TABLE conversations (
	user_id         BIGINT PRIMARY KEY REFERENCES users (id),
	brand_id        BIGINT NOT NULL REFERENCES brands (id),
	status          TEXT    NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'resolved')),
	assignee_id     BIGINT REFERENCES operators (id) ON DELETE SET NULL,
	last_inbound_at BIGINT NOT NULL,
	auto_answered   BOOLEAN NOT NULL DEFAULT FALSE,
	read_at         BIGINT
);
CREATE INDEX conversations_brand_view ON conversations (brand_id, status, last_inbound_at, user_id);
CREATE INDEX conversations_brand_assignee ON conversations (brand_id, status, assignee_id, last_inbound_at, user_id);
CREATE INDEX conversations_assignee ON conversations (assignee_id) WHERE assignee_id IS NOT NULL;

-- Every contact who has texted starts open and unread.
INSERT INTO conversations (user_id, brand_id, last_inbound_at)
SELECT id, brand_id, last_inbound_at FROM users WHERE last_inbound_at IS NOT NULL;

ALTER TABLE messages ADD COLUMN auto_reply TEXT CHECK (auto_reply IN ('stop', 'start', 'help'));

-- +goose Down
ALTER TABLE messages DROP COLUMN auto_reply;
DROP TABLE conversations;
