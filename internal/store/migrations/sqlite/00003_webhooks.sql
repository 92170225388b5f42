-- Events and webhooks (issue #5): the event outbox, the brand's endpoints,
-- and every delivery attempt.

-- +goose Up
CREATE TABLE events (
	id           TEXT    PRIMARY KEY, -- evt_…
	brand_id     INTEGER NOT NULL REFERENCES brands (id),
	type         TEXT    NOT NULL,
	payload      TEXT    NOT NULL, -- the whole event as delivered: {"id","type","created_at","data"}
	date_created INTEGER NOT NULL
);
CREATE INDEX events_brand ON events (brand_id, date_created);

CREATE TABLE webhook_endpoints (
	id                 INTEGER PRIMARY KEY,
	brand_id           INTEGER NOT NULL REFERENCES brands (id),
	url                TEXT    NOT NULL,
	description        TEXT    NOT NULL DEFAULT '',
	event_types        TEXT    NOT NULL, -- JSON array; ["*"] for all
	secret             BLOB    NOT NULL, -- sealed under the server key
	old_secret         BLOB,             -- sealed; signs alongside until old_secret_until
	old_secret_until   INTEGER,
	disabled           INTEGER NOT NULL DEFAULT 0,
	failing_since      INTEGER,
	date_created       INTEGER NOT NULL,
	date_last_updated  INTEGER NOT NULL
);
CREATE INDEX webhook_endpoints_brand ON webhook_endpoints (brand_id);

CREATE TABLE webhook_deliveries (
	id           INTEGER PRIMARY KEY,
	brand_id     INTEGER NOT NULL REFERENCES brands (id),
	endpoint_id  INTEGER NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
	event_id     TEXT    NOT NULL REFERENCES events (id),
	event_type   TEXT    NOT NULL,
	attempt      INTEGER NOT NULL,
	status       INTEGER,          -- HTTP status; NULL when none was received
	latency_ms   INTEGER NOT NULL,
	response     TEXT    NOT NULL DEFAULT '', -- first 1 KiB
	error        TEXT    NOT NULL DEFAULT '',
	outcome      TEXT    NOT NULL, -- delivered, retrying, failed, disabled
	date_created INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (brand_id, endpoint_id, id);

-- +goose Down
DROP TABLE webhook_deliveries;
DROP TABLE webhook_endpoints;
DROP TABLE events;
