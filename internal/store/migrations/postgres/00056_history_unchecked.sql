-- Issue #35: user_history's foreign keys (00010) go on PostgreSQL. Each
-- entry ran two referential-integrity row triggers, a query of its brand
-- and one of its contact with FOR KEY SHARE, which also writes a lock (and
-- WAL) on the contact's row: inserting 400,000 entries took 22.7 s with
-- them and 5.8 s without (scratch tables, load 14). An import writes four
-- entries a contact. What they guarded cannot happen: users and brands are
-- never deleted (a deleted contact is is_deleted, and its history
-- outlives it, D18), and every writer of user_history takes the contact
-- from its own transaction (Tx.InsertHistory's callers, and
-- Tx.InsertUsersWithHistory from the rows its statement inserts).
-- SQLite keeps them: there a check is two lookups inside the insert, not a
-- trigger.

-- +goose Up
ALTER TABLE user_history DROP CONSTRAINT user_history_brand_id_fkey, DROP CONSTRAINT user_history_user_id_fkey;

-- +goose Down
ALTER TABLE user_history ADD CONSTRAINT user_history_brand_id_fkey FOREIGN KEY (brand_id) REFERENCES brands (id),
	ADD CONSTRAINT user_history_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id);
