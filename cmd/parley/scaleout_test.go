package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
)

// envAsParley makes the test binary behave as the parley command, so tests
// can start real `parley serve` processes without building anything.
const envAsParley = "PARLEY_TEST_AS_PARLEY"

func TestMain(m *testing.M) {
	if os.Getenv(envAsParley) == "1" {
		os.Args = append([]string{"parley"}, strings.Fields(os.Getenv("PARLEY_TEST_ARGS"))...)
		main()
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// proc is a `parley serve` child process.
type proc struct {
	URL    string
	cmd    *exec.Cmd
	stderr *apitest.LogBuffer // the JSON log
}

// startProcess runs `parley serve` as a child process and waits until it
// listens.
func startProcess(t *testing.T, env []string, args ...string) *proc {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, os.Args[0])
	// GOMEMLIMIT=off: a race-instrumented server's heap outgrows the
	// 100 MiB soft limit serve sets, and collecting nonstop would slow the
	// test's nodes to a crawl on a loaded machine.
	cmd.Env = append(os.Environ(), append(env, envAsParley+"=1", "PARLEY_LOG_FORMAT=json", "GOMEMLIMIT=off",
		"PARLEY_TEST_ARGS="+strings.Join(args, " "))...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stderr: &apitest.LogBuffer{}}
	cmd.Stderr = p.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cancel(); cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), "Parley is serving on "); ok {
				found <- strings.Fields(rest)[0]
			}
		}
		found <- "" // the process exited
	}()
	select {
	case p.URL = <-found:
		if p.URL == "" {
			t.Fatalf("parley serve exited:\n%s", p.stderr.String())
		}
		return p
	case <-time.After(30 * time.Second):
		t.Fatalf("parley serve did not start:\n%s", p.stderr.String())
	}
	return nil
}

// kill ends the process with SIGKILL: no shutdown, no cleanup.
func (p *proc) kill() {
	p.cmd.Process.Kill()
	p.cmd.Wait()
}

// logCounts counts, per message id, the JSON log lines whose msg is msg.
func logCounts(logs, msg string) map[int64]int {
	counts := map[int64]int{}
	for _, line := range strings.Split(logs, "\n") {
		var rec struct {
			Msg       string `json:"msg"`
			MessageID int64  `json:"message_id"`
		}
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg == msg {
			counts[rec.MessageID]++
		}
	}
	return counts
}

// waitStatus polls until every message has status, or fails after d.
func waitStatus(t *testing.T, c *client.Client, ids []int64, status string, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for _, id := range ids {
		for {
			m, err := c.GetMessage(t.Context(), id)
			if err == nil && m.Status == status {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("message %d: %+v %v; want %s", id, m, err, status)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// TestScaleOut starts two parley serve processes on one PostgreSQL database
// and shows they act as one service (issue #3).
func TestScaleOut(t *testing.T) {
	if os.Getenv(apitest.EnvPostgresURL) == "" {
		t.Skip("needs PostgreSQL: set " + apitest.EnvPostgresURL)
	}
	nodeEnv, newClient := setupNodes(t, apitest.PostgresURL(t))
	nodeA := startProcess(t, append(nodeEnv, "PARLEY_DATA_DIR="+t.TempDir()), "serve", "--addr", "127.0.0.1:0", "--sim-delay", "20ms")
	nodeB := startProcess(t, append(nodeEnv, "PARLEY_DATA_DIR="+t.TempDir()), "serve", "--addr", "127.0.0.1:0", "--sim-delay", "20ms")
	a := newClient(nodeA.URL)
	b := newClient(nodeB.URL)
	ctx := t.Context()

	// Written through A, read and changed through B, seen again through A.
	u, err := a.CreateUser(ctx, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	if err != nil {
		t.Fatal(err)
	}
	got, err := b.FindUserByPhone(ctx, "+14155552671")
	if err != nil || got.ID != u.ID {
		t.Fatalf("node B lookup: %v %v", got, err)
	}
	if _, err := b.UpdateUser(ctx, u.ID, parley.UserUpdate{UserFields: parley.UserFields{FirstName: parley.Some("Ann")}}); err != nil {
		t.Fatal(err)
	}
	if got, err := a.GetUser(ctx, u.ID); err != nil || got.FirstName == nil || *got.FirstName != "Ann" {
		t.Fatalf("node A after B's update: %+v %v", got, err)
	}

	// One signed write copied to both nodes runs once (D2 replay protection).
	signedAt := time.Now()
	sameSignature := client.WithClock(func() time.Time { return signedAt })
	var answers []error
	for _, url := range []string{nodeA.URL, nodeB.URL} {
		_, err := newClient(url, sameSignature).CreateUser(ctx, parley.UserCreate{PhoneNumber: parley.Some("+14155552688")})
		answers = append(answers, err)
	}
	var replayed *client.Error
	if answers[0] != nil || !errors.As(answers[1], &replayed) || replayed.StatusCode != 401 ||
		replayed.Msg != "HMAC signature verification failed: replayed request" {
		t.Errorf("one signed request to node A, then to node B: %v; want created, then 401 replayed request", answers)
	}

	// Concurrent creates of one number through both nodes: exactly one wins.
	const tries = 20
	var wg sync.WaitGroup
	results := make(chan error, tries)
	for i := range tries {
		c := a
		if i%2 == 1 {
			c = b
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Distinct names, so no two share a signature (D2 replay protection).
			_, err := c.CreateUser(ctx, parley.UserCreate{PhoneNumber: parley.Some("+14155559999"),
				UserFields: parley.UserFields{FirstName: parley.Some(fmt.Sprintf("Try %d", i))}})
			results <- err
		}()
	}
	wg.Wait()
	close(results)
	created, conflicts := 0, 0
	for err := range results {
		var ae *client.Error
		switch {
		case err == nil:
			created++
		case errors.As(err, &ae) && ae.StatusCode == 409 && ae.Type == parley.EDuplicate:
			conflicts++
		default:
			t.Errorf("unexpected answer: %v", err)
		}
	}
	if created != 1 || conflicts != tries-1 {
		t.Errorf("concurrent creates: %d created, %d conflicts; want 1 and %d", created, conflicts, tries-1)
	}

	// Jobs are worked once, not once per node: both nodes run workers, and
	// every message gets exactly one delivery attempt in all their logs.
	var ids []int64
	for i := range 60 {
		c := a
		if i%2 == 1 {
			c = b
		}
		m, err := c.SendMessage(ctx, parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some(fmt.Sprintf("hi %d", i))})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, m.ID)
	}
	waitStatus(t, a, ids, parley.StatusDelivered, 60*time.Second)
	attempts := logCounts(nodeA.stderr.String()+nodeB.stderr.String(), "delivery attempt")
	perNode := [2]int{len(logCounts(nodeA.stderr.String(), "delivery attempt")), len(logCounts(nodeB.stderr.String(), "delivery attempt"))}
	for _, id := range ids {
		if attempts[id] != 1 {
			t.Errorf("message %d was attempted %d times across the nodes, want 1", id, attempts[id])
		}
	}
	t.Logf("deliveries worked per node: %v", perNode)
}
