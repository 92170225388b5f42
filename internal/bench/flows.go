package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
)

// ScenarioFlows is issue #33's scale test of flows (D21). Part one: an
// active flow triggered by subscribed (send a welcome, wait an hour, send
// again), then Contacts consenting contacts imported at once through
// POST /imports, as a user would; it times, from the import's 201, the
// import done, every contact entered (the flow's stats), every welcome
// written and every welcome delivered, with --probe-rate transactional
// messages timed while it drains, and polls the flow's stats to show how
// far behind the import they are. Part two (Waiting > 0): a second flow
// with that many runs waiting on a 30-day step, seeded in SQL, and the
// server's CPU over IdleWindow while none is due.
const ScenarioFlows = "flows"

// FlowOptions are the flows scenario's own.
type FlowOptions struct {
	// Contacts are imported at once (100,000 in issue #33).
	Contacts int
	// ProbeRate is the transactional messages a second sent while the
	// welcomes drain.
	ProbeRate float64
	// Waiting is the runs of part two (1,000,000 in issue #33); 0 skips it.
	Waiting int
	// IdleWindow is how long part two reads the server's CPU.
	IdleWindow time.Duration
}

// flowProbeContacts are the contacts the probes message: created before
// the flow, so they do not enter it.
const flowProbeContacts = 20

// FlowsResult is what a flows run measured. Times are from the 201 of
// POST /imports.
type FlowsResult struct {
	Scenario string `json:"scenario"`
	Engine   string `json:"engine,omitempty"`
	Contacts int    `json:"contacts"`
	// ImportPostMs is the POST /imports (upload) itself.
	ImportPostMs float64 `json:"import_post_ms"`
	ImportedS    float64 `json:"imported_s"`  // the import completed
	EnteredS     float64 `json:"entered_s"`   // stats.entered = Contacts
	WrittenS     float64 `json:"written_s"`   // the first step's sent = Contacts
	DeliveredS   float64 `json:"delivered_s"` // that many more messages delivered (/metrics)
	// StatsBehindMaxS is the most the flow's stats were behind the
	// import: at each poll, how long ago the import had created as many
	// contacts as the stats say entered (0 when they agree).
	StatsBehindMaxS float64                `json:"stats_behind_max_s"`
	StatsPolls      int                    `json:"stats_polls"`
	Stats           parley.FlowStats       `json:"stats"`
	StepsStats      []parley.FlowStepStats `json:"steps_stats"`

	Probes         int    `json:"probes"`
	ProbePost      Spread `json:"probe_post_ms"`
	ProbeDelivered Spread `json:"probe_delivered_ms"`
	ProbesLate     int    `json:"probes_not_delivered"`

	PeakRSSMiB float64 `json:"server_peak_rss_mib,omitempty"`
	ServerCPUS float64 `json:"server_cpu_s,omitempty"` // from the import's POST to delivered

	// Part two.
	Waiting      int     `json:"waiting_runs,omitempty"`
	SeedWaitingS float64 `json:"seed_waiting_s,omitempty"`
	IdleWindowS  float64 `json:"idle_window_s,omitempty"`
	IdleCPUS     float64 `json:"idle_server_cpu_s,omitempty"`
}

// flowSteps are part one's: a welcome, an hour's wait, a follow-up.
const flowSteps = `[{"type":"send","message_type":"MARKETING","body":"Welcome to Acme, {{first_name | \"there\"}}! Reply STOP to opt out."},
{"type":"wait","seconds":3600},
{"type":"send","message_type":"MARKETING","body":"Acme: 10% off your first order with code HELLO."}]`

// waitingSteps are part two's: its runs wait at step 1 for 30 days.
const waitingSteps = `[{"type":"send","message_type":"MARKETING","body":"Thanks for your order."},
{"type":"wait","seconds":2592000},
{"type":"send","message_type":"MARKETING","body":"How was your order? Reply 1-5."}]`

// RunFlows runs the flows scenario with o's server and credential.
func RunFlows(ctx context.Context, o Options, fo FlowOptions) (*FlowsResult, error) {
	if fo.Contacts < 1 {
		return nil, fmt.Errorf("--users: want at least 1 contact to import")
	}
	o.Users = flowProbeContacts
	r, workers, err := newRunner(ctx, o)
	if err != nil {
		return nil, err
	}
	defer closeAll(workers)
	res := &FlowsResult{Scenario: ScenarioFlows, Contacts: fo.Contacts}
	if o.Server != nil {
		res.Engine = o.Server.Engine
		if err := o.Server.admin(ctx, "/settings", `{"sending_window":{"start":"00:00","end":"00:00"}}`); err != nil {
			return nil, fmt.Errorf("opening the sending window: %w", err)
		}
	}
	if err := r.seed(ctx, workers); err != nil {
		return nil, err
	}
	c := client.New(r.base.String(), o.Username, o.Secret)
	flow, err := c.CreateFlow(ctx, parley.FlowCreate{Name: parley.Some("Welcome " + r.runID),
		Trigger: parley.Some(parley.RawMember(`{"type":"subscribed"}`)), Steps: parley.Some(parley.RawMember(flowSteps)),
		Active: parley.Some(true)})
	if err != nil {
		return nil, fmt.Errorf("creating the flow: %w", err)
	}

	// The file: numbers after the probes', every row consenting.
	var csv bytes.Buffer
	csv.WriteString("phone_number,first_name,messaging_consent\n")
	var line []byte
	for i := range fo.Contacts {
		line = r.numbers.appendNumber(line[:0], uint64(flowProbeContacts+i))
		line = append(line, ",Bench,true\n"...)
		csv.Write(line)
	}
	body, ctype, err := client.MultipartFile("contacts.csv", &csv)
	if err != nil {
		return nil, err
	}
	before, err := scrapeDelivery(ctx, r.base)
	if err != nil {
		return nil, err
	}
	var cpu0 usage
	if o.Server != nil {
		cpu0, _ = o.Server.usage()
	}
	r.progressf("importing %d consenting contacts into flow %d's trigger…\n", fo.Contacts, flow.ID)
	start := time.Now()
	resp, err := c.Do(ctx, "POST", "/imports", body, ctype)
	if err != nil {
		return nil, fmt.Errorf("POST /imports: %w", err)
	}
	accepted := time.Now()
	if resp.StatusCode != 201 {
		return nil, fmt.Errorf("POST /imports: HTTP %d: %s", resp.StatusCode, excerpt(resp.Body))
	}
	res.ImportPostMs = round(float64(accepted.Sub(start).Microseconds())/1000, 1)
	var imp parley.Import
	if err := json.Unmarshal(resp.Body, &imp); err != nil {
		return nil, err
	}

	probeCtx, stopProbes := context.WithCancel(ctx)
	defer stopProbes()
	var probes []probe
	var probing sync.WaitGroup
	var seen atomic.Int64
	probing.Go(func() { probes = r.probe(probeCtx, c, accepted, fo.ProbeRate, &seen) })

	since := func() float64 { return round(time.Since(accepted).Seconds(), 2) }
	// created is the import's created count as polled, to date the flow's
	// stats against.
	type point struct {
		at      time.Time
		created int64
	}
	var created []point
	deadline := accepted.Add(15 * time.Minute)
	n := int64(fo.Contacts)
	for res.DeliveredS == 0 {
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("flow %d: not every welcome delivered 15 minutes after the import: %+v", flow.ID, flow.Stats)
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
		if res.ImportedS == 0 {
			if err := getJSON(ctx, c, "/imports/"+strconv.FormatInt(imp.ID, 10), &imp); err != nil {
				return nil, err
			}
			created = append(created, point{time.Now(), imp.Created})
			if imp.Status == parley.ImportFailed {
				return nil, fmt.Errorf("the import failed: %+v", imp.Error)
			}
			if imp.Status == parley.ImportCompleted {
				res.ImportedS = since()
				r.progressf("import done after %.2fs (%d created)\n", res.ImportedS, imp.Created)
				if imp.Created != n {
					return nil, fmt.Errorf("the import created %d contacts of %d", imp.Created, n)
				}
			}
		}
		got, err := c.GetFlow(ctx, flow.ID)
		if err != nil {
			return nil, err
		}
		flow = got
		res.StatsPolls++
		if res.EnteredS == 0 {
			// The stats are as old as the last poll at which the import had
			// created no more than they say entered.
			behind := 0.0
			for i := len(created) - 1; i >= 0; i-- {
				if created[i].created <= flow.Stats.Entered {
					if i < len(created)-1 {
						behind = time.Since(created[i+1].at).Seconds()
					}
					break
				}
				if i == 0 {
					behind = time.Since(accepted).Seconds()
				}
			}
			res.StatsBehindMaxS = max(res.StatsBehindMaxS, round(behind, 2))
		}
		if res.EnteredS == 0 && flow.Stats.Entered >= n {
			res.EnteredS = since()
			r.progressf("all %d entered after %.2fs\n", n, res.EnteredS)
		}
		if res.WrittenS == 0 && len(flow.StepsStats) > 0 && flow.StepsStats[0].Sent+flow.StepsStats[0].Skipped >= n {
			res.WrittenS = since()
			r.progressf("all %d welcomes written after %.2fs\n", n, res.WrittenS)
		}
		if res.WrittenS > 0 {
			now, err := scrapeDelivery(ctx, r.base)
			if err != nil {
				return nil, err
			}
			// The server's deliveries less the probes seen delivered: a
			// probe delivered but not yet seen (their GETs poll every
			// 20 ms) makes this a message early.
			if int64(now.delivered-before.delivered)-seen.Load() >= n {
				res.DeliveredS = since()
			}
		}
	}
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
	res.Stats, res.StepsStats = flow.Stats, flow.StepsStats
	if o.Server != nil {
		if u, err := o.Server.usage(); err == nil {
			res.PeakRSSMiB, res.ServerCPUS = mib(u.peakRSS), round((u.cpu-cpu0.cpu).Seconds(), 2)
		}
	}
	if fo.Waiting > 0 {
		if err := r.waitingRuns(ctx, c, o.Server, fo, res); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// waitingRuns is part two: fo.Waiting runs of a second flow, waiting 30
// days, and the server's CPU while none is due. The runs are written in
// SQL (their contacts are not: nothing reads a run's contact before its
// step is due); seeding them through entries would take the run longer
// than it measures.
func (r *runner) waitingRuns(ctx context.Context, c *client.Client, srv *Server, fo FlowOptions, res *FlowsResult) error {
	if srv == nil {
		return fmt.Errorf("--waiting: needs --self (the runs are seeded in the server's database)")
	}
	flow, err := c.CreateFlow(ctx, parley.FlowCreate{Name: parley.Some("Order follow-up " + r.runID),
		Trigger: parley.Some(parley.RawMember(`{"type":"event","name":"bench_order"}`)), Steps: parley.Some(parley.RawMember(waitingSteps)),
		Active: parley.Some(true)})
	if err != nil {
		return fmt.Errorf("creating the waiting flow: %w", err)
	}
	r.progressf("seeding %d runs waiting 30 days in flow %d…\n", fo.Waiting, flow.ID)
	t0 := time.Now()
	if err := srv.seedWaitingRuns(ctx, flow.ID, fo.Waiting, time.Now().Add(30*24*time.Hour)); err != nil {
		return fmt.Errorf("seeding waiting runs: %w", err)
	}
	res.Waiting, res.SeedWaitingS = fo.Waiting, round(time.Since(t0).Seconds(), 1)
	got, err := c.GetFlow(ctx, flow.ID)
	if err != nil {
		return err
	}
	if got.Stats.Active != int64(fo.Waiting) {
		return fmt.Errorf("flow %d: %d active runs after seeding %d", flow.ID, got.Stats.Active, fo.Waiting)
	}
	// Let what the seeding woke (checkpoints, the runner's next probe)
	// settle before the window.
	time.Sleep(3 * time.Second)
	r.progressf("reading the server's CPU for %s with %d runs waiting…\n", fo.IdleWindow, fo.Waiting)
	u0, err := srv.usage()
	if err != nil {
		return err
	}
	t1 := time.Now()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(fo.IdleWindow):
	}
	u1, err := srv.usage()
	if err != nil {
		return err
	}
	res.IdleWindowS = round(time.Since(t1).Seconds(), 1)
	res.IdleCPUS = round((u1.cpu - u0.cpu).Seconds(), 2)
	return nil
}

func getJSON(ctx context.Context, c *client.Client, path string, out any) error {
	resp, err := c.Do(ctx, "GET", path, nil, "")
	if err != nil {
		return err
	}
	if resp.StatusCode != 200 {
		return fmt.Errorf("GET %s: HTTP %d: %s", path, resp.StatusCode, excerpt(resp.Body))
	}
	return json.Unmarshal(resp.Body, out)
}

// WriteText prints the result for a terminal.
func (res *FlowsResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, `flow triggered by an import of %d consenting contacts (%s)
  POST /imports      %.0f ms
  import done        %.2f s after the 201
  all entered        %.2f s
  welcomes written   %.2f s
  welcomes delivered %.2f s
  stats behind       at most %.2f s (%d polls)
  stats              %+v
  transactional probes while draining: %d (not delivered: %d)
    POST /messages   p50 %.1f  p95 %.1f  p99 %.1f  max %.1f ms
    to delivered     p50 %.1f  p95 %.1f  p99 %.1f  max %.1f ms
  server             peak RSS %.0f MiB, CPU %.1f s
`, res.Contacts, res.Engine, res.ImportPostMs, res.ImportedS, res.EnteredS, res.WrittenS, res.DeliveredS,
		res.StatsBehindMaxS, res.StatsPolls, res.Stats, res.Probes, res.ProbesLate,
		res.ProbePost.P50, res.ProbePost.P95, res.ProbePost.P99, res.ProbePost.Max,
		res.ProbeDelivered.P50, res.ProbeDelivered.P95, res.ProbeDelivered.P99, res.ProbeDelivered.Max,
		res.PeakRSSMiB, res.ServerCPUS)
	if err == nil && res.Waiting > 0 {
		_, err = fmt.Fprintf(w, `%d runs waiting (seeded in SQL in %.1f s)
  server CPU         %.2f s over %.1f s with nothing due
`, res.Waiting, res.SeedWaitingS, res.IdleCPUS, res.IdleWindowS)
	}
	return err
}

// WriteJSON prints the result as one JSON object.
func (res *FlowsResult) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(res)
}
