package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

// BenchmarkWebhookFanout measures webhook deliveries per second: 10
// endpoints on one local receiver answering 200, each user created fans out
// to all 10 (issue #5).
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
	for i := range users {
		e.MustCreateUser(b, e.A, parley.UserCreate{PhoneNumber: parley.Some("+1415" + strconv.Itoa(4000000+i))})
	}
	want := int64(users * 10)
	for got.Load() < want {
		time.Sleep(5 * time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(want)/elapsed.Seconds(), "deliveries/s")
}
