package bench

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Delivery is what became of a send run's messages (--deliveries), read
// from the server's /metrics: the whole pipeline, POST to delivered.
type Delivery struct {
	Messages  int64 `json:"messages"`  // sends the server accepted in the run
	Delivered int64 `json:"delivered"` // of them, delivered when the wait ended
	// Seconds runs from the run's first request until the last message
	// was seen delivered (polled every 100 ms); PerSecond is Delivered
	// over it.
	Seconds   float64 `json:"seconds"`
	PerSecond float64 `json:"per_second"`
	// Time from POST to the provider taking a message, as the upper bound
	// of the server's histogram bucket that holds the percentile.
	TimeToSentP50Ms float64 `json:"time_to_sent_p50_ms_at_most"`
	TimeToSentP99Ms float64 `json:"time_to_sent_p99_ms_at_most"`
}

// deliveryCounts is one scrape of the delivery metrics.
type deliveryCounts struct {
	delivered float64
	sent      []bucket // cumulative, by upper bound
}

type bucket struct{ le, count float64 }

const (
	metricDelivered  = "parley_messages_total"
	metricTimeToSent = "parley_message_time_to_sent_seconds"
)

func scrapeDelivery(ctx context.Context, base *url.URL) (deliveryCounts, error) {
	var c deliveryCounts
	req, err := http.NewRequestWithContext(ctx, "GET", base.JoinPath("/metrics").String(), nil)
	if err != nil {
		return c, err
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		return c, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return c, fmt.Errorf("GET /metrics: %s (is it served on another address?)", resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return c, fmt.Errorf("GET /metrics: %w", err)
	}
	if f := families[metricDelivered]; f != nil {
		for _, m := range f.GetMetric() {
			if label(m, "status") == "delivered" {
				c.delivered = m.GetCounter().GetValue()
			}
		}
	}
	if f := families[metricTimeToSent]; f != nil && len(f.GetMetric()) == 1 {
		for _, b := range f.GetMetric()[0].GetHistogram().GetBucket() {
			c.sent = append(c.sent, bucket{le: b.GetUpperBound(), count: float64(b.GetCumulativeCount())})
		}
	}
	return c, nil
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

// waitDelivered polls until messages more deliveries than before were
// counted, or until the deadline, and fills d.
func waitDelivered(ctx context.Context, base *url.URL, before deliveryCounts, messages int64, start, deadline time.Time) (*Delivery, error) {
	d := &Delivery{Messages: messages}
	var now deliveryCounts
	for {
		var err error
		if now, err = scrapeDelivery(ctx, base); err != nil {
			return nil, err
		}
		d.Delivered = int64(now.delivered - before.delivered)
		if d.Delivered >= messages || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	d.Seconds = round(time.Since(start).Seconds(), 2)
	if d.Seconds > 0 {
		d.PerSecond = round(float64(d.Delivered)/d.Seconds, 1)
	}
	d.TimeToSentP50Ms = bucketQuantile(before.sent, now.sent, 0.50)
	d.TimeToSentP99Ms = bucketQuantile(before.sent, now.sent, 0.99)
	return d, nil
}

// bucketQuantile is the upper bound, in ms, of the bucket holding
// quantile q of the observations made between two scrapes.
func bucketQuantile(before, after []bucket, q float64) float64 {
	if len(after) == 0 {
		return 0
	}
	at := func(bs []bucket, i int) float64 {
		if i < len(bs) {
			return bs[i].count
		}
		return 0
	}
	// The buckets end at the last finite bound (300 s); slower messages
	// are left out.
	last := len(after) - 1
	total := after[last].count - at(before, last)
	if total <= 0 {
		return 0
	}
	i := 0
	for after[i].count-at(before, i) < q*total {
		i++
	}
	return round(after[i].le*1000, 1)
}
