package main

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
)

// TestKillMidFlows kills worker nodes with SIGKILL while a flow's sends
// are due and being sent, while its runs wait between steps, and again
// while the second sends go out; after the restart every run completed
// with exactly one message per send step, each delivered and taken by the
// carrier once (D21, issue #33: each step happens exactly once across
// crashes and nodes). On PostgreSQL the last stretch runs on two nodes.
//
// It runs 2,000 contacts; PARLEY_FLOW_KILL_RUNS=10000 runs the issue's
// 10,000 (a few minutes).
func TestKillMidFlows(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for River's job rescuer")
	}
	runs := 2000
	if v, err := strconv.Atoi(os.Getenv("PARLEY_FLOW_KILL_RUNS")); err == nil && v > 0 {
		runs = v
	}
	onNodes(t, func(t *testing.T, nodeEnv []string, newClient func(string, ...client.Option) *client.Client, lastNodes int) {
		killMidFlows(t, nodeEnv, newClient, runs, lastNodes)
	})
}

func killMidFlows(t *testing.T, nodeEnv []string, newClient func(string, ...client.Option) *client.Client, n, lastNodes int) {
	// 10 s as in killMidCampaign: with 3 s, CI's load left the sender's
	// batches no time, attempt after attempt.
	args := []string{"serve", "--addr", "127.0.0.1:0", "--sim-delay", "10ms", "--job-rescue-after", "10s", "--rate-limit", "0"}
	api := startProcess(t, nodeEnv, append(args, "--role", "api")...)
	c := newClient(api.URL)
	ctx := t.Context()
	// TRANSACTIONAL: the test runs at any hour; the window has its own tests.
	f, err := c.CreateFlow(ctx, parley.FlowCreate{Name: parley.Some("Crash"), Active: parley.Some(true),
		Trigger: parley.Some(parley.RawMember(`{"type":"subscribed"}`)),
		Steps: parley.Some(parley.RawMember(`[{"type":"send","body":"One","message_type":"TRANSACTIONAL"},` +
			`{"type":"wait","seconds":3600},{"type":"send","body":"Two","message_type":"TRANSACTIONAL"}]`))})
	if err != nil {
		t.Fatal(err)
	}
	api.kill()

	// n contacts subscribe at once, by `parley import`, with no worker
	// running: n runs whose first send is due.
	getenv := map[string]string{}
	for _, kv := range nodeEnv {
		k, v, _ := strings.Cut(kv, "=")
		getenv[k] = v
	}
	file := filepath.Join(t.TempDir(), "contacts.csv")
	var csv strings.Builder
	csv.WriteString("phone_number,messaging_consent\n")
	for i := range n {
		fmt.Fprintf(&csv, "+1415%07d,true\n", 3000000+i)
	}
	if err := os.WriteFile(file, []byte(csv.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := runCmd(t, env(getenv), "brand", "list", "--json")
	var brands []struct{ ID int64 }
	if err != nil || json.Unmarshal([]byte(out), &brands) != nil || len(brands) != 1 {
		t.Fatalf("parley brand list: %v\n%s", err, out)
	}
	if out, err := runCmd(t, env(getenv), "import", file, "--brand", strconv.FormatInt(brands[0].ID, 10)); err != nil {
		t.Fatalf("parley import: %v\n%s", err, out)
	}
	db := openNodeDB(t, nodeEnv)
	count := func(query string, args ...any) int {
		t.Helper()
		var k int
		if err := db.QueryRow(query, args...).Scan(&k); err != nil {
			t.Fatal(err)
		}
		return k
	}
	stepMessages := func(step int) int {
		return count("SELECT count(*) FROM messages WHERE flow_id = $1 AND flow_step = $2", f.ID, step)
	}
	waiting := func() int {
		return count("SELECT count(*) FROM flow_runs WHERE flow_id = $1 AND status = 'active' AND step = 2", f.ID)
	}
	waitFor := func(p *proc, what string, done func() bool) {
		t.Helper()
		// River's rescuer takes a killed node's job after a while, and under
		// -race on a loaded machine the rest of a stage takes minutes.
		deadline := time.Now().Add(6 * time.Minute)
		for !done() {
			if time.Now().After(deadline) {
				t.Fatalf("no %s:\n%s\n%s", what, tailOf(p.stderr.String()), flowState(t, db, f.ID))
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	var logs string

	// Killed while the first sends are written and sent.
	first := startProcess(t, nodeEnv, args...)
	waitFor(first, "first sends", func() bool { return freshSends(first.stderr.String()) >= n/10 })
	first.kill()
	logs += first.stderr.String()
	written := stepMessages(0)

	// Killed while every run waits between its steps.
	second := startProcess(t, nodeEnv, args...)
	waitFor(second, "runs waiting", func() bool { return waiting() == n })
	second.kill()
	logs += second.stderr.String()

	// The hour passes (in the database: the nodes' clocks are real), and
	// a node is killed while the second sends go out.
	if _, err := db.Exec("UPDATE flow_runs SET next_at = 0 WHERE flow_id = $1 AND status = 'active'", f.ID); err != nil {
		t.Fatal(err)
	}
	third := startProcess(t, nodeEnv, args...)
	waitFor(third, "second sends", func() bool { return stepMessages(2) >= n/10 })
	third.kill()
	logs += third.stderr.String()

	var last []*proc
	for range lastNodes {
		last = append(last, startProcess(t, nodeEnv, args...))
	}
	lc := newClient(last[0].URL)
	waitFor(last[0], "runs completed and delivered", func() bool {
		return count("SELECT count(*) FROM messages WHERE flow_id = $1 AND status = 'delivered'", f.ID) == 2*n &&
			count("SELECT count(*) FROM flow_runs WHERE flow_id = $1 AND status = 'completed'", f.ID) == n
	})
	for _, p := range last {
		logs += p.stderr.String()
	}

	perStep := countBy(t, db, "SELECT flow_run_id * 10 + flow_step, count(*) FROM messages WHERE flow_id = $1 GROUP BY flow_run_id, flow_step", f.ID)
	if len(perStep) != 2*n {
		t.Errorf("%d (run, step) pairs have a message, want %d", len(perStep), 2*n)
	}
	for k, m := range perStep {
		if m != 1 {
			t.Errorf("run %d step %d has %d messages, want 1", k/10, k%10, m)
		}
	}
	if total := count("SELECT count(*) FROM messages WHERE flow_id = $1", f.ID); total != 2*n {
		t.Errorf("%d messages of the flow, want %d", total, 2*n)
	}
	accepted := countBy(t, db, "SELECT message_id, count(*) FROM sim_messages GROUP BY message_id")
	if len(accepted) != 2*n {
		t.Errorf("the carrier holds sends of %d messages, want %d", len(accepted), 2*n)
	}
	for id, m := range accepted {
		if m != 1 {
			t.Errorf("message %d: the carrier holds %d sends, want 1", id, m)
		}
	}
	// As in TestKillMidCampaign: the logs count every send the carrier
	// took as new, and a kill can only make the sum smaller.
	if fresh := freshSends(logs); fresh > 2*n {
		t.Errorf("the carrier took %d new sends for %d messages", fresh, 2*n)
	}
	got, err := lc.GetFlow(ctx, f.ID)
	if err != nil {
		t.Fatal(err)
	}
	want := parley.FlowStats{Entered: int64(n), Completed: int64(n), Sent: int64(2 * n)}
	if got.Stats != want {
		t.Errorf("stats %+v, want %+v", got.Stats, want)
	}
	t.Logf("%d runs: %d first messages written before the first kill; the rest on %d node(s) after the restart", n, written, lastNodes)
}

// flowState describes where a flow's messages, runs and sender job stand,
// for a failure's message.
func flowState(t *testing.T, db *sql.DB, flowID int64) string {
	t.Helper()
	var b strings.Builder
	dump := func(title, query string, args ...any) {
		fmt.Fprintf(&b, "%s:\n", title)
		rows, err := db.Query(query, args...)
		if err != nil {
			fmt.Fprintf(&b, "  %v\n", err)
			return
		}
		defer rows.Close()
		cols, _ := rows.Columns()
		for rows.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				fmt.Fprintf(&b, "  %v\n", err)
				return
			}
			b.WriteString(" ")
			for i, c := range cols {
				if v, ok := vals[i].([]byte); ok {
					vals[i] = string(v)
				}
				fmt.Fprintf(&b, " %s=%v", c, vals[i])
			}
			b.WriteString("\n")
		}
	}
	dump("messages", `SELECT flow_step, status, sending_at IS NOT NULL AS claimed, COALESCE(provider, '') AS provider, count(*) AS n
		FROM messages WHERE flow_id = $1 GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`, flowID)
	dump("runs", `SELECT status, step, count(*) AS n FROM flow_runs WHERE flow_id = $1 GROUP BY 1, 2 ORDER BY 1, 2`, flowID)
	dump("senders", `SELECT flow_id, gen FROM flow_senders`)
	dump("jobs", `SELECT id, kind, state, attempt, max_attempts, scheduled_at, attempted_at, finalized_at, substr(CAST(errors AS TEXT), length(CAST(errors AS TEXT)) - 600) AS last_errors
		FROM river_job WHERE kind = 'send_flow' ORDER BY id`)
	return b.String()
}
