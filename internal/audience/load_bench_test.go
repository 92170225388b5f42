package audience_test

import (
	"context"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/audience"
	"github.com/parleyhq/parley/internal/store"
)

// BenchmarkLoad times the load of a brand from a database kept by
// `parley bench --scenario segments --keep` (PARLEY_AUDIENCE_DB, the
// printed DSN; PARLEY_AUDIENCE_BRAND, default 1): "read" only reads the
// rows, "load" builds the table too.
func BenchmarkLoad(b *testing.B) {
	dsn := os.Getenv("PARLEY_AUDIENCE_DB")
	if dsn == "" {
		b.Skip("PARLEY_AUDIENCE_DB: the DSN of a kept segments bench database")
	}
	brand := int64(1)
	if s := os.Getenv("PARLEY_AUDIENCE_BRAND"); s != "" {
		brand, _ = strconv.ParseInt(s, 10, 64)
	}
	ctx := context.Background()
	db, err := app.OpenDB(ctx, dsn, store.Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	b.Run("read", func(b *testing.B) {
		for b.Loop() {
			n := 0
			if err := db.EachAudienceRow(ctx, brand, func(*store.AudienceRow) error { n++; return nil }); err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(n), "rows")
		}
	})
	b.Run("load", func(b *testing.B) {
		for b.Loop() {
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			eng := audience.New(db, nil)
			start := time.Now()
			if err := eng.Load(ctx, brand); err != nil {
				b.Fatal(err)
			}
			took := time.Since(start)
			runtime.ReadMemStats(&after)
			rows, bytes, _ := eng.Stats(brand)
			b.Logf("%d rows in %v, estimate %.1f MiB, total alloc %.1f MiB, GCs %d", rows, took,
				float64(bytes)/(1<<20), float64(after.TotalAlloc-before.TotalAlloc)/(1<<20), after.NumGC-before.NumGC)
		}
	})
}
