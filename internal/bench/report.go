package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Result is what a run measured. Its JSON form is `parley bench --json`.
type Result struct {
	Scenario string `json:"scenario"`
	// Target is "self" (a server the run started) or the URL.
	Target      string  `json:"target"`
	Mode        string  `json:"mode"` // closed or open
	Concurrency int     `json:"concurrency"`
	Rate        float64 `json:"rate"` // offered arrivals per second; 0 in closed loop
	Hardening   bool    `json:"hardening"`
	// IdempotencyKeys: every POST carried a fresh Idempotency-Key.
	IdempotencyKeys bool `json:"idempotency_keys"`
	// KeyKind is the keys' kind: uuidv4 (random) or uuidv7 (time-ordered).
	KeyKind   string  `json:"idempotency_key_kind,omitempty"`
	DurationS float64 `json:"duration_s"`
	// ElapsedS runs from the first request to the last answer.
	ElapsedS float64 `json:"elapsed_s"`
	Requests int64   `json:"requests"` // answered or failed
	OK       int64   `json:"ok"`       // 2xx answers
	Errors   int64   `json:"errors"`   // everything else
	// ErrorsByStatus counts errors by HTTP status; "0" is a request that
	// got no answer (connection refused, timeout).
	ErrorsByStatus map[string]int64  `json:"errors_by_status"`
	ErrorSamples   map[string]string `json:"error_samples,omitempty"` // the first answer of each status
	// Unsent is the open loop's arrivals that were never sent: the server
	// fell so far behind that the run gave up on them.
	Unsent int64 `json:"unsent"`
	// RPS is 2xx answers per second of ElapsedS.
	RPS float64 `json:"rps"`
	// Latency of the 2xx answers; in open loop from each request's due time.
	Latency Latency `json:"latency_ms"`
	// RateLimitHeaders tells whether answers carried RateLimit-Limit, that
	// is whether the server's rate limiter was on.
	RateLimitHeaders bool   `json:"rate_limit_headers"`
	Setup            *Setup `json:"setup,omitempty"`
	// Delivery is filled by a send run with --deliveries.
	Delivery *Delivery    `json:"delivery,omitempty"`
	Server   *ServerStats `json:"server,omitempty"`
	// BenchCPUS is the CPU time the load generator used during the run.
	BenchCPUS float64 `json:"bench_cpu_s"`
}

// Latency percentiles in milliseconds.
type Latency struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	Max  float64 `json:"max"`
	Mean float64 `json:"mean"`
}

// Setup is the untimed preparation.
type Setup struct {
	Users   int     `json:"users"`
	Seconds float64 `json:"seconds"`
}

// ServerStats is the server process the run started, measured during the
// timed run.
type ServerStats struct {
	PID    int    `json:"pid"`
	Engine string `json:"engine"` // sqlite, postgres or trivial
	// PeakRSSMiB is the process's high-water resident set (VmHWM),
	// setup included; RSSMiB its resident set at the end.
	PeakRSSMiB float64 `json:"peak_rss_mib"`
	RSSMiB     float64 `json:"rss_mib"`
	CPUS       float64 `json:"cpu_s"` // user + system time during the run
	Cores      float64 `json:"cores"` // CPUS over the elapsed time
}

// WriteJSON writes res as one indented JSON object.
func (res *Result) WriteJSON(w io.Writer) error {
	b, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// WriteText writes the report for people.
func (res *Result) WriteText(w io.Writer) error {
	var b strings.Builder
	mode := fmt.Sprintf("closed loop, %d connections", res.Concurrency)
	if res.Mode == "open" {
		mode = fmt.Sprintf("open loop at %s req/s, %d connections", thousands(res.Rate), res.Concurrency)
	}
	hardening := "off"
	switch {
	case res.IdempotencyKeys:
		kind := "random"
		if res.KeyKind == "uuidv7" {
			kind = "time-ordered"
		}
		hardening = "on, Idempotency-Key on every POST (" + kind + ")"
	case res.Hardening:
		hardening = "on, no Idempotency-Key"
	}
	fmt.Fprintf(&b, "scenario     %s (%s, %s, hardening %s)\n", res.Scenario, mode,
		time.Duration(res.DurationS*float64(time.Second)), hardening)
	target := res.Target
	if res.Server != nil {
		target = fmt.Sprintf("%s, %s (pid %d)", target, res.Server.Engine, res.Server.PID)
	}
	fmt.Fprintf(&b, "server       %s\n", target)
	if res.Setup != nil {
		fmt.Fprintf(&b, "setup        %s users in %.1f s (not timed)\n", thousands(float64(res.Setup.Users)), res.Setup.Seconds)
	}
	fmt.Fprintf(&b, "requests     %s ok, %s errors in %.2f s\n", thousands(float64(res.OK)), thousands(float64(res.Errors)), res.ElapsedS)
	fmt.Fprintf(&b, "throughput   %s req/s\n", thousands(res.RPS))
	l := res.Latency
	fmt.Fprintf(&b, "latency      p50 %.2f ms   p90 %.2f ms   p99 %.2f ms   max %.2f ms   mean %.2f ms\n",
		l.P50, l.P90, l.P99, l.Max, l.Mean)
	if res.Unsent > 0 {
		fmt.Fprintf(&b, "unsent       %s arrivals (the server fell too far behind the rate)\n", thousands(float64(res.Unsent)))
	}
	if d := res.Delivery; d != nil {
		fmt.Fprintf(&b, "delivered    %s of %s messages in %.2f s from the first POST: %s messages/s\n",
			thousands(float64(d.Delivered)), thousands(float64(d.Messages)), d.Seconds, thousands(d.PerSecond))
		fmt.Fprintf(&b, "to sent      p50 ≤ %.0f ms   p99 ≤ %.0f ms (POST to the provider taking it; histogram bucket bounds)\n",
			d.TimeToSentP50Ms, d.TimeToSentP99Ms)
	}
	if s := res.Server; s != nil {
		fmt.Fprintf(&b, "server use   peak RSS %.1f MiB (%.1f MiB at the end), CPU %.1f s = %.2f cores\n",
			s.PeakRSSMiB, s.RSSMiB, s.CPUS, s.Cores)
	}
	if res.ElapsedS > 0 {
		fmt.Fprintf(&b, "bench use    CPU %.1f s = %.2f cores\n", res.BenchCPUS, res.BenchCPUS/res.ElapsedS)
	}
	if res.Hardening != res.RateLimitHeaders && res.Scenario != ScenarioCeiling {
		if res.Hardening {
			fmt.Fprintf(&b, "warning      hardening asked for, but no answer carried RateLimit-Limit: is the rate limiter on?\n")
		} else {
			fmt.Fprintf(&b, "warning      answers carried RateLimit-Limit: the server's rate limiter is on\n")
		}
	}
	statuses := make([]string, 0, len(res.ErrorsByStatus))
	for s := range res.ErrorsByStatus {
		statuses = append(statuses, s)
	}
	slices.SortFunc(statuses, func(a, b string) int {
		x, _ := strconv.Atoi(a)
		y, _ := strconv.Atoi(b)
		return x - y
	})
	for _, s := range statuses {
		name := "HTTP " + s
		if s == "0" {
			name = "no answer"
		}
		fmt.Fprintf(&b, "errors       %s: %s (first: %s)\n", name, thousands(float64(res.ErrorsByStatus[s])), res.ErrorSamples[s])
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// thousands formats v rounded, with thousands separators: 12,345.
func thousands(v float64) string {
	s := strconv.FormatInt(int64(math.Round(v)), 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// ms formats d in milliseconds for the progress line.
func ms(d time.Duration) string {
	return strconv.FormatFloat(msf(d), 'f', 2, 64) + "ms"
}

// msf is d in milliseconds, rounded to microseconds.
func msf(d time.Duration) float64 {
	return math.Round(float64(d)/1e3) / 1e3
}

func mib(bytes int64) float64 {
	return round(float64(bytes)/(1<<20), 1)
}

// round rounds v to n decimals, to keep the JSON report readable.
func round(v float64, n int) float64 {
	p := math.Pow10(n)
	return math.Round(v*p) / p
}

// progressTo returns a printf to w, or one that prints nothing when w is
// nil: the scenarios' lines between their phases.
func progressTo(w io.Writer) func(format string, args ...any) {
	return func(format string, args ...any) {
		if w != nil {
			fmt.Fprintf(w, format, args...)
		}
	}
}
