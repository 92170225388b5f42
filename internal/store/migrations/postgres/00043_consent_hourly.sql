-- The dashboard's opt-ins and opt-outs over time (issue #32). The same as
-- migrations/sqlite/00043_consent_hourly.sql, with a statement trigger
-- that adds a whole insert's rows at once (an import writes thousands).

-- +goose Up
CREATE TABLE consent_hourly (
	brand_id BIGINT NOT NULL,
	hour     BIGINT NOT NULL, -- occurred_at in whole hours since 1970 (UTC)
	opt_ins  BIGINT NOT NULL DEFAULT 0,
	opt_outs BIGINT NOT NULL DEFAULT 0,
	PRIMARY KEY (brand_id, hour)
);

INSERT INTO consent_hourly (brand_id, hour, opt_ins, opt_outs)
SELECT brand_id, occurred_at / 3600000000, count(*) FILTER (WHERE new_value = 'true'), count(*) FILTER (WHERE new_value = 'false')
FROM user_history WHERE field = 'messaging_consent' AND new_value IN ('true', 'false')
GROUP BY 1, 2;

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

-- +goose Down
DROP TRIGGER user_history_consent_hourly ON user_history;
DROP FUNCTION user_history_consent_hourly();
DROP TABLE consent_hourly;
