-- Issue #35: the foreign keys checked row by row on the hot write paths go
-- on PostgreSQL, as user_history's did (00056). Each is a referential-
-- integrity row trigger, a query of the parent with FOR KEY SHARE:
-- import_phones ran two for every row of an imported file (its import and
-- its brand), users one for every contact created and idempotency_keys one
-- for every keyed request, each a lock on the brand's one row. Measured
-- on the 200,000-row import: the backends' CPU 10.6 – 11.7 s with them,
-- 8.3 – 9.4 s without (docs/performance.md, "Session 25").
-- What they guarded cannot happen: brands and imports are never deleted;
-- every writer of these tables takes the brand from the request's
-- credentials or the import it runs, and the import from its own row;
-- import_phones is emptied when its import ends. SQLite keeps users' and
-- idempotency_keys': there a check is a lookup inside the insert, one a
-- row, not a trigger; the import's tables, with one to four lookups a
-- contact, lost theirs there too (sqlite/00060 and 00061).

-- +goose Up
ALTER TABLE import_phones DROP CONSTRAINT import_phones_import_id_fkey, DROP CONSTRAINT import_phones_brand_id_fkey;
ALTER TABLE users DROP CONSTRAINT users_brand_id_fkey;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_brand_id_fkey;

-- +goose Down
ALTER TABLE import_phones ADD CONSTRAINT import_phones_import_id_fkey FOREIGN KEY (import_id) REFERENCES imports (id),
	ADD CONSTRAINT import_phones_brand_id_fkey FOREIGN KEY (brand_id) REFERENCES brands (id);
ALTER TABLE users ADD CONSTRAINT users_brand_id_fkey FOREIGN KEY (brand_id) REFERENCES brands (id);
ALTER TABLE idempotency_keys ADD CONSTRAINT idempotency_keys_brand_id_fkey FOREIGN KEY (brand_id) REFERENCES brands (id);
