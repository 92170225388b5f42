package store

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"sync"

	"github.com/parleyhq/parley"
)

// sigIndex is SQLite's index of the recorded signatures (D2). On SQLite,
// seen_signatures is an append-only log (migration 00023): each group's
// signatures land on the page at its end, where a B-tree keyed by the
// signature put each on a random page of its own, which cost keyed creates
// 13 % (issue #15). The index that finds a copy is this one, in memory,
// read from the log: every transaction that records a signature first
// reads the rows added since the index last saw the log (by id, which
// AUTOINCREMENT never reuses), so rows another process wrote, or written
// before a restart, are found as well; the write lock taken at BEGIN keeps
// the log still until the commit. It holds the signatures not expired
// (the clock skew window and a minute: six minutes by default), about 24
// bytes each: 9 MB at 1,000 signed writes a second.
type sigIndex struct {
	mu sync.Mutex
	// byExpiry holds the signatures by expiry (micros), so that a purge
	// drops whole seconds.
	byExpiry  map[int64]map[[16]byte]struct{}
	lastID    int64 // the highest id of the log read or committed
	nextPurge int64 // when to forget the expired signatures next (micros)
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

// addLocked adds a committed signature with its log id.
func (x *sigIndex) addLocked(id int64, e sigEntry) {
	s := x.byExpiry[e.expires]
	if s == nil {
		s = map[[16]byte]struct{}{}
		x.byExpiry[e.expires] = s
	}
	s[e.sig] = struct{}{}
	x.lastID = max(x.lastID, id)
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
// expired. A commit of this process adds its own rows (logSignatures), and
// should the next transaction begin first, it reads them here instead.
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
		rows, err := tx.query(ctx, `SELECT id, expires_at, sig FROM seen_signatures WHERE id > ? AND expires_at > ?`,
			last, micros(tx.now))
		if err != nil {
			return fmt.Errorf("store: read signatures: %w", err)
		}
		defer rows.Close()
		x.mu.Lock()
		defer x.mu.Unlock()
		for rows.Next() {
			var id int64
			var e sigEntry
			var sig []byte
			if err := rows.Scan(&id, &e.expires, &sig); err != nil {
				return fmt.Errorf("store: read signatures: %w", err)
			}
			copy(e.sig[:], sig)
			x.addLocked(id, e)
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
// SQLite's log with one INSERT, and reports those the index, or this
// transaction, has already: replays, not logged again. The index learns
// the new ones once the transaction commits.
func (tx *Tx) logSignatures(ctx context.Context, sws []*parley.SignedWrite) ([]bool, error) {
	if err := tx.syncSignatures(ctx); err != nil {
		return nil, err
	}
	seen := make([]bool, len(sws))
	var fresh []sigEntry
	var q strings.Builder
	var args []any
	q.WriteString(`INSERT INTO seen_signatures (expires_at, sig) VALUES `)
	for i, sw := range sws {
		e := entryOf(sw)
		if _, dup := tx.sigsLogged[e]; dup || tx.db.sigs.has(e) {
			seen[i] = true
			continue
		}
		if len(fresh) > 0 {
			q.WriteString(", ")
		}
		q.WriteString("(?, ?)")
		fresh = append(fresh, e)
		args = append(args, e.expires, e.sig[:])
	}
	if len(fresh) == 0 {
		return seen, nil
	}
	// One statement for the group: the rows are appended, so the
	// statement journal that a multi-row INSERT keeps holds a page or two.
	res, err := tx.exec(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("store: record signatures: %w", err)
	}
	last, err := res.LastInsertId()
	if err != nil {
		return nil, fmt.Errorf("store: record signatures: %w", err)
	}
	if tx.sigsLogged == nil {
		tx.sigsLogged = map[sigEntry]int64{}
		logged := tx.sigsLogged
		tx.AfterCommit(func() {
			x := tx.db.sigs
			x.mu.Lock()
			defer x.mu.Unlock()
			for e, id := range logged {
				x.addLocked(id, e)
			}
		})
	}
	// The writer alone appends, and AUTOINCREMENT numbers one
	// statement's rows in order: the first is last-n+1.
	for i, e := range fresh {
		tx.sigsLogged[e] = last - int64(len(fresh)-1-i)
	}
	return seen, nil
}

// unlogSignature takes back a signature this transaction logged (see
// forgetSignature).
func (tx *Tx) unlogSignature(ctx context.Context, sw *parley.SignedWrite) error {
	e := entryOf(sw)
	id, ok := tx.sigsLogged[e]
	if !ok {
		return nil
	}
	if _, err := tx.exec(ctx, `DELETE FROM seen_signatures WHERE id = ?`, id); err != nil {
		return fmt.Errorf("store: forget signature: %w", err)
	}
	delete(tx.sigsLogged, e)
	return nil
}
