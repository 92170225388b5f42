-- Operators are unique per (brand, email), not per email (issue #31 item
-- 10): a brand's admin adding an operator learns nothing of other brands'
-- operators and cannot reserve another company's address. A person who
-- works for several brands has one row, and one password, in each; the
-- sign-in asks which brand after the password is checked, with a one-time
-- 'choice' token per matching brand.
--
-- Down puts the global uniqueness back; it fails, changing nothing, while
-- an email belongs to operators of several brands (remove them first).

-- +goose Up
ALTER TABLE operators DROP CONSTRAINT operators_email_key;
ALTER TABLE operators ADD CONSTRAINT operators_brand_email UNIQUE (brand_id, email);
-- Sign-in looks an email up across brands.
CREATE INDEX operators_email ON operators (email);
ALTER TABLE operator_tokens DROP CONSTRAINT operator_tokens_kind_check;
ALTER TABLE operator_tokens ADD CONSTRAINT operator_tokens_kind_check CHECK (kind IN ('session', 'link', 'choice'));

-- +goose Down
DELETE FROM operator_tokens WHERE kind = 'choice';
ALTER TABLE operator_tokens DROP CONSTRAINT operator_tokens_kind_check;
ALTER TABLE operator_tokens ADD CONSTRAINT operator_tokens_kind_check CHECK (kind IN ('session', 'link'));
DROP INDEX operators_email;
ALTER TABLE operators DROP CONSTRAINT operators_brand_email;
ALTER TABLE operators ADD CONSTRAINT operators_email_key UNIQUE (email);
