package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
)

// ScenarioCampaign sends one campaign to every seeded contact (issue #21,
// D16): it seeds Users consenting contacts through the API, makes a
// segment of them all, schedules a MARKETING campaign a few seconds ahead
// and, from its send_at, times how long until every message is written
// and until every one is delivered. While the campaign drains it sends
// TRANSACTIONAL messages at ProbeRate, timing each POST and the time until
// the message is delivered: they must overtake the campaign. With a
// server of its own it also samples the server's RSS.
const ScenarioCampaign = "campaign"

// campaignLead is how far ahead of now the campaign is scheduled: long
// enough for the POST to be answered and the probes to start first.
const campaignLead = 3 * time.Second

// CampaignResult is what a campaign run measured. Times are from the
// campaign's send_at.
type CampaignResult struct {
	Scenario   string  `json:"scenario"`
	Engine     string  `json:"engine,omitempty"`
	Recipients int64   `json:"recipients"`
	SeedS      float64 `json:"seed_s"`
	// WrittenS: every member's message exists (the campaign's stats hold
	// one per consenting member). DeliveredS: every message delivered.
	WrittenS   float64        `json:"written_s"`
	DeliveredS float64        `json:"delivered_s"`
	Stats      map[string]any `json:"stats"`
	// Probes are the transactional messages sent while the campaign
	// drained: their POST latency and their time from POST to delivered.
	Probes         int     `json:"probes"`
	ProbePost      Spread  `json:"probe_post_ms"`
	ProbeDelivered Spread  `json:"probe_delivered_ms"`
	ProbesLate     int     `json:"probes_not_delivered"`
	PeakRSSMiB     float64 `json:"server_peak_rss_mib,omitempty"`
	ServerCPUS     float64 `json:"server_cpu_s,omitempty"`
	// BackendCPUS is the CPU of the server's PostgreSQL backends over the
	// same span as ServerCPUS (issue #35: the database's work per message).
	BackendCPUS float64 `json:"pg_backend_cpu_s,omitempty"`
}

// campaign is the campaign as the run last read it.
type campaign struct{ *parley.Campaign }

// written reports whether every consenting member's message exists.
func (c *campaign) written() bool {
	s := c.Stats
	return c.Status != parley.CampaignScheduled &&
		s.Queued+s.Sent+s.Delivered+s.Undelivered+s.Failed+s.Canceled == s.Recipients-s.SkippedUnsubscribed-s.SkippedFrequencyCap
}

// done reports whether every message reached a final status.
func (c *campaign) done() bool {
	s := c.Stats
	return c.written() && s.Queued == 0 && s.Sent == 0
}

// RunCampaign runs the campaign scenario with o's server, credential,
// Users (the audience) and Concurrency (the seeding connections).
// ProbeRate is the transactional messages a second sent while it drains.
func RunCampaign(ctx context.Context, o Options, probeRate float64) (*CampaignResult, error) {
	r, workers, err := newRunner(ctx, o)
	if err != nil {
		return nil, err
	}
	defer closeAll(workers)
	res := &CampaignResult{Scenario: ScenarioCampaign}
	if o.Server != nil {
		res.Engine = o.Server.Engine
		// The run measures sending, not the law: the window is open at any
		// hour (the server runs with --us-sending-rules=false).
		if err := o.Server.admin(ctx, "/settings", `{"sending_window":{"start":"00:00","end":"00:00"}}`); err != nil {
			return nil, fmt.Errorf("opening the sending window: %w", err)
		}
	}
	t0 := time.Now()
	r.progressf("seeding %d consenting contacts…\n", o.Users)
	if err := r.seed(ctx, workers); err != nil {
		return nil, err
	}
	res.SeedS = round(time.Since(t0).Seconds(), 1)

	c := client.New(r.base.String(), o.Username, o.Secret)
	// Every seeded contact has postal code 10001: the segment is them all.
	zip := "10001"
	seg, err := c.CreateSegment(ctx, parley.SegmentCreate{Name: parley.Some("Bench audience " + r.runID),
		Criteria: parley.Some(parley.Criteria{{
			Attribute:    parley.SegmentAttribute{DimensionType: parley.DimensionContact, FieldName: "postal_code", FieldType: parley.CustomString},
			OperatorType: parley.OpEquals, StrFieldValue: &zip}})})
	if err != nil {
		return nil, fmt.Errorf("creating the segment: %w", err)
	}
	var cpu0 usage
	var backends *backendMeter
	if o.Server != nil {
		cpu0, _ = o.Server.usage()
		if backends, err = o.Server.meterBackends(ctx); err != nil {
			return nil, err
		}
	}
	sendAt := time.Now().Add(campaignLead).UTC().Truncate(time.Second)
	created, err := c.CreateCampaign(ctx, parley.CampaignCreate{Name: parley.Some("Bench " + r.runID), SegmentID: parley.Some(seg.ID),
		Type: parley.Some(parley.TypeMarketing), Body: parley.Some("Acme: 20% off everything this weekend. Reply STOP to opt out."),
		SendAt: parley.Some(sendAt.Format(time.RFC3339))})
	if err != nil {
		return nil, fmt.Errorf("creating the campaign: %w", err)
	}
	camp := campaign{Campaign: created}
	r.progressf("campaign %d scheduled for %s\n", camp.ID, sendAt.Format(time.TimeOnly))

	probeCtx, stopProbes := context.WithCancel(ctx)
	var probes []probe
	var probing sync.WaitGroup
	probing.Go(func() { probes = r.probe(probeCtx, c, sendAt, probeRate, nil) })

	deadline := sendAt.Add(10 * time.Minute)
	for !camp.done() {
		if time.Now().After(deadline) {
			stopProbes()
			return nil, fmt.Errorf("campaign %d not delivered 10 minutes after send_at: %+v", camp.ID, camp.Stats)
		}
		select {
		case <-ctx.Done():
			stopProbes()
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		got, err := c.GetCampaign(ctx, camp.ID)
		if err != nil {
			stopProbes()
			return nil, err
		}
		camp.Campaign = got
		if res.WrittenS == 0 && camp.written() {
			res.WrittenS = round(time.Since(sendAt).Seconds(), 2)
			r.progressf("all %d messages written after %.2fs\n", camp.Stats.Recipients, res.WrittenS)
		}
	}
	res.DeliveredS = round(time.Since(sendAt).Seconds(), 2)
	stopProbes()
	probing.Wait()
	var posts, delivered []time.Duration
	for _, p := range probes {
		posts = append(posts, p.post)
		if p.delivered > 0 {
			delivered = append(delivered, p.delivered)
		} else {
			res.ProbesLate++
		}
	}
	res.Probes, res.ProbePost, res.ProbeDelivered = len(posts), spread(posts), spread(delivered)
	res.Recipients = camp.Stats.Recipients
	statsJSON, _ := json.Marshal(camp.Stats)
	json.Unmarshal(statsJSON, &res.Stats)
	if o.Server != nil {
		if u, err := o.Server.usage(); err == nil {
			res.PeakRSSMiB, res.ServerCPUS = mib(u.peakRSS), round((u.cpu-cpu0.cpu).Seconds(), 2)
		}
		res.BackendCPUS = round(backends.stop().Seconds(), 2)
	}
	return res, nil
}

// probe is one transactional message sent while the campaign drained.
type probe struct {
	post, delivered time.Duration // delivered is 0 when it never was
}

// probe sends TRANSACTIONAL messages to random seeded contacts at rate a
// second from sendAt until ctx ends, and reports each on out once it is
// delivered or ctx ended; seen, if not nil, counts those seen delivered.
func (r *runner) probe(ctx context.Context, c *client.Client, sendAt time.Time, rate float64, seen *atomic.Int64) []probe {
	if rate <= 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return nil
	case <-time.After(time.Until(sendAt)):
	}
	// The probes are kept, not sent on a channel: one read only after
	// the run would block the 1,025th probe and the run with it.
	var (
		wg  sync.WaitGroup
		mu  sync.Mutex
		out []probe
	)
	done := func() []probe {
		wg.Wait()
		return out
	}
	tick := time.NewTicker(time.Duration(float64(time.Second) / rate))
	defer tick.Stop()
	for n := 0; ; n++ {
		select {
		case <-ctx.Done():
			return done()
		case <-tick.C:
		}
		s := r.seeds[rand.IntN(len(r.seeds))]
		start := time.Now()
		m, err := c.SendMessage(ctx, parley.MessageCreate{UserID: parley.Some(s.id), Type: parley.Some(parley.TypeTransactional),
			Body: parley.Some("Your order " + r.runID + "-" + strconv.Itoa(n) + " has shipped.")})
		if err != nil {
			if ctx.Err() == nil {
				r.recordError(statusOf(err), err.Error())
			}
			continue
		}
		p := probe{post: time.Since(start)}
		wg.Go(func() {
			// Its own deadline: a probe sent just before the campaign ends
			// is still followed to delivered.
			wait, cancel := context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
			defer cancel()
			for wait.Err() == nil {
				got, err := c.GetMessage(wait, m.ID)
				if err == nil && slices.Contains([]string{parley.StatusDelivered, parley.StatusUndelivered, parley.StatusFailed}, got.Status) {
					p.delivered = time.Since(start)
					if seen != nil {
						seen.Add(1)
					}
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			mu.Lock()
			out = append(out, p)
			mu.Unlock()
		})
	}
}

func statusOf(err error) int {
	if e, ok := errors.AsType[*client.Error](err); ok {
		return e.StatusCode
	}
	return 0
}

// WriteText prints the result for a terminal.
func (res *CampaignResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, `campaign to %d recipients (%s)
  seeding            %.1f s
  written            %.2f s after send_at
  delivered          %.2f s after send_at
  stats              %v
  transactional probes while draining: %d (not delivered: %d)
    POST /messages   p50 %.1f  p95 %.1f  p99 %.1f  max %.1f ms
    to delivered     p50 %.1f  p95 %.1f  p99 %.1f  max %.1f ms
  server             peak RSS %.0f MiB, CPU %.1f s (%.0f µs a message)
`, res.Recipients, res.Engine, res.SeedS, res.WrittenS, res.DeliveredS, res.Stats, res.Probes, res.ProbesLate,
		res.ProbePost.P50, res.ProbePost.P95, res.ProbePost.P99, res.ProbePost.Max,
		res.ProbeDelivered.P50, res.ProbeDelivered.P95, res.ProbeDelivered.P99, res.ProbeDelivered.Max,
		res.PeakRSSMiB, res.ServerCPUS, perMessage(res.ServerCPUS, res.Recipients))
	if err == nil && res.Engine == "postgres" {
		_, err = fmt.Fprintf(w, "  PostgreSQL         backends' CPU %.1f s (%.0f µs a message)\n",
			res.BackendCPUS, perMessage(res.BackendCPUS, res.Recipients))
	}
	return err
}

// perMessage is s seconds in microseconds per message of n.
func perMessage(s float64, n int64) float64 {
	if n == 0 {
		return 0
	}
	return s * 1e6 / float64(n)
}

// WriteJSON prints the result as one JSON object.
func (res *CampaignResult) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(res)
}
