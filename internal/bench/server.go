package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley/internal/store"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", for the schema of a PostgreSQL run
)

// ServerOptions say which server StartServer runs.
type ServerOptions struct {
	// Command builds the child process: the parley binary with args, in
	// the environment of ChildEnv.
	Command func(args []string) (*exec.Cmd, error)
	// DB is "" for a temporary SQLite database, or a postgres:// URL in
	// whose database a schema of the run's own is created, and dropped
	// afterwards.
	DB string
	// Trivial runs `parley bench --serve-trivial` instead of Parley.
	Trivial bool
	// Hardening turns the server's idempotency store, replay cache and
	// rate limiter on (the limiter so high that it never refuses);
	// otherwise they are off.
	Hardening bool
	// Args are more flags for `parley serve`.
	Args []string
}

// Server is a server process started for a run.
type Server struct {
	URL              string
	Username, Secret string // a credential of a brand created for the run
	Engine           string // sqlite, postgres or trivial

	dsn string // the server's --db

	token   string // the admin API's bearer token
	brandID int64  // the run's brand
	cmd     *exec.Cmd
	exited  chan struct{} // closed once the process has exited
	dir     string
	drop    func() // drops the PostgreSQL schema
	logs    *tail
	once    sync.Once
}

// servingPrefix is what `parley serve` and the trivial server print
// before their URL.
const servingPrefix = "serving on "

// ChildEnv is environ without PARLEY_ variables, so the server a run
// starts never picks up settings meant for another (PARLEY_DB above all).
func ChildEnv(environ []string) []string {
	out := make([]string, 0, len(environ))
	for _, kv := range environ {
		if !strings.HasPrefix(kv, "PARLEY_") {
			out = append(out, kv)
		}
	}
	return out
}

// hardeningArgs are serve's flags for hardening on or off. On, the
// limiter is active but, at a million requests per second, never refuses.
func hardeningArgs(on bool) []string {
	if on {
		return []string{"--rate-limit", "1000000", "--rate-burst", "1000000", "--replay-protection=true"}
	}
	return []string{"--rate-limit", "0", "--replay-protection=false"}
}

// StartServer starts a server on a temporary data directory and database,
// waits until it is ready, and creates a brand and credential through the
// admin API. Close stops it and removes what it made.
func StartServer(ctx context.Context, o ServerOptions) (_ *Server, err error) {
	dir, err := os.MkdirTemp("", "parley-bench-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir, exited: make(chan struct{}), logs: &tail{}}
	defer func() {
		if err != nil {
			s.Close()
		}
	}()
	token := randomHex(24)
	var args []string
	switch {
	case o.Trivial:
		s.Engine = "trivial"
		args = []string{"bench", "--serve-trivial", "127.0.0.1:0"}
	default:
		db := "sqlite:" + filepath.Join(dir, "parley.db")
		s.Engine = "sqlite"
		if o.DB != "" {
			if !strings.HasPrefix(o.DB, "postgres://") && !strings.HasPrefix(o.DB, "postgresql://") {
				return nil, fmt.Errorf("--db: want postgres://…; without it the server gets a temporary SQLite database")
			}
			if db, s.drop, err = freshSchema(ctx, o.DB); err != nil {
				return nil, err
			}
			s.Engine = "postgres"
		}
		s.dsn = db
		args = []string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir, "--db", db,
			"--admin-token", token, "--log-format", "json", "--role", "all"}
		args = append(args, hardeningArgs(o.Hardening)...)
		args = append(args, o.Args...)
	}
	cmd, err := o.Command(args)
	if err != nil {
		return nil, err
	}
	s.cmd = cmd
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = s.logs
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if _, rest, ok := strings.Cut(sc.Text(), servingPrefix); ok && len(found) == 0 {
				if f := strings.Fields(rest); len(f) > 0 {
					found <- f[0]
				}
			}
		}
		io.Copy(io.Discard, stdout)
		cmd.Wait() // after the last read from stdout, as os/exec requires
		close(s.exited)
	}()
	select {
	case s.URL = <-found:
	case <-s.exited:
		return nil, fmt.Errorf("the server exited: %s", s.logs)
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("the server did not start within a minute: %s", s.logs)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if err := s.waitReady(ctx); err != nil {
		return nil, err
	}
	if o.Trivial {
		s.Username, s.Secret = "bench", "trivial" // signed like every request, never checked
		return s, nil
	}
	s.token = token
	if err := s.createCredential(ctx, token); err != nil {
		return nil, fmt.Errorf("creating the brand and credential: %w", err)
	}
	return s, nil
}

var adminClient = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{Proxy: nil}}

func (s *Server) waitReady(ctx context.Context) error {
	deadline := time.Now().Add(time.Minute)
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/readyz", nil)
		if resp, err := adminClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-s.exited:
			return fmt.Errorf("the server exited: %s", s.logs)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the server was not ready within a minute: %s", s.logs)
		}
	}
}

func (s *Server) createCredential(ctx context.Context, token string) error {
	var brand struct {
		ID int64 `json:"id"`
	}
	if err := adminCall(ctx, s.URL+"/admin/v1/brands", token, `{"name":"Bench","phone_number":"+14155550100"}`, &brand); err != nil {
		return err
	}
	var cred struct {
		Username string `json:"username"`
		Secret   string `json:"secret"`
	}
	if err := adminCall(ctx, s.URL+"/admin/v1/brands/"+strconv.FormatInt(brand.ID, 10)+"/credentials", token, "", &cred); err != nil {
		return err
	}
	// The custom data field --history's creates set.
	if err := adminCall(ctx, s.URL+"/admin/v1/brands/"+strconv.FormatInt(brand.ID, 10)+"/custom_data_fields", token,
		`{"field_name":"tier","custom_data_type":3}`, &struct{}{}); err != nil {
		return err
	}
	if cred.Username == "" || cred.Secret == "" {
		return errors.New("the admin API returned no credential")
	}
	s.brandID = brand.ID
	s.Username, s.Secret = cred.Username, cred.Secret
	return nil
}

// admin POSTs body to the run's brand's path under the admin API
// ("/settings": /admin/v1/brands/{id}/settings).
func (s *Server) admin(ctx context.Context, path, body string) error {
	return adminCall(ctx, s.URL+"/admin/v1/brands/"+strconv.FormatInt(s.brandID, 10)+path, s.token, body, &struct{}{})
}

func adminCall(ctx context.Context, u, token, body string, out any) error {
	req, err := http.NewRequestWithContext(ctx, "POST", u, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := adminClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusCreated && resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST %s: HTTP %d: %s", u, resp.StatusCode, excerpt(b))
	}
	return json.Unmarshal(b, out)
}

// freshSchema creates an empty schema in the database of base and returns
// a URL whose search_path is that schema, and how to drop it.
func freshSchema(ctx context.Context, base string) (string, func(), error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, fmt.Errorf("--db: %w", err)
	}
	schema := "bench_" + randomHex(6)
	db, err := sql.Open("pgx", base)
	if err != nil {
		return "", nil, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, fmt.Errorf("creating schema %s: %w", schema, err)
	}
	drop := func() {
		db, err := sql.Open("pgx", base)
		if err != nil {
			return
		}
		defer db.Close()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		db.ExecContext(ctx, "DROP SCHEMA "+schema+" CASCADE")
	}
	q := u.Query()
	q.Set("search_path", schema)
	// The server's connections carry the schema's name: the idle
	// scenario finds their backends by it.
	q.Set("application_name", schema)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

// PID is the server's process id.
func (s *Server) PID() int { return s.cmd.Process.Pid }

// Close stops the server (interrupt, then kill after 15 s) and removes its
// data directory and schema. It is safe to call more than once.
func (s *Server) Close() error {
	s.once.Do(func() {
		if s.cmd != nil && s.cmd.Process != nil {
			s.cmd.Process.Signal(os.Interrupt)
			select {
			case <-s.exited:
			case <-time.After(15 * time.Second):
				s.cmd.Process.Kill()
				<-s.exited
			}
		}
		if s.drop != nil {
			s.drop()
		}
		os.RemoveAll(s.dir)
	})
	return nil
}

// Logs is the end of the server's log.
func (s *Server) Logs() string { return s.logs.String() }

// usage is a process's memory and CPU, from /proc (Linux).
type usage struct {
	peakRSS, rss int64 // bytes
	cpu          time.Duration
}

func (s *Server) usage() (usage, error) {
	return procUsage(s.cmd.Process.Pid)
}

func procUsage(pid int) (usage, error) {
	var u usage
	dir := "/proc/" + strconv.Itoa(pid)
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return u, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		name, v, _ := strings.Cut(line, ":")
		f := strings.Fields(v)
		if len(f) != 2 || f[1] != "kB" {
			continue
		}
		kb, _ := strconv.ParseInt(f[0], 10, 64)
		switch name {
		case "VmHWM":
			u.peakRSS = kb << 10
		case "VmRSS":
			u.rss = kb << 10
		}
	}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return u, err
	}
	// The command name may hold spaces and parentheses: fields start
	// after the last ')'. utime and stime are fields 14 and 15, in clock
	// ticks of 1/100 s (USER_HZ, fixed on Linux).
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return u, fmt.Errorf("unexpected %s/stat", dir)
	}
	f := strings.Fields(string(stat[i+1:]))
	if len(f) < 13 {
		return u, fmt.Errorf("unexpected %s/stat", dir)
	}
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	u.cpu = time.Duration(utime+stime) * 10 * time.Millisecond
	return u, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	rand.Read(b)
	return hex.EncodeToString(b)
}

// tail keeps the last 8 KiB written to it: the server's log, shown when
// it fails to start.
type tail struct {
	mu sync.Mutex
	b  []byte
}

const tailSize = 8 << 10

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.b = append(t.b, p...)
	if len(t.b) > 2*tailSize {
		t.b = append(t.b[:0], t.b[len(t.b)-tailSize:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := t.b
	if len(b) > tailSize {
		b = b[len(b)-tailSize:]
	}
	return strings.TrimSpace(string(b))
}

// seedWaitingRuns writes n runs of the flow waiting until nextAt into the
// server's database (store.SeedWaitingRuns), beside the running server.
func (s *Server) seedWaitingRuns(ctx context.Context, flowID int64, n int, nextAt time.Time) error {
	db, err := store.Open(ctx, s.dsn, store.Options{BusyTimeout: time.Minute})
	if err != nil {
		return err
	}
	defer db.Close()
	return db.SeedWaitingRuns(ctx, flowID, n, nextAt)
}
