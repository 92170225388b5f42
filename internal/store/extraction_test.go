package store_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// sweepText stores an inbound text in q (a transaction or the pool) and
// returns its id.
func sweepText(t *testing.T, q interface {
	QueryRowContext(context.Context, string, ...any) *sql.Row
}, brand, user int64, body string) int64 {
	t.Helper()
	var id int64
	ph := "?"
	if apitest.Engine() == "postgres" {
		ph = "$1"
	}
	if err := q.QueryRowContext(t.Context(), fmt.Sprintf(`INSERT INTO messages (brand_id, user_id, direction, status, type, body, date_created)
	VALUES (%d, %d, 'inbound', 'delivered', 'CONVERSATIONAL', %s, 0) RETURNING id`, brand, user, ph), body).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

func batchIDs(t *testing.T, db *store.DB) (*store.ExtractionBatch, []int64) {
	t.Helper()
	b, err := db.ReadExtractionBatch(t.Context(), 100)
	if err != nil {
		t.Fatal(err)
	}
	var ids []int64
	for _, x := range b.Texts {
		ids = append(ids, x.Pos.ID)
	}
	return b, ids
}

// TestExtractionBatchNeverPassesAText: on PostgreSQL a message's id is
// taken before its transaction commits, so a text with a lower id can
// become visible after one with a higher id. The sweep reads texts only
// once every transaction before theirs has ended, in the order of their
// transactions, so the cursor never passes a text still to come (#19, D20).
func TestExtractionBatchNeverPassesAText(t *testing.T) {
	t.Parallel()
	if apitest.Engine() != "postgres" {
		t.Skip("SQLite's one writer commits message ids in order")
	}
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	u := &parley.User{BrandID: brand, PhoneNumber: "+14155552671"}
	if err := insertUser(t, db, u); err != nil {
		t.Fatal(err)
	}
	u2 := &parley.User{BrandID: brand, PhoneNumber: "+14155552672"}
	if err := insertUser(t, db, u2); err != nil {
		t.Fatal(err)
	}
	slow, err := db.Writer().BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Rollback()
	// Without the activity trigger, whose lock (00009) would make the
	// second text wait for this transaction: that lock is taken after the
	// id, so the race it leaves is narrow, and this test makes it wide.
	if _, err := slow.ExecContext(t.Context(), `SET LOCAL session_replication_role = replica`); err != nil {
		t.Fatal(err)
	}
	first := sweepText(t, slow, brand, u.ID, "stored first, committed last")
	second := sweepText(t, db.Writer(), brand, u2.ID, "stored second, committed first")
	if first >= second {
		t.Fatalf("ids %d, %d: want the open transaction's lower", first, second)
	}
	if b, ids := batchIDs(t, db); len(ids) != 0 || b.End != b.From {
		t.Errorf("batch %v while an older transaction runs, want none: the cursor would pass message %d", ids, first)
	}
	if err := slow.Commit(); err != nil {
		t.Fatal(err)
	}
	var b *store.ExtractionBatch
	var ids []int64
	for deadline := time.Now().Add(10 * time.Second); len(ids) < 2 && time.Now().Before(deadline); {
		b, ids = batchIDs(t, db)
	}
	if len(ids) != 2 || ids[0] != first || ids[1] != second {
		t.Fatalf("batch %v, want [%d %d]: in the order of their transactions", ids, first, second)
	}
	if b.End != b.Texts[1].Pos {
		t.Errorf("batch end %+v, want the last text's %+v", b.End, b.Texts[1].Pos)
	}
}

// TestExtractionCursorGuarded: the cursor moves only from where a sweeper
// read it, and a claim keeps others from claiming or skipping past it
// until it runs out (#19, D20).
func TestExtractionCursorGuarded(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	now := time.Now()
	db.Now = func() time.Time { return now }
	brand := mustBrand(t, db)
	u := &parley.User{BrandID: brand, PhoneNumber: "+14155552671"}
	if err := insertUser(t, db, u); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	id := sweepText(t, db.Writer(), brand, u.ID, "I'm a size M")
	var b *store.ExtractionBatch
	for deadline := time.Now().Add(10 * time.Second); (b == nil || len(b.Texts) == 0) && time.Now().Before(deadline); {
		b, _ = batchIDs(t, db)
	}
	if len(b.Texts) != 1 || b.Texts[0].Pos.ID != id || b.Texts[0].Body != "I'm a size M" || b.Texts[0].UserID != u.ID {
		t.Fatalf("batch %+v, want the text %d", b, id)
	}
	if ok, err := db.ClaimExtraction(ctx, b.From, now.Add(time.Minute)); err != nil || !ok {
		t.Fatalf("first claim: %v %v", ok, err)
	}
	if ok, err := db.ClaimExtraction(ctx, b.From, now.Add(time.Minute)); err != nil || ok {
		t.Errorf("second claim while the first holds: %v %v, want refused", ok, err)
	}
	if ok, err := db.SkipExtraction(ctx, b.From, b.End); err != nil || ok {
		t.Errorf("skip under another's claim: %v %v, want refused", ok, err)
	}
	if again, _ := batchIDs(t, db); !again.Claimed {
		t.Error("batch not marked claimed")
	}
	stale := store.ExtractionPos{Xact: b.From.Xact, ID: b.From.ID - 1}
	err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.AdvanceExtraction(ctx, stale, b.End, time.Time{}) })
	if err != store.ErrCursorMoved {
		t.Errorf("advance from a stale position: %v, want ErrCursorMoved", err)
	}
	if err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.AdvanceExtraction(ctx, b.From, b.End, time.Time{}) }); err != nil {
		t.Fatal(err)
	}
	if ok, _ := db.ExtractionSwept(ctx, id); !ok {
		t.Error("text not swept after the cursor passed it")
	}
	if after, ids := batchIDs(t, db); len(ids) != 0 || after.Claimed || after.From != b.End {
		t.Errorf("after the move: batch %+v, want empty, unclaimed, from %+v", after, b.End)
	}

	// A claim that runs out lets another sweeper claim.
	b, _ = batchIDs(t, db)
	if ok, _ := db.ClaimExtraction(ctx, b.From, now.Add(time.Minute)); !ok {
		t.Fatal("claim refused")
	}
	now = now.Add(time.Minute)
	if ok, err := db.ClaimExtraction(ctx, b.From, now.Add(time.Minute)); err != nil || !ok {
		t.Errorf("claim after the first ran out: %v %v, want granted", ok, err)
	}
}
