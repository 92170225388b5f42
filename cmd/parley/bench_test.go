package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/bench"
)

func init() {
	// The server of `bench --self` is this test binary acting as parley
	// (see TestMain).
	benchChild = func(args []string) (*exec.Cmd, error) {
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(bench.ChildEnv(os.Environ()), envAsParley+"=1", "PARLEY_TEST_ARGS="+strings.Join(args, " "))
		return cmd, nil
	}
}

// runBenchJSON runs `parley bench … --json` in-process and decodes its
// report.
func runBenchJSON(t *testing.T, getenv func(string) string, args ...string) (*bench.Result, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(t.Context(), append(append([]string{"bench"}, args...), "--json"), getenv, &out, &errOut)
	var res bench.Result
	if out.Len() > 0 {
		if jerr := json.Unmarshal(out.Bytes(), &res); jerr != nil {
			t.Fatalf("bench printed no JSON object (%v):\n%s\nstderr:\n%s", jerr, out.String(), errOut.String())
		}
	}
	return &res, errOut.String(), err
}

// checkSane fails unless the run answered every request with a 2xx and
// its figures hold together.
func checkSane(t *testing.T, res *bench.Result, stderr string, err error) {
	t.Helper()
	if err != nil || res.Errors != 0 || res.OK == 0 || res.Requests != res.OK {
		t.Fatalf("err %v; %d ok of %d, errors %v %v\nstderr:\n%s", err, res.OK, res.Requests, res.ErrorsByStatus, res.ErrorSamples, stderr)
	}
	l := res.Latency
	if !(l.P50 > 0 && l.P50 <= l.P90 && l.P90 <= l.P99 && l.P99 <= l.Max) || res.RPS <= 0 || res.ElapsedS <= 0 {
		t.Errorf("rps %v elapsed %v latency %+v", res.RPS, res.ElapsedS, l)
	}
	if s := res.Server; s == nil || s.PID == 0 || s.PeakRSSMiB <= 0 || s.CPUS <= 0 {
		t.Errorf("server stats %+v", s)
	}
	if !strings.Contains(stderr, "running "+res.Scenario) {
		t.Errorf("stderr does not say what runs:\n%s", stderr)
	}
}

// TestBenchSelf: `parley bench --self` runs every scenario against a server
// of its own (a child process on a temporary SQLite database) with no
// error (issue #6). mixed runs with --hardening: every write of every kind
// is unique, or the server's replay protection would refuse it. lookup
// runs open loop. create-users is TestBenchSelfCleansUp.
func TestBenchSelf(t *testing.T) {
	cases := map[string][]string{
		bench.ScenarioLookup:  {"--scenario", bench.ScenarioLookup, "--rate", "200"},
		bench.ScenarioUpdate:  {"--scenario", bench.ScenarioUpdate},
		bench.ScenarioSend:    {"--scenario", bench.ScenarioSend},
		bench.ScenarioMixed:   {"--scenario", bench.ScenarioMixed, "--hardening"},
		bench.ScenarioCeiling: {"--scenario", bench.ScenarioCeiling},
	}
	for name, args := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			res, stderr, err := runBenchJSON(t, env(nil), append(args, "--self", "--duration", "1s", "--concurrency", "4", "--users", "20")...)
			checkSane(t, res, stderr, err)
			wantEngine := "sqlite"
			if res.Scenario == bench.ScenarioCeiling {
				wantEngine = "trivial"
			}
			if res.Target != "self" || res.Server.Engine != wantEngine {
				t.Errorf("target %q engine %q, want self and %s", res.Target, res.Server.Engine, wantEngine)
			}
			// The server's rate limiter is on exactly when hardening is.
			if res.Scenario != bench.ScenarioCeiling && res.RateLimitHeaders != res.Hardening {
				t.Errorf("hardening %v but rate limit headers %v", res.Hardening, res.RateLimitHeaders)
			}
			if res.Mode == "open" && res.Requests+res.Unsent != 200 {
				t.Errorf("open loop: %d requests + %d unsent, want the 200 arrivals of 1 s at 200/s", res.Requests, res.Unsent)
			}
		})
	}
}

// TestBenchSelfCleansUp: create-users runs, and then the child server is
// stopped and its temporary data removed.
func TestBenchSelfCleansUp(t *testing.T) {
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	res, stderr, err := runBenchJSON(t, env(nil), "--self", "--scenario", bench.ScenarioCreateUsers, "--duration", "1s", "--concurrency", "2")
	checkSane(t, res, stderr, err)
	if err := syscall.Kill(res.Server.PID, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("server process %d still there after the run (kill -0: %v)", res.Server.PID, err)
	}
	if left, _ := filepath.Glob(filepath.Join(tmp, "*")); len(left) > 0 {
		t.Errorf("left behind: %v", left)
	}
}

// TestBenchPostgres: with --db postgres://… the server runs in a schema
// of its own, dropped afterwards.
func TestBenchPostgres(t *testing.T) {
	base := os.Getenv(apitest.EnvPostgresURL)
	if base == "" {
		t.Skip("needs PostgreSQL: set " + apitest.EnvPostgresURL)
	}
	db, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// The bench_ schemas by name: other packages' tests run benches on
	// this database at the same time, so a count can move both ways.
	schemas := func() map[string]bool {
		rows, err := db.Query("SELECT schema_name FROM information_schema.schemata WHERE schema_name LIKE 'bench\\_%'")
		if err != nil {
			t.Fatal(err)
		}
		defer rows.Close()
		out := map[string]bool{}
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				t.Fatal(err)
			}
			out[name] = true
		}
		return out
	}
	before := schemas()
	res, stderr, err := runBenchJSON(t, env(nil), "--self", "--db", base, "--scenario", bench.ScenarioMixed,
		"--duration", "1s", "--concurrency", "4", "--users", "20")
	checkSane(t, res, stderr, err)
	if res.Server.Engine != "postgres" {
		t.Errorf("engine %q", res.Server.Engine)
	}
	// A schema made during the run and still there is the run's, not
	// dropped (or, rarely, another package's bench still running).
	for name := range schemas() {
		if !before[name] {
			t.Errorf("bench_ schema %s appeared during the run and is still there: the run's schema was not dropped", name)
		}
	}
}

// TestBenchCountsErrors: answers that are not 2xx are errors, reported by
// status, and make the command fail; they are never successes.
func TestBenchCountsErrors(t *testing.T) {
	dir := t.TempDir()
	stdout, _ := startServe(t, dir)
	creds, err := readDevCredentials(filepath.Join(dir, devCredentialsFile))
	if err != nil {
		t.Fatal(err)
	}
	e := env(map[string]string{"PARLEY_URL": serveURL(t, stdout.String()), "PARLEY_USERNAME": creds.Username})
	res, _, err := runBenchJSON(t, e, "--secret", creds.Secret+"x", "--scenario", bench.ScenarioCreateUsers,
		"--duration", "300ms", "--concurrency", "2")
	if err == nil || !strings.Contains(err.Error(), "requests failed") {
		t.Errorf("err = %v, want the failed requests", err)
	}
	if res.OK != 0 || res.Errors == 0 || res.ErrorsByStatus["401"] == 0 || res.RPS != 0 {
		t.Errorf("%d ok, %d errors %v, rps %v; want every request a 401 error", res.OK, res.Errors, res.ErrorsByStatus, res.RPS)
	}
	if res.Target != serveURL(t, stdout.String()) || res.Server != nil {
		t.Errorf("target %q, server %+v", res.Target, res.Server)
	}

	// Users that cannot be created before the run: a clear error, no run.
	_, _, err = runBenchJSON(t, e, "--secret", creds.Secret+"x", "--scenario", bench.ScenarioLookup, "--duration", "1s")
	if err == nil || !strings.Contains(err.Error(), "seeding users") || !strings.Contains(err.Error(), "401") {
		t.Errorf("err = %v, want the seeding's 401", err)
	}
}

func TestBenchFlags(t *testing.T) {
	for _, args := range [][]string{
		{"--self", "--scenario", "nope"},
		{"--scenario", bench.ScenarioCeiling, "--url", "http://127.0.0.1:1", "--username", "u", "--secret", "s"},
		{"--db", "postgres://x/y", "--url", "http://127.0.0.1:1", "--username", "u", "--secret", "s"},
		{"--self", "--url", "http://127.0.0.1:1"},
		{"--self", "--db", "sqlite:/tmp/x.db"},
		{"--self", "--concurrency", "0"},
		{"--self", "extra"},
	} {
		if _, err := runCmd(t, env(map[string]string{"PARLEY_DATA_DIR": t.TempDir()}), append([]string{"bench"}, args...)...); err == nil {
			t.Errorf("bench %v: no error", args)
		}
	}
}

// TestBenchDeliveries: a send run with --deliveries waits for every
// message to be delivered and reports the pipeline from /metrics (#4).
func TestBenchDeliveries(t *testing.T) {
	res, stderr, err := runBenchJSON(t, env(nil), "--self", "--scenario", bench.ScenarioSend, "--duration", "1s",
		"--concurrency", "4", "--users", "10", "--deliveries")
	checkSane(t, res, stderr, err)
	d := res.Delivery
	if d == nil || d.Messages != res.OK || d.Delivered != d.Messages || d.PerSecond <= 0 {
		t.Fatalf("delivery report %+v for %d sends", d, res.OK)
	}
	if d.TimeToSentP50Ms <= 0 || d.TimeToSentP99Ms < d.TimeToSentP50Ms {
		t.Errorf("time to sent p50 %v, p99 %v", d.TimeToSentP50Ms, d.TimeToSentP99Ms)
	}
	if _, _, err := runBenchJSON(t, env(nil), "--self", "--scenario", bench.ScenarioLookup, "--deliveries"); err == nil {
		t.Error("--deliveries accepted without --scenario send")
	}
}

// TestBenchCampaign: `parley bench --self --scenario campaign` seeds its
// audience, sends it one campaign and reports it written and delivered,
// with transactional probes timed while it drained (issue #21).
func TestBenchCampaign(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"bench", "--self", "--scenario", "campaign", "--users", "200", "--concurrency", "4",
		"--probe-rate", "20", "--json"}, env(nil), &out, &errOut)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errOut.String())
	}
	var res bench.CampaignResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if res.Recipients != 200 || res.Stats["delivered"] != float64(200) || res.WrittenS <= 0 || res.DeliveredS < res.WrittenS ||
		res.PeakRSSMiB <= 0 || res.ProbesLate != 0 {
		t.Errorf("result %+v\nstderr:\n%s", res, errOut.String())
	}
}

// TestBenchFlows: `parley bench --self --scenario flows` imports its
// contacts into a subscribed flow, reports them entered, their welcomes
// written and delivered with transactional probes timed meanwhile, then
// seeds waiting runs and reads the server's CPU (issue #33).
func TestBenchFlows(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(t.Context(), []string{"bench", "--self", "--scenario", "flows", "--users", "300", "--concurrency", "4",
		"--probe-rate", "20", "--waiting", "2000", "--idle-window", "1s", "--json"}, env(nil), &out, &errOut)
	if err != nil {
		t.Fatalf("%v\nstderr:\n%s", err, errOut.String())
	}
	var res bench.FlowsResult
	if err := json.Unmarshal(out.Bytes(), &res); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if res.Contacts != 300 || res.Stats.Entered != 300 || len(res.StepsStats) != 3 || res.StepsStats[0].Sent != 300 ||
		res.EnteredS <= 0 || res.WrittenS < res.EnteredS || res.DeliveredS < res.WrittenS || res.ProbesLate != 0 ||
		res.Waiting != 2000 || res.IdleWindowS < 1 || res.PeakRSSMiB <= 0 {
		t.Errorf("result %+v\nstderr:\n%s", res, errOut.String())
	}
}
