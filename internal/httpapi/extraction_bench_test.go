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

// inboundRate is the texts per second BenchmarkSimulatorInbound sends:
// far above one brand's usual inbound volume, and below what the server
// takes on two busy cores, so latency, not a backlog, is measured.
const inboundRate = 200

// BenchmarkSimulatorInbound is POST /api/v1/simulator/inbound end to end
// with the workers running, for a brand without and with an auto-collected
// field (#19: inbound handling p99 must not move when extraction is on).
// With the field, the worker node's sweep reads the texts while the next
// ones arrive and writes their values (the inbound transaction itself does
// nothing more). It reports
// the request latency's p50 and p99 at inboundRate texts a second.
//
//	go test -run '^$' -bench BenchmarkSimulatorInbound -benchtime 4000x ./internal/httpapi/
func BenchmarkSimulatorInbound(b *testing.B) {
	for _, tc := range []struct {
		name          string
		auto, workers bool
	}{
		{"Workers/NoAutoCollectedField", false, true},
		{"Workers/AutoCollectedField", true, true},
		// The request path alone, as on an API node (--role api): the
		// inbound transaction's own added work, without the extraction's.
		{"APIOnly/NoAutoCollectedField", false, false},
		{"APIOnly/AutoCollectedField", true, false},
	} {
		auto, workers := tc.auto, tc.workers
		b.Run(tc.name, func(b *testing.B) {
			e := apitest.New(b)
			if workers {
				if err := e.App.Start(context.Background()); err != nil {
					b.Fatal(err)
				}
			}
			e.MustCreateField(b, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Size", CustomDataType: parley.CustomString,
				AvailableEnumValues: []string{"S", "M", "L"}, IsAutoCollected: auto})
			tr := &http.Transport{MaxIdleConnsPerHost: 256}
			b.Cleanup(tr.CloseIdleConnections)
			c := client.New(e.Server.URL, e.CredA.Username, e.CredA.Secret, client.WithHTTPClient(&http.Client{Transport: tr}))
			sizes := []string{"S", "M", "L"}
			// Open loop: texts arrive at a fixed rate, as a carrier's do, and
			// each latency counts from when its text was due, so a stall
			// that delays the texts behind it counts for all of them.
			interval := time.Second / time.Duration(inboundRate)
			due := make(chan time.Time, b.N)
			lat := make([]time.Duration, b.N)
			var wg sync.WaitGroup
			var n atomic.Int64
			b.ResetTimer()
			for range 16 {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for at := range due {
						i := n.Add(1)
						in := parley.SimulatedInbound{From: parley.Some("+1415" + strconv.FormatInt(2000000+i%500, 10)),
							Body: parley.Some("I'm a size " + sizes[i%3] + " now #" + strconv.FormatInt(i, 10))}
						if _, err := c.SimulateInbound(e.Ctx, in); err != nil {
							b.Error(err)
							return
						}
						lat[i-1] = time.Since(at)
					}
				}()
			}
			t0 := time.Now()
			for i := range b.N {
				at := t0.Add(time.Duration(i) * interval)
				time.Sleep(time.Until(at))
				due <- at
			}
			close(due)
			wg.Wait()
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
			if auto && workers {
				b.ReportMetric(float64(e.Count(b, "user_history WHERE source = 'extraction'")), "values-written")
			}
		})
	}
}

// BenchmarkInboundPath is the inbound path without HTTP, one text at a
// time (service.SimulateInbound: the same receive as a carrier's
// callback), for a brand without and with an auto-collected field, workers
// off: what the inbound transaction itself gains (#19). It reports p50 and
// p99 of the calls.
//
//	go test -run '^$' -bench BenchmarkInboundPath -benchtime 3000x ./internal/httpapi/
func BenchmarkInboundPath(b *testing.B) {
	for _, auto := range []bool{false, true} {
		name := "NoAutoCollectedField"
		if auto {
			name = "AutoCollectedField"
		}
		b.Run(name, func(b *testing.B) {
			e := apitest.New(b)
			e.MustCreateField(b, &parley.CustomField{BrandID: e.BrandA.ID, FieldName: "Size", CustomDataType: parley.CustomString,
				AvailableEnumValues: []string{"S", "M", "L"}, IsAutoCollected: auto})
			lat := make([]time.Duration, b.N)
			b.ResetTimer()
			for i := range b.N {
				in := parley.SimulatedInbound{From: parley.Some("+1415" + strconv.Itoa(2000000+i%500)),
					Body: parley.Some("I'm a size M #" + strconv.Itoa(i))}
				start := time.Now()
				if _, _, err := e.App.Service.SimulateInbound(e.Ctx, parley.Origin{}, e.BrandA.ID, in); err != nil {
					b.Fatal(err)
				}
				lat[i] = time.Since(start)
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
