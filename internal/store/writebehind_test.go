package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// TestGroupCreatesHeld: the creates of one group commit, whose users
// PostgreSQL inserts together (issue #15), keep every outcome of creates
// inserted one by one: each created user is stored under the id it was
// given, a number taken before the group or by an earlier write of the
// group fails that write alone with duplicate_record_found (D5), and a
// statement after a create — a lookup, a history row that references
// it — sees the user. The refusals cost the group one more run, all in
// one transaction, not a transaction per write.
func TestGroupCreatesHeld(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	taken := &parley.User{BrandID: brand, PhoneNumber: "+14155550999"}
	if err := insertUser(t, db, taken); err != nil {
		t.Fatal(err)
	}
	// Writes 0–3 new numbers, 4 the number taken before, 5 the number of
	// write 0 (whichever of the two runs first takes it).
	phones := []string{"+14155550900", "+14155550901", "+14155550902", "+14155550903", taken.PhoneNumber, "+14155550900"}
	users := make([]*parley.User, len(phones))
	seen := make([]*parley.User, len(phones))
	txs, errs := groupOfWrites(t, db, len(phones), func(i int, tx *store.Tx) error {
		ctx := t.Context()
		u := &parley.User{BrandID: brand, PhoneNumber: phones[i],
			DateCreated: parley.Time{Time: tx.Now()}, DateLastUpdated: parley.Time{Time: tx.Now()}}
		users[i] = u
		if err := tx.InsertUser(ctx, u); err != nil {
			return err
		}
		var err error
		if seen[i], err = tx.FindUserByPhone(ctx, brand, u.PhoneNumber); err != nil {
			return fmt.Errorf("lookup after the create: %w", err)
		}
		return tx.InsertHistory(ctx, brand, []parley.HistoryEntry{{UserID: u.ID, Field: "messaging_consent", NewValue: []byte("true")}})
	})
	created, dups := 0, 0
	for i, err := range errs {
		switch {
		case err == nil:
			created++
			if seen[i] == nil || seen[i].ID != users[i].ID {
				t.Errorf("write %d: the lookup after its create found %+v, want id %d", i, seen[i], users[i].ID)
			}
			got, err := db.FindUserByID(t.Context(), brand, users[i].ID)
			if err != nil || got.PhoneNumber != phones[i] {
				t.Errorf("write %d: user %d is %+v (%v), want %s", i, users[i].ID, got, err, phones[i])
			}
		case parley.ErrorCode(err) == parley.EDuplicate:
			dups++
		default:
			t.Errorf("write %d (%s): %v", i, phones[i], err)
		}
	}
	if errs[4] == nil || created != 4 || dups != 2 {
		t.Errorf("outcomes %v: want 4 created, the taken number and one of the two same numbers refused", errs)
	}
	// All in one transaction: the refusals did not make the group run
	// each write alone.
	for i := range txs {
		if txs[i] != txs[0] {
			t.Errorf("write %d ran in a transaction of its own", i)
		}
	}
	var n, h int
	db.Writer().QueryRow("SELECT count(*) FROM users").Scan(&n)
	db.Writer().QueryRow("SELECT count(*) FROM user_history").Scan(&h)
	if n != 5 || h != 4 {
		t.Errorf("%d users and %d history rows stored, want 5 and 4", n, h)
	}

	// A create outside a group takes its id from the same sequence as the
	// group's reserved ones: never one of them.
	later := &parley.User{BrandID: brand, PhoneNumber: "+14155550904"}
	if err := insertUser(t, db, later); err != nil {
		t.Fatalf("a create after the group: %v", err)
	}
	for i, u := range users {
		if errs[i] == nil && u.ID == later.ID {
			t.Errorf("id %d given twice", u.ID)
		}
	}
}

// TestSignedKeyedGroup: in a group of signed writes with keys — whose
// signatures and keys PostgreSQL records and reads with one statement
// (issue #15) — a key held by an earlier request refuses its write with
// that request's answer, a fresh key is stored with its write's answer,
// and a copy of a recorded request is a replay that stores no key (D2,
// D13).
func TestSignedKeyedGroup(t *testing.T) {
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	ctx := t.Context()
	now := time.Now().Truncate(time.Microsecond)
	db.Now = func() time.Time { return now }
	signed := func(sig string) *parley.SignedWrite {
		return &parley.SignedWrite{Key: []byte(sig), Expires: now.Add(time.Minute)}
	}
	first := parley.Origin{Signed: signed("sig-first"), Keyed: keyedWrite(brand, "held", "request-1", now)}
	if err := db.WithGroupTx(ctx, first, func(_ context.Context, tx *store.Tx) error { tx.Answer("first"); return nil }); err != nil {
		t.Fatal(err)
	}
	origins := []parley.Origin{
		{Signed: signed("sig-again"), Keyed: keyedWrite(brand, "held", "request-1", now)},
		{Signed: signed("sig-fresh"), Keyed: keyedWrite(brand, "fresh", "request-2", now)},
		{Signed: signed("sig-first"), Keyed: keyedWrite(brand, "copy", "request-3", now)},
	}
	// Each write's transactions: on SQLite a held key's write may run in
	// one that rolls back (the group reads its keys only when run again).
	ranIn := make([][]*sql.Tx, len(origins))
	_, errs := groupOfWritesCtx(t, db, len(origins), func(i int) parley.Origin { return origins[i] }, func(i int, tx *store.Tx) error {
		ranIn[i] = append(ranIn[i], tx.SQL())
		tx.Answer(fmt.Sprint("answer ", i))
		return nil
	})
	ran := make([]bool, len(origins)) // in the transaction that committed the fresh key
	for i := range ran {
		ran[i] = len(ranIn[1]) > 0 && slices.Contains(ranIn[i], ranIn[1][len(ranIn[1])-1])
	}
	var taken *parley.KeyTaken
	if !errors.As(errs[0], &taken) || ran[0] || taken.Record.Answer == nil || string(taken.Record.Answer.Body) != "first" {
		t.Errorf("a held key: %v (ran %v); want it taken with the first answer", errs[0], ran[0])
	}
	if a := origins[1].Keyed.Stored(); errs[1] != nil || a == nil || string(a.Body) != "answer 1" {
		t.Errorf("a fresh key: %v, stored %+v; want its answer stored", errs[1], a)
	}
	if !errors.Is(errs[2], parley.ErrReplayed) || ran[2] {
		t.Errorf("a copy: %v (ran %v); want a replay that does not run", errs[2], ran[2])
	}
	kw := keyedWrite(brand, "copy", "request-3", now)
	if err := db.WithOriginTx(ctx, parley.Origin{Keyed: kw}, func(*store.Tx) error { return nil }); err != nil {
		t.Errorf("the copy's key: %v; want it never stored", err)
	}
}

// TestKeyReadPlansOnYoungTable: a PostgreSQL group reads its keys through
// the primary key even with the plan made while idempotency_keys was
// empty and never analyzed, which a prepared statement keeps: as a join,
// that plan hashed a scan of the whole table for every group (issue #15).
func TestKeyReadPlansOnYoungTable(t *testing.T) {
	if apitest.Engine() != "postgres" {
		t.Skip("PostgreSQL's planner (PARLEY_TEST_POSTGRES_URL)")
	}
	db := mustOpenDB(t)
	ctx := t.Context()
	conn, err := db.Writer().Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `SET plan_cache_mode = force_generic_plan`); err != nil {
		t.Fatal(err)
	}
	for name, q := range map[string]string{
		"read_keys":     store.QueryReadKeys,
		"sigs_and_keys": store.QueryRecordSignaturesReadKeys,
	} {
		if _, err := conn.ExecContext(ctx, `PREPARE `+name+` AS `+db.Rebind(q)); err != nil {
			t.Fatal(err)
		}
		args := `'{1}', '{k}'`
		if name == "sigs_and_keys" {
			args = `'{1}', '{"\\x00"}', '{1}', '{k}'`
		}
		rows, err := conn.QueryContext(ctx, `EXPLAIN EXECUTE `+name+`(`+args+`)`)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var line string
			if err := rows.Scan(&line); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, line)
		}
		rows.Close()
		p := strings.Join(plan, "\n")
		if !strings.Contains(p, "idempotency_keys_pkey") || strings.Contains(p, "Seq Scan on idempotency_keys") {
			t.Errorf("%s does not find keys through the primary key:\n%s", name, p)
		}
	}
}
