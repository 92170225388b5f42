package httpapi_test

import (
	"context"
	"net/http"
	"os"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

// benchDeliveryEnv runs Parley on the real clock with workers and a sim
// that reports delivery at once. The senders post the same message many
// times a second, which replay protection (D2) would refuse as copies.
func benchDeliveryEnv(b *testing.B) (*apitest.Env, *client.Client, int64) {
	e := apitest.New(b, func(c *app.Config) { c.Now = nil; c.SimDelay = -1; c.Workers = 200; c.NoReplayProtection = true })
	tr := &http.Transport{MaxIdleConnsPerHost: 256}
	b.Cleanup(tr.CloseIdleConnections)
	c := client.New(e.Server.URL, e.CredA.Username, e.CredA.Secret, client.WithHTTPClient(&http.Client{Transport: tr}))
	u := e.MustCreateUser(b, c, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	return e, c, u.ID
}

// sendConcurrently posts n messages from conc goroutines.
func sendConcurrently(b *testing.B, c *client.Client, userID int64, n, conc int) []int64 {
	var next atomic.Int64
	ids := make([]int64, n)
	var wg sync.WaitGroup
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1) - 1
				if i >= int64(n) {
					return
				}
				m, err := c.SendMessage(context.Background(), parley.MessageCreate{UserID: parley.Some(userID), Body: parley.Some("hi")})
				if err != nil {
					b.Error(err)
					return
				}
				ids[i] = m.ID
			}
		}()
	}
	wg.Wait()
	return ids
}

// waitAllDelivered polls the database until no message is queued or sent.
func waitAllDelivered(b *testing.B, e *apitest.Env) {
	for {
		var open int
		e.App.DB.Writer().QueryRow("SELECT count(*) FROM messages WHERE status IN ('queued', 'sent')").Scan(&open)
		if open == 0 {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// timeToSent returns the p50 and p99 of date_sent − date_created.
func timeToSent(b *testing.B, e *apitest.Env) (p50, p99 time.Duration) {
	rows, err := e.App.DB.Writer().Query("SELECT date_sent - date_created FROM messages WHERE date_sent IS NOT NULL")
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	var d []int64
	for rows.Next() {
		var us int64
		rows.Scan(&us)
		d = append(d, us)
	}
	if len(d) == 0 {
		return 0, 0
	}
	slices.Sort(d)
	return time.Duration(d[len(d)/2]) * time.Microsecond, time.Duration(d[len(d)*99/100]) * time.Microsecond
}

// BenchmarkSendToDelivered measures messages per second from POST /messages
// to delivered through the sim provider, with 64 concurrent senders, and
// the time from creation to sent (issue #4).
func BenchmarkSendToDelivered(b *testing.B) {
	e, c, userID := benchDeliveryEnv(b)
	if err := e.App.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	n := max(b.N, 1000)
	b.ResetTimer()
	start := time.Now()
	sendConcurrently(b, c, userID, n, 64)
	waitAllDelivered(b, e)
	elapsed := time.Since(start)
	b.StopTimer()
	p50, p99 := timeToSent(b, e)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(float64(p50.Milliseconds()), "p50-ms-to-sent")
	b.ReportMetric(float64(p99.Milliseconds()), "p99-ms-to-sent")
}

// BenchmarkBacklogDrain queues PARLEY_BENCH_BACKLOG messages (default
// 100,000) with the workers stopped, then starts them and measures the
// latency of API reads while the backlog drains (issue #4).
func BenchmarkBacklogDrain(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(os.Getenv("PARLEY_BENCH_BACKLOG")); err == nil {
		n = v
	}
	e, c, userID := benchDeliveryEnv(b)
	sendConcurrently(b, c, userID, n, 64)
	b.ResetTimer()
	start := time.Now()
	if err := e.App.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	var lat []time.Duration
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 4 { // readers during the drain
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				t0 := time.Now()
				if _, err := c.FindUserByPhone(context.Background(), "+14155552671"); err != nil {
					b.Error(err)
					return
				}
				d := time.Since(t0)
				mu.Lock()
				lat = append(lat, d)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond)
			}
		}()
	}
	waitAllDelivered(b, e)
	elapsed := time.Since(start)
	close(done)
	wg.Wait()
	b.StopTimer()
	slices.Sort(lat)
	b.ReportMetric(float64(n)/elapsed.Seconds(), "msgs/s")
	b.ReportMetric(elapsed.Seconds(), "drain-s")
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "read-p50-ms")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "read-p99-ms")
	}
}

// BenchmarkSendAtRate offers PARLEY_BENCH_RATE messages per second (default
// 500) for 5 s, open loop, and reports the time from creation to sent: the
// latency a steady load sees, not hidden by the senders waiting.
func BenchmarkSendAtRate(b *testing.B) {
	rate := 500
	if v, err := strconv.Atoi(os.Getenv("PARLEY_BENCH_RATE")); err == nil && v > 0 {
		rate = v
	}
	e, c, userID := benchDeliveryEnv(b)
	if err := e.App.Start(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	n := rate * 5
	interval := time.Second / time.Duration(rate)
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, 256)
	for i := range n {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		sem <- struct{}{}
		wg.Add(1)
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := c.SendMessage(context.Background(), parley.MessageCreate{UserID: parley.Some(userID), Body: parley.Some("hi")}); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	offered := float64(n) / time.Since(start).Seconds()
	waitAllDelivered(b, e)
	b.StopTimer()
	p50, p99 := timeToSent(b, e)
	b.ReportMetric(offered, "offered-msgs/s")
	b.ReportMetric(float64(p50.Milliseconds()), "p50-ms-to-sent")
	b.ReportMetric(float64(p99.Milliseconds()), "p99-ms-to-sent")
}
