package store_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/bench"
	"github.com/parleyhq/parley/internal/secretbox"
	"github.com/parleyhq/parley/internal/store"
)

// BenchmarkGroupCreates creates users through the group commit, 64 at a
// time as `parley bench` does, plain, signed (D2) and signed with a fresh
// Idempotency-Key each (D13): the single writer's share of a create,
// without HTTP (issue #15). cpu-µs/op is the process's CPU time per
// create, steadier than ns/op on a shared machine.
func BenchmarkGroupCreates(b *testing.B) {
	for _, mode := range []string{"off", "signed", "keyed"} {
		b.Run(mode, func(b *testing.B) {
			box, err := secretbox.NewX(secretbox.DeriveKey(bytes.Repeat([]byte{7}, secretbox.KeySize), "parley idempotency answers"))
			if err != nil {
				b.Fatal(err)
			}
			db, err := app.OpenDB(b.Context(), apitest.DatabaseURL(b, b.TempDir()), store.Options{AnswerBox: box})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			brand := &parley.Brand{Name: "B", PhoneNumber: "+14155550100"}
			if err := db.WithTx(b.Context(), func(tx *store.Tx) error { return tx.CreateBrand(b.Context(), brand) }); err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			origin := func() parley.Origin {
				if mode == "off" {
					return parley.Origin{}
				}
				now := time.Now()
				o := parley.Origin{Signed: &parley.SignedWrite{Key: []byte(rand.Text()[:16]), Expires: now.Add(time.Minute)}}
				if mode == "keyed" {
					o.Keyed = &parley.KeyedWrite{BrandID: brand.ID, Key: rand.Text(), Hash: []byte(rand.Text()),
						LockedUntil: now.Add(time.Minute), Expires: now.Add(24 * time.Hour),
						Encode: func(v any) (parley.Answer, error) {
							body, err := json.Marshal(v)
							return parley.Answer{Status: 201, ContentType: "application/json", Body: body}, err
						}}
				}
				return o
			}
			b.SetParallelism(32) // 64 writers on 2 cores
			cpu0 := bench.SelfCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					u := &parley.User{BrandID: brand.ID, PhoneNumber: fmt.Sprintf("+1415%07d", n.Add(1))}
					err := db.WithGroupTx(context.Background(), origin(), func(ctx context.Context, tx *store.Tx) error {
						u.DateCreated = parley.Time{Time: tx.Now()}
						u.DateLastUpdated = u.DateCreated
						tx.Answer(u)
						return tx.InsertUser(ctx, u)
					})
					if err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.StopTimer()
			b.ReportMetric(float64((bench.SelfCPU()-cpu0).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
