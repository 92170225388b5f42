package store

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"time"

	"github.com/parleyhq/parley"
)

// groupBatch bounds how many writes one group commit carries.
const groupBatch = 256

// groupOp is one small write waiting for the group commit.
type groupOp struct {
	fn func(ctx context.Context, tx *Tx) error
	// origin is who asked for the write (Tx.Origin while fn runs).
	origin parley.Origin
	// signed is the write's request, whose signature the group records
	// unless it was recorded already (D2).
	signed *parley.SignedWrite
	// keyed is the request's Idempotency-Key, claimed with the write
	// unless an earlier transaction of the request claimed it (D13).
	keyed *parley.KeyedWrite
	// storing is the key whose answer the op stores for a request that
	// wrote nothing (StoreIdempotentAnswer).
	storing *parley.KeyedWrite
	// ctx is the caller's: an op whose caller is gone before its group
	// starts is not run. Its statements run under the group's context, so
	// a caller giving up mid-group cannot fail the others.
	ctx context.Context
	// failed is the op's own outcome (a duplicate, a replay, a taken key,
	// an Unchanged error, errHeldBack), which does not fail the others.
	failed error
	// answer is what the op stored with its key, if it named its result.
	answer *parley.Answer

	err  error
	done chan struct{}
}

// groupCommit runs small writes — user creates, sends, status changes,
// idempotency answers — in shared transactions: each committer goroutine
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

// inGroup queues op for the next group commit and waits for it.
func (db *DB) inGroup(ctx context.Context, op *groupOp) error {
	return db.inLane(ctx, &db.group, op)
}

// inLane queues op for the next group commit of lane g and waits for it.
func (db *DB) inLane(ctx context.Context, g *groupCommit, op *groupOp) error {
	op.done = make(chan struct{})
	op.ctx = ctx
	db.fgWaiting.Add(1)
	defer db.fgWaiting.Add(-1)
	db.startGroup(g)
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

func (db *DB) startGroup(g *groupCommit) {
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

// stopGroups ends the group committers of every lane; writes still
// queued get ErrClosed. A lane the engine does not use is not started.
func (db *DB) stopGroups() {
	db.stopGroup(&db.group)
	if g := db.activityLane(); g != &db.group {
		db.stopGroup(g)
	}
}

func (db *DB) stopGroup(g *groupCommit) {
	db.startGroup(g)
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
	// A group on PostgreSQL must not wait forever on a lost connection. On
	// SQLite nothing it runs can hang (a lock waits the busy timeout at
	// most), and a context that can end costs each statement a goroutine
	// to watch it (modernc), on the single writer's path.
	ctx := context.Background()
	if db.engine == "postgres" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
	}
	// On PostgreSQL the group's new users go in one INSERT (writebehind.go);
	// when a number is taken, the group runs again, in one transaction,
	// with each insert sent on its own.
	hold := db.engine == "postgres" && len(batch) > 1
	err := db.WithTx(ctx, func(tx *Tx) error { return runGroupOps(ctx, tx, batch, hold) })
	if hold && errors.Is(err, errBehindConflict) {
		err = db.WithTx(ctx, func(tx *Tx) error { return runGroupOps(ctx, tx, batch, false) })
	}
	rerun := err != nil && len(batch) > 1 && !CommitUncertain(err)
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
	return db.WithTx(ctx, func(tx *Tx) error { return runGroupOps(ctx, tx, []*groupOp{op}, false) })
}

// finish reports the op's outcome once its transaction ended with err.
// A committed transaction recorded the op's signature whatever the op's
// own outcome: a copy of a refused request is a replay too (D2).
func (op *groupOp) finish(err error) {
	if err == nil && op.signed != nil {
		op.signed.MarkRecorded()
	}
	if err == nil {
		err = op.failed
	}
	if err == nil && op.keyed != nil {
		op.keyed.MarkClaimed(op.answer)
	}
	op.err = err
	close(op.done)
}

// runGroupOps records the batch's signatures and checks its keys, runs
// its writes in order, then stores their keys. A write refused by its
// signature or key does not run. With hold, the users the writes create
// are held for one INSERT (writebehind.go).
func runGroupOps(ctx context.Context, tx *Tx, batch []*groupOp, hold bool) error {
	for _, op := range batch {
		op.failed, op.answer = nil, nil
	}
	if hold {
		tx.behind = &writeBehind{}
	}
	replayed, err := recordSignatures(ctx, tx, batch)
	if err != nil {
		return err
	}
	for op := range replayed {
		op.failed = parley.ErrReplayed
	}
	if err := checkKeys(ctx, tx, batch); err != nil {
		return err
	}
	for _, op := range batch {
		if op.failed != nil {
			continue
		}
		if err := op.run(ctx, tx); err != nil {
			// A held send that failed under the write is the cause.
			if tx.behind != nil && tx.behind.err != nil {
				return tx.behind.err
			}
			return err
		}
	}
	return storeKeys(ctx, tx, batch)
}

// run runs the op's write and renders the answer it names. A write that
// fails without changing anything (Unchanged) fails alone; its signature
// stays recorded, so a copy sent once the state has changed cannot
// succeed where the request was refused (D2).
func (op *groupOp) run(ctx context.Context, tx *Tx) error {
	tx.result, tx.origin = nil, op.origin
	err := op.fn(ctx, tx)
	var u unchanged
	switch {
	case errors.As(err, &u):
		op.failed = u.error
		return nil
	case err != nil:
		return err
	}
	op.answer, err = tx.render(op.keyed)
	return err
}
