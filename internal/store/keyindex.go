package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/parleyhq/parley"
)

// keyIndex is SQLite's index of the stored idempotency keys (D13). On
// SQLite, idempotency_keys is a log (migration 00059): a row is added at
// the end of the table and never changed in place; a key's new state is a
// new row, its old one deleted. A unique index on (brand, key) put each
// stored key on a random page of its B-tree, which every commit wrote to
// the WAL whole: most of what a key on every POST cost a create (issue
// #35). What finds a key is this index, in memory: a key's name to the id
// of its row. Every transaction that reads or stores a key first reads
// the rows added since the index last saw the log (by id, which
// AUTOINCREMENT never reuses), so rows another process wrote, or written
// before a restart, are found as well; the write lock taken at BEGIN keeps
// the log still until the commit. A row found is read by its id, and
// counts only if it is still there and names the same key: a key another
// process released or took over (a deletion the index cannot see) reads
// as its new row, or as free. It holds the keys not expired (24 h), about
// 100 bytes each: 86 MB at 10 keyed writes a second all day.
type keyIndex struct {
	mu   sync.Mutex
	rows map[keyName]keyRef
	// expiring holds the keys' names by the minute they expire in, about
	// the order the index learns them in, so that forgetting the expired
	// ones reads only those.
	expiring  []expiringKeys
	lastID    int64 // the highest id of the log read or committed
	nextPurge int64 // when to forget the expired keys next (micros)
}

// expiringKeys are the names of keys that expire in a minute, or before.
type expiringKeys struct {
	minute int64 // expiry, in micros, divided by a minute
	names  []keyName
}

// keyName names a brand's key in the index: the first 16 bytes of a
// SHA-256 of both, so that every entry has the same small size whatever
// the key's length (up to 255 bytes). Two keys of one name would need
// about 2^64 keys.
type keyName [16]byte

func nameOf(brandID int64, key string) keyName {
	sum := sha256.Sum256(append(binary.BigEndian.AppendUint64(nil, uint64(brandID)), key...))
	return keyName(sum[:16])
}

// keyRef is a key's row: its id and when it expires (micros).
type keyRef struct{ id, expires int64 }

func newKeyIndex() *keyIndex { return &keyIndex{rows: map[keyName]keyRef{}} }

// IndexedKeys reports how many idempotency keys the node's key index
// holds, and whether it has one (SQLite).
func (db *DB) IndexedKeys() (int, bool) {
	x := db.keys
	if x == nil {
		return 0, false
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	return len(x.rows), true
}

// learnLocked adds a key's row to the index. The row of the higher id is
// the key's newer state: a commit's own rows may reach the index after the
// next transaction read them from the log, and stored them again.
func (x *keyIndex) learnLocked(n keyName, r keyRef) {
	x.lastID = max(x.lastID, r.id)
	if x.rows[n].id >= r.id {
		return
	}
	x.rows[n] = r
	minute := r.expires / purgeEvery
	if k := len(x.expiring); k > 0 && x.expiring[k-1].minute >= minute {
		x.expiring[k-1].names = append(x.expiring[k-1].names, n) // forgotten a little late, at most
		return
	}
	x.expiring = append(x.expiring, expiringKeys{minute: minute, names: []keyName{n}})
}

// forgetLocked forgets the keys expired at now (micros), at most once
// every purgeEvery. A name whose key has a newer row, expiring later, stays.
func (x *keyIndex) forgetLocked(now int64) {
	if now < x.nextPurge {
		return
	}
	x.nextPurge = now + purgeEvery
	i := 0
	for ; i < len(x.expiring) && (x.expiring[i].minute+1)*purgeEvery <= now; i++ {
		for _, n := range x.expiring[i].names {
			if x.rows[n].expires <= now {
				delete(x.rows, n)
			}
		}
	}
	x.expiring = append(x.expiring[:0:0], x.expiring[i:]...)
}

// syncKeys reads into the index the log rows it has not seen, once a
// transaction: those of another process, or, after a start, every row
// not expired. A commit of this process adds its own rows (see noteKey).
func (tx *Tx) syncKeys(ctx context.Context) error {
	if tx.keysSynced {
		return nil
	}
	x := tx.db.keys
	now := micros(tx.now)
	x.mu.Lock()
	x.forgetLocked(now)
	last := x.lastID
	x.mu.Unlock()
	rows, err := tx.query(ctx, `SELECT id, brand_id, idem_key, expires_at FROM idempotency_keys WHERE id > ? ORDER BY id`, last)
	if err != nil {
		return fmt.Errorf("store: read idempotency keys: %w", err)
	}
	defer rows.Close()
	x.mu.Lock()
	defer x.mu.Unlock()
	for rows.Next() {
		var r keyRef
		var brand int64
		var key string
		if err := rows.Scan(&r.id, &brand, &key, &r.expires); err != nil {
			return fmt.Errorf("store: read idempotency keys: %w", err)
		}
		x.lastID = max(x.lastID, r.id)
		if r.expires > now {
			x.learnLocked(nameOf(brand, key), r)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("store: read idempotency keys: %w", err)
	}
	tx.keysSynced = true
	return nil
}

// keyRowID returns the id of the row the index has for a brand's key, 0
// when it has none: the one this transaction stored, or else the one
// committed.
func (tx *Tx) keyRowID(ctx context.Context, n keyName) (int64, error) {
	if err := tx.syncKeys(ctx); err != nil {
		return 0, err
	}
	if r, ok := tx.keyRows[n]; ok {
		return r.id, nil
	}
	x := tx.db.keys
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.rows[n].id, nil
}

// loggedKey reads a brand's key from SQLite's log: its row's id and
// columns, or id 0 when it has none.
func (tx *Tx) loggedKey(ctx context.Context, brandID int64, key string) (int64, *keyRow, error) {
	id, err := tx.keyRowID(ctx, nameOf(brandID, key))
	if err != nil || id == 0 {
		return 0, nil, err
	}
	var r keyRow
	var brand int64
	var rowKey string
	err = tx.queryRow(ctx, `SELECT brand_id, idem_key, `+keyColumns+` FROM idempotency_keys WHERE id = ?`, id).
		Scan(append([]any{&brand, &rowKey}, r.dest()...)...)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return 0, nil, nil // released or taken over by another process
	case err != nil:
		return 0, nil, fmt.Errorf("store: read idempotency key: %w", err)
	case brand != brandID || rowKey != key:
		return 0, nil, nil
	}
	return id, &r, nil
}

// readLoggedKey is readKey on SQLite.
func (tx *Tx) readLoggedKey(ctx context.Context, brandID int64, key string) (*parley.IdempotencyRecord, bool, error) {
	_, r, err := tx.loggedKey(ctx, brandID, key)
	if err != nil || r == nil {
		return nil, false, err
	}
	rec, held := r.record(tx.now)
	return rec, held, nil
}

// putLoggedKey is putKey on SQLite: the rules of qStoreKey and qClaimKey
// (qTakeOver), with a key taken over deleted and written again as a new
// row.
func (tx *Tx) putLoggedKey(ctx context.Context, kw *parley.KeyedWrite, a *parley.Answer, own bool) (bool, error) {
	id, r, err := tx.loggedKey(ctx, kw.BrandID, kw.Key)
	if err != nil {
		return false, err
	}
	at := micros(tx.now)
	if r != nil {
		claim := !r.status.Valid && r.lockedUntil.Valid
		free := r.expiresAt.Int64 <= at || (claim && r.lockedUntil.Int64 <= at) ||
			(own && claim && r.lockedUntil.Int64 == micros(kw.LockedUntil) && bytes.Equal(r.hash, kw.Hash))
		if !free {
			return false, nil
		}
		if _, err := tx.exec(ctx, `DELETE FROM idempotency_keys WHERE id = ?`, id); err != nil {
			return false, fmt.Errorf("store: store idempotency key: %w", err)
		}
	}
	res, err := tx.exec(ctx, qInsertKeys+keyValues, tx.keyArgs(nil, kw, a, at)...)
	if err != nil {
		return false, fmt.Errorf("store: store idempotency key: %w", err)
	}
	newID, err := res.LastInsertId()
	if err != nil {
		return false, fmt.Errorf("store: store idempotency key: %w", err)
	}
	tx.noteKey(nameOf(kw.BrandID, kw.Key), keyRef{id: newID, expires: micros(kw.Expires)})
	return true, nil
}

// releaseLoggedKey is qReleaseKey on SQLite.
func (tx *Tx) releaseLoggedKey(ctx context.Context, kw *parley.KeyedWrite) error {
	id, r, err := tx.loggedKey(ctx, kw.BrandID, kw.Key)
	if err != nil || r == nil {
		return err
	}
	if r.status.Valid || r.lockedUntil.Int64 != micros(kw.LockedUntil) || !bytes.Equal(r.hash, kw.Hash) {
		return nil // answered, or taken over since
	}
	if _, err := tx.exec(ctx, `DELETE FROM idempotency_keys WHERE id = ?`, id); err != nil {
		return fmt.Errorf("store: release idempotency key: %w", err)
	}
	return nil
}

// noteKey records a row this transaction stored, for its own reads, and
// for the index once it commits.
func (tx *Tx) noteKey(n keyName, r keyRef) {
	if tx.keyRows == nil {
		tx.keyRows = map[keyName]keyRef{}
		tx.AfterCommit(func() {
			x := tx.db.keys
			x.mu.Lock()
			defer x.mu.Unlock()
			for n, r := range tx.keyRows {
				x.learnLocked(n, r)
			}
		})
	}
	tx.keyRows[n] = r
}

// keyRowsPerInsert are the sizes of the INSERTs that store a group's new
// keys on SQLite, largest first: a statement a key cost the single writer
// its round through database/sql and the driver, and AUTOINCREMENT's
// update of sqlite_sequence, each time; a few sizes keep the statements
// prepared.
var keyRowsPerInsert = []int{64, 16, 4, 1}

// storeLoggedKeys is storeKeys on SQLite. Not own: a request's own claim
// is no key for a write of it to take (checkKeys refuses it). A key whose
// row the group's check read (keysWithRows: one to take over) is stored
// alone; the new ones with INSERTs of many rows.
func storeLoggedKeys(ctx context.Context, tx *Tx, ops []*groupOp) error {
	var fresh []*groupOp
	for _, op := range ops {
		if !tx.keysWithRows[brandKey{op.keyed.BrandID, op.keyed.Key}] {
			fresh = append(fresh, op)
			continue
		}
		if err := tx.claimKey(ctx, op.keyed, op.answer, false); err != nil {
			return err
		}
	}
	at := micros(tx.now)
	for len(fresh) > 0 {
		n := keyRowsPerInsert[len(keyRowsPerInsert)-1]
		for _, size := range keyRowsPerInsert {
			if size <= len(fresh) {
				n = size
				break
			}
		}
		chunk := fresh[:n]
		fresh = fresh[n:]
		args := make([]any, 0, n*9)
		for _, op := range chunk {
			args = tx.keyArgs(args, op.keyed, op.answer, at)
		}
		res, err := tx.exec(ctx, qInsertKeys+strings.Repeat(keyValues+", ", n-1)+keyValues, args...)
		if err != nil {
			return fmt.Errorf("store: store idempotency keys: %w", err)
		}
		// AUTOINCREMENT numbers a statement's rows one after another.
		last, err := res.LastInsertId()
		if err != nil {
			return fmt.Errorf("store: store idempotency keys: %w", err)
		}
		for i, op := range chunk {
			kw := op.keyed
			tx.noteKey(nameOf(kw.BrandID, kw.Key), keyRef{id: last - int64(n-1-i), expires: micros(kw.Expires)})
		}
	}
	return nil
}
