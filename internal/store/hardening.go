package store

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley"
)

// groupBatch bounds how many writes one group commit carries.
const groupBatch = 256

// groupOp is one small write waiting for the group commit: a key to
// claim, a response to save, a user to create, or any other write fn.
type groupOp struct {
	claim *keyClaim
	save  *keySave
	user  *userInsert
	fn    func(ctx context.Context, tx *Tx) error
	// signed is the write's request, whose signature the group records
	// unless it was recorded already (D2).
	signed *parley.SignedWrite
	// ctx is the caller's: an op whose caller is gone before its group
	// starts is not run. Its statements run under the group's context, so
	// a caller giving up mid-group cannot fail the others.
	ctx context.Context
	// failed is the op's own outcome (a duplicate, a replay, an Unchanged
	// error, errHeldBack), which does not fail the others.
	failed error

	err  error
	done chan struct{}
}

// groupCommit runs small writes — user creates, idempotency keys, sends,
// status changes — in shared transactions: each committer goroutine
// commits whatever has queued while its previous commit ran. The writes
// then cost a fraction of a transaction each instead of one each, which
// on SQLite's single writer is most of their cost.
type groupCommit struct {
	once    sync.Once
	stop    sync.Once
	queue   chan *groupOp
	closing chan struct{}
	stopped chan struct{}
}

// ErrClosed is returned for work asked of a closed DB.
var ErrClosed = errors.New("store: closed")

// qRecordSignature records a signed write's signature (see SignedWrite).
const qRecordSignature = `INSERT INTO seen_signatures (expires_at, sig) VALUES (?, ?) ON CONFLICT (expires_at, sig) DO NOTHING`

// qForgetSignature undoes qRecordSignature inside a shared transaction.
const qForgetSignature = `DELETE FROM seen_signatures WHERE expires_at = ? AND sig = ?`

// recordSignature records the request's signature in its transaction, or
// fails with ErrReplayed when it is already there (D2). A replay carries
// the same x-date, so the same expiry: the key collides across nodes.
func (tx *Tx) recordSignature(ctx context.Context, sw *parley.SignedWrite) error {
	res, err := tx.exec(ctx, qRecordSignature, micros(sw.Expires), sw.Key)
	if err != nil {
		return fmt.Errorf("store: record signature: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return parley.ErrReplayed
	}
	return nil
}

// inGroup queues op for the next group commit and waits for it.
func (db *DB) inGroup(ctx context.Context, op *groupOp) error {
	op.done = make(chan struct{})
	op.ctx = ctx
	g := db.startGroup()
	select {
	case g.queue <- op:
	case <-g.closing:
		return ErrClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	// Once queued, the op's outcome is waited for even if ctx ends: the
	// caller must not hear of a failure while its write commits.
	select {
	case <-op.done:
	case <-g.stopped:
		select {
		case <-op.done:
		default: // queued after the last drain
			return ErrClosed
		}
	}
	return op.err
}

func (db *DB) startGroup() *groupCommit {
	g := &db.group
	g.once.Do(func() {
		g.queue = make(chan *groupOp, groupBatch)
		g.closing = make(chan struct{})
		g.stopped = make(chan struct{})
		var wg sync.WaitGroup
		for range db.committers {
			wg.Go(func() { db.runGroup(g) })
		}
		go func() { wg.Wait(); close(g.stopped) }()
	})
	return g
}

func (db *DB) runGroup(g *groupCommit) {
	batch := make([]*groupOp, 0, groupBatch)
	for {
		select {
		case op := <-g.queue:
			batch = append(batch[:0], op)
		case <-g.closing:
			return
		}
		// Yield a few times before committing: writes whose requests are
		// running join this group instead of waiting a commit for the next.
		// Fewer, larger groups write each hot page to the WAL fewer times
		// (SQLite create-users +18 – 21 %).
		for range 3 {
		fill:
			for len(batch) < groupBatch {
				select {
				case op := <-g.queue:
					batch = append(batch, op)
				default:
					break fill
				}
			}
			if len(batch) == groupBatch {
				break
			}
			runtime.Gosched()
		}
		db.commitGroup(batch)
	}
}

// stopGroup ends the group committers; writes still queued get ErrClosed.
func (db *DB) stopGroup() {
	g := db.startGroup()
	g.stop.Do(func() { close(g.closing) })
	<-g.stopped
	for {
		select {
		case op := <-g.queue:
			op.err = ErrClosed
			close(op.done)
		default:
			return
		}
	}
}

// commitGroup runs a batch in one transaction. If it fails, each write is
// run alone, so one bad write cannot fail the others — unless the COMMIT's
// outcome is unknown: then it may have committed them, and every write gets
// the error. Copies of a signed request held back from the group (see
// recordSignatures) run alone after it, where their signature decides.
func (db *DB) commitGroup(batch []*groupOp) {
	batch = slices.DeleteFunc(batch, (*groupOp).gone)
	if len(batch) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := db.WithTx(ctx, func(tx *Tx) error { return runGroupOps(ctx, tx, batch) })
	var ce *commitError
	rerun := err != nil && len(batch) > 1 && !(errors.As(err, &ce) && ce.uncertain)
	// One deadline for all of them: when the database itself fails, the
	// group must not take a timeout per write to find out.
	alone, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, op := range batch {
		switch {
		case op.failed == errHeldBack || rerun:
			if !op.gone() {
				op.finish(db.runOne(alone, op))
			}
		default:
			op.finish(err)
		}
	}
}

// errHeldBack marks a copy of a signed request that shares a group with
// the request: it runs after the group, alone, and so is refused as a
// replay if the request committed, or the same way as the request if that
// failed without changing anything.
var errHeldBack = errors.New("store: held back for after the group")

// gone finishes an op whose caller has given up, and reports whether it did.
func (op *groupOp) gone() bool {
	if op.ctx == nil || op.ctx.Err() == nil {
		return false
	}
	op.finish(op.ctx.Err())
	return true
}

// runOne runs op in a transaction of its own.
func (db *DB) runOne(ctx context.Context, op *groupOp) error {
	return db.WithTx(ctx, func(tx *Tx) error { return runGroupOps(ctx, tx, []*groupOp{op}) })
}

// finish reports the op's outcome once its transaction ended with err.
func (op *groupOp) finish(err error) {
	if err == nil {
		err = op.failed
		if err == nil && op.signed != nil {
			op.signed.MarkRecorded()
		}
	}
	op.err = err
	close(op.done)
}

// recordSignatures records the signatures of the batch's writes — with
// one INSERT that returns the keys it added on PostgreSQL, a one-row
// INSERT each on SQLite (see claimKeys) — and reports the writes whose
// signature was there already: replays. A copy of a request earlier in the
// batch is held back (errHeldBack).
func recordSignatures(ctx context.Context, tx *Tx, batch []*groupOp) (map[*groupOp]bool, error) {
	type sigKey struct {
		expires int64
		sig     string
	}
	var q strings.Builder
	var args []any
	first := map[sigKey]*groupOp{}
	replayed := map[*groupOp]bool{}
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
		if tx.db.engine == "sqlite" {
			if err := tx.recordSignature(ctx, sw); errors.Is(err, parley.ErrReplayed) {
				replayed[op] = true
			} else if err != nil {
				return nil, err
			}
			continue
		}
		replayed[op] = true // until the INSERT says it added the key
		if len(args) == 0 {
			q.WriteString(`INSERT INTO seen_signatures (expires_at, sig) VALUES (?, ?)`)
		} else {
			q.WriteString(", (?, ?)")
		}
		args = append(args, k.expires, sw.Key)
	}
	if len(args) == 0 {
		return replayed, nil
	}
	q.WriteString(` ON CONFLICT (expires_at, sig) DO NOTHING RETURNING expires_at, sig`)
	rows, err := tx.query(ctx, q.String(), args...)
	if err != nil {
		return nil, fmt.Errorf("store: record signatures: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k sigKey
		var sig []byte
		if err := rows.Scan(&k.expires, &sig); err != nil {
			return nil, fmt.Errorf("store: record signatures: %w", err)
		}
		k.sig = string(sig)
		if op := first[k]; op != nil {
			delete(replayed, op)
		}
	}
	return replayed, rows.Err()
}

// runGroupOps records the batch's signatures, creates its users, saves
// its responses, runs the other writes in order, then claims its keys. A
// replayed write does not run.
func runGroupOps(ctx context.Context, tx *Tx, batch []*groupOp) error {
	for _, op := range batch {
		op.failed = nil
	}
	replayed, err := recordSignatures(ctx, tx, batch)
	if err != nil {
		return err
	}
	for op := range replayed {
		op.failed = parley.ErrReplayed
	}
	for _, op := range batch {
		if op.user == nil || op.failed != nil {
			continue
		}
		if op.failed, err = op.user.insert(ctx, tx); err != nil {
			return err
		}
		if err := op.forgetIfFailed(ctx, tx); err != nil {
			return err
		}
	}
	// Saves and releases first: a claim in the same batch then sees the
	// key as it ends up.
	if err := saveResponses(ctx, tx, batch); err != nil {
		return err
	}
	for _, op := range batch {
		if op.fn == nil || op.failed != nil {
			continue
		}
		err := op.fn(ctx, tx)
		var u unchanged
		if !errors.As(err, &u) {
			if err != nil {
				return err
			}
			continue
		}
		op.failed = u.error
		if err := op.forgetIfFailed(ctx, tx); err != nil {
			return err
		}
	}
	return claimKeys(ctx, tx, batch)
}

// forgetIfFailed takes back the signature of a write that failed without
// changing anything, so a copy of its request is refused the same way, not
// as a replay — as a transaction of its own that rolled back would.
func (op *groupOp) forgetIfFailed(ctx context.Context, tx *Tx) error {
	sw := op.signed
	if op.failed == nil || sw == nil || sw.Recorded() {
		return nil
	}
	if _, err := tx.exec(ctx, qForgetSignature, micros(sw.Expires), sw.Key); err != nil {
		return fmt.Errorf("store: forget signature: %w", err)
	}
	return nil
}

// keyClaim asks for an idempotency key (see ClaimIdempotencyKey).
type keyClaim struct {
	brandID              int64
	key                  string
	hash                 []byte
	lockedUntil, expires int64
	rec                  *parley.IdempotencyRecord // the result: nil when claimed
}

// claimKeys claims the batch's keys, a prepared one-row INSERT each; a key
// that exists (a repeat, a takeover, or twice in the batch) goes the slow
// way. On SQLite one multi-row INSERT … RETURNING cost more than the rows:
// a new statement for each batch size, and a statement journal.
func claimKeys(ctx context.Context, tx *Tx, batch []*groupOp) error {
	for _, op := range inKeyOrder(batch, func(op *groupOp) (int64, string, bool) {
		if c := op.claim; c != nil {
			return c.brandID, c.key, true
		}
		return 0, "", false
	}) {
		c := op.claim
		c.rec = nil
		res, err := tx.exec(ctx, qClaimNewKey, c.brandID, c.key, c.hash, c.lockedUntil, micros(tx.now), c.expires)
		if err != nil {
			return fmt.Errorf("store: claim idempotency key: %w", err)
		}
		if n, _ := res.RowsAffected(); n == 1 {
			continue
		}
		if err := claimExisting(ctx, tx, c); err != nil {
			return err
		}
	}
	return nil
}

// claimExisting takes over a key whose record expired or whose holder
// died, or else reads the record as it stands.
func claimExisting(ctx context.Context, tx *Tx, c *keyClaim) error {
	now := micros(tx.now)
	res, err := tx.exec(ctx, qClaimKey, c.brandID, c.key, c.hash, c.lockedUntil, now, c.expires, now, now)
	if err != nil {
		return fmt.Errorf("store: claim idempotency key: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 1 {
		return nil
	}
	var status sql.NullInt64
	var ctype sql.NullString
	rec := &parley.IdempotencyRecord{}
	row := tx.queryRow(ctx, qReadKey, c.brandID, c.key)
	if err := row.Scan(&rec.RequestHash, &status, &ctype, &rec.Body); err != nil {
		return fmt.Errorf("store: read idempotency key: %w", err)
	}
	rec.Done, rec.Status, rec.ContentType = status.Valid, int(status.Int64), ctype.String
	c.rec = rec
	return nil
}

// keySave stores a claimed key's response (see SaveIdempotentResponse).
type keySave struct {
	brandID     int64
	key         string
	lockedUntil int64 // the claim's: a key taken over since is not touched
	status      int
	contentType string
	body        []byte
}

// saveResponses stores the batch's responses, a prepared UPDATE each (one
// UPDATE … FROM (VALUES …) measured far slower: SQLite scanned the table).
func saveResponses(ctx context.Context, tx *Tx, batch []*groupOp) error {
	for _, op := range inKeyOrder(batch, func(op *groupOp) (int64, string, bool) {
		if v := op.save; v != nil {
			return v.brandID, v.key, true
		}
		return 0, "", false
	}) {
		v := op.save
		if _, err := tx.exec(ctx, qSaveKey, v.status, v.contentType, v.body, v.brandID, v.key, v.lockedUntil); err != nil {
			return fmt.Errorf("store: save idempotent response: %w", err)
		}
	}
	return nil
}

// inKeyOrder returns the ops of batch that key picks, ordered by brand and
// key. Groups commit side by side on PostgreSQL, and each locks the key
// rows it writes until it commits: taken in one order, two groups with the
// same keys wait for each other instead of deadlocking (seen in tests as
// claims of the same keys in opposite orders, found by PostgreSQL after a
// second and run again).
func inKeyOrder(batch []*groupOp, key func(*groupOp) (int64, string, bool)) []*groupOp {
	type keyed struct {
		op    *groupOp
		brand int64
		key   string
	}
	var ops []keyed
	for _, op := range batch {
		if b, k, ok := key(op); ok {
			ops = append(ops, keyed{op, b, k})
		}
	}
	slices.SortStableFunc(ops, func(a, b keyed) int {
		return cmp.Or(cmp.Compare(a.brand, b.brand), strings.Compare(a.key, b.key))
	})
	out := make([]*groupOp, len(ops))
	for i, o := range ops {
		out[i] = o.op
	}
	return out
}

// The idempotency statements.
const (
	qClaimKey = `INSERT INTO idempotency_keys (brand_id, idem_key, request_hash, locked_until, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?)
			ON CONFLICT (brand_id, idem_key) DO UPDATE SET request_hash = excluded.request_hash,
				locked_until = excluded.locked_until, status = NULL, content_type = NULL, body = NULL,
				created_at = excluded.created_at, expires_at = excluded.expires_at
			WHERE idempotency_keys.expires_at <= ? OR (idempotency_keys.status IS NULL AND idempotency_keys.locked_until <= ?)`
	qReadKey = `SELECT request_hash, status, content_type, body FROM idempotency_keys
			WHERE brand_id = ? AND idem_key = ?`
	qClaimNewKey = `INSERT INTO idempotency_keys (brand_id, idem_key, request_hash, locked_until, created_at, expires_at)
		VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (brand_id, idem_key) DO NOTHING`
	qSaveKey = `UPDATE idempotency_keys SET status = ?, content_type = ?, body = ?, locked_until = NULL
		WHERE brand_id = ? AND idem_key = ? AND locked_until = ? AND status IS NULL`
	qReleaseKey = `DELETE FROM idempotency_keys WHERE brand_id = ? AND idem_key = ? AND locked_until = ? AND status IS NULL`
)

// ClaimIdempotencyKey takes the brand's key for a request whose method,
// target and body hash to hash, until lockedUntil (the request's deadline).
// It returns nil when the key is now this request's to run, or the record
// as it stands when another request holds or held it. A key whose record
// expired, or whose holder died without answering, is taken over.
func (db *DB) ClaimIdempotencyKey(ctx context.Context, brandID int64, key string, hash []byte, lockedUntil, expires time.Time) (*parley.IdempotencyRecord, error) {
	c := &keyClaim{brandID: brandID, key: key, hash: hash, lockedUntil: micros(lockedUntil), expires: micros(expires)}
	if err := db.inGroup(ctx, &groupOp{claim: c}); err != nil {
		return nil, err
	}
	return c.rec, nil
}

// SaveIdempotentResponse stores the response of the request that claimed
// the key until lockedUntil; if another request has taken the key over
// since, it changes nothing.
func (db *DB) SaveIdempotentResponse(ctx context.Context, brandID int64, key string, lockedUntil time.Time, status int, contentType string, body []byte) error {
	return db.inGroup(ctx, &groupOp{save: &keySave{brandID: brandID, key: key, lockedUntil: micros(lockedUntil),
		status: status, contentType: contentType, body: body}})
}

// ReleaseIdempotencyKey forgets a claimed key whose request ended without
// an answer worth replaying, so the client may try again with it.
func (db *DB) ReleaseIdempotencyKey(ctx context.Context, brandID int64, key string, lockedUntil time.Time) error {
	return db.inGroup(ctx, &groupOp{fn: func(ctx context.Context, tx *Tx) error {
		_, err := tx.exec(ctx, qReleaseKey, brandID, key, micros(lockedUntil))
		if err != nil {
			return fmt.Errorf("store: release idempotency key: %w", err)
		}
		return nil
	}})
}

// PurgeExpired deletes the signatures and idempotency keys that have
// expired, and reports how many rows went.
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
		return nil
	})
	return n, err
}
