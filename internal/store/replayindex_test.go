package store_test

import (
	"encoding/binary"
	"path/filepath"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// TestSQLiteReplayIndexSharesTheFile: SQLite finds a copy of a signed
// write with an index of the signatures log kept in memory (issue #15,
// D2). A copy is refused by another process on the same file, and after a
// restart; the index forgets the expired ones; and a log id is never reused
// after a purge emptied the log, or the other process would not read the
// row that took it.
func TestSQLiteReplayIndexSharesTheFile(t *testing.T) {
	t.Parallel()
	if apitest.Engine() != "sqlite" {
		t.Skip("PostgreSQL's signatures table has a unique index of its own")
	}
	path := "sqlite:" + filepath.Join(t.TempDir(), "parley.db")
	open := func() *store.DB { return openFile(t, path) }
	ctx := t.Context()
	now := time.Now()
	expires := now.Add(time.Minute)
	record := func(db *store.DB, name string, want error) {
		t.Helper()
		sw := &parley.SignedWrite{Key: []byte(name + "________________")[:16], Expires: expires}
		if err := db.RecordSignature(ctx, sw); err != want {
			t.Fatalf("record %s: %v, want %v", name, err, want)
		}
	}
	a, b := open(), open()
	record(a, "one", nil)
	record(b, "one", parley.ErrReplayed) // a's row, read by b
	record(b, "two", nil)
	record(a, "two", parley.ErrReplayed)

	c := open() // a restart: a new index, read from the log
	record(c, "one", parley.ErrReplayed)
	record(c, "two", parley.ErrReplayed)

	// Expired, the signatures leave the log and c's index.
	later := func() time.Time { return now.Add(2 * time.Minute) }
	c.Now = later
	if n, err := c.PurgeExpired(ctx); err != nil || n != 2 {
		t.Fatalf("purge: %d rows, %v; want 2", n, err)
	}
	a.Now, b.Now = later, later // each index forgets them on its own, a minute on
	record(c, "one", nil)       // c's index forgot it
	if _, err := c.PurgeExpired(ctx); err != nil {
		t.Fatal(err)
	}
	// The log was empty before c's next row: its id must still be past
	// the ids a and b saw, or they would never read it.
	expires = later().Add(time.Minute)
	record(c, "three", nil)
	record(a, "three", parley.ErrReplayed)
	record(b, "three", parley.ErrReplayed)
}

// TestSQLiteSignatureLogMigration: migration 00023 turns SQLite's
// signatures into the log, 00024 its rows into one a transaction, and a
// signature recorded before either still refuses its copy after both
// (D2); 00024 undone gives every entry its row and expiry back.
func TestSQLiteSignatureLogMigration(t *testing.T) {
	t.Parallel()
	if apitest.Engine() != "sqlite" {
		t.Skip("PostgreSQL's signatures are as they were")
	}
	ctx := t.Context()
	db, err := store.Open(ctx, apitest.DatabaseURL(t, t.TempDir()), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.MigrateTo(ctx, 22); err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Minute).Truncate(time.Microsecond)
	later := exp.Add(time.Second)
	insert := func(q string, exp time.Time) {
		t.Helper()
		if err := db.Exec(ctx, q, exp.UnixMicro()); err != nil {
			t.Fatal(err)
		}
	}
	insert(`INSERT INTO seen_signatures (expires_at, sig) VALUES (?, CAST('before-00023____' AS BLOB))`, exp)
	if err := db.MigrateTo(ctx, 23); err != nil {
		t.Fatal(err)
	}
	insert(`INSERT INTO seen_signatures (expires_at, sig) VALUES (?, CAST('before-00024____' AS BLOB))`, later)
	// A last row, purged: the counter stays past the ids left.
	insert(`INSERT INTO seen_signatures (expires_at, sig) VALUES (?, CAST('purged__________' AS BLOB))`, later)
	if err := db.Exec(ctx, `DELETE FROM seen_signatures WHERE sig = CAST('purged__________' AS BLOB)`); err != nil {
		t.Fatal(err)
	}
	if err := db.MigrateTo(ctx, 24); err != nil {
		t.Fatal(err)
	}
	var seq int64
	if err := db.QueryRow(ctx, `SELECT seq FROM sqlite_sequence WHERE name = 'seen_signatures'`).Scan(&seq); err != nil || seq != 3 {
		t.Errorf("after 00024 the log's next id follows %d (%v); want 3, the purged row's", seq, err)
	}
	// A transaction's row with two entries, as the store writes them.
	row := func(exp time.Time, sig string) []byte {
		return append(binary.BigEndian.AppendUint64(nil, uint64(exp.UnixMicro())), sig...)
	}
	if err := db.Exec(ctx, `INSERT INTO seen_signatures (expires_at, entries) VALUES (?, ?)`, later.UnixMicro(),
		append(row(exp, "two-a___________"), row(later, "two-b___________")...)); err != nil {
		t.Fatal(err)
	}
	if err := db.MigrateDownTo(ctx, 23); err != nil { // and back: each entry a row, as it was
		t.Fatal(err)
	}
	var n int
	if err := db.QueryRow(ctx, `SELECT count(*) FROM seen_signatures WHERE (expires_at = ? AND sig IN (CAST('before-00023____' AS BLOB), CAST('two-a___________' AS BLOB)))
		OR (expires_at = ? AND sig IN (CAST('before-00024____' AS BLOB), CAST('two-b___________' AS BLOB)))`,
		exp.UnixMicro(), later.UnixMicro()).Scan(&n); err != nil || n != 4 {
		t.Fatalf("00024 undone: %d of the 4 signatures as they were (%v)", n, err)
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	if err := db.Exec(ctx, `INSERT INTO seen_signatures (expires_at, entries) VALUES (?, ?)`, later.UnixMicro(),
		append(row(exp, "three-a_________"), row(later, "three-b_________")...)); err != nil {
		t.Fatal(err)
	}
	for name, exp := range map[string]time.Time{"before-00023____": exp, "before-00024____": later, "two-a___________": exp,
		"two-b___________": later, "three-a_________": exp, "three-b_________": later} {
		if err := db.RecordSignature(ctx, &parley.SignedWrite{Key: []byte(name), Expires: exp}); err != parley.ErrReplayed {
			t.Errorf("the copy of a write recorded as %s: %v, want it refused as replayed", name, err)
		}
	}
	if err := db.RecordSignature(ctx, &parley.SignedWrite{Key: []byte("after-00024_____"), Expires: exp}); err != nil {
		t.Errorf("a new signature: %v", err)
	}
}

// TestSQLiteDamagedLogRow: a log row that is not whole entries (damaged,
// or edited by hand) is passed over, not a failure of every signed write
// until it expires (D2).
func TestSQLiteDamagedLogRow(t *testing.T) {
	t.Parallel()
	if apitest.Engine() != "sqlite" {
		t.Skip("PostgreSQL has no log")
	}
	ctx := t.Context()
	db := mustOpenDB(t)
	exp := time.Now().Add(time.Minute)
	if err := db.Exec(ctx, `INSERT INTO seen_signatures (expires_at, entries) VALUES (?, CAST('23 bytes, not 24 ______' AS BLOB))`, exp.UnixMicro()); err != nil {
		t.Fatal(err)
	}
	sw := func() *parley.SignedWrite { return &parley.SignedWrite{Key: []byte("after-the-damage"), Expires: exp} }
	if err := db.RecordSignature(ctx, sw()); err != nil {
		t.Fatalf("a signed write after a damaged row: %v", err)
	}
	if err := db.RecordSignature(ctx, sw()); err != parley.ErrReplayed {
		t.Errorf("its copy: %v, want it refused as replayed", err)
	}
}
