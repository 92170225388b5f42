-- messages_provider_id holds only the messages a provider took (issue #34).
-- A queued message has no provider_id, and every one of them (a campaign's
-- audience: a million at once) still took an entry in this unique index,
-- one of the eight a campaign message writes. The lookups (provider = ? AND
-- provider_id = ? / IN (…)) imply provider_id IS NOT NULL, so they use the
-- partial index; NULLs were never unique anyway.
--
-- Built CONCURRENTLY, outside a transaction, so a large installation keeps
-- taking writes while it builds; IF [NOT] EXISTS lets an interrupted run go
-- again. The new index is built under another name first: the uniqueness
-- of provider ids is never left unguarded.

-- +goose NO TRANSACTION
-- +goose Up
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS messages_provider_id_taken ON messages (provider, provider_id)
	WHERE provider_id IS NOT NULL;
DROP INDEX CONCURRENTLY IF EXISTS messages_provider_id;
ALTER INDEX messages_provider_id_taken RENAME TO messages_provider_id;

-- +goose Down
CREATE UNIQUE INDEX CONCURRENTLY IF NOT EXISTS messages_provider_id_all ON messages (provider, provider_id);
DROP INDEX CONCURRENTLY IF EXISTS messages_provider_id;
ALTER INDEX messages_provider_id_all RENAME TO messages_provider_id;
