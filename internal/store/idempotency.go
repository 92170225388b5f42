package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/secretbox"
)

// The idempotency statements. A key is held by the request that stored
// it until it expires, or, while it has no answer, until locked_until.
const (
	keyColumns = `request_hash, status, content_type, body, locked_until, expires_at`
	qReadKey   = `SELECT ` + keyColumns + ` FROM idempotency_keys WHERE brand_id = ? AND idem_key = ?`
	// qInsertKeys stores keys with their answers, or as claims without one
	// (status NULL); qTakeOver lets it take over a key nobody holds any more.
	qInsertKeys = `INSERT INTO idempotency_keys (brand_id, idem_key, request_hash, locked_until,
			status, content_type, body, created_at, expires_at) VALUES `
	keyValues = `(?, ?, ?, ?, ?, ?, ?, ?, ?)`
	qTakeOver = ` ON CONFLICT (brand_id, idem_key) DO UPDATE SET request_hash = excluded.request_hash,
			locked_until = excluded.locked_until, status = excluded.status,
			content_type = excluded.content_type, body = excluded.body,
			created_at = excluded.created_at, expires_at = excluded.expires_at
		WHERE idempotency_keys.expires_at <= ?
			OR (idempotency_keys.status IS NULL AND idempotency_keys.locked_until <= ?)`
	// qStoreKey stores one key, and also fills in the request's own claim:
	// no answer yet, its locked_until and its hash.
	qStoreKey = qInsertKeys + keyValues + qTakeOver + `
			OR (idempotency_keys.status IS NULL AND idempotency_keys.locked_until = ?
				AND idempotency_keys.request_hash = excluded.request_hash)`
	// qClaimKey stores the key of a write that ran, unless a request holds it.
	qClaimKey   = qInsertKeys + keyValues + qTakeOver
	qReleaseKey = `DELETE FROM idempotency_keys
		WHERE brand_id = ? AND idem_key = ? AND locked_until = ? AND request_hash = ? AND status IS NULL`
)

// errKeyRace fails a transaction that found a key free and then could
// not store it: a transaction beside it (another committer on PostgreSQL)
// stored it meanwhile. Run again, the check sees that key.
var errKeyRace = errors.New("store: idempotency key stored by a concurrent transaction")

// Answer names result as the outcome of the request whose write is running
// in tx. When the request carries an Idempotency-Key, its answer is stored
// with the change, in the same commit (D13). Call it once the result is
// complete, or will be by the end of the write: it is rendered then.
func (tx *Tx) Answer(result any) { tx.result = result }

// render renders the answer that the write just run in tx named for kw's
// request (Answer), or returns nil: no answer, or no key.
func (tx *Tx) render(kw *parley.KeyedWrite) (*parley.Answer, error) {
	if kw == nil || tx.result == nil || kw.Encode == nil {
		return nil, nil
	}
	a, err := kw.Encode(tx.result)
	if err != nil {
		return nil, fmt.Errorf("store: idempotent answer: %w", err)
	}
	return &a, nil
}

// checkKey fails with *parley.KeyTaken when another request holds kw's
// key, so the write must not run. A nil kw passes.
func (tx *Tx) checkKey(ctx context.Context, kw *parley.KeyedWrite) error {
	if kw == nil {
		return nil
	}
	rec, held, err := tx.readKey(ctx, kw.BrandID, kw.Key)
	if err != nil || !held {
		return err
	}
	if err := tx.db.openAnswer(kw.BrandID, kw.Key, rec); err != nil {
		return err
	}
	return &parley.KeyTaken{Record: *rec}
}

// readKey returns the brand's key as stored (its answer not opened), nil
// when there is none, and whether a request still holds it.
func (tx *Tx) readKey(ctx context.Context, brandID int64, key string) (*parley.IdempotencyRecord, bool, error) {
	if tx.db.keys != nil {
		return tx.readLoggedKey(ctx, brandID, key)
	}
	rec, held, err := scanKey(tx.queryRow(ctx, qReadKey, brandID, key).Scan, tx.now)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("store: read idempotency key: %w", err)
	}
	return rec, held, nil
}

// storeKey stores kw's key for the request whose write just ran in tx,
// with the answer it named, or as a claim that the request's answer
// fills in later. It returns the answer stored. A nil kw stores nothing.
func (tx *Tx) storeKey(ctx context.Context, kw *parley.KeyedWrite) (*parley.Answer, error) {
	a, err := tx.render(kw)
	if kw == nil || err != nil {
		return nil, err
	}
	return a, tx.claimKey(ctx, kw, a, true)
}

// claimKey stores kw's key with answer a (nil: a claim) for a write that
// found it free, or fails with errKeyRace: a transaction beside this one
// stored it meanwhile (see putKey for own).
func (tx *Tx) claimKey(ctx context.Context, kw *parley.KeyedWrite, a *parley.Answer, own bool) error {
	stored, err := tx.putKey(ctx, kw, a, own)
	if err == nil && !stored {
		err = errKeyRace
	}
	return err
}

// putKey stores kw's key with answer a (nil: a claim), and reports
// whether it did; false when another request holds the key. With own, the
// request's own claim is filled in (qStoreKey); without, it counts as held
// like any other (qClaimKey: a group's write storing its key).
func (tx *Tx) putKey(ctx context.Context, kw *parley.KeyedWrite, a *parley.Answer, own bool) (bool, error) {
	if tx.db.keys != nil {
		return tx.putLoggedKey(ctx, kw, a, own)
	}
	at := micros(tx.now)
	q, args := qClaimKey, append(tx.keyArgs(nil, kw, a, at), at, at)
	if own {
		q, args = qStoreKey, append(args, micros(kw.LockedUntil))
	}
	res, err := tx.exec(ctx, q, args...)
	if err != nil {
		return false, fmt.Errorf("store: store idempotency key: %w", err)
	}
	n, err := res.RowsAffected()
	return n == 1, err
}

// keyArgs appends the values of keyValues for kw with answer a, at at.
func (tx *Tx) keyArgs(args []any, kw *parley.KeyedWrite, a *parley.Answer, at int64) []any {
	lockedUntil := sql.NullInt64{Int64: micros(kw.LockedUntil), Valid: a == nil}
	var status sql.NullInt64
	var ctype sql.NullString
	var body []byte
	if a != nil {
		status = sql.NullInt64{Int64: int64(a.Status), Valid: true}
		ctype = sql.NullString{String: a.ContentType, Valid: true}
		body = tx.db.sealAnswer(kw.BrandID, kw.Key, a.Body)
	}
	return append(args, kw.BrandID, kw.Key, kw.Hash, lockedUntil, status, ctype, body, at, micros(kw.Expires))
}

// scanKey scans keyColumns and reports whether a request still holds the
// key at now.
func scanKey(scan func(...any) error, now time.Time) (*parley.IdempotencyRecord, bool, error) {
	var r keyRow
	if err := scan(r.dest()...); err != nil {
		return nil, false, err
	}
	rec, held := r.record(now)
	return rec, held, nil
}

// keyRow is keyColumns as scanned.
type keyRow struct {
	hash, body          []byte
	status, lockedUntil sql.NullInt64
	ctype               sql.NullString
	expiresAt           sql.NullInt64
}

func (r *keyRow) dest() []any {
	return []any{&r.hash, &r.status, &r.ctype, &r.body, &r.lockedUntil, &r.expiresAt}
}

// record is the key as stored, and whether a request still holds it at now.
func (r *keyRow) record(now time.Time) (*parley.IdempotencyRecord, bool) {
	rec := &parley.IdempotencyRecord{RequestHash: r.hash}
	if r.status.Valid {
		rec.Answer = &parley.Answer{Status: int(r.status.Int64), ContentType: r.ctype.String, Body: r.body}
	}
	at := micros(now)
	return rec, r.expiresAt.Int64 > at && (r.status.Valid || r.lockedUntil.Int64 > at)
}

// A stored answer body begins with the byte that says how it is sealed.
// A body stored before answers were sealed (JSON, or empty) begins with
// neither, and is read as it is.
const (
	// sealedAnswer: XChaCha20-Poly1305 under the answers' own key
	// (Options.AnswerBox).
	sealedAnswer = 0x02
	// sealedAnswerGCM: AES-GCM under the server key, as answers were sealed
	// before they had a key of their own (Options.LegacyAnswerBox).
	sealedAnswerGCM = 0x01
)

// sealAnswer seals an answer body for its brand and key.
func (db *DB) sealAnswer(brandID int64, key string, body []byte) []byte {
	if db.answers == nil {
		return body
	}
	return append([]byte{sealedAnswer}, db.answers.Seal(body, answerAD(brandID, key))...)
}

// errUnreadableAnswer fails a request whose key holds an answer that does
// not open: sealed under another server key (a node configured apart from
// the others), or damaged. It fails that request alone, not its group.
var errUnreadableAnswer = errors.New("store: the answer stored for this Idempotency-Key cannot be opened (is the server key the same on every node?)")

// openAnswer opens the body of rec's answer in place.
func (db *DB) openAnswer(brandID int64, key string, rec *parley.IdempotencyRecord) error {
	a := rec.Answer
	if a == nil || len(a.Body) == 0 {
		return nil
	}
	var box *secretbox.Box
	switch a.Body[0] {
	case sealedAnswer:
		box = db.answers
	case sealedAnswerGCM:
		box = db.legacyAnswers
	default:
		return nil
	}
	if box == nil {
		return errUnreadableAnswer
	}
	body, err := box.Open(a.Body[1:], answerAD(brandID, key))
	if err != nil {
		return errUnreadableAnswer
	}
	a.Body = body
	return nil
}

// answerAD binds a sealed answer to its brand and key, apart from the
// other secrets the server key seals: it opens for no other.
func answerAD(brandID int64, key string) []byte {
	return append(binary.BigEndian.AppendUint64([]byte("answer:"), uint64(brandID)), key...)
}

// checkKeys checks the keys of the batch's writes before any of them runs
// (D13). A write whose key another request holds fails with
// *parley.KeyTaken; one with the key of a write earlier in the batch, or
// of an answer the batch stores, is held back (errHeldBack), to run after
// the group and find that key there. An answer that cannot be opened
// fails its write alone.
func checkKeys(ctx context.Context, tx *Tx, batch []*groupOp) error {
	var ops []*groupOp
	first := map[brandKey]bool{}
	for _, op := range batch {
		if kw := op.storing; kw != nil {
			first[brandKey{kw.BrandID, kw.Key}] = true
		}
	}
	for _, op := range batch {
		kw := op.keyed
		if kw == nil || op.failed != nil {
			continue
		}
		k := brandKey{kw.BrandID, kw.Key}
		if first[k] {
			op.failed = errHeldBack
			if err := op.forgetSignature(ctx, tx); err != nil {
				return err
			}
			continue
		}
		first[k] = true
		ops = append(ops, op)
	}
	held, err := tx.heldKeys(ctx, ops)
	if err != nil {
		return err
	}
	for _, op := range ops {
		k := brandKey{op.keyed.BrandID, op.keyed.Key}
		rec := held[k]
		if rec == nil {
			continue
		}
		op.failed = &parley.KeyTaken{Record: *rec}
		if err := tx.db.openAnswer(k.brand, k.key, rec); err != nil {
			op.failed = err
		}
	}
	return nil
}

// brandKey names an idempotency key.
type brandKey struct {
	brand int64
	key   string
}

// heldKeys returns the keys of ops that a request still holds, as stored
// (answers not opened): PostgreSQL reads them with one SELECT (or with its
// signatures: see recordSignatures), SQLite from its index in memory,
// with a one-row SELECT for each key it has (keyindex.go).
func (tx *Tx) heldKeys(ctx context.Context, ops []*groupOp) (map[brandKey]*parley.IdempotencyRecord, error) {
	held := map[brandKey]*parley.IdempotencyRecord{}
	if tx.db.keys != nil {
		for _, op := range ops {
			k := brandKey{op.keyed.BrandID, op.keyed.Key}
			_, r, err := tx.loggedKey(ctx, k.brand, k.key)
			if err != nil {
				return nil, err
			}
			if r == nil {
				continue
			}
			tx.noteKeyRow(k)
			if rec, ok := r.record(tx.now); ok {
				held[k] = rec
			}
		}
		return held, nil
	}
	if len(ops) == 0 {
		return held, nil
	}
	if tx.readKeys != nil { // read with the signatures: every key of ops is in it if held
		for _, op := range ops {
			k := brandKey{op.keyed.BrandID, op.keyed.Key}
			if rec := tx.readKeys[k]; rec != nil {
				held[k] = rec
			}
		}
		tx.readKeys = nil
		return held, nil
	}
	brands, keys := make([]int64, len(ops)), make([]string, len(ops))
	for i, op := range ops {
		brands[i], keys[i] = op.keyed.BrandID, op.keyed.Key
	}
	rows, err := tx.query(ctx, qReadKeys, brands, keys)
	if err != nil {
		return nil, fmt.Errorf("store: read idempotency keys: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k brandKey
		rec, ok, err := scanKey(func(dest ...any) error { return rows.Scan(append([]any{&k.brand, &k.key}, dest...)...) }, tx.now)
		if err != nil {
			return nil, fmt.Errorf("store: read idempotency keys: %w", err)
		}
		tx.noteKeyRow(k)
		if ok {
			held[k] = rec
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: read idempotency keys: %w", err)
	}
	return held, nil
}

// qReadKeys reads a group's keys on PostgreSQL, one array per column (see
// qRecordSignatures). The LIMIT keeps the lookup of each key a subquery
// of its own, which only the primary key serves: as a join, the plan
// made while the table was empty (autovacuum does not analyze it; the
// prepared statement keeps that plan) hashed a scan of the whole table
// for every group.
const qReadKeys = `SELECT q.brand_id, q.idem_key, k.* FROM unnest(?::bigint[], ?::text[]) AS q(brand_id, idem_key)
	CROSS JOIN LATERAL (SELECT ` + keyColumns + ` FROM idempotency_keys
		WHERE brand_id = q.brand_id AND idem_key = q.idem_key LIMIT 1) k`

// qInsertKeysArrays stores a group's keys on PostgreSQL, one array per
// column (see qRecordSignatures), in the order given.
const qInsertKeysArrays = `INSERT INTO idempotency_keys (brand_id, idem_key, request_hash, locked_until,
			status, content_type, body, created_at, expires_at)
	SELECT * FROM unnest(?::bigint[], ?::text[], ?::bytea[], ?::bigint[], ?::bigint[], ?::text[], ?::bytea[],
		?::bigint[], ?::bigint[])`

// noteKeyRow records that a group read a row of key k (heldKeys).
func (tx *Tx) noteKeyRow(k brandKey) {
	if tx.keysWithRows == nil {
		tx.keysWithRows = map[brandKey]bool{}
	}
	tx.keysWithRows[k] = true
}

// storeKeys stores the keys of the batch's writes that ran, each with its
// answer or as a claim (see storeKey): one INSERT on PostgreSQL, in key
// order so that groups committing side by side lock them in one order,
// and INSERTs of many rows on SQLite (keyindex.go). A key stored meanwhile
// by a transaction beside this one fails the group with errKeyRace: run
// again, its check sees it. On PostgreSQL the INSERT takes over keys
// (qTakeOver) only when the group read a row of one: ON CONFLICT's
// speculative insertion cost a plain INSERT 15–20 % more (issue #35), and
// the primary key refuses a key stored meanwhile all the same.
func storeKeys(ctx context.Context, tx *Tx, batch []*groupOp) error {
	var ops []*groupOp
	for _, op := range batch {
		if op.keyed != nil && op.failed == nil {
			ops = append(ops, op)
		}
	}
	if len(ops) == 0 {
		return nil
	}
	if tx.db.keys != nil {
		return storeLoggedKeys(ctx, tx, ops)
	}
	slices.SortFunc(ops, func(a, b *groupOp) int {
		return cmp.Or(cmp.Compare(a.keyed.BrandID, b.keyed.BrandID), strings.Compare(a.keyed.Key, b.keyed.Key))
	})
	at := micros(tx.now)
	n := len(ops)
	var (
		brands, created, expires = make([]int64, n), make([]int64, n), make([]int64, n)
		locked, status           = make([]*int64, n), make([]*int64, n)
		keys                     = make([]string, n)
		ctypes                   = make([]*string, n)
		hashes, bodies           = make([][]byte, n), make([][]byte, n)
	)
	for i, op := range ops {
		kw, a := op.keyed, op.answer
		brands[i], keys[i], hashes[i], created[i], expires[i] = kw.BrandID, kw.Key, kw.Hash, at, micros(kw.Expires)
		if a == nil {
			lu := micros(kw.LockedUntil)
			locked[i] = &lu
			continue
		}
		st, ct := int64(a.Status), a.ContentType
		status[i], ctypes[i], bodies[i] = &st, &ct, tx.db.sealAnswer(kw.BrandID, kw.Key, a.Body)
	}
	q, args := qInsertKeysArrays, []any{brands, keys, hashes, locked, status, ctypes, bodies, created, expires}
	for _, op := range ops {
		if tx.keysWithRows[brandKey{op.keyed.BrandID, op.keyed.Key}] {
			q, args = q+qTakeOver, append(args, at, at)
			break
		}
	}
	res, err := tx.exec(ctx, q, args...)
	if isUniqueViolation(err) {
		return errKeyRace
	}
	if err != nil {
		return fmt.Errorf("store: store idempotency keys: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil || n != int64(len(ops)) {
		return cmp.Or(err, errKeyRace)
	}
	return nil
}

// StoreIdempotentAnswer keeps a as the answer to kw's request when no
// transaction of the request stored one: a refusal that wrote nothing, or
// a write that stored only its claim. When another request holds or held
// the key, it changes nothing and returns the key as stored: that is the
// answer the request must give instead. It records sw, the request's
// signature, in the same transaction (see RecordSignature); a copy of a
// recorded request fails with parley.ErrReplayed and stores nothing.
func (db *DB) StoreIdempotentAnswer(ctx context.Context, kw *parley.KeyedWrite, sw *parley.SignedWrite, a parley.Answer) (*parley.IdempotencyRecord, error) {
	var rec *parley.IdempotencyRecord
	err := db.inGroup(ctx, &groupOp{storing: kw, signed: sw, fn: func(ctx context.Context, tx *Tx) error {
		stored, err := tx.putKey(ctx, kw, &a, true)
		if err != nil || stored {
			rec = nil
			return err
		}
		rec, _, err = tx.readKey(ctx, kw.BrandID, kw.Key)
		switch {
		case err != nil:
			return err
		case rec == nil:
			return errKeyRace // deleted between the two statements: run again
		}
		if err := tx.db.openAnswer(kw.BrandID, kw.Key, rec); err != nil {
			return Unchanged(err) // this request alone fails, not its group
		}
		return nil
	}})
	return rec, err
}

// ReleaseIdempotencyKey forgets the claim kw's request committed without
// an answer, so a retry with the key runs again; a key taken over since is
// left alone.
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, kw *parley.KeyedWrite) error {
	return db.inGroup(ctx, &groupOp{fn: func(ctx context.Context, tx *Tx) error {
		if tx.db.keys != nil {
			return tx.releaseLoggedKey(ctx, kw)
		}
		_, err := tx.exec(ctx, qReleaseKey, kw.BrandID, kw.Key, micros(kw.LockedUntil), kw.Hash)
		if err != nil {
			return fmt.Errorf("store: release idempotency key: %w", err)
		}
		return nil
	}})
}
