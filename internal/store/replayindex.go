package store

import (
	"context"
	"database/sql"
	"encoding/binary"
	"fmt"
	"log/slog"
	"sync"

	"github.com/parleyhq/parley"
)

// sigIndex is SQLite's index of the recorded signatures (D2). On SQLite,
// seen_signatures is an append-only log (migration 00023) with a row for
// each transaction's signatures (00024), added on the page at its end; a
// B-tree keyed by the signature put each signature on a random page of its
// own, which cost keyed creates 13 % (issue #15). What finds a copy is
// this index, in memory, read from the log: every transaction that records
// a signature first reads the rows added since the index last saw the log
// (by id, which AUTOINCREMENT never reuses), so rows another process wrote,
// or written before a restart, are found as well; the write lock taken at
// BEGIN keeps the log still until the commit. It holds the signatures not
// expired (the clock skew window and a minute: six minutes by default),
// about 24 bytes each: 9 MB at 1,000 signed writes a second.
type sigIndex struct {
	mu sync.Mutex
	// byExpiry holds the signatures by expiry (micros), so that a purge
	// drops whole seconds.
	byExpiry  map[int64]map[[16]byte]struct{}
	lastID    int64 // the highest id of the log read or committed
	nextPurge int64 // when to forget the expired signatures next (micros)
}

// IndexedSignatures reports how many signatures the node's replay index
// holds, about 24 bytes of memory each, and whether it has one (SQLite).
func (db *DB) IndexedSignatures() (int, bool) {
	x := db.sigs
	if x == nil {
		return 0, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	n := 0
	for _, s := range x.byExpiry {
		n += len(s)
	}
	return n, true
}

// purgeEvery is how often the index forgets the expired signatures: on
// its own, not with the log's purge, which one process runs however many
// share the file.
const purgeEvery = 60_000_000 // a minute, in micros

func newSigIndex() *sigIndex { return &sigIndex{byExpiry: map[int64]map[[16]byte]struct{}{}} }

// sigEntry is a signature as the index keeps it.
type sigEntry struct {
	expires int64
	sig     [16]byte
}

func entryOf(sw *parley.SignedWrite) sigEntry {
	e := sigEntry{expires: micros(sw.Expires)}
	copy(e.sig[:], sw.Key)
	return e
}

func (x *sigIndex) has(e sigEntry) bool {
	x.mu.Lock()
	defer x.mu.Unlock()
	_, ok := x.byExpiry[e.expires][e.sig]
	return ok
}

// addLocked adds a committed signature.
func (x *sigIndex) addLocked(e sigEntry) {
	s := x.byExpiry[e.expires]
	if s == nil {
		s = map[[16]byte]struct{}{}
		x.byExpiry[e.expires] = s
	}
	s[e.sig] = struct{}{}
}

// purgeLocked forgets the signatures expired at now (micros), at most
// once every purgeEvery.
func (x *sigIndex) purgeLocked(now int64) {
	if now < x.nextPurge {
		return
	}
	x.nextPurge = now + purgeEvery
	for exp := range x.byExpiry {
		if exp <= now {
			delete(x.byExpiry, exp)
		}
	}
}

// syncSignatures reads into the index the log rows it has not seen, once a
// transaction: those of another process, or, after a start, every row not
// expired. A commit of this process adds its own row (sigBatch.Flush), and
// should the next transaction begin first, it reads it here instead.
func (tx *Tx) syncSignatures(ctx context.Context) error {
	if tx.sigsSynced {
		return nil
	}
	x := tx.db.sigs
	var top sql.NullInt64
	if err := tx.queryRow(ctx, `SELECT max(id) FROM seen_signatures`).Scan(&top); err != nil {
		return fmt.Errorf("store: read signatures: %w", err)
	}
	x.mu.Lock()
	x.purgeLocked(micros(tx.now))
	last := x.lastID
	x.mu.Unlock()
	if top.Int64 > last {
		now := micros(tx.now)
		rows, err := tx.query(ctx, `SELECT id, entries FROM seen_signatures WHERE id > ? AND expires_at > ?`, last, now)
		if err != nil {
			return fmt.Errorf("store: read signatures: %w", err)
		}
		defer rows.Close()
		x.mu.Lock()
		defer x.mu.Unlock()
		for rows.Next() {
			var id int64
			var blob []byte
			if err := rows.Scan(&id, &blob); err != nil {
				return fmt.Errorf("store: read signatures: %w", err)
			}
			x.readEntries(id, blob, now)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("store: read signatures: %w", err)
		}
		x.lastID = max(x.lastID, top.Int64) // the rows past were expired
	}
	tx.sigsSynced = true
	return nil
}

// logSignatures records the signatures of sws, all different, in
// SQLite's log, and reports those the index, or this transaction, has
// already: replays, not logged again. The transaction's signatures go in
// one row, written just before it commits (sigBatch); the index learns
// them once it has.
func (tx *Tx) logSignatures(ctx context.Context, sws []*parley.SignedWrite) ([]bool, error) {
	if err := tx.syncSignatures(ctx); err != nil {
		return nil, err
	}
	b := tx.Batch(sigBatchKey{}, func() Flusher { return &sigBatch{pending: map[sigEntry]struct{}{}} }).(*sigBatch)
	seen := make([]bool, len(sws))
	for i, sw := range sws {
		e := entryOf(sw)
		if _, dup := b.pending[e]; dup || tx.db.sigs.has(e) {
			seen[i] = true
			continue
		}
		b.pending[e] = struct{}{}
	}
	return seen, nil
}

// unlogSignature takes back a signature this transaction logged (see
// forgetSignature).
func (tx *Tx) unlogSignature(sw *parley.SignedWrite) {
	if b, ok := tx.batches[sigBatchKey{}].(*sigBatch); ok {
		delete(b.pending, entryOf(sw))
	}
}

type sigBatchKey struct{}

// sigBatch holds the signatures a transaction logs, for one row of the log
// (migration 00024): a row per signature cost the single writer a B-tree
// insert, an index entry and two bound values each, in a statement that
// kept a statement journal; one row took a signed create's CPU from 45 to
// 41 µs in BenchmarkGroupCreates (issue #15).
type sigBatch struct {
	pending map[sigEntry]struct{}
}

// sigEntrySize is an entry's size in a row's entries: its expiry (micros,
// big-endian) and its signature.
const sigEntrySize = 8 + 16

func (b *sigBatch) Flush(ctx context.Context, tx *Tx) error {
	if len(b.pending) == 0 {
		return nil
	}
	entries := make([]sigEntry, 0, len(b.pending))
	blob := make([]byte, 0, len(b.pending)*sigEntrySize)
	var latest int64 // the row's expiry, so that a purge keeps every entry until it expires
	for e := range b.pending {
		entries = append(entries, e)
		blob = binary.BigEndian.AppendUint64(blob, uint64(e.expires))
		blob = append(blob, e.sig[:]...)
		latest = max(latest, e.expires)
	}
	res, err := tx.exec(ctx, `INSERT INTO seen_signatures (expires_at, entries) VALUES (?, ?)`, latest, blob)
	if err != nil {
		return fmt.Errorf("store: record signatures: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("store: record signatures: %w", err)
	}
	tx.AfterCommit(func() {
		x := tx.db.sigs
		x.mu.Lock()
		defer x.mu.Unlock()
		for _, e := range entries {
			x.addLocked(e)
		}
		x.lastID = max(x.lastID, id)
	})
	return nil
}

// readEntries adds the entries of a log row to the index, those not
// expired at now. A row that is not whole entries (damaged, or edited by
// hand) is logged and passed over: refusing it would fail every signed
// write until it expired.
func (x *sigIndex) readEntries(id int64, blob []byte, now int64) {
	x.lastID = max(x.lastID, id)
	if len(blob)%sigEntrySize != 0 {
		slog.Warn("store: signatures log row passed over: not whole entries", "id", id, "bytes", len(blob))
		return
	}
	for ; len(blob) > 0; blob = blob[sigEntrySize:] {
		e := sigEntry{expires: int64(binary.BigEndian.Uint64(blob))}
		copy(e.sig[:], blob[8:sigEntrySize])
		if e.expires > now {
			x.addLocked(e)
		}
	}
}
