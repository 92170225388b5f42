// Package audience answers segment criteria (D14) from memory: each node
// keeps a brand's users as typed columns, loaded on first use, and before
// each answer catches up the users changed since its last one (the
// user_changes log, migration 00049), so a write committed before a
// request is counted by it, on every node. Until a brand is loaded, and
// for a brand it cannot keep, the SQL path (internal/store/segmentsql.go)
// answers; that path is the oracle the engine is tested against.
// docs/audience.md describes the design.
package audience

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// Engine is one node's audience engine.
type Engine struct {
	db *store.DB
	// Logger reports background loads.
	Logger *slog.Logger
	// Eager loads a brand in the request that first needs it instead of in
	// the background (tests, benches).
	Eager bool
	// Off leaves every answer to SQL (tests of the SQL path's limits).
	Off bool
	// MaxBehind is how many changed users a catch-up reads at once; a
	// request finding more (a bulk import) leaves the catch-up to the
	// background, and SQL answers meanwhile.
	MaxBehind int
	// MaxIdle is how long a brand may go without a question before its
	// memory is given back (Run), and without a catch-up before it is read
	// again: the change log keeps an hour (store.PurgeExpired).
	MaxIdle time.Duration
	// FollowEvery is how often Run catches up the loaded brands, so a
	// question finds its brand current even after a bulk import.
	FollowEvery time.Duration
	// WarmBrands is how many brands with segments Run loads when it
	// starts, one at a time.
	WarmBrands int
	// Resized, when set, is told the bytes the engine holds after each
	// load (serve raises its soft memory limit by them: a limit below the
	// live heap would keep the collector running).
	Resized func(bytes int64)

	mu     sync.Mutex
	brands map[int64]*brandState
	// fromMemory and fromSQL count the answers of each path (Answers).
	fromMemory, fromSQL atomic.Int64
}

// Answers reports how many questions the engine answered from memory and
// how many it left to SQL (a brand loading or far behind).
func (e *Engine) Answers() (memory, sql int64) { return e.fromMemory.Load(), e.fromSQL.Load() }

// answered counts an answer by its path: err is evaluate's.
func (e *Engine) answered(err error) {
	if errors.Is(err, ErrNotLoaded) {
		e.fromSQL.Add(1)
	} else if err == nil {
		e.fromMemory.Add(1)
	}
}

type brandState struct {
	mu         sync.Mutex // held by a load's last step, a catch-up and an evaluation
	t          *table
	pos        int64
	caught     time.Time // the last catch-up
	used       time.Time // the last question (or warm load, or Follow keeping it)
	loading    bool      // a load in the background (t is nil)
	refreshing bool      // a catch-up in the background (t answers)
	failed     time.Time
}

// New returns an engine over db.
func New(db *store.DB, logger *slog.Logger) *Engine {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Engine{db: db, Logger: logger, MaxBehind: 20_000, MaxIdle: 30 * time.Minute,
		FollowEvery: 2 * time.Second, WarmBrands: 8, brands: map[int64]*brandState{}}
}

// ErrNotLoaded says the brand is not in memory yet: the caller asks SQL.
var ErrNotLoaded = errors.New("audience: brand not loaded")

func (e *Engine) state(brandID int64) *brandState {
	e.mu.Lock()
	defer e.mu.Unlock()
	b := e.brands[brandID]
	if b == nil {
		b = &brandState{}
		e.brands[brandID] = b
	}
	return b
}

// evaluate resolves a (the SQL compiler's checks and errors) and returns
// the members' rows, with the brand locked (the caller unlocks).
func (e *Engine) evaluate(ctx context.Context, brandID int64, a store.Audience) (*brandState, bitmap, error) {
	r, err := e.db.ResolveAudience(ctx, brandID, a)
	if err != nil {
		return nil, nil, err
	}
	b, err := e.ready(ctx, brandID)
	if err != nil {
		return nil, nil, err
	}
	ev := &evaluator{t: b.t, pg: e.db.IsPostgres(), today: r.Today, segs: r.Segments, memo: map[int64]bitmap{},
		frozen: func(id int64) (bitmap, error) {
			ids, err := e.db.SegmentMemberIDs(ctx, id)
			if err != nil {
				return nil, err
			}
			out := newBitmap(b.t.n)
			for _, id := range ids {
				if i := b.t.row(id); i >= 0 {
					out.set(i)
				}
			}
			return out, nil
		}}
	rows, err := ev.evaluate(r)
	if err != nil {
		b.mu.Unlock()
		return nil, nil, err
	}
	return b, rows, nil
}

// Count counts the brand's live users in a, from memory, or from SQL
// while the brand loads. Errors as store.CountAudience.
func (e *Engine) Count(ctx context.Context, brandID int64, a store.Audience) (int64, error) {
	b, rows, err := e.evaluate(ctx, brandID, a)
	e.answered(err)
	if errors.Is(err, ErrNotLoaded) {
		return e.db.CountAudience(ctx, brandID, a)
	}
	if err != nil {
		return 0, err
	}
	defer b.mu.Unlock()
	return rows.count(), nil
}

// MemberIDs returns up to limit member ids above afterID, by id.
func (e *Engine) memberIDs(b *brandState, rows bitmap, afterID int64, limit int) []int64 {
	t := b.t
	i := lowerBound(t.ids, afterID+1)
	var ids []int64
	for i = rows.next(i); i >= 0 && len(ids) < limit; i = rows.next(i + 1) {
		ids = append(ids, t.ids[i])
	}
	return ids
}

func lowerBound(ids []int64, id int64) int {
	lo, hi := 0, len(ids)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if ids[m] < id {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// Users returns up to limit users of a whose id is above afterID, by id,
// as store.AudienceUsers.
func (e *Engine) Users(ctx context.Context, brandID int64, a store.Audience, afterID int64, limit int) ([]*parley.User, error) {
	b, rows, err := e.evaluate(ctx, brandID, a)
	e.answered(err)
	if errors.Is(err, ErrNotLoaded) {
		return e.db.AudienceUsers(ctx, brandID, a, afterID, limit)
	}
	if err != nil {
		return nil, err
	}
	ids := e.memberIDs(b, rows, afterID, limit)
	b.mu.Unlock()
	return e.db.UsersByID(ctx, brandID, ids)
}

// CountAndUsers is a count and the first limit members from one
// evaluation (a preview).
func (e *Engine) CountAndUsers(ctx context.Context, brandID int64, a store.Audience, limit int) (int64, []*parley.User, error) {
	b, rows, err := e.evaluate(ctx, brandID, a)
	e.answered(err)
	if errors.Is(err, ErrNotLoaded) {
		n, err := e.db.CountAudience(ctx, brandID, a)
		if err != nil {
			return 0, nil, err
		}
		users, err := e.db.AudienceUsers(ctx, brandID, a, 0, limit)
		return n, users, err
	}
	if err != nil {
		return 0, nil, err
	}
	n, ids := rows.count(), e.memberIDs(b, rows, 0, limit)
	b.mu.Unlock()
	users, err := e.db.UsersByID(ctx, brandID, ids)
	return n, users, err
}

// EachUser calls fn with every member of a, by id, a page at a time (an
// export), as store.EachAudienceUser: the members are those of one
// evaluation.
func (e *Engine) EachUser(ctx context.Context, brandID int64, a store.Audience, fn func(*parley.User) error) error {
	b, rows, err := e.evaluate(ctx, brandID, a)
	e.answered(err)
	if errors.Is(err, ErrNotLoaded) {
		return e.db.EachAudienceUser(ctx, brandID, a, fn)
	}
	if err != nil {
		return err
	}
	all := e.memberIDs(b, rows, 0, int(rows.count()))
	b.mu.Unlock()
	for len(all) > 0 {
		page := all[:min(len(all), 1000)]
		all = all[len(page):]
		users, err := e.db.UsersByID(ctx, brandID, page)
		if err != nil {
			return err
		}
		for _, u := range users {
			if err := fn(u); err != nil {
				return err
			}
		}
	}
	return nil
}

// MemberIDs returns every member of a, by id, from one evaluation, or
// ErrNotLoaded while the brand loads (the caller asks SQL). The ids are
// the engine's snapshot, not the caller's transaction: a caller that
// writes for them checks each again in it (store.Tx.SegmentEntrantsByID).
func (e *Engine) MemberIDs(ctx context.Context, brandID int64, a store.Audience) ([]int64, error) {
	b, rows, err := e.evaluate(ctx, brandID, a)
	if err != nil {
		return nil, err
	}
	defer b.mu.Unlock()
	return e.memberIDs(b, rows, 0, int(rows.count())), nil
}

// resized tells Resized the bytes of every brand in memory.
func (e *Engine) resized() {
	if e.Resized == nil {
		return
	}
	e.mu.Lock()
	states := make([]*brandState, 0, len(e.brands))
	for _, b := range e.brands {
		states = append(states, b)
	}
	e.mu.Unlock()
	var n int64
	for _, b := range states {
		b.mu.Lock()
		if b.t != nil {
			n += b.t.bytes()
		}
		b.mu.Unlock()
	}
	e.Resized(n)
}

// Stats reports a brand's rows and estimated bytes in memory.
func (e *Engine) Stats(brandID int64) (rows int, bytes int64, ok bool) {
	b := e.state(brandID)
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.t == nil {
		return 0, 0, false
	}
	return b.t.n, b.t.bytes(), true
}
