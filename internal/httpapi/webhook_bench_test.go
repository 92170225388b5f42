package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

// BenchmarkWebhookFanout measures webhook deliveries per second: 10
// endpoints on one local receiver answering 200, each user created (by 8
// concurrent clients) fans out to all 10 (issue #5).
func BenchmarkWebhookFanout(b *testing.B) {
	var got atomic.Int64
	recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got.Add(1) }))
	defer recv.Close()
	e := apitest.New(b, func(c *app.Config) { c.Now = nil; c.Workers = 100 })
	body, _ := json.Marshal(map[string]any{"url": recv.URL, "event_types": []string{"user.created"}})
	for range 10 {
		resp, err := e.A.Do(b.Context(), "POST", "/webhooks", body, "application/json")
		if err != nil || resp.StatusCode != 201 {
			b.Fatalf("create webhook: %v %v", err, resp)
		}
	}
	if err := e.App.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	users := max(b.N/10, 100)
	b.ResetTimer()
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	for range 8 { // concurrent API clients
		wg.Go(func() {
			for i := next.Add(1); i <= int64(users); i = next.Add(1) {
				e.MustCreateUser(b, e.A, parley.UserCreate{PhoneNumber: parley.Some("+1415" + strconv.FormatInt(4000000+i, 10))})
			}
		})
	}
	wg.Wait()
	want := int64(users * 10)
	for got.Load() < want {
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(want)/elapsed.Seconds(), "deliveries/s")
}

// BenchmarkCreateUserWithHangingReceiver measures create-user latency while
// every webhook delivery hangs until its timeout: deliveries run in their
// own bounded queue, so the API should not notice (issue #5).
func BenchmarkCreateUserWithHangingReceiver(b *testing.B) {
	for _, hang := range []bool{false, true} {
		b.Run("hang="+strconv.FormatBool(hang), func(b *testing.B) {
			release := make(chan struct{})
			recv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if hang {
					select {
					case <-release:
					case <-r.Context().Done():
					}
				}
			}))
			defer recv.Close()
			defer close(release)
			e := apitest.New(b, func(c *app.Config) { c.Now = nil })
			body, _ := json.Marshal(map[string]any{"url": recv.URL, "event_types": []string{"*"}})
			if resp, err := e.A.Do(b.Context(), "POST", "/webhooks", body, "application/json"); err != nil || resp.StatusCode != 201 {
				b.Fatalf("create webhook: %v %v", err, resp)
			}
			if err := e.App.Start(context.Background()); err != nil {
				b.Fatal(err)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				t0 := time.Now()
				e.MustCreateUser(b, e.A, parley.UserCreate{PhoneNumber: parley.Some("+1415" + strconv.Itoa(6000000+i))})
				lat = append(lat, time.Since(t0))
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
		})
	}
}
