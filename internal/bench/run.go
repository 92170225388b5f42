// Package bench is `parley bench`: a load generator that signs its own
// requests, runs a scenario closed loop (a fixed number of connections as
// fast as the server answers) or open loop (a fixed arrival rate, latency
// measured from each request's scheduled time so queueing shows), and
// reports throughput, latency percentiles and errors by status. It can
// start the server it measures as a child process (see StartServer).
//
// The generator shares the machine with the server, so it is kept cheap:
// one reused request, header map and body buffer per connection, the date
// header formatted once a second, no JSON encoding on the hot path, and a
// lock-free histogram.
package bench

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Options describe one run.
type Options struct {
	// URL is the server, scheme://host[:port] (a trailing /api/v1 is
	// accepted). Username and Secret are the credential that signs.
	URL, Username, Secret string
	Scenario              string
	Duration              time.Duration
	// Concurrency is the number of connections, and of requests in flight
	// at most.
	Concurrency int
	// Rate is the open loop's arrivals per second; 0 runs closed loop.
	Rate float64
	// Users is how many users are created before the run, for the
	// scenarios that read, update or message users.
	Users int
	// Hardening sends a fresh Idempotency-Key on every POST, so the
	// server's idempotency store works on each write.
	Hardening bool
	// NoKeys leaves Idempotency-Key out under Hardening: the server's
	// protections on, but no request asks for idempotency.
	NoKeys bool
	// OrderedKeys makes the keys time-ordered UUIDs (version 7) instead
	// of random ones (version 4).
	OrderedKeys bool
	// Deliveries (scenario send) waits after the run until every accepted
	// message is delivered, up to DeliveryWait, and reports the pipeline's
	// rate from the server's /metrics.
	Deliveries   bool
	DeliveryWait time.Duration
	// History makes every create set messaging_consent and the custom data
	// value tier, so each writes user_history rows (D18); the brand needs
	// a STRING field "tier" (a --self server's brand has one).
	History bool
	// Server, when the run started its own, is measured too.
	Server *Server
	// Progress receives a line a second while the run lasts; nil for none.
	// With ProgressTTY the line rewrites itself.
	Progress    io.Writer
	ProgressTTY bool
	// Timeout bounds one request; 0 means 30 s.
	Timeout time.Duration

	tick time.Duration // progress interval; tests shorten it
}

// Check reports the first option that cannot work; Run checks too, but a
// caller that starts a server first checks before.
func (o *Options) Check() error {
	switch {
	case !validScenario(o.Scenario):
		return fmt.Errorf("--scenario: want one of %s, not %q", strings.Join(Scenarios, ", "), o.Scenario)
	case o.Duration <= 0:
		return errors.New("--duration: want a positive duration such as 20s")
	case o.Concurrency < 1:
		return errors.New("--concurrency: want at least 1")
	case o.Rate < 0:
		return errors.New("--rate: want 0 (closed loop) or a positive rate")
	case o.Rate > 0 && int64(o.Rate*o.Duration.Seconds()) < 1:
		return errors.New("--rate × --duration: less than one request")
	case o.Deliveries && o.Scenario != ScenarioSend:
		return errors.New("--deliveries: only with --scenario send")
	case o.OrderedKeys && (!o.Hardening || o.NoKeys):
		return errors.New("--ordered-keys: only with --hardening and keys")
	case Seeded(o.Scenario) && o.Users < 1:
		return errors.New("--users: want at least 1")
	case strings.ContainsAny(o.Username, "\r\n"):
		return errors.New("--username: no line breaks")
	}
	return nil
}

func validScenario(s string) bool {
	for _, v := range Scenarios {
		if s == v {
			return true
		}
	}
	return false
}

// runner is the state the workers share.
type runner struct {
	o       Options
	base    *url.URL
	numbers numbers
	runID   string
	// rngSeed seeds the workers' generators, which make the
	// Idempotency-Keys: 64 random bits, so that runs against one server
	// (which keeps keys a day) never send the same keys.
	rngSeed uint64
	seeds   []seed

	created atomic.Uint64 // create-user numbers used in the run
	seq     atomic.Uint64 // makes update and send bodies unique

	hist     Histogram
	started  atomic.Int64
	finished atomic.Int64
	ok       atomic.Int64
	errs     [600]atomic.Int64 // by status; 0 is a transport error
	errMu    sync.Mutex
	samples  map[int]string // the first error answer of each status
	rateSeen atomic.Bool    // an answer carried RateLimit-Limit
}

// Run seeds what the scenario needs, runs it and returns the result. The
// context cuts a run short; what was measured until then is returned.
func Run(ctx context.Context, o Options) (*Result, error) {
	r, workers, err := newRunner(ctx, o)
	if err != nil {
		return nil, err
	}
	defer closeAll(workers)

	res := &Result{Scenario: o.Scenario, Mode: "closed", Concurrency: o.Concurrency, Rate: o.Rate,
		Hardening: o.Hardening, IdempotencyKeys: o.Hardening && !o.NoKeys, DurationS: o.Duration.Seconds()}
	if res.IdempotencyKeys {
		res.KeyKind = "uuidv4"
		if o.OrderedKeys {
			res.KeyKind = "uuidv7"
		}
	}
	if o.Rate > 0 {
		res.Mode = "open"
	}
	if Seeded(o.Scenario) {
		t0 := time.Now()
		r.progressf("seeding %d users…\n", o.Users)
		if err := r.seed(ctx, workers); err != nil {
			return nil, err
		}
		res.Setup = &Setup{Users: o.Users, Seconds: round(time.Since(t0).Seconds(), 2)}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}

	var serverBefore usage
	if o.Server != nil {
		serverBefore, _ = o.Server.usage()
	}
	var deliveredBefore deliveryCounts
	if o.Deliveries {
		if deliveredBefore, err = scrapeDelivery(ctx, r.base); err != nil {
			return nil, err
		}
	}
	selfBefore := SelfCPU()
	start := time.Now()
	stopProgress := r.startProgress(start)
	elapsed, unsent := drive(ctx, realClock{ctx}, plan{workers: o.Concurrency, rate: o.Rate, duration: o.Duration},
		func(i int) bool { return workers[i].timed() }, &r.hist, &r.started)
	stopProgress()
	res.BenchCPUS = round((SelfCPU() - selfBefore).Seconds(), 2)
	if o.Server != nil {
		if after, err := o.Server.usage(); err == nil {
			cpu := (after.cpu - serverBefore.cpu).Seconds()
			res.Server = &ServerStats{PID: o.Server.PID(), Engine: o.Server.Engine,
				PeakRSSMiB: mib(after.peakRSS), RSSMiB: mib(after.rss), CPUS: round(cpu, 2), Cores: round(cpu/elapsed.Seconds(), 2)}
		}
	}
	r.fill(res, elapsed, unsent)
	if o.Deliveries {
		r.progressf("waiting for %d messages to be delivered…\n", res.OK)
		wait := cmp.Or(o.DeliveryWait, time.Minute)
		if res.Delivery, err = waitDelivered(ctx, r.base, deliveredBefore, res.OK, start, time.Now().Add(wait)); err != nil {
			return nil, err
		}
	}
	return res, nil
}

// newRunner checks o and returns a runner for it with its workers, one
// per connection; the caller closes their connections (closeAll).
func newRunner(ctx context.Context, o Options) (*runner, []*worker, error) {
	if o.Timeout == 0 {
		o.Timeout = 30 * time.Second
	}
	if o.tick == 0 {
		o.tick = time.Second
	}
	if err := o.Check(); err != nil {
		return nil, nil, err
	}
	base, err := parseBase(o.URL)
	if err != nil {
		return nil, nil, err
	}
	var rnd [16]byte
	rand.Read(rnd[:])
	r := &runner{o: o, base: base, samples: map[int]string{},
		numbers: numbers{start: binary.LittleEndian.Uint64(rnd[:8]) % numberSpace},
		rngSeed: binary.LittleEndian.Uint64(rnd[8:]),
		runID:   hex.EncodeToString(rnd[8:])}
	dial := dialer(base)
	workers := make([]*worker, o.Concurrency)
	for i := range workers {
		workers[i] = r.newWorker(ctx, uint64(i), dial)
	}
	return r, workers, nil
}

// closeAll closes the workers' connections.
func closeAll(workers []*worker) {
	for _, w := range workers {
		w.closeConn()
	}
}

func parseBase(s string) (*url.URL, error) {
	u, err := url.Parse(strings.TrimSuffix(strings.TrimRight(s, "/"), "/api/v1"))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
		return nil, fmt.Errorf("--url: want http://host:port, not %q", s)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// seed creates o.Users users with consent, spread over the workers. A 429
// waits for its Retry-After: seeding must finish whatever the server's
// rate limit.
func (r *runner) seed(ctx context.Context, workers []*worker) error {
	r.seeds = make([]seed, r.o.Users)
	var next atomic.Int64
	var wg sync.WaitGroup
	errc := make(chan error, len(workers))
	for _, w := range workers {
		wg.Go(func() {
			for {
				i := next.Add(1) - 1
				if i >= int64(len(r.seeds)) || ctx.Err() != nil {
					return
				}
				if err := w.seedOne(ctx, uint64(i)); err != nil {
					errc <- err
					next.Store(int64(len(r.seeds))) // the others stop too
					return
				}
			}
		})
	}
	wg.Wait()
	select {
	case err := <-errc:
		return fmt.Errorf("seeding users: %w", err)
	default:
		return ctx.Err()
	}
}

func (w *worker) seedOne(ctx context.Context, i uint64) error {
	for {
		w.prepare(opSeed, i)
		status, err := w.send()
		if err != nil {
			return err
		}
		if status == http.StatusTooManyRequests {
			wait, _ := strconv.Atoi(w.retryAfter)
			select {
			case <-time.After(time.Duration(max(wait, 1)) * time.Second):
				continue
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		if status != http.StatusCreated && status != http.StatusOK {
			return fmt.Errorf("POST %s: HTTP %d: %s", pathUsers, status, excerpt(w.resp.Bytes()))
		}
		var u struct {
			ID          int64  `json:"id"`
			PhoneNumber string `json:"phone_number"`
		}
		if err := json.Unmarshal(w.resp.Bytes(), &u); err != nil || u.ID == 0 || u.PhoneNumber == "" {
			return fmt.Errorf("POST %s: unexpected answer %s", pathUsers, excerpt(w.resp.Bytes()))
		}
		w.r.seeds[i] = newSeed(u.ID, u.PhoneNumber)
		return nil
	}
}

// timed sends the scenario's next request and reports whether it got a
// 2xx answer; anything else is counted by status.
func (w *worker) timed() bool {
	w.prepare(w.pick(), 0)
	status, err := w.send()
	w.r.finished.Add(1)
	if err == nil && status >= 200 && status < 300 {
		w.r.ok.Add(1)
		return true
	}
	if err != nil && w.ctx.Err() != nil {
		return false // cut short by the caller (Ctrl-C): not the server's error
	}
	sample := excerpt(w.resp.Bytes())
	if err != nil {
		status, sample = 0, err.Error()
	}
	w.r.recordError(status, sample)
	return false
}

func (r *runner) recordError(status int, sample string) {
	if status < 0 || status >= len(r.errs) {
		status = len(r.errs) - 1
	}
	if r.errs[status].Add(1) == 1 {
		r.errMu.Lock()
		r.samples[status] = sample
		r.errMu.Unlock()
	}
}

// excerpt is the start of an answer, for error reports.
func excerpt(b []byte) string {
	const n = 200
	if len(b) > n {
		return string(b[:n]) + "…"
	}
	return string(b)
}

// clock is time for drive; tests use a fake one.
type clock interface {
	Now() time.Time
	Sleep(d time.Duration)
}

// realClock is the time; its Sleep ends early when ctx is done, so Ctrl-C
// does not wait for open-loop workers asleep until their next arrival.
type realClock struct{ ctx context.Context }

func (realClock) Now() time.Time { return time.Now() }

func (c realClock) Sleep(d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-c.ctx.Done():
	}
}

// plan is how drive spreads requests over time.
type plan struct {
	workers  int
	rate     float64 // arrivals per second; 0 is closed loop
	duration time.Duration
}

// drive runs p.workers loops calling do until the run ends, records the
// latency of each successful do in h, and returns the time from the start
// to the last answer.
//
// Closed loop: each worker starts its next request when the previous one
// ends, until p.duration has passed.
//
// Open loop: arrival i is due at start + i/rate, for every i with a due
// time before p.duration. A free worker takes the next arrival, waits for
// its due time if it is early, and sends. Latency runs from the due time,
// not from when the request went out: when every connection is busy,
// arrivals wait, and that wait is part of what a user would see (the
// generator does not slow down to suit the server, which would hide it:
// coordinated omission). Arrivals not started within another p.duration
// (at most 30 s) after the end are abandoned and returned as unsent,
// unless ctx ended the run.
func drive(ctx context.Context, c clock, p plan, do func(worker int) bool, h *Histogram, started *atomic.Int64) (elapsed time.Duration, unsent int64) {
	start := c.Now()
	var wg sync.WaitGroup
	if p.rate == 0 {
		end := start.Add(p.duration)
		for i := range p.workers {
			wg.Go(func() {
				for ctx.Err() == nil {
					t0 := c.Now()
					if !t0.Before(end) {
						return
					}
					started.Add(1)
					if do(i) {
						h.Record(c.Now().Sub(t0))
					}
				}
			})
		}
		wg.Wait()
		return c.Now().Sub(start), 0
	}
	total := int64(p.rate * p.duration.Seconds())
	stop := start.Add(p.duration + min(p.duration, 30*time.Second))
	var next atomic.Int64
	for i := range p.workers {
		wg.Go(func() {
			for ctx.Err() == nil {
				n := next.Add(1) - 1
				if n >= total {
					return
				}
				due := start.Add(time.Duration(float64(n) * float64(time.Second) / p.rate))
				now := c.Now()
				if !now.Before(stop) {
					return
				}
				if wait := due.Sub(now); wait > 0 {
					c.Sleep(wait)
				}
				started.Add(1)
				if do(i) {
					h.Record(c.Now().Sub(due))
				}
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return c.Now().Sub(start), 0 // cut short: the rest of the schedule was not due to run
	}
	return c.Now().Sub(start), total - started.Load()
}

// startProgress prints a line a second until the returned function is
// called: requests per second, latency and errors of the last second, and
// how far behind schedule an open-loop run is.
func (r *runner) startProgress(start time.Time) (stop func()) {
	if r.o.Progress == nil {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(r.o.tick)
		defer t.Stop()
		prev, prevN, prevT := r.hist.Snapshot(), int64(0), start
		for {
			select {
			case <-done:
				if r.o.ProgressTTY {
					fmt.Fprintln(r.o.Progress)
				}
				return
			case now := <-t.C:
				snap, n := r.hist.Snapshot(), r.finished.Load()
				d := snap.Since(prev)
				line := fmt.Sprintf("%4.0fs %10s req/s   p50 %8s   p99 %8s   errors %s   in flight %d",
					now.Sub(start).Seconds(), thousands(float64(n-prevN)/now.Sub(prevT).Seconds()),
					ms(d.Quantile(0.50)), ms(d.Quantile(0.99)), thousands(float64(r.errorCount())), r.started.Load()-n)
				if r.o.Rate > 0 {
					due := min(int64(now.Sub(start).Seconds()*r.o.Rate), int64(r.o.Rate*r.o.Duration.Seconds()))
					line += fmt.Sprintf("   waiting %d", max(due-r.started.Load(), 0))
				}
				if r.o.ProgressTTY {
					fmt.Fprint(r.o.Progress, "\r"+line+"\033[K")
				} else {
					fmt.Fprintln(r.o.Progress, line)
				}
				prev, prevN, prevT = snap, n, now
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

func (r *runner) progressf(format string, args ...any) {
	if r.o.Progress != nil {
		fmt.Fprintf(r.o.Progress, format, args...)
	}
}

func (r *runner) errorCount() int64 {
	var n int64
	for i := range r.errs {
		n += r.errs[i].Load()
	}
	return n
}

// fill completes res once the workers have stopped.
func (r *runner) fill(res *Result, elapsed time.Duration, unsent int64) {
	s := r.hist.Snapshot()
	res.ElapsedS = round(elapsed.Seconds(), 3)
	res.OK = r.ok.Load()
	res.Errors = r.errorCount()
	res.Requests = res.OK + res.Errors
	res.Unsent = unsent
	if elapsed > 0 {
		res.RPS = round(float64(res.OK)/elapsed.Seconds(), 1)
	}
	res.Latency = Latency{P50: msf(s.Quantile(0.50)), P90: msf(s.Quantile(0.90)), P99: msf(s.Quantile(0.99)),
		Max: msf(time.Duration(s.Max)), Mean: msf(s.Mean())}
	res.ErrorsByStatus = map[string]int64{}
	r.errMu.Lock()
	defer r.errMu.Unlock()
	for status := range r.errs {
		if n := r.errs[status].Load(); n > 0 {
			res.ErrorsByStatus[strconv.Itoa(status)] = n
		}
	}
	if len(r.samples) > 0 {
		res.ErrorSamples = map[string]string{}
		for status, s := range r.samples {
			res.ErrorSamples[strconv.Itoa(status)] = s
		}
	}
	res.RateLimitHeaders = r.rateSeen.Load()
}

// SelfCPU is the CPU time this process has used, user and system (benchmarks
// in other packages report it per operation too).
func SelfCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
