-- messages gets fillfactor 45 (issue #35, the PostgreSQL drain): a
-- campaign's or a flow's claim sets sending_at and attempts, which no
-- index reads, so with room on the page each claimed message's new version
-- is a HOT update and writes none of the entries its ~8 indexes would take
-- (one of a message's three updates; the sent and delivered writes change
-- status, which partial indexes read, and stay full updates).
--
-- A claim rewrites every message on the pages it covers in one statement
-- (a batch is consecutive ids), so a page needs room for a second copy of
-- all its rows: measured on a copy of messages with its indexes, 20,000
-- queued rows, claims of 500 (load 12): fillfactor 50 made all 500 HOT,
-- 70 only 211, 100 none; a claim took 46 ms at 50 against 83 ms at 100.
-- 45, not 50: the new version is longer than the old (sending_at was
-- NULL), and with a short body 18 of 500 claimed rows did not fit at 50
-- (TestCampaignClaimIsHOT).
-- The space is not lost for long: after the claim, sent and delivered
-- writes, the table was the same size at 50 and at 100 (1,075 and 1,042
-- pages), since those updates leave the same slack behind.
--
-- Pages written before this migration stay full until the table is
-- rewritten (VACUUM FULL, CLUSTER); a new campaign's messages are new pages.

-- +goose Up
ALTER TABLE messages SET (fillfactor = 45);

-- +goose Down
ALTER TABLE messages RESET (fillfactor);
