-- A campaign's audience without two foreign-key checks per message (issue
-- #34: a 1,000,000-recipient audience written in ≤ 10 s). Each message row
-- ran messages_user_id_fkey and messages_brand_id_fkey: a SELECT … FOR KEY
-- SHARE of its user and of its brand, the first locking (writing) every
-- user's row. Measured on a chunk's INSERT … SELECT of 196,000 messages
-- (EXPLAIN ANALYZE): 7.2 s of its 16.6 s in the two checks
-- (docs/performance.md, "A campaign's audience at 1,000,000 contacts").
--
-- What they guarded cannot happen: users and brands are never deleted (a
-- contact's DELETE sets is_deleted, D5; nothing deletes a brand), and every
-- writer of messages names a user it read in its transaction (the chunk
-- selects its users, qInsertMessageToUser checks the brand and is_deleted,
-- inbound finds or creates the sender, flows read their recipients). A
-- message for another brand's contact was never a key violation: the
-- writers' brand_id = ? filters keep that out, as they keep out an id of
-- no user (tests: TestSendMessageUnknownRecipient, TestCampaignResolve's
-- other brand's contact). SQLite keeps its
-- REFERENCES (removing them rewrites the table).
--
-- A plain ALTER: dropping a constraint takes the table's lock for an
-- instant and reads no rows.

-- +goose Up
ALTER TABLE messages DROP CONSTRAINT IF EXISTS messages_user_id_fkey,
	DROP CONSTRAINT IF EXISTS messages_brand_id_fkey;

-- +goose Down
-- NOT VALID then VALIDATE: the check of the existing rows takes no lock
-- that holds up writes.
ALTER TABLE messages ADD CONSTRAINT messages_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) NOT VALID,
	ADD CONSTRAINT messages_brand_id_fkey FOREIGN KEY (brand_id) REFERENCES brands (id) NOT VALID;
ALTER TABLE messages VALIDATE CONSTRAINT messages_user_id_fkey;
ALTER TABLE messages VALIDATE CONSTRAINT messages_brand_id_fkey;
