package audience

import (
	"context"

	"github.com/parleyhq/parley/internal/store"
)

// readTable reads the brand's users into a new table. The database's
// side of a load (SQLite's reads run in this process) and the table's
// side (parsing custom data, dictionaries) each take about half of it, so
// they run on two goroutines: rows are copied in batches from the reader
// to the builder, a few batches reused.
func readTable(ctx context.Context, db *store.DB, brandID int64) (*table, error) {
	const batchRows, batches = 4096, 3
	n, err := db.AudienceSize(ctx, brandID)
	if err != nil {
		return nil, err
	}
	type batch struct {
		rows  []store.AudienceRow
		arena []byte
	}
	free, full := make(chan *batch, batches), make(chan *batch, batches)
	for range batches {
		free <- &batch{rows: make([]store.AudienceRow, 0, batchRows)}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 1)
	go func() {
		defer close(full)
		var cur *batch
		send := func() {
			if cur != nil && len(cur.rows) > 0 {
				full <- cur
				cur = nil
			}
		}
		err := db.EachAudienceRow(ctx, brandID, func(r *store.AudienceRow) error {
			if cur == nil {
				select {
				case cur = <-free:
				case <-ctx.Done():
					return ctx.Err()
				}
				cur.rows, cur.arena = cur.rows[:0], cur.arena[:0]
			}
			cur.rows = append(cur.rows, *r)
			c := &cur.rows[len(cur.rows)-1]
			// The row's bytes are the reader's until the callback returns.
			for i, s := range r.Text {
				cur.arena = append(cur.arena, s...)
				c.Text[i] = cur.arena[len(cur.arena)-len(s):]
			}
			if r.CustomData != nil {
				cur.arena = append(cur.arena, r.CustomData...)
				c.CustomData = cur.arena[len(cur.arena)-len(r.CustomData):]
			}
			if len(cur.rows) == batchRows {
				send()
			}
			return nil
		})
		if err == nil {
			send()
		}
		errc <- err
	}()
	t := newTable()
	t.reserve(n + n/64) // room for users added while it reads
	for b := range full {
		for i := range b.rows {
			t.put(&b.rows[i])
		}
		free <- b
	}
	if err := <-errc; err != nil {
		return nil, err
	}
	t.sort()
	return t, nil
}
