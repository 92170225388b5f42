-- A console session opened by a one-time sign-in link may set the
-- operator's password without the current one (a first password, or a
-- forgotten one); any other session must give the current password to
-- change it. Setting the password clears the mark.

-- +goose Up
ALTER TABLE operator_tokens ADD COLUMN via_link BOOLEAN NOT NULL DEFAULT FALSE;

-- +goose Down
ALTER TABLE operator_tokens DROP COLUMN via_link;
