package audience

import (
	"context"
	"log/slog"
	"time"
)

// How a brand gets into memory and stays current: a load reads it whole;
// a catch-up re-reads the users the change log names. Requests catch up
// a little (MaxBehind); the background (Run, Changed, a request that
// found its brand far behind) catches up the rest, or reads the brand
// again when that is cheaper.

// catchUpShare: a catch-up of more than a brand's rows divided by this
// costs more than reading the brand again (measured: docs/performance.md,
// "The audience engine").
const catchUpShare = 2

// Load reads the brand into memory now (whatever was there).
func (e *Engine) Load(ctx context.Context, brandID int64) error {
	b := e.state(brandID)
	b.mu.Lock()
	defer b.mu.Unlock()
	b.used = time.Now()
	return e.load(ctx, brandID, b)
}

// read reads the brand into a new table, and the position to catch up
// from. The position is taken first: a change after it is read again at
// the next catch-up.
func (e *Engine) read(ctx context.Context, brandID int64) (*table, int64, error) {
	pos, err := e.db.AudiencePosition(ctx)
	if err != nil {
		return nil, 0, err
	}
	t, err := readTable(ctx, e.db, brandID)
	if err != nil {
		return nil, 0, err
	}
	return t, pos, nil
}

// load reads the brand in place; b.mu is held.
func (e *Engine) load(ctx context.Context, brandID int64, b *brandState) error {
	t, pos, err := e.read(ctx, brandID)
	if err != nil {
		return err
	}
	b.t, b.pos, b.caught = t, pos, time.Now()
	return nil
}

// ready returns the brand's state caught up to now, locked (the caller
// unlocks), or ErrNotLoaded: the brand is not in memory yet (a load
// starts in the background), or is too far behind to catch up within a
// request (a bulk import: the background catches up).
func (e *Engine) ready(ctx context.Context, brandID int64) (*brandState, error) {
	if e.Off {
		return nil, ErrNotLoaded
	}
	b := e.state(brandID)
	b.mu.Lock()
	b.used = time.Now()
	if b.t != nil && time.Since(b.caught) > e.MaxIdle {
		b.t = nil // the log may have been purged past b.pos
	}
	if b.t != nil {
		far, err := e.catchUp(ctx, brandID, b)
		if err != nil {
			b.mu.Unlock()
			return nil, err
		}
		if !far {
			return b, nil
		}
		if !e.Eager {
			e.refreshInBackground(brandID, b)
			b.mu.Unlock()
			return nil, ErrNotLoaded
		}
		b.t = nil // its memory goes before the new table is read
	}
	if e.Eager {
		if err := e.load(ctx, brandID, b); err != nil {
			b.mu.Unlock()
			return nil, err
		}
		return b, nil
	}
	if !b.loading && time.Since(b.failed) > time.Minute {
		b.loading = true
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
			defer cancel()
			e.fill(ctx, brandID, b)
		}()
	}
	b.mu.Unlock()
	return nil, ErrNotLoaded
}

// fill reads the brand without holding it (b.loading is set; SQL answers
// meanwhile) and puts it in place.
func (e *Engine) fill(ctx context.Context, brandID int64, b *brandState) {
	start := time.Now()
	t, pos, err := e.read(ctx, brandID)
	defer e.resized()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.loading = false
	if err != nil {
		b.failed = time.Now()
		e.Logger.LogAttrs(ctx, slog.LevelWarn, "audience: load failed; SQL answers", slog.Int64("brand_id", brandID), slog.Any("err", err))
		return
	}
	b.t, b.pos, b.caught = t, pos, time.Now()
	e.Logger.LogAttrs(ctx, slog.LevelInfo, "audience: brand loaded", slog.Int64("brand_id", brandID),
		slog.Int("users", t.n), slog.Int64("bytes", t.bytes()), slog.Duration("took", time.Since(start)))
}

// catchUp re-reads the users changed since b.pos; b.mu is held. far says
// there were more than MaxBehind: nothing was read.
func (e *Engine) catchUp(ctx context.Context, brandID int64, b *brandState) (far bool, err error) {
	ids, next, more, err := e.db.AudienceChanges(ctx, brandID, b.pos, e.MaxBehind)
	if err != nil || more {
		return more, err
	}
	if len(ids) > 0 {
		rows, err := e.db.AudienceRowsByID(ctx, brandID, ids)
		if err != nil {
			return false, err
		}
		b.t.apply(ids, rows)
	}
	b.pos, b.caught = next, time.Now()
	return false, nil
}

// refreshInBackground starts a refresh unless one runs; b.mu is held.
func (e *Engine) refreshInBackground(brandID int64, b *brandState) {
	if b.t == nil || b.loading || b.refreshing {
		return
	}
	b.refreshing = true
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		e.refresh(ctx, brandID, b)
	}()
}

// refresh catches the brand up however far behind it is, MaxBehind users
// at a time with the brand held only to apply them, so questions are
// answered meanwhile (by SQL until it is current); or, when more than a
// share of its rows changed (an import into it), reads it again, which
// is then cheaper. b.refreshing is set, and cleared at the end.
func (e *Engine) refresh(ctx context.Context, brandID int64, b *brandState) {
	reload := false
	defer func() {
		b.mu.Lock()
		b.refreshing = false
		if reload && b.t != nil && !b.loading {
			b.t, b.loading = nil, true // its memory goes before the new table is read
			b.mu.Unlock()
			e.fill(ctx, brandID, b)
			return
		}
		b.mu.Unlock()
	}()
	b.mu.Lock()
	if b.t == nil {
		b.mu.Unlock()
		return
	}
	pos, n := b.pos, b.t.n
	b.mu.Unlock()
	ids, next, more, err := e.db.AudienceChanges(ctx, brandID, pos, max(e.MaxBehind, n/catchUpShare))
	if err != nil {
		e.Logger.LogAttrs(ctx, slog.LevelWarn, "audience: catch-up failed", slog.Int64("brand_id", brandID), slog.Any("err", err))
		return
	}
	if more {
		reload = true
		return
	}
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), e.MaxBehind)]
		ids = ids[len(chunk):]
		rows, err := e.db.AudienceRowsByID(ctx, brandID, chunk)
		if err != nil {
			e.Logger.LogAttrs(ctx, slog.LevelWarn, "audience: catch-up failed", slog.Int64("brand_id", brandID), slog.Any("err", err))
			return
		}
		// Rows read after the changes that name them are at least as new:
		// applying them early does no harm, even before b.pos moves.
		b.mu.Lock()
		if b.t == nil || b.pos != pos {
			b.mu.Unlock()
			return // read again, or caught up by a request meanwhile
		}
		b.t.apply(chunk, rows)
		b.mu.Unlock()
	}
	b.mu.Lock()
	if b.t != nil && b.pos == pos {
		b.pos, b.caught = next, time.Now()
	}
	b.mu.Unlock()
}

// Changed tells the engine that many of the brand's users changed (an
// import into it ended): a loaded brand is caught up in the background
// now rather than at the next question.
func (e *Engine) Changed(brandID int64) {
	if e.Off {
		return
	}
	b := e.state(brandID)
	b.mu.Lock()
	e.refreshInBackground(brandID, b)
	b.mu.Unlock()
}

// Follow catches up every loaded brand (one at a time), and gives back
// the memory of brands nobody asked about for MaxIdle, except those Warm
// loads: a node keeps what it would hold after a restart, so a bulk
// import longer than MaxIdle, with no question meanwhile, does not leave
// its first count to SQL (issue #34: at 10,000,000 contacts the import
// took 68 minutes and the first count after it 38 s).
func (e *Engine) Follow(ctx context.Context) {
	e.mu.Lock()
	ids := make([]int64, 0, len(e.brands))
	for id := range e.brands {
		ids = append(ids, id)
	}
	e.mu.Unlock()
	kept := e.keptBrands(ctx, ids)
	for _, id := range ids {
		if ctx.Err() != nil {
			return
		}
		b := e.state(id)
		b.mu.Lock()
		if b.t != nil && time.Since(b.used) > e.MaxIdle && !b.refreshing {
			if kept[id] {
				// Kept as if warmed again: asked about again only after
				// another MaxIdle, not on every pass.
				b.used = time.Now()
			} else {
				b.t = nil
			}
		}
		if b.t == nil || b.loading || b.refreshing {
			b.mu.Unlock()
			continue
		}
		b.refreshing = true
		b.mu.Unlock()
		e.refresh(ctx, id, b)
	}
}

// keptBrands returns the brands Warm would load when one of ids has gone
// MaxIdle without a question (nil otherwise: no query on most passes).
func (e *Engine) keptBrands(ctx context.Context, ids []int64) map[int64]bool {
	idle := false
	for _, id := range ids {
		b := e.state(id)
		b.mu.Lock()
		idle = idle || (b.t != nil && time.Since(b.used) > e.MaxIdle)
		b.mu.Unlock()
	}
	if !idle || e.WarmBrands <= 0 {
		return nil
	}
	warm, err := e.db.SegmentedBrands(ctx, e.WarmBrands)
	if err != nil {
		return nil // give the memory back as before
	}
	kept := make(map[int64]bool, len(warm))
	for _, id := range warm {
		kept[id] = true
	}
	return kept
}

// Warm loads, one at a time, the brands that have segments (at most
// WarmBrands, the most recently changed segments first) and are not in
// memory: a node that starts, after a bulk import or not, answers their
// questions from memory once each is read.
func (e *Engine) Warm(ctx context.Context) error {
	if e.Off || e.WarmBrands <= 0 {
		return nil
	}
	ids, err := e.db.SegmentedBrands(ctx, e.WarmBrands)
	if err != nil {
		return err
	}
	for _, id := range ids {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		b := e.state(id)
		b.mu.Lock()
		if b.t != nil || b.loading {
			b.mu.Unlock()
			continue
		}
		b.loading, b.used = true, time.Now()
		b.mu.Unlock()
		e.fill(ctx, id, b)
	}
	return nil
}

// Run keeps the node's engine ready until ctx ends: it warms the brands
// with segments, then catches up the loaded brands every FollowEvery, so
// a question after a bulk import (on any node) finds its brand current.
func (e *Engine) Run(ctx context.Context) {
	if err := e.Warm(ctx); err != nil && ctx.Err() == nil {
		e.Logger.LogAttrs(ctx, slog.LevelWarn, "audience: warm-up failed; brands load at their first question", slog.Any("err", err))
	}
	tick := time.NewTicker(e.FollowEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		e.Follow(ctx)
	}
}
