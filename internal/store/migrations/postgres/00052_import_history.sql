-- Issue #35: an import writes its contacts' history without a statement
-- per row beyond the rows themselves. The dashboard's hourly consent
-- counts (00043) were kept by a statement trigger on user_history, which
-- built a transition table of every insert; the store now adds a whole
-- history insert's consent entries in one upsert, in the same transaction
-- (Tx.InsertHistory, the only writer of user_history), as on SQLite.
--
-- Two indexes of users no query needs, each written with every contact:
-- users_brand_consent (00015) is users_brand_consent_id (00036) without
-- its id, which the dashboard's count by consent reads as well; and
-- users_brand_email (00015) is users_brand_email_c (00036) in the
-- database's collation, where the search by an exact email now compares
-- in "C" too (equal texts are equal bytes in both).

-- +goose Up
DROP TRIGGER user_history_consent_hourly ON user_history;
DROP FUNCTION user_history_consent_hourly();
DROP INDEX users_brand_consent;
DROP INDEX users_brand_email;

-- +goose Down
CREATE INDEX users_brand_email ON users (brand_id, lower(email_address)) WHERE is_deleted = FALSE;
CREATE INDEX users_brand_consent ON users (brand_id, messaging_consent) WHERE is_deleted = FALSE;
-- +goose StatementBegin
CREATE FUNCTION user_history_consent_hourly() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
	INSERT INTO consent_hourly (brand_id, hour, opt_ins, opt_outs)
	SELECT brand_id, occurred_at / 3600000000, count(*) FILTER (WHERE new_value = 'true'), count(*) FILTER (WHERE new_value = 'false')
	FROM new_rows WHERE field = 'messaging_consent' AND new_value IN ('true', 'false')
	GROUP BY 1, 2
	ON CONFLICT (brand_id, hour) DO UPDATE SET opt_ins = consent_hourly.opt_ins + excluded.opt_ins,
		opt_outs = consent_hourly.opt_outs + excluded.opt_outs;
	RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER user_history_consent_hourly AFTER INSERT ON user_history
REFERENCING NEW TABLE AS new_rows FOR EACH STATEMENT EXECUTE FUNCTION user_history_consent_hourly();
