-- The dashboard's opt-ins and opt-outs over time (issue #32): hourly
-- counts per brand of messaging_consent becoming true and false, kept by
-- a trigger on user_history (every consent change is recorded there, in
-- its transaction, D18), so the dashboard reads a week in 168 rows
-- whatever the brand's size. Hours are UTC (occurred_at / 1 h); the
-- console groups them into days of the brand's zone.

-- +goose Up
CREATE TABLE consent_hourly (
	brand_id INTEGER NOT NULL,
	hour     INTEGER NOT NULL, -- occurred_at in whole hours since 1970 (UTC)
	opt_ins  INTEGER NOT NULL DEFAULT 0,
	opt_outs INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (brand_id, hour)
) WITHOUT ROWID;

INSERT INTO consent_hourly (brand_id, hour, opt_ins, opt_outs)
SELECT brand_id, occurred_at / 3600000000, sum(new_value = 'true'), sum(new_value = 'false')
FROM user_history WHERE field = 'messaging_consent' AND new_value IN ('true', 'false')
GROUP BY 1, 2;

-- +goose StatementBegin
CREATE TRIGGER user_history_consent_hourly AFTER INSERT ON user_history
WHEN NEW.field = 'messaging_consent' AND NEW.new_value IN ('true', 'false')
BEGIN
	INSERT INTO consent_hourly (brand_id, hour, opt_ins, opt_outs)
	VALUES (NEW.brand_id, NEW.occurred_at / 3600000000, NEW.new_value = 'true', NEW.new_value = 'false')
	ON CONFLICT (brand_id, hour) DO UPDATE SET opt_ins = opt_ins + excluded.opt_ins, opt_outs = opt_outs + excluded.opt_outs;
END;
-- +goose StatementEnd

-- +goose Down
DROP TRIGGER user_history_consent_hourly;
DROP TABLE consent_hourly;
