-- Flows (D21, issue #33): automated messages that react to one contact.
--
-- A flow's steps change with its version; flow_versions keeps each
-- version's steps, so a run keeps the steps it entered with (D21).
--
-- flow_runs holds each contact's way through a flow. The partial unique
-- index flow_runs_one_active is what makes "at most one active run of a
-- flow per contact" hold across nodes: a second entry's INSERT … ON
-- CONFLICT DO NOTHING writes nothing. next_at is when the run's next step
-- is due; the runner reads the earliest (flow_runs_due) and sleeps until
-- then, so a million waiting runs cost nothing while none is due.
--
-- A send step writes its message with flow_run_id and flow_step set; the
-- partial unique index on them makes a step send at most once even if a
-- batch is replayed.
--
-- flow_counts and flow_step_counts are the stats (D21), written in the
-- transaction that changes a run.
--
-- user_events holds POST /events (D21): the event trigger and the branch "this
-- event since the contact entered" read it.

-- +goose Up
CREATE TABLE flows (
	id              INTEGER PRIMARY KEY AUTOINCREMENT, -- ids a client sees are never reused
	brand_id        INTEGER NOT NULL REFERENCES brands (id),
	name            TEXT    NOT NULL,
	trigger_type    TEXT    NOT NULL,
	-- trigger_key is what the trigger matches on: the keyword, the event
	-- name, the segment id, the date field; '' for the others.
	trigger_key     TEXT    NOT NULL DEFAULT '',
	trigger_json    TEXT    NOT NULL,
	version         INTEGER NOT NULL DEFAULT 1,
	active          INTEGER NOT NULL DEFAULT 0,
	reentry_seconds INTEGER,
	-- activated_at is when the flow last became active: the members of a
	-- segment then do not enter (D21).
	activated_at    INTEGER,
	-- scanned_at is how far the scans of segment_entered and date
	-- triggers got: NULL for a segment flow not yet scanned since it was
	-- activated (its first scan only records the members).
	scanned_at      INTEGER,
	deleted_at      INTEGER,
	date_created    INTEGER NOT NULL,
	date_updated    INTEGER NOT NULL
);
CREATE INDEX flows_brand_id ON flows (brand_id, id) WHERE deleted_at IS NULL;
-- A trigger's lookup: the brand's active flows of a type and key.
CREATE INDEX flows_trigger ON flows (brand_id, trigger_type, trigger_key) WHERE active AND deleted_at IS NULL;

CREATE TABLE flow_versions (
	flow_id INTEGER NOT NULL REFERENCES flows (id),
	version INTEGER NOT NULL,
	steps   TEXT    NOT NULL,
	PRIMARY KEY (flow_id, version)
);

CREATE TABLE flow_runs (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	brand_id    INTEGER NOT NULL,
	flow_id     INTEGER NOT NULL REFERENCES flows (id),
	version     INTEGER NOT NULL,
	user_id     INTEGER NOT NULL,
	status      TEXT    NOT NULL CHECK (status IN ('active', 'completed', 'exited', 'canceled')),
	step        INTEGER NOT NULL DEFAULT 0,
	entered_at  INTEGER NOT NULL,
	next_at     INTEGER,
	ended_at    INTEGER,
	exit_reason TEXT,
	-- event is the triggering event's properties (JSON), for {{event.x}}.
	event       TEXT,
	-- claimed_at marks a run a runner has taken for its due step; a claim
	-- older than the stale age is taken again (the runner died).
	claimed_at  INTEGER
);
CREATE UNIQUE INDEX flow_runs_one_active ON flow_runs (flow_id, user_id) WHERE status = 'active';
CREATE INDEX flow_runs_due ON flow_runs (next_at) WHERE status = 'active';
-- GET /flows/{id}/runs, by id, with or without a status.
CREATE INDEX flow_runs_flow ON flow_runs (flow_id, id);
-- A contact's runs: re-entry, STOP and deletion end them, the contact page.
CREATE INDEX flow_runs_user ON flow_runs (user_id, flow_id, entered_at);

CREATE TABLE flow_counts (
	flow_id   INTEGER PRIMARY KEY REFERENCES flows (id),
	entered   INTEGER NOT NULL DEFAULT 0,
	active    INTEGER NOT NULL DEFAULT 0,
	completed INTEGER NOT NULL DEFAULT 0,
	exited    INTEGER NOT NULL DEFAULT 0,
	canceled  INTEGER NOT NULL DEFAULT 0,
	sent      INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE flow_step_counts (
	flow_id INTEGER NOT NULL REFERENCES flows (id),
	step    INTEGER NOT NULL,
	reached INTEGER NOT NULL DEFAULT 0,
	sent    INTEGER NOT NULL DEFAULT 0,
	skipped INTEGER NOT NULL DEFAULT 0,
	PRIMARY KEY (flow_id, step)
);

-- segment_entered triggers: the members each flow saw last, so a contact
-- enters when it starts matching.
CREATE TABLE flow_segment_members (
	flow_id INTEGER NOT NULL,
	user_id INTEGER NOT NULL,
	PRIMARY KEY (flow_id, user_id)
) WITHOUT ROWID;

CREATE TABLE user_events (
	id          INTEGER PRIMARY KEY AUTOINCREMENT,
	brand_id    INTEGER NOT NULL,
	user_id     INTEGER NOT NULL,
	name        TEXT    NOT NULL,
	properties  TEXT    NOT NULL DEFAULT '{}',
	occurred_at INTEGER NOT NULL
);
CREATE INDEX user_events_user ON user_events (user_id, name, occurred_at);

ALTER TABLE messages ADD COLUMN flow_id INTEGER; -- NULL outside flows
ALTER TABLE messages ADD COLUMN flow_run_id INTEGER;
ALTER TABLE messages ADD COLUMN flow_step INTEGER;
CREATE UNIQUE INDEX messages_flow_run_step ON messages (flow_run_id, flow_step) WHERE flow_run_id IS NOT NULL;
CREATE INDEX messages_brand_flow ON messages (brand_id, flow_id, id) WHERE flow_id IS NOT NULL;

-- +goose Down
DROP INDEX messages_brand_flow;
DROP INDEX messages_flow_run_step;
ALTER TABLE messages DROP COLUMN flow_step;
ALTER TABLE messages DROP COLUMN flow_run_id;
ALTER TABLE messages DROP COLUMN flow_id;
DROP TABLE user_events;
DROP TABLE flow_segment_members;
DROP TABLE flow_step_counts;
DROP TABLE flow_counts;
DROP TABLE flow_runs;
DROP TABLE flow_versions;
DROP TABLE flows;
