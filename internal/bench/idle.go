package bench

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/url"
	"strconv"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
)

// ScenarioIdle is issue #35's idle test: a server with no traffic (and,
// with Waiting, that many flow runs waiting 30 days, none due, as issue
// #33 asks) must use under 1 % of a core. It reads the server process's
// CPU over a window from /proc and, on PostgreSQL, the CPU of the
// database backends serving the server's connections (found by the
// application_name the run gives them), which an idle server costs too.
const ScenarioIdle = "idle"

// IdleOptions are the idle scenario's own.
type IdleOptions struct {
	// Waiting runs are seeded (in SQL) waiting on a 30-day step; 0: none.
	Waiting int
	// Window is how long the CPU is read.
	Window time.Duration
	// Settle is how long the server is left alone first (its start-up,
	// the seeding's checkpoints); default 5 s.
	Settle time.Duration
}

// IdleResult is what an idle run measured.
type IdleResult struct {
	Scenario     string  `json:"scenario"`
	Engine       string  `json:"engine"`
	Waiting      int     `json:"waiting_runs"`
	SeedWaitingS float64 `json:"seed_waiting_s,omitempty"`
	WindowS      float64 `json:"window_s"`
	ServerCPUS   float64 `json:"server_cpu_s"`
	// ServerCore is ServerCPUS over the window, in % of one core.
	ServerCore float64 `json:"server_core_pct"`
	// Backends are the PostgreSQL backends of the server's connections
	// seen at the start and end of the window; BackendCPUS their CPU in
	// it (a backend that ended in the window is not counted).
	Backends    int     `json:"pg_backends,omitempty"`
	BackendCPUS float64 `json:"pg_backend_cpu_s,omitempty"`
	BackendCore float64 `json:"pg_backend_core_pct,omitempty"`
	RSSMiB      float64 `json:"server_rss_mib"`
}

// RunIdle runs the idle scenario on o.Server, which RunIdle needs (it
// reads the server's /proc and seeds its database).
func RunIdle(ctx context.Context, o Options, io IdleOptions) (*IdleResult, error) {
	srv := o.Server
	if srv == nil {
		return nil, fmt.Errorf("the idle scenario needs --self")
	}
	res := &IdleResult{Scenario: ScenarioIdle, Engine: srv.Engine, Waiting: io.Waiting}
	if io.Waiting > 0 {
		o.Users = 1
		r, workers, err := newRunner(ctx, o)
		if err != nil {
			return nil, err
		}
		closeAll(workers)
		c := client.New(r.base.String(), o.Username, o.Secret)
		flow, err := c.CreateFlow(ctx, parley.FlowCreate{Name: parley.Some("Order follow-up " + r.runID),
			Trigger: parley.Some(parley.RawMember(`{"type":"event","name":"bench_order"}`)), Steps: parley.Some(parley.RawMember(waitingSteps)),
			Active: parley.Some(true)})
		if err != nil {
			return nil, fmt.Errorf("creating the waiting flow: %w", err)
		}
		r.progressf("seeding %d runs waiting 30 days in flow %d…\n", io.Waiting, flow.ID)
		t0 := time.Now()
		if err := srv.seedWaitingRuns(ctx, flow.ID, io.Waiting, time.Now().Add(30*24*time.Hour)); err != nil {
			return nil, fmt.Errorf("seeding waiting runs: %w", err)
		}
		res.SeedWaitingS = round(time.Since(t0).Seconds(), 1)
	}
	if err := sleepCtx(ctx, cmpDur(io.Settle, 5*time.Second)); err != nil {
		return nil, err
	}
	b0, err := srv.backendCPU(ctx)
	if err != nil {
		return nil, err
	}
	u0, err := srv.usage()
	if err != nil {
		return nil, err
	}
	t1 := time.Now()
	if err := sleepCtx(ctx, io.Window); err != nil {
		return nil, err
	}
	u1, err := srv.usage()
	if err != nil {
		return nil, err
	}
	w := time.Since(t1)
	b1, err := srv.backendCPU(ctx)
	if err != nil {
		return nil, err
	}
	res.WindowS = round(w.Seconds(), 1)
	res.ServerCPUS = round((u1.cpu - u0.cpu).Seconds(), 2)
	res.ServerCore = round(100*(u1.cpu-u0.cpu).Seconds()/w.Seconds(), 2)
	res.RSSMiB = mib(u1.rss)
	if srv.Engine == "postgres" {
		var d time.Duration
		for pid, c1 := range b1 {
			if c0, ok := b0[pid]; ok {
				d += c1 - c0
				res.Backends++
			}
		}
		res.BackendCPUS = round(d.Seconds(), 2)
		res.BackendCore = round(100*d.Seconds()/w.Seconds(), 2)
	}
	return res, nil
}

func cmpDur(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// backendCPU returns the CPU used so far by each PostgreSQL backend of
// the server's connections (none on SQLite). The backends are found by
// the application_name freshSchema puts in the server's --db; their CPU
// is read from /proc, so the database must run on this machine.
func (s *Server) backendCPU(ctx context.Context) (map[int]time.Duration, error) {
	if s.Engine != "postgres" {
		return nil, nil
	}
	db, app, err := s.statsDB()
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return backendCPUOf(ctx, db, app)
}

// statsDB opens a connection pool to the server's database, not counted
// among its backends, and returns the application_name of the server's.
func (s *Server) statsDB() (*sql.DB, string, error) {
	u, err := url.Parse(s.dsn)
	if err != nil {
		return nil, "", err
	}
	db, err := sql.Open("pgx", s.dsn)
	return db, u.Query().Get("application_name"), err
}

func backendCPUOf(ctx context.Context, db *sql.DB, app string) (map[int]time.Duration, error) {
	rows, err := db.QueryContext(ctx, `SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()`, app)
	if err != nil {
		return nil, fmt.Errorf("reading the server's backends: %w", err)
	}
	defer rows.Close()
	out := map[int]time.Duration{}
	for rows.Next() {
		var pid int
		if err := rows.Scan(&pid); err != nil {
			return nil, err
		}
		pu, err := procUsage(pid)
		if err != nil {
			return nil, fmt.Errorf("reading backend %d's CPU (is PostgreSQL on this machine?): %w", pid, err)
		}
		out[pid] = pu.cpu
	}
	return out, rows.Err()
}

// WriteText prints the result for a terminal.
func (res *IdleResult) WriteText(w io.Writer) error {
	waiting := "no flow runs"
	if res.Waiting > 0 {
		waiting = strconv.Itoa(res.Waiting) + " flow runs waiting (seeded in " + strconv.FormatFloat(res.SeedWaitingS, 'f', 1, 64) + " s)"
	}
	if _, err := fmt.Fprintf(w, "idle %s server, %s, over %.1f s\n  server CPU   %.2f s = %.2f %% of a core (RSS %.0f MiB)\n",
		res.Engine, waiting, res.WindowS, res.ServerCPUS, res.ServerCore, res.RSSMiB); err != nil {
		return err
	}
	if res.Engine == "postgres" {
		_, err := fmt.Fprintf(w, "  PostgreSQL   %.2f s = %.2f %% of a core (%d backends of the server's connections)\n",
			res.BackendCPUS, res.BackendCore, res.Backends)
		return err
	}
	return nil
}

// WriteJSON prints the result as JSON.
func (res *IdleResult) WriteJSON(w io.Writer) error {
	e := json.NewEncoder(w)
	e.SetIndent("", "  ")
	return e.Encode(res)
}

// backendMeter follows the CPU of the server's PostgreSQL backends from
// its start: it samples them every 200 ms, so a backend that exits
// meanwhile still counts up to its last sample, and one that starts
// counts from zero. Nil (and stop 0) on SQLite.
type backendMeter struct {
	stopped chan struct{}
	done    chan time.Duration
}

func (s *Server) meterBackends(ctx context.Context) (*backendMeter, error) {
	if s.Engine != "postgres" {
		return nil, nil
	}
	db, app, err := s.statsDB()
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	first, err := backendCPUOf(ctx, db, app)
	if err != nil {
		db.Close()
		return nil, err
	}
	m := &backendMeter{stopped: make(chan struct{}), done: make(chan time.Duration, 1)}
	go func() {
		defer db.Close()
		last := maps.Clone(first)
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for stop := false; !stop; {
			select {
			case <-m.stopped:
				stop = true
			case <-tick.C:
			}
			// A backend gone between the two reads fails this sample only.
			if now, err := backendCPUOf(context.WithoutCancel(ctx), db, app); err == nil {
				maps.Copy(last, now)
			}
		}
		var d time.Duration
		for pid, cpu := range last {
			d += cpu - first[pid]
		}
		m.done <- d
	}()
	return m, nil
}

// stop ends the sampling and returns the backends' CPU since the start.
func (m *backendMeter) stop() time.Duration {
	if m == nil {
		return 0
	}
	close(m.stopped)
	return <-m.done
}
