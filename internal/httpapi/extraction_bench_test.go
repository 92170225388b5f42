package httpapi_test

import (
	"context"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
)

// BenchmarkSimulatorInbound is POST /api/v1/simulator/inbound end to end
// with the workers running, for a brand without and with an auto-collected
// field (#19: inbound handling p99 must not move when extraction is on).
// With the field, each text also queues an extraction, which the workers
// run while the next texts arrive and which writes its value. It reports
// the request latency's p50 and p99.
//
//	go test -run '^$' -bench BenchmarkSimulatorInbound -benchtime 4000x ./internal/httpapi/
func BenchmarkSimulatorInbound(b *testing.B) {
	for _, auto := range []bool{false, true} {
		name := "NoAutoCollectedField"
		if auto {
			name = "AutoCollectedField"
		}
		b.Run(name, func(b *testing.B) {
			e := apitest.New(b)
			if err := e.App.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			e.MustCreateField(b, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Size", CustomDataType: parley.CustomString,
				AvailableEnumValues: []string{"S", "M", "L"}, IsAutoCollected: auto})
			tr := &http.Transport{MaxIdleConnsPerHost: 256}
			b.Cleanup(tr.CloseIdleConnections)
			c := client.New(e.Server.URL, e.CredA.Username, e.CredA.Secret, client.WithHTTPClient(&http.Client{Transport: tr}))
			sizes := []string{"S", "M", "L"}
			var (
				n   atomic.Int64
				mu  sync.Mutex
				lat = make([]time.Duration, 0, b.N)
			)
			b.SetParallelism(4)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					i := n.Add(1)
					in := parley.SimulatedInbound{From: parley.Some("+1415" + strconv.FormatInt(2000000+i%500, 10)),
						Body: parley.Some("I'm a size " + sizes[i%3] + " now #" + strconv.FormatInt(i, 10))}
					start := time.Now()
					if _, err := c.SimulateInbound(e.Ctx, in); err != nil {
						b.Fatal(err)
					}
					took := time.Since(start)
					mu.Lock()
					lat = append(lat, took)
					mu.Unlock()
				}
			})
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			if auto {
				b.ReportMetric(float64(e.Count(b, "user_history WHERE source = 'extraction'")), "values-written")
			}
		})
	}
}
