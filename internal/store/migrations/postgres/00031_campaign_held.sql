-- A campaign's messages held for their sending window (D22's stats.held
-- and held_until, issue #32): queued with scheduled_at set.
--
-- held is counted in campaign_counts (00021) by the trigger below, so that
-- reading a campaign stays one row: counting 100,000 held messages when
-- read took 10–25 ms on SQLite and 50 ms on PostgreSQL (a busy machine),
-- and the campaign page asks every second while it waits. A message is
-- held when it is queued with scheduled_at set; it stops being held when
-- it leaves queued (sent, failed, canceled). Once per statement, as
-- 00021's counts, in campaign id order.
--
-- messages_campaign_held orders a campaign's held messages by
-- scheduled_at: held_until is its first entry (one seek), and so is the
-- recipient whose hold the campaign page explains. Same as
-- migrations/sqlite/00031_campaign_held.sql.

-- +goose Up
ALTER TABLE campaign_counts ADD COLUMN held BIGINT NOT NULL DEFAULT 0;

UPDATE campaign_counts SET held = (SELECT count(*) FROM messages m
	WHERE m.campaign_id = campaign_counts.campaign_id AND m.status = 'queued' AND m.scheduled_at IS NOT NULL);

CREATE INDEX messages_campaign_held ON messages (campaign_id, scheduled_at)
	WHERE status = 'queued' AND scheduled_at IS NOT NULL AND campaign_id IS NOT NULL;

-- +goose StatementBegin
CREATE FUNCTION messages_campaign_held() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
	d record;
BEGIN
	IF TG_OP = 'INSERT' THEN
		FOR d IN SELECT campaign_id, count(*) AS delta FROM new_rows
			WHERE campaign_id IS NOT NULL AND status = 'queued' AND scheduled_at IS NOT NULL
			GROUP BY campaign_id ORDER BY campaign_id LOOP
			UPDATE campaign_counts SET held = held + d.delta WHERE campaign_id = d.campaign_id;
		END LOOP;
	ELSIF TG_OP = 'DELETE' THEN
		FOR d IN SELECT campaign_id, count(*) AS delta FROM old_rows
			WHERE campaign_id IS NOT NULL AND status = 'queued' AND scheduled_at IS NOT NULL
			GROUP BY campaign_id ORDER BY campaign_id LOOP
			UPDATE campaign_counts SET held = held - d.delta WHERE campaign_id = d.campaign_id;
		END LOOP;
	ELSE
		IF NOT EXISTS (SELECT 1 FROM new_rows WHERE campaign_id IS NOT NULL) THEN
			RETURN NULL;
		END IF;
		FOR d IN SELECT n.campaign_id,
				sum((n.status = 'queued' AND n.scheduled_at IS NOT NULL)::int
					- (o.status = 'queued' AND o.scheduled_at IS NOT NULL)::int) AS delta
			FROM new_rows n JOIN old_rows o ON o.id = n.id
			WHERE n.campaign_id IS NOT NULL
				AND (n.status = 'queued' AND n.scheduled_at IS NOT NULL) <> (o.status = 'queued' AND o.scheduled_at IS NOT NULL)
			GROUP BY n.campaign_id ORDER BY n.campaign_id LOOP
			IF d.delta <> 0 THEN
				UPDATE campaign_counts SET held = held + d.delta WHERE campaign_id = d.campaign_id;
			END IF;
		END LOOP;
	END IF;
	RETURN NULL;
END
$$;
-- +goose StatementEnd

CREATE TRIGGER messages_campaign_held_insert AFTER INSERT ON messages
	REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION messages_campaign_held();
CREATE TRIGGER messages_campaign_held_update AFTER UPDATE ON messages
	REFERENCING OLD TABLE AS old_rows NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION messages_campaign_held();
CREATE TRIGGER messages_campaign_held_delete AFTER DELETE ON messages
	REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION messages_campaign_held();

-- +goose Down
DROP TRIGGER messages_campaign_held_delete ON messages;
DROP TRIGGER messages_campaign_held_update ON messages;
DROP TRIGGER messages_campaign_held_insert ON messages;
DROP FUNCTION messages_campaign_held();
DROP INDEX messages_campaign_held;
ALTER TABLE campaign_counts DROP COLUMN held;
