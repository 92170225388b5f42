-- Issue #35: an import writes its contacts' history without a statement
-- per row beyond the rows themselves. The dashboard's hourly consent
-- counts (00043) were kept by a row trigger on user_history, an upsert per
-- consent entry (12 µs each, a quarter of the history's cost in an
-- import); the store now adds a whole history insert's consent entries in
-- one upsert, in the same transaction (Tx.InsertHistory, the only writer
-- of user_history).

-- +goose Up
DROP TRIGGER user_history_consent_hourly;

-- +goose Down
-- +goose StatementBegin
CREATE TRIGGER user_history_consent_hourly AFTER INSERT ON user_history
WHEN NEW.field = 'messaging_consent' AND NEW.new_value IN ('true', 'false')
BEGIN
	INSERT INTO consent_hourly (brand_id, hour, opt_ins, opt_outs)
	VALUES (NEW.brand_id, NEW.occurred_at / 3600000000, NEW.new_value = 'true', NEW.new_value = 'false')
	ON CONFLICT (brand_id, hour) DO UPDATE SET opt_ins = opt_ins + excluded.opt_ins, opt_outs = opt_outs + excluded.opt_outs;
END;
-- +goose StatementEnd
