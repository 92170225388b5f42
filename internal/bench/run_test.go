package bench

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/phone"
	"github.com/parleyhq/parley/signing"
)

// target is a stand-in for Parley that checks what the load generator
// sends: every signature and digest (as the real verifier does), that no
// write is sent twice with the same signed content (the server's replay
// protection would refuse it), that created numbers are valid and new,
// and whether each POST carries a fresh Idempotency-Key. The end-to-end
// tests in cmd/parley run the real server.
type target struct {
	t        *testing.T
	secret   string
	failSend bool // answer POST /messages with 503

	mu        sync.Mutex
	users     map[string]int64 // phone → id
	signed    map[string]bool  // method, target and digest of every write
	keys      map[string]bool
	calls     map[string]int // by kind
	problems  []string
	keyless   int // POSTs without Idempotency-Key
	postCount int
}

func newTarget(t *testing.T) (*target, *httptest.Server) {
	tg := &target{t: t, secret: signing.NewSecret(), users: map[string]int64{}, signed: map[string]bool{},
		keys: map[string]bool{}, calls: map[string]int{}}
	srv := httptest.NewServer(tg)
	t.Cleanup(srv.Close)
	return tg, srv
}

func (tg *target) problem(format string, args ...any) {
	tg.problems = append(tg.problems, fmt.Sprintf(format, args...))
}

func (tg *target) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	tg.mu.Lock()
	defer tg.mu.Unlock()
	reqTarget := signing.RequestTarget(r)
	if r.URL.Path != pathPing {
		v := signing.Verifier{}
		if err := v.VerifyHeaders(r.Method, reqTarget, r.Header, []byte(tg.secret), true); err != nil {
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"detail":{"type":"not_authenticated","msg":%q}}`, err.Error())
			return
		}
		if err := signing.VerifyBody(r.Header, body); err != nil {
			tg.problem("%s %s: %v", r.Method, reqTarget, err)
		}
	}
	if r.Method == "POST" {
		tg.postCount++
		sig := r.Method + " " + reqTarget + " " + r.Header.Get("X-Digest")
		if tg.signed[sig] {
			tg.problem("write sent twice with the same content: %s %s", sig, body)
		}
		tg.signed[sig] = true
		switch k := r.Header.Get("Idempotency-Key"); {
		case k == "":
			tg.keyless++
		case tg.keys[k]:
			tg.problem("Idempotency-Key %s used twice", k)
		default:
			tg.keys[k] = true
		}
	}
	var in struct {
		PhoneNumber string `json:"phone_number"`
		UserID      int64  `json:"user_id"`
	}
	json.Unmarshal(body, &in)
	switch {
	case r.Method == "POST" && r.URL.Path == pathUsers:
		tg.calls["create"]++
		if _, ok := phone.Normalize(in.PhoneNumber, phone.Strict); !ok {
			tg.problem("invalid number %q", in.PhoneNumber)
		}
		if tg.users[in.PhoneNumber] != 0 {
			w.WriteHeader(http.StatusConflict)
			fmt.Fprint(w, `{"detail":{"type":"duplicate_record_found"}}`)
			return
		}
		id := int64(len(tg.users) + 1)
		tg.users[in.PhoneNumber] = id
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":%d,"phone_number":%q}`, id, in.PhoneNumber)
	case r.Method == "GET" && r.URL.Path == pathUsers:
		tg.calls["lookup"]++
		if tg.users[r.URL.Query().Get("phone_number")] == 0 {
			tg.problem("lookup of an unknown number %q", r.URL.RawQuery)
		}
		fmt.Fprint(w, `{}`)
	case strings.HasPrefix(r.URL.Path, pathUsers+"/"):
		tg.calls[map[string]string{"GET": "get", "POST": "update"}[r.Method]]++
		fmt.Fprint(w, `{}`)
	case r.Method == "POST" && r.URL.Path == pathMessages:
		tg.calls["send"]++
		if tg.failSend {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"detail":{"type":"unavailable"}}`)
			return
		}
		if in.UserID < 1 || in.UserID > int64(len(tg.users)) {
			tg.problem("send to unknown user %d", in.UserID)
		}
		w.WriteHeader(http.StatusCreated)
		fmt.Fprint(w, `{}`)
	default:
		tg.calls["other"]++
		fmt.Fprint(w, `{}`)
	}
}

func (tg *target) check() {
	tg.t.Helper()
	tg.mu.Lock()
	defer tg.mu.Unlock()
	for _, p := range tg.problems[:min(len(tg.problems), 10)] {
		tg.t.Error(p)
	}
}

func runAgainst(t *testing.T, tg *target, url string, o Options) *Result {
	t.Helper()
	o.URL, o.Username, o.Secret = url, "pk_bench", tg.secret
	if o.Duration == 0 {
		o.Duration = 300 * time.Millisecond
	}
	if o.Concurrency == 0 {
		o.Concurrency = 4
	}
	if o.Users == 0 {
		o.Users = 40
	}
	res, err := Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	tg.check()
	return res
}

// TestRunSignsEveryRequestAndNeverRepeatsAWrite: in every scenario, every
// request verifies, no write repeats its signed content, and with
// hardening every POST has an Idempotency-Key of its own, without it none.
func TestRunSignsEveryRequestAndNeverRepeatsAWrite(t *testing.T) {
	for _, sc := range Scenarios {
		for _, hardening := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/hardening=%v", sc, hardening), func(t *testing.T) {
				tg, srv := newTarget(t)
				res := runAgainst(t, tg, srv.URL+"/api/v1/", Options{Scenario: sc, Hardening: hardening})
				if res.Errors != 0 || res.OK == 0 {
					t.Fatalf("%d ok, errors %v %v", res.OK, res.ErrorsByStatus, res.ErrorSamples)
				}
				tg.mu.Lock()
				defer tg.mu.Unlock()
				if hardening && (tg.keyless != 0 || len(tg.keys) != tg.postCount) {
					t.Errorf("hardening: %d POSTs without a key, %d keys for %d POSTs", tg.keyless, len(tg.keys), tg.postCount)
				}
				if !hardening && len(tg.keys) != 0 {
					t.Errorf("without hardening %d POSTs carried an Idempotency-Key", len(tg.keys))
				}
				want := map[string]string{ScenarioCreateUsers: "create", ScenarioLookup: "lookup", ScenarioUpdate: "update",
					ScenarioSend: "send", ScenarioCeiling: "other"}[sc]
				if want != "" && tg.calls[want] < int(res.OK) {
					t.Errorf("%s sent %v; want %d %s requests", sc, tg.calls, res.OK, want)
				}
				if Seeded(sc) && res.Setup == nil {
					t.Error("no setup reported")
				}
			})
		}
	}
}

// TestMixProportions: 70 % reads (50 lookup, 20 get), 25 % writes (10
// create, 15 update), 5 % sends.
func TestMixProportions(t *testing.T) {
	w := &worker{r: &runner{o: Options{Scenario: ScenarioMixed}}, rng: rand.New(rand.NewPCG(5, 6))}
	counts := map[op]int{}
	const n = 200000
	for range n {
		counts[w.pick()]++
	}
	want := map[op]float64{opLookup: 0.50, opGet: 0.20, opCreate: 0.10, opUpdate: 0.15, opSend: 0.05}
	for o, p := range want {
		if got := float64(counts[o]) / n; got < p-0.005 || got > p+0.005 {
			t.Errorf("%s: %.3f of requests, want %.2f", o, got, p)
		}
	}
}

// TestRunCountsErrorsByStatus: non-2xx answers are errors, by status, with
// the first answer as a sample; they are neither successes nor timed.
func TestRunCountsErrorsByStatus(t *testing.T) {
	tg, srv := newTarget(t)
	tg.failSend = true
	res := runAgainst(t, tg, srv.URL, Options{Scenario: ScenarioSend})
	if res.OK != 0 || res.Errors == 0 || res.Requests != res.Errors {
		t.Fatalf("%d ok, %d errors of %d requests; want every send an error", res.OK, res.Errors, res.Requests)
	}
	if got := res.ErrorsByStatus["503"]; got != res.Errors {
		t.Errorf("errors by status %v, want all %d under 503", res.ErrorsByStatus, res.Errors)
	}
	if !strings.Contains(res.ErrorSamples["503"], "unavailable") {
		t.Errorf("sample %q, want the answer's body", res.ErrorSamples["503"])
	}
	if res.RPS != 0 || res.Latency.Max != 0 {
		t.Errorf("rps %v, latency %+v: failed requests counted as successes", res.RPS, res.Latency)
	}
	var text bytes.Buffer
	res.WriteText(&text)
	if !strings.Contains(text.String(), "HTTP 503: ") {
		t.Errorf("report does not show the errors:\n%s", text.String())
	}

	// No answer at all: status 0.
	srv.Close()
	res, err := Run(context.Background(), Options{URL: srv.URL, Username: "u", Secret: "s", Scenario: ScenarioCreateUsers,
		Duration: 100 * time.Millisecond, Concurrency: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK != 0 || res.ErrorsByStatus["0"] == 0 {
		t.Errorf("closed server: %d ok, errors %v; want errors under 0", res.OK, res.ErrorsByStatus)
	}
}

// TestRunSeedingFailureIsAnError: a run whose users cannot be created
// stops with the server's answer instead of measuring nothing.
func TestRunSeedingFailureIsAnError(t *testing.T) {
	tg, srv := newTarget(t)
	_, err := Run(context.Background(), Options{URL: srv.URL, Username: "pk_bench", Secret: tg.secret + "x",
		Scenario: ScenarioLookup, Duration: time.Second, Concurrency: 2, Users: 10})
	if err == nil || !strings.Contains(err.Error(), "seeding users") || !strings.Contains(err.Error(), "HTTP 401") {
		t.Errorf("err = %v; want the seeding's 401", err)
	}
}

// TestRunOpenLoopSendsTheSchedule: rate × duration requests, each either
// answered or reported unsent.
func TestRunOpenLoopSendsTheSchedule(t *testing.T) {
	tg, srv := newTarget(t)
	res := runAgainst(t, tg, srv.URL, Options{Scenario: ScenarioLookup, Rate: 200, Duration: 500 * time.Millisecond})
	if res.Mode != "open" || res.Requests+res.Unsent != 100 {
		t.Errorf("mode %s, %d requests + %d unsent; want the 100 arrivals of 500 ms at 200/s", res.Mode, res.Requests, res.Unsent)
	}
}

// TestResultJSON: --json is one object with these members.
func TestResultJSON(t *testing.T) {
	tg, srv := newTarget(t)
	var progress bytes.Buffer
	res := runAgainst(t, tg, srv.URL, Options{Scenario: ScenarioLookup, Progress: &progress, tick: 50 * time.Millisecond})
	res.Target = "http://example"
	var out bytes.Buffer
	if err := res.WriteJSON(&out); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	dec := json.NewDecoder(&out)
	if err := dec.Decode(&m); err != nil {
		t.Fatal(err)
	}
	if dec.More() {
		t.Error("more than one JSON value")
	}
	for _, k := range []string{"scenario", "target", "mode", "concurrency", "rate", "hardening", "duration_s", "elapsed_s",
		"requests", "ok", "errors", "errors_by_status", "unsent", "rps", "latency_ms", "rate_limit_headers", "setup", "bench_cpu_s"} {
		if _, ok := m[k]; !ok {
			t.Errorf("no %q in %s", k, out.String())
		}
	}
	lat, _ := m["latency_ms"].(map[string]any)
	for _, k := range []string{"p50", "p90", "p99", "max", "mean"} {
		if _, ok := lat[k].(float64); !ok {
			t.Errorf("latency_ms.%s missing", k)
		}
	}
	if !(res.Latency.P50 > 0 && res.Latency.P50 <= res.Latency.P90 && res.Latency.P90 <= res.Latency.P99 && res.Latency.P99 <= res.Latency.Max) {
		t.Errorf("latency %+v not ordered", res.Latency)
	}
	if _, ok := m["server"]; ok {
		t.Error("server stats for a run that did not start the server")
	}
	// Progress lines while it ran, plain lines on a non-terminal.
	if !strings.Contains(progress.String(), "seeding 40 users") || !strings.Contains(progress.String(), "req/s") ||
		strings.Contains(progress.String(), "\r") {
		t.Errorf("progress:\n%q", progress.String())
	}
}

func TestOptionsChecked(t *testing.T) {
	ok := Options{URL: "http://127.0.0.1:1", Scenario: ScenarioLookup, Duration: time.Second, Concurrency: 1, Users: 1}
	for name, mod := range map[string]func(*Options){
		"scenario":    func(o *Options) { o.Scenario = "nope" },
		"duration":    func(o *Options) { o.Duration = 0 },
		"concurrency": func(o *Options) { o.Concurrency = 0 },
		"rate":        func(o *Options) { o.Rate = -1 },
		"tiny rate":   func(o *Options) { o.Rate = 0.5 },
		"users":       func(o *Options) { o.Users = 0 },
		"url":         func(o *Options) { o.URL = "127.0.0.1:8080/x" },
	} {
		o := ok
		mod(&o)
		if _, err := Run(context.Background(), o); err == nil {
			t.Errorf("%s: accepted %+v", name, o)
		}
	}
}

func TestNumbersAreValidAndDistinct(t *testing.T) {
	// A sample of every area code and exchange, including the wrap-around.
	for _, start := range []uint64{0, numberSpace - 500} {
		n := numbers{start: start}
		seen := map[string]bool{}
		for i := uint64(0); i < numberSpace; i += numberSpace/20011 + 1 {
			for j := range uint64(3) {
				s := string(n.appendNumber(nil, i+j))
				if len(s) != numberMaxLen || seen[s] {
					t.Fatalf("number %d: %q (seen: %v)", i+j, s, seen[s])
				}
				seen[s] = true
				if e164, ok := phone.Normalize(s, phone.Strict); !ok || e164 != s {
					t.Fatalf("number %d: %q is not valid under strict validation", i+j, s)
				}
			}
		}
	}
	n := numbers{start: numberSpace - 1}
	if a, b := n.appendNumber(nil, 0), n.appendNumber(nil, 1); string(a) != "+19179999999" || string(b) != "+12012000000" {
		t.Errorf("wrap: %s then %s", a, b)
	}
}

func TestProcUsage(t *testing.T) {
	u, err := procUsage(os.Getpid())
	if err != nil {
		t.Skipf("no /proc: %v", err)
	}
	if u.peakRSS <= 0 || u.rss <= 0 || u.peakRSS < u.rss || u.cpu < 0 {
		t.Errorf("usage %+v", u)
	}
}

func TestThousands(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 999: "999", 1000: "1,000", 1234567.6: "1,234,568", -12345: "-12,345"} {
		if got := thousands(v); got != want {
			t.Errorf("thousands(%v) = %q, want %q", v, got, want)
		}
	}
	if got := strconv.Quote(ms(1500 * time.Microsecond)); got != `"1.50ms"` {
		t.Errorf("ms = %s", got)
	}
}

// TestSignatureMatchesD2: the worker's reused HMAC gives the D2 test
// vector, on first use and again after it.
func TestSignatureMatchesD2(t *testing.T) {
	r := &runner{o: Options{Secret: "q3J9bX0rZk1uYnFwQ0t4dGhMb2JwU3J2Y2Q1ZWZnaGk"}}
	w := r.newWorker(context.Background(), 0, nil)
	w.date = "Sun, 22 Nov 2026 08:49:37 GMT"
	for range 2 {
		w.set("POST", "/api/v1/users")
		got := base64.StdEncoding.EncodeToString(w.signature(signing.Digest([]byte(`{"phone_number":"+14155552671"}`))))
		if got != "QOQuw40R0jvRJJkSrnpNT50WVQDPWOUh+FyI6yiUR8U=" {
			t.Errorf("POST signature %s", got)
		}
		w.set("GET", "/api/v1/brand")
		if got := base64.StdEncoding.EncodeToString(w.signature("")); got != "MJBhSlIlnNbb6GUM+ZBwGQGqV1WDtvltvsgcGxHXxhY=" {
			t.Errorf("GET signature %s", got)
		}
	}
}

// TestKeys: the keys are UUIDs, random ones (version 4) by default, as
// most clients make them, or time-ordered ones (version 7), which sort by
// the time they were made; never the same twice (D13, issue #15).
func TestKeys(t *testing.T) {
	for _, ordered := range []bool{false, true} {
		w := &worker{r: &runner{o: Options{OrderedKeys: ordered}}, rng: rand.New(rand.NewPCG(1, 2))}
		version := map[bool]byte{false: '4', true: '7'}[ordered]
		at := time.UnixMilli(1_790_000_000_000)
		seen := map[string]bool{}
		var last string
		for i := range 1000 {
			k := string(w.appendKey(nil, at.Add(time.Duration(i)*time.Millisecond)))
			if len(k) != 36 || k[8] != '-' || k[13] != '-' || k[18] != '-' || k[23] != '-' || k[14] != version ||
				!strings.ContainsRune("89ab", rune(k[19])) || strings.Trim(k, "0123456789abcdef-") != "" {
				t.Fatalf("ordered=%v: key %q is not a version %c UUID", ordered, k, version)
			}
			if seen[k] {
				t.Fatalf("ordered=%v: key %q twice", ordered, k)
			}
			seen[k] = true
			if ordered && k <= last {
				t.Fatalf("time-ordered key %q made after %q sorts before it", k, last)
			}
			last = k
		}
	}
}

// TestOrderedKeysNeedKeys: --ordered-keys without keys to send is a
// mistake in the command, refused before the run.
func TestOrderedKeysNeedKeys(t *testing.T) {
	base := Options{Scenario: ScenarioCreateUsers, Duration: time.Second, Concurrency: 1}
	for _, c := range []struct {
		hardening, noKeys, ok bool
	}{{false, false, false}, {true, true, false}, {true, false, true}} {
		o := base
		o.OrderedKeys, o.Hardening, o.NoKeys = true, c.hardening, c.noKeys
		if err := o.Check(); (err == nil) != c.ok {
			t.Errorf("--ordered-keys with hardening %v, no keys %v: %v; want ok %v", c.hardening, c.noKeys, err, c.ok)
		}
	}
}
