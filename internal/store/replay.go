package store

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/parleyhq/parley"
)

// qRecordSignature records a signed write's signature (see SignedWrite) on
// PostgreSQL.
const qRecordSignature = `INSERT INTO seen_signatures (expires_at, sig) VALUES (?, ?) ON CONFLICT (expires_at, sig) DO NOTHING`

// qForgetSignature undoes qRecordSignatures for a write held back from its
// group (PostgreSQL).
const qForgetSignature = `DELETE FROM seen_signatures WHERE expires_at = ? AND sig = ?`

// recordSignature records the request's signature in its transaction, or
// fails with ErrReplayed when it is already there (D2). A replay carries
// the same x-date, so the same expiry: the key collides across nodes. On
// SQLite the signature goes to the log and its index (replayindex.go).
func (tx *Tx) recordSignature(ctx context.Context, sw *parley.SignedWrite) error {
	if tx.db.sigs != nil {
		seen, err := tx.logSignatures(ctx, []*parley.SignedWrite{sw})
		if err == nil && seen[0] {
			err = parley.ErrReplayed
		}
		return err
	}
	res, err := tx.exec(ctx, qRecordSignature, micros(sw.Expires), sw.Key)
	if err != nil {
		return fmt.Errorf("store: record signature: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return parley.ErrReplayed
	}
	return nil
}

// recordSignatures records the signatures of the batch's writes — with
// one INSERT that returns the keys it added on PostgreSQL, in the row the
// transaction adds to the log on SQLite (replayindex.go) — and reports
// the writes whose signature was there already: replays. A copy of a
// request earlier in the batch is held back (errHeldBack).
func recordSignatures(ctx context.Context, tx *Tx, batch []*groupOp) (map[*groupOp]bool, error) {
	first := map[sigKey]*groupOp{}
	replayed := map[*groupOp]bool{}
	var expires []int64
	var sigs [][]byte
	var logged []*groupOp // SQLite
	for _, op := range batch {
		sw := op.signed
		if sw == nil || sw.Recorded() {
			continue
		}
		k := sigKey{micros(sw.Expires), string(sw.Key)}
		if _, dup := first[k]; dup {
			op.failed = errHeldBack
			continue
		}
		first[k] = op
		if tx.db.sigs != nil {
			logged = append(logged, op)
			continue
		}
		replayed[op] = true // until the INSERT says it added the key
		expires, sigs = append(expires, k.expires), append(sigs, sw.Key)
	}
	if len(logged) > 0 {
		sws := make([]*parley.SignedWrite, len(logged))
		for i, op := range logged {
			sws[i] = op.signed
		}
		seen, err := tx.logSignatures(ctx, sws)
		if err != nil {
			return nil, err
		}
		for i, op := range logged {
			if seen[i] {
				replayed[op] = true
			}
		}
	}
	if len(sigs) == 0 {
		return replayed, nil
	}
	// The keys the group will check are read by the same statement (see
	// qRecordSignaturesReadKeys): one round trip less per keyed group.
	var brands []int64
	var keys []string
	for _, op := range batch {
		if kw := op.keyed; kw != nil && op.failed == nil {
			brands, keys = append(brands, kw.BrandID), append(keys, kw.Key)
		}
	}
	q, args := qRecordSignatures, []any{expires, sigs}
	if len(keys) > 0 {
		q, args = qRecordSignaturesReadKeys, append(args, brands, keys)
		tx.readKeys = map[brandKey]*parley.IdempotencyRecord{}
	}
	rows, err := tx.query(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("store: record signatures: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k sigKey
		var sig []byte
		if len(keys) == 0 {
			err = rows.Scan(&k.expires, &sig)
		} else {
			err = tx.scanSignatureOrKey(rows, &k.expires, &sig)
		}
		if err != nil {
			return nil, fmt.Errorf("store: record signatures: %w", err)
		}
		if sig == nil {
			continue // a key's row
		}
		k.sig = string(sig)
		if op := first[k]; op != nil {
			delete(replayed, op)
		}
	}
	return replayed, rows.Err()
}

// qRecordSignaturesReadKeys is qRecordSignatures that also returns, after
// the signatures it added, the rows of the keys it is given (qReadKeys),
// with a NULL signature.
const qRecordSignaturesReadKeys = `WITH s AS (` + qRecordSignatures + `)
	SELECT expires_at, sig, NULL::bigint, NULL::text, NULL::bytea, NULL::bigint, NULL::text, NULL::bytea,
		NULL::bigint, NULL::bigint FROM s
	UNION ALL
	SELECT NULL, NULL, q.brand_id, q.idem_key, k.* FROM unnest(?::bigint[], ?::text[]) AS q(brand_id, idem_key)
	CROSS JOIN LATERAL (SELECT ` + keyColumns + ` FROM idempotency_keys
		WHERE brand_id = q.brand_id AND idem_key = q.idem_key LIMIT 1) k`

// scanSignatureOrKey scans a row of qRecordSignaturesReadKeys: a signature
// added, or a key's row, which it keeps in tx.readKeys when a request
// still holds the key.
func (tx *Tx) scanSignatureOrKey(rows *sql.Rows, expires *int64, sig *[]byte) error {
	var exp, brand sql.NullInt64
	var key sql.NullString
	var r keyRow
	if err := rows.Scan(append([]any{&exp, sig, &brand, &key}, r.dest()...)...); err != nil {
		return err
	}
	if exp.Valid {
		*expires = exp.Int64
		return nil
	}
	k := brandKey{brand.Int64, key.String}
	tx.noteKeyRow(k)
	if rec, held := r.record(tx.now); held {
		tx.readKeys[k] = rec
	}
	return nil
}

// sigKey names a recorded signature.
type sigKey struct {
	expires int64
	sig     string
}

// qRecordSignatures records a group's signatures on PostgreSQL, one array
// per column: one statement whatever their number, so one prepared
// statement and plan per connection (with a VALUES row per signature,
// each group size was a statement of its own, planned again and again).
const qRecordSignatures = `INSERT INTO seen_signatures (expires_at, sig)
	SELECT * FROM unnest(?::bigint[], ?::bytea[])
	ON CONFLICT (expires_at, sig) DO NOTHING RETURNING expires_at, sig`

// forgetSignature takes back the signature of a write held back from its
// group (errHeldBack): it runs again alone, where the signature is
// recorded, or found, for real.
func (op *groupOp) forgetSignature(ctx context.Context, tx *Tx) error {
	sw := op.signed
	if sw == nil || sw.Recorded() {
		return nil
	}
	if tx.db.sigs != nil {
		tx.unlogSignature(sw)
		return nil
	}
	if _, err := tx.exec(ctx, qForgetSignature, micros(sw.Expires), sw.Key); err != nil {
		return fmt.Errorf("store: forget signature: %w", err)
	}
	return nil
}

// RecordSignature records the signature of a signed write that no
// transaction recorded — a request refused before it reached the store,
// or whose transaction rolled back — so that a copy of it is refused as a
// replay even once the state that refused it has changed (D2). It fails
// with parley.ErrReplayed when the signature is there already.
func (db *DB) RecordSignature(ctx context.Context, sw *parley.SignedWrite) error {
	return db.inGroup(ctx, &groupOp{signed: sw, fn: func(context.Context, *Tx) error { return nil }})
}

// PurgeExpired deletes the signatures and idempotency keys that have
// expired and the audience engine's changes older than an hour, and
// reports how many rows went.
func (db *DB) PurgeExpired(ctx context.Context) (int64, error) {
	var n int64
	err := db.WithTx(ctx, func(tx *Tx) error {
		n = 0
		for _, q := range []string{
			`DELETE FROM seen_signatures WHERE expires_at <= ?`,
			`DELETE FROM idempotency_keys WHERE expires_at <= ?`,
		} {
			res, err := tx.exec(ctx, q, micros(tx.now))
			if err != nil {
				return fmt.Errorf("store: purge: %w", err)
			}
			k, _ := res.RowsAffected()
			n += k
		}
		k, err := tx.purgeUserChanges(ctx) // the audience engine's log (migration 00049)
		n += k
		return err
	})
	return n, err
}
