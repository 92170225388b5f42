-- D18: contact history. Every change of a user's messaging_consent and of
-- each custom data value, in the transaction of the change; it outlives
-- the user's deletion. It takes over consent_events, whose rows become
-- its first entries.

-- +goose Up
CREATE TABLE user_history (
	id          INTEGER PRIMARY KEY AUTOINCREMENT, -- ids a client sees are never reused
	brand_id    INTEGER NOT NULL REFERENCES brands (id),
	user_id     INTEGER NOT NULL REFERENCES users (id),
	field       TEXT    NOT NULL, -- messaging_consent or custom_data.<key>
	old_value   TEXT,             -- JSON; NULL is null
	new_value   TEXT,
	source      TEXT    NOT NULL, -- api, keyword, carrier, import, console, admin, extraction
	detail      TEXT    NOT NULL DEFAULT '',
	message_id  INTEGER,
	occurred_at INTEGER NOT NULL
);
CREATE INDEX user_history_user ON user_history (brand_id, user_id, id);

INSERT INTO user_history (brand_id, user_id, field, old_value, new_value, source, detail, message_id, occurred_at)
SELECT brand_id, user_id, 'messaging_consent',
	CASE previous_value WHEN 1 THEN 'true' WHEN 0 THEN 'false' END,
	CASE new_value WHEN 1 THEN 'true' WHEN 0 THEN 'false' END,
	CASE source WHEN 'provider' THEN 'carrier' ELSE source END,
	detail, message_id, date_created
FROM consent_events ORDER BY id;

DROP TABLE consent_events;

-- +goose Down
CREATE TABLE consent_events (
	id             INTEGER PRIMARY KEY,
	brand_id       INTEGER NOT NULL REFERENCES brands (id),
	user_id        INTEGER NOT NULL REFERENCES users (id),
	previous_value INTEGER,
	new_value      INTEGER,
	source         TEXT    NOT NULL,
	detail         TEXT    NOT NULL DEFAULT '',
	message_id     INTEGER,
	date_created   INTEGER NOT NULL
);
CREATE INDEX consent_events_user ON consent_events (brand_id, user_id, id);
INSERT INTO consent_events (brand_id, user_id, previous_value, new_value, source, detail, message_id, date_created)
SELECT brand_id, user_id,
	CASE old_value WHEN 'true' THEN 1 WHEN 'false' THEN 0 END,
	CASE new_value WHEN 'true' THEN 1 WHEN 'false' THEN 0 END,
	CASE source WHEN 'carrier' THEN 'provider' ELSE source END,
	detail, message_id, occurred_at
FROM user_history WHERE field = 'messaging_consent' ORDER BY id;
DROP TABLE user_history;
