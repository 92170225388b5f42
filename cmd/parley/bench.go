package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/bench"
)

// benchChild builds a child process running this binary with args; the
// server of `bench --self`. Tests replace it, since their binary is the
// test binary.
var benchChild = func(args []string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, args...)
	cmd.Env = bench.ChildEnv(os.Environ())
	return cmd, nil
}

func runBench(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	// The ceiling scenario's server: hidden, started by --self.
	if len(args) > 0 && args[0] == "--serve-trivial" {
		addr := "127.0.0.1:0"
		if len(args) > 1 {
			addr = args[1]
		}
		return bench.ServeTrivial(ctx, addr, stdout)
	}
	fs := newFlags("bench")
	scenario := fs.String("scenario", bench.ScenarioMixed, "create-users, lookup, update, send, mixed (70 % reads, 25 % writes, 5 % sends), ceiling (a trivial net/http handler; with --self), segments (issue #16: imports --users contacts, default 1,000,000, into a database of its own as parley import does, with the node's audience engine running, then at once times a segment's counts for --first, and count, preview and pages of 100 members in process for --duration once the engine answers, and a new node's load of the brand; --criteria FILE for any segment), campaign (issue #21: seeds --users consenting contacts, default 100,000, sends them one campaign and times it from send_at to written and to delivered, with --probe-rate transactional messages a second timed while it drains), idle (issue #35: with --self, the server's CPU, and on PostgreSQL its backends', over --idle-window with no traffic; --waiting runs seeded first only when given), campaign-audience (issue #34: imports --users contacts, default 1,000,000, into a database of its own as parley import does, then times the scheduler writing one campaign's audience to them all, in process; nothing is sent; --sql without the audience engine), or flows (issue #33: an active flow triggered by subscribed, then --users consenting contacts, default 100,000, imported at once through POST /imports; times them entered, their welcomes written and delivered, with --probe-rate probes; then --waiting runs of a second flow waiting 30 days and the server's CPU over --idle-window)")
	duration := fs.Duration("duration", 20*time.Second, "length of the timed run (seeding users before it is not timed)")
	concurrency := fs.Int("concurrency", 64, "connections, and so requests in flight at most")
	rate := fs.Float64("rate", 0, "open loop: requests per second on a fixed schedule, latency counted from each request's due time; 0 runs closed loop (each connection sends when answered)")
	users := fs.Int("users", 1000, "users created before the run for lookup, update, send and mixed")
	cpuProfile := fs.String("cpu-profile", "", "with --scenario campaign-audience: write a CPU profile of the resolution to this file")
	resolveChunk := fs.Int("resolve-chunk", 0, "with --scenario campaign-audience: users per resolution transaction (0: the server's default, 2,000 on SQLite, 100,000 on PostgreSQL)")
	sqlOnly := fs.Bool("sql", false, "with --scenario segments or campaign-audience: answer from the SQL path only, not the in-memory audience engine (issue #34)")
	criteriaFile := fs.String("criteria", "", "with --scenario segments: a JSON file of the segment's criteria as POST /segments takes them (D14), over the seeded fields tier (STRING enum gold, silver, bronze), age (INTEGER) and note (STRING); default issue #16's segment")
	first := fs.Duration("first", 30*time.Second, "with --scenario segments: how long after the import the counts are reported apart (SQL answers those the engine cannot yet)")
	keep := fs.Bool("keep", false, "with --scenario segments: leave its database behind (the SQLite file or the PostgreSQL schema is printed) to study plans on it")
	probeRate := fs.Float64("probe-rate", 10, "with --scenario campaign or flows: transactional messages a second sent while the messages drain")
	waiting := fs.Int("waiting", 1000000, "with --scenario flows or idle and --self: runs seeded (in SQL) waiting on a 30-day step; 0 skips that part (idle: the default)")
	idleWindow := fs.Duration("idle-window", 30*time.Second, "with --scenario flows or idle: how long the server's CPU is read while idle")
	hardening := fs.Bool("hardening", false, "send an Idempotency-Key on every POST, and with --self run the server with its replay cache and rate limiter on (at a limit never reached); without it, a --self server runs with all three off")
	jsonOut := fs.Bool("json", false, "print the result as one JSON object")
	keys := fs.Bool("keys", true, "with --hardening: send a fresh Idempotency-Key on every POST (--keys=false measures the server's protections alone)")
	ordered := fs.Bool("ordered-keys", false, "with --hardening: send time-ordered keys (UUIDv7) instead of random ones (UUIDv4, as most clients make them)")
	deliveries := fs.Bool("deliveries", false, "with --scenario send: after the run, wait until every accepted message is delivered and report messages delivered per second and the time to sent, from the server's /metrics")
	history := fs.Bool("history", false, "creates (create-users, mixed) set messaging_consent and a custom data value, so each writes contact history (D18); the brand needs a STRING field \"tier\" (a --self server's has one)")
	serverBinary := fs.String("server-binary", "", "with --self: run this parley binary as the server instead of this one (to compare builds)")
	self := fs.Bool("self", false, "start a server of its own, as a child process on a temporary database, and stop it at the end")
	db := fs.String("db", "", "with --self: a postgres:// URL, in which the run creates a schema of its own and drops it at the end (default: a temporary SQLite database; PARLEY_DB is not read here, so a run never loads a real database by accident)")
	urlFlag := stringFlag(fs, getenv, "url", "", "server to load, without --self (default: the dev credentials' URL)")
	username := stringFlag(fs, getenv, "username", "", "credential that signs, without --self (default: the dev credentials)")
	secret := stringFlag(fs, getenv, "secret", "", "its secret (default: the dev credentials)")
	dataDir := stringFlag(fs, getenv, "data-dir", app.DefaultDataDir, "where the dev credentials are")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: parley bench --self [--db postgres://…] | --url URL [--username U --secret S]\n"+
			"                    [--scenario S] [--duration 20s] [--concurrency 64] [--rate N] [--hardening] [--json]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("bench: unexpected argument %q", fs.Arg(0))
	}
	if *scenario == bench.ScenarioSegments {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		n := *users
		if !set["users"] {
			n = 1000000
		}
		var criteria []byte
		if *criteriaFile != "" {
			var err error
			if criteria, err = os.ReadFile(*criteriaFile); err != nil {
				return fmt.Errorf("bench: --criteria: %w", err)
			}
		}
		res, err := bench.RunSegments(ctx, bench.SegmentOptions{DB: *db, Users: n, Duration: *duration, Progress: stderr, Criteria: criteria, Keep: *keep, SQL: *sqlOnly, First: *first})
		if err != nil {
			return err
		}
		if *jsonOut {
			return res.WriteJSON(stdout)
		}
		return res.WriteText(stdout)
	}
	if *scenario == bench.ScenarioCampaignAudience {
		set := map[string]bool{}
		fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
		n := *users
		if !set["users"] {
			n = 1000000
		}
		res, err := bench.RunCampaignAudience(ctx, bench.CampaignAudienceOptions{DB: *db, Users: n, Progress: stderr,
			SQL: *sqlOnly, Profile: *cpuProfile, Chunk: *resolveChunk})
		if err != nil {
			return err
		}
		if *jsonOut {
			return res.WriteJSON(stdout)
		}
		return res.WriteText(stdout)
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	var serveArgs []string
	if *scenario == bench.ScenarioCampaign || *scenario == bench.ScenarioFlows {
		if !set["users"] {
			*users = 100000
		}
		// The run times sending, not the law: no US window (the brand's is
		// opened too).
		serveArgs = []string{"--us-sending-rules=false"}
	}
	o := bench.Options{Scenario: *scenario, Duration: *duration, Concurrency: *concurrency, Rate: *rate,
		Users: *users, Hardening: *hardening, NoKeys: !*keys, OrderedKeys: *ordered, History: *history, Deliveries: *deliveries, Progress: stderr, ProgressTTY: isTerminal(stderr)}
	if err := o.Check(); err != nil {
		return err
	}
	target := "self"
	if *self {
		if set["url"] || set["username"] || set["secret"] {
			return errors.New("bench: --self starts its own server; --url, --username and --secret are for another")
		}
		child := benchChild
		if *serverBinary != "" {
			child = func(args []string) (*exec.Cmd, error) {
				cmd := exec.Command(*serverBinary, args...)
				cmd.Env = bench.ChildEnv(os.Environ())
				return cmd, nil
			}
		}
		srv, err := bench.StartServer(ctx, bench.ServerOptions{Command: child, DB: *db,
			Trivial: *scenario == bench.ScenarioCeiling, Hardening: *hardening, Args: serveArgs})
		if err != nil {
			return err
		}
		defer srv.Close()
		o.URL, o.Username, o.Secret, o.Server = srv.URL, srv.Username, srv.Secret, srv
		fmt.Fprintf(stderr, "started a %s server on %s (pid %d)\n", srv.Engine, srv.URL, srv.PID())
	} else {
		if *scenario == bench.ScenarioCeiling {
			return errors.New("bench: the ceiling scenario needs --self")
		}
		if *db != "" {
			return errors.New("bench: --db goes with --self; without it, bench loads the server at --url")
		}
		o.URL, o.Username, o.Secret = *urlFlag, *username, *secret
		if o.URL == "" || o.Username == "" || o.Secret == "" {
			creds, err := readDevCredentials(filepath.Join(*dataDir, devCredentialsFile))
			if err != nil && (o.Username == "" || o.Secret == "") {
				return fmt.Errorf("bench: give --self, or --username and --secret (PARLEY_USERNAME, PARLEY_SECRET), or run `parley serve` once to create %s: %w",
					filepath.Join(*dataDir, devCredentialsFile), err)
			}
			if o.Username == "" || o.Secret == "" {
				o.Username, o.Secret = creds.Username, creds.Secret
			}
			if o.URL == "" {
				o.URL = creds.URL
			}
		}
		if o.URL == "" {
			o.URL = "http://127.0.0.1:8080"
		}
		target = o.URL
	}
	if o.Scenario == bench.ScenarioIdle {
		if !set["waiting"] {
			*waiting = 0
		}
		res, err := bench.RunIdle(ctx, o, bench.IdleOptions{Waiting: *waiting, Window: *idleWindow})
		if err != nil {
			return err
		}
		if *jsonOut {
			return res.WriteJSON(stdout)
		}
		return res.WriteText(stdout)
	}
	if o.Scenario == bench.ScenarioCampaign {
		return runCampaignBench(ctx, o, *probeRate, *jsonOut, stdout)
	}
	if o.Scenario == bench.ScenarioFlows {
		if !*self {
			*waiting = 0 // its runs are seeded in the server's database
		}
		res, err := bench.RunFlows(ctx, o, bench.FlowOptions{Contacts: o.Users, ProbeRate: *probeRate, Waiting: *waiting, IdleWindow: *idleWindow})
		if err != nil {
			return err
		}
		if *jsonOut {
			return res.WriteJSON(stdout)
		}
		return res.WriteText(stdout)
	}
	fmt.Fprintf(stderr, "running %s for %s with %d connections\n", o.Scenario, o.Duration, o.Concurrency)
	res, err := bench.Run(ctx, o)
	if err != nil {
		return err
	}
	res.Target = target
	if *jsonOut {
		err = res.WriteJSON(stdout)
	} else {
		err = res.WriteText(stdout)
	}
	switch {
	case err != nil:
		return err
	case ctx.Err() != nil:
		return errors.New("bench: interrupted; the result covers the run until then")
	case res.Errors > 0:
		return fmt.Errorf("bench: %d of %d requests failed", res.Errors, res.Requests)
	case res.Unsent > 0:
		return fmt.Errorf("bench: %d requests of the schedule were never sent", res.Unsent)
	}
	return nil
}

func runCampaignBench(ctx context.Context, o bench.Options, probeRate float64, jsonOut bool, stdout io.Writer) error {
	res, err := bench.RunCampaign(ctx, o, probeRate)
	if err != nil {
		return err
	}
	if jsonOut {
		return res.WriteJSON(stdout)
	}
	return res.WriteText(stdout)
}
