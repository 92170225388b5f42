package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
)

// TestKillMidCampaign kills worker nodes with SIGKILL while a campaign's
// audience is being written and again while its messages drain; after the
// restart every consenting member has exactly one message, delivered, and
// the carrier accepted each message once (issue #21, D16). On PostgreSQL
// the last stretch runs on two nodes at once.
func TestKillMidCampaign(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for River's job rescuer")
	}
	onNodes(t, killMidCampaign)
}

// onNodes runs a kill test on SQLite (one last node) and on PostgreSQL
// (two last nodes at once), in parallel: such tests mostly wait for
// River's rescuer.
func onNodes(t *testing.T, test func(t *testing.T, nodeEnv []string, newClient func(string, ...client.Option) *client.Client, lastNodes int)) {
	t.Parallel()
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		nodeEnv, newClient := sqliteNodes(t)
		defer killSlot()()
		test(t, nodeEnv, newClient, 1)
	})
	t.Run("postgres", func(t *testing.T) {
		if os.Getenv(apitest.EnvPostgresURL) == "" {
			t.Skip("needs PostgreSQL: set " + apitest.EnvPostgresURL)
		}
		t.Parallel()
		nodeEnv, newClient := setupNodes(t, apitest.PostgresURL(t))
		defer killSlot()()
		test(t, append(nodeEnv, "PARLEY_DATA_DIR="+t.TempDir()), newClient, 2)
	})
}

// killSlots lets one kill scenario run at a time: each runs nodes under
// -race, and four at once on CI's two cores (beside the other packages)
// left their senders' batches no time within the job timeout, attempt
// after attempt (a CI run of TestKillMidFlows).
var killSlots = make(chan struct{}, 1)

// killSlot waits for the slot and returns its release.
func killSlot() func() {
	killSlots <- struct{}{}
	return func() { <-killSlots }
}

func killMidCampaign(t *testing.T, nodeEnv []string, newClient func(string, ...client.Option) *client.Client, lastNodes int) {
	const members, optedOut = 3000, 10
	// A rescue delay of 10 s: a sender job's timeout is two thirds of it,
	// and under -race on a loaded machine (CI's load reaches 20) a batch
	// needs more than the 2 s that 3 s would leave; River's rescuer looks
	// every 30 s anyway.
	args := []string{"serve", "--addr", "127.0.0.1:0", "--sim-delay", "10ms", "--job-rescue-after", "10s", "--rate-limit", "0"}
	api := startProcess(t, nodeEnv, append(args, "--role", "api")...)
	c := newClient(api.URL)
	ctx := t.Context()
	createUsers(t, c, members, optedOut)
	zip := "10001"
	seg, err := c.CreateSegment(ctx, parley.SegmentCreate{Name: parley.Some("Everyone"), Criteria: parley.Some(parley.Criteria{{
		Attribute:    parley.SegmentAttribute{DimensionType: parley.DimensionContact, FieldName: "postal_code", FieldType: parley.CustomString},
		OperatorType: parley.OpEquals, StrFieldValue: &zip}})})
	if err != nil {
		t.Fatal(err)
	}
	// TRANSACTIONAL: the test runs at any hour; the window has its own tests.
	camp, err := c.CreateCampaign(ctx, parley.CampaignCreate{Name: parley.Some("Crash"), SegmentID: parley.Some(seg.ID),
		Type: parley.Some(parley.TypeTransactional), Body: parley.Some("Your order shipped.")})
	if err != nil {
		t.Fatal(err)
	}
	api.kill()

	// Killed while the audience is written: the node is killed as soon as
	// it logs that it started resolving the campaign.
	first := startProcess(t, nodeEnv, args...)
	waitLog(t, first, campaignResolvingLog, 30*time.Second)
	first.kill()

	// Killed while the messages drain.
	second := startProcess(t, nodeEnv, args...)
	deadline := time.Now().Add(60 * time.Second)
	for freshSends(second.stderr.String()) < members/10 {
		if time.Now().After(deadline) {
			t.Fatalf("the worker sent nothing:\n%s", tailOf(second.stderr.String()))
		}
		time.Sleep(5 * time.Millisecond)
	}
	second.kill()
	sentBefore := freshSends(second.stderr.String())

	var last []*proc
	for range lastNodes {
		last = append(last, startProcess(t, nodeEnv, args...))
	}
	lc := newClient(last[0].URL)
	deadline = time.Now().Add(240 * time.Second) // River's rescuer takes the killed node's job after ~40 s
	for camp.Status != parley.CampaignCompleted || camp.Stats.Delivered != members {
		if time.Now().After(deadline) {
			t.Fatalf("campaign not delivered: %+v", camp)
		}
		time.Sleep(100 * time.Millisecond)
		if camp, err = lc.GetCampaign(ctx, camp.ID); err != nil {
			t.Fatal(err)
		}
	}
	want := parley.CampaignStats{Recipients: members + optedOut, SkippedUnsubscribed: optedOut, Delivered: members}
	if camp.Stats != want {
		t.Errorf("stats %+v, want %+v", camp.Stats, want)
	}

	logs := second.stderr.String()
	for _, p := range last {
		logs += p.stderr.String()
	}
	db := openNodeDB(t, nodeEnv)
	perUser := countBy(t, db, "SELECT user_id, count(*) FROM messages WHERE campaign_id = $1 GROUP BY user_id", camp.ID)
	accepted := countBy(t, db, "SELECT message_id, count(*) FROM sim_messages GROUP BY message_id")
	if len(perUser) != members {
		t.Errorf("%d members have a message, want %d", len(perUser), members)
	}
	for u, n := range perUser {
		if n != 1 {
			t.Errorf("user %d has %d messages of the campaign, want 1", u, n)
		}
	}
	if len(accepted) != members {
		t.Errorf("the carrier holds sends of %d messages, want %d", len(accepted), members)
	}
	for id, n := range accepted {
		if n != 1 {
			t.Errorf("message %d: the carrier holds %d sends, want 1", id, n)
		}
	}
	// The carrier takes a message once by its id (the sim's ledger), so
	// its rows alone cannot show a second send: the nodes' logs count
	// every send the carrier took as new. A kill between a send and its
	// log line can only make the sum smaller.
	if n := freshSends(logs); n > members {
		t.Errorf("the carrier took %d new sends for %d messages", n, members)
	}
	t.Logf("sent before the second kill: %d of %d; the rest on %d node(s) after the restart", sentBefore, members, lastNodes)
}

// freshSends sums the sends the sim's carrier took as new in a node's
// JSON log: one line per batch of a campaign, one per single message.
func freshSends(logs string) int {
	n := 0
	for _, line := range strings.Split(logs, "\n") {
		var rec struct {
			Msg string `json:"msg"`
			New int    `json:"new"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil {
			continue
		}
		switch rec.Msg {
		case "sim: batch sent to handsets":
			n += rec.New
		case "sim: message sent to handset":
			n++
		}
	}
	return n
}

// campaignResolvingLog is the log line a worker writes as it starts
// writing a campaign's audience.
const campaignResolvingLog = "campaign: resolving"

// createUsers creates consenting contacts and opted-out ones, all in ZIP
// 10001, 16 at a time.
func createUsers(t *testing.T, c *client.Client, consenting, optedOut int) {
	t.Helper()
	var wg sync.WaitGroup
	next := make(chan int)
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				consent := i < consenting
				_, err := c.CreateUser(t.Context(), parley.UserCreate{PhoneNumber: parley.Some(fmt.Sprintf("+1415%07d", 2000000+i)),
					UserFields: parley.UserFields{PostalCode: parley.Some("10001"), MessagingConsent: parley.Some(consent)}})
				if err != nil {
					select {
					case errs <- err:
					default:
					}
				}
			}
		})
	}
	for i := range consenting + optedOut {
		next <- i
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		t.Fatal(err)
	default:
	}
}

// waitLog waits until p logs a line whose msg is msg.
func waitLog(t *testing.T, p *proc, msg string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !strings.Contains(p.stderr.String(), `"msg":"`+msg+`"`) {
		if time.Now().After(deadline) {
			t.Fatalf("no %q in the log:\n%s", msg, tailOf(p.stderr.String()))
		}
		time.Sleep(time.Millisecond)
	}
}

func tailOf(s string) string {
	if len(s) > 4000 {
		return "…" + s[len(s)-4000:]
	}
	return s
}

// openNodeDB opens the database the nodes of nodeEnv share.
func openNodeDB(t *testing.T, nodeEnv []string) *sql.DB {
	t.Helper()
	var dsn string
	for _, kv := range nodeEnv {
		if v, ok := strings.CutPrefix(kv, "PARLEY_DB="); ok {
			dsn = v
		}
	}
	driver, src := "pgx", dsn
	if path, ok := strings.CutPrefix(dsn, "sqlite:"); ok {
		driver, src = "sqlite", path
	}
	db, err := sql.Open(driver, src)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// countBy runs a query of (id, count) rows and returns them as a map;
// its one parameter is written $1, which both engines read.
func countBy(t *testing.T, db *sql.DB, query string, args ...any) map[int64]int {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[int64]int{}
	for rows.Next() {
		var id int64
		var n int
		if err := rows.Scan(&id, &n); err != nil {
			t.Fatal(err)
		}
		out[id] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
