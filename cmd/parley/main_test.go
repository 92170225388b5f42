package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// runCmd runs the parley command in-process and returns its stdout.
func runCmd(t *testing.T, getenv func(string) string, args ...string) (string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(t.Context(), args, getenv, &out, &errOut)
	return out.String(), err
}

// startServe runs `parley serve` until the test ends and waits for it.
func startServe(t *testing.T, dataDir string) (stdout *apitest.LogBuffer, stop func() error) {
	t.Helper()
	return startServeWith(t, dataDir, nil)
}

// startServeWith is startServe with more flags and an environment.
func startServeWith(t *testing.T, dataDir string, getenv func(string) string, flags ...string) (stdout *apitest.LogBuffer, stop func() error) {
	t.Helper()
	if getenv == nil {
		getenv = env(nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stdout = &apitest.LogBuffer{}
	done := make(chan error, 1)
	args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dataDir, "--log-format", "json"}, flags...)
	go func() {
		done <- run(ctx, args, getenv, stdout, &apitest.LogBuffer{})
	}()
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(stdout.String(), "Parley is serving on") {
		select {
		case err := <-done:
			t.Fatalf("serve exited: %v\n%s", err, stdout.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve did not start:\n%s", stdout.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() { cancel(); err = <-done })
		return err
	}
	t.Cleanup(func() { stop() })
	return stdout, stop
}

func TestServeFirstRunThenCall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "parley-data")
	stdout, stop := startServe(t, dir)
	if !strings.Contains(stdout.String(), "Created demo brand") {
		t.Errorf("first run did not announce the demo brand:\n%s", stdout.String())
	}
	credPath := filepath.Join(dir, devCredentialsFile)
	st, err := os.Stat(credPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("%s has mode %v, want 0600", credPath, st.Mode().Perm())
	}
	if st, err := os.Stat(filepath.Join(dir, "secret.key")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("secret.key: %v %v, want a 0600 key file (issue #2)", st, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "parley.db")); err != nil {
		t.Errorf("no database: %v", err)
	}

	out, err := runCmd(t, env(nil), "call", "GET", "/api/v1/brand", "--data-dir", dir)
	if err != nil {
		t.Fatalf("call: %v\n%s", err, out)
	}
	var brand map[string]any
	if err := json.Unmarshal([]byte(out), &brand); err != nil || brand["name"] != "Demo Brand" {
		t.Errorf("call GET /api/v1/brand printed %q (%v)", out, err)
	}
	// The demo brand has an inactive Welcome flow to show the idea (#33).
	out, err = runCmd(t, env(nil), "call", "GET", "/api/v1/flows", "--data-dir", dir)
	var flows struct {
		Data []struct {
			Name   string `json:"name"`
			Active bool   `json:"active"`
		} `json:"data"`
	}
	if err != nil || json.Unmarshal([]byte(out), &flows) != nil || len(flows.Data) != 1 || flows.Data[0].Name != "Welcome" || flows.Data[0].Active {
		t.Errorf("call GET /api/v1/flows printed %q (%v), want one inactive Welcome flow", out, err)
	}

	out, err = runCmd(t, env(nil), "call", "POST", "/api/v1/users", "--data", `{"phone_number":"+14155552671"}`, "--data-dir", dir)
	if err != nil || !strings.Contains(out, `"+14155552671"`) {
		t.Errorf("call POST: %v\n%s", err, out)
	}
	// Another body: the same one within the same second would be a replay (D2).
	out, err = runCmd(t, env(nil), "call", "POST", "/api/v1/users", "--data", `{"phone_number":"+14155552671","first_name":"Ann"}`, "--data-dir", dir)
	if err == nil || !strings.Contains(out, "duplicate_record_found") {
		t.Errorf("duplicate create: err %v, out %s; want an error and the envelope", err, out)
	}

	png := filepath.Join(t.TempDir(), "dot.png")
	os.WriteFile(png, append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 32)...), 0o600)
	out, err = runCmd(t, env(nil), "call", "POST", "/api/v1/files", "--file", png, "--data-dir", dir)
	if err != nil || !strings.Contains(out, `"image/png"`) {
		t.Errorf("call --file: %v\n%s", err, out)
	}

	if err := stop(); err != nil {
		t.Errorf("serve did not shut down cleanly: %v", err)
	}

	// A second start keeps the brand and creates no new one.
	stdout, _ = startServe(t, dir)
	if strings.Contains(stdout.String(), "Created demo brand") {
		t.Errorf("second start created another demo brand")
	}
}

func TestAdminCommands(t *testing.T) {
	dir := t.TempDir()
	e := env(map[string]string{"PARLEY_DATA_DIR": dir})
	out, err := runCmd(t, e, "brand", "create", "--name", "Acme", "--phone", "+14155550100", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var brand struct {
		ID int64 `json:"id"`
	}
	if err := json.Unmarshal([]byte(out), &brand); err != nil || brand.ID == 0 {
		t.Fatalf("brand create --json: %q %v", out, err)
	}
	id := strconv.FormatInt(brand.ID, 10)

	out, err = runCmd(t, e, "brand", "update", id, "--help-reply", "Acme help", "--stop-reply", "Bye", "--json")
	if err != nil || !strings.Contains(out, `"Acme"`) {
		t.Fatalf("brand update: %v %s", err, out)
	}
	if _, err := runCmd(t, e, "brand", "update", id, "--phone", "12"); err == nil {
		t.Error("brand update accepted an invalid phone number")
	}
	if _, err := runCmd(t, e, "brand", "update", id, "--name", "Acme Inc"); err != nil {
		t.Fatal(err)
	}
	out, _ = runCmd(t, e, "brand", "list", "--json")
	if !strings.Contains(out, `"Acme Inc"`) {
		t.Errorf("brand list after update: %s", out)
	}

	// D17 settings: shown, changed member by member, refused whole.
	out, err = runCmd(t, e, "brand", "settings", id, "--set", `{"time_zone": "America/Chicago", "send_rate": 5}`)
	if err != nil || !strings.Contains(out, `"time_zone": "America/Chicago"`) || !strings.Contains(out, `"send_rate": 5`) ||
		!strings.Contains(out, `"start": "08:00"`) {
		t.Errorf("brand settings --set: %v %s", err, out)
	}
	if _, err := runCmd(t, e, "brand", "settings", id, "--set", `{"time_zone": "America/Denver", "send_rate": -1}`); err == nil ||
		!strings.Contains(err.Error(), "send_rate") {
		t.Errorf("brand settings with a bad send_rate: %v", err)
	}
	if out, _ := runCmd(t, e, "brand", "settings", id); !strings.Contains(out, `"time_zone": "America/Chicago"`) {
		t.Errorf("a refused update changed the settings: %s", out)
	}

	out, err = runCmd(t, e, "credential", "create", "--brand", id, "--json")
	if err != nil {
		t.Fatal(err)
	}
	var cred struct{ Username, Secret string }
	if err := json.Unmarshal([]byte(out), &cred); err != nil || cred.Username == "" || len(cred.Secret) != 43 {
		t.Fatalf("credential create --json: %q %v", out, err)
	}

	if _, err := runCmd(t, e, "field", "create", "--brand", id, "--name", "Loyalty Tier", "--type", "STRING", "--enum", "gold,silver"); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, e, "field", "create", "--brand", id, "--name", "Tags", "--type", "LIST", "--subtype", "STRING", "--append"); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, e, "field", "create", "--brand", id, "--name", "X", "--type", "NOPE"); err == nil {
		t.Error("field create accepted an unknown type")
	}
	out, err = runCmd(t, e, "field", "list", "--brand", id, "--json")
	if err != nil || !strings.Contains(out, `"Loyalty Tier"`) || !strings.Contains(out, `"is_append": true`) {
		t.Errorf("field list: %v\n%s", err, out)
	}

	if _, err := runCmd(t, e, "segment", "create", "--brand", id, "--name", "VIPs",
		"--criteria", `[{"attribute":{"dimension_type":2,"field_name":"loyalty_tier","field_type":3},"operator_type":1,"and_group_num":0,"str_field_value":"gold"}]`); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, e, "segment", "create", "--brand", id, "--name", "Old", "--archived"); err != nil {
		t.Fatal(err)
	}
	// The CLI shares the API's rules (D15): one service method checks both.
	const tier = `{"attribute":{"dimension_type":2,"field_name":"loyalty_tier","field_type":3},"and_group_num":0,"str_field_value":"gold",`
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--name", "Weekly", "--type", "WEEKLY"}, "type: must be STANDARD or POINT IN TIME"},
		{[]string{"--name", "VIPs"}, "Duplicate entry for 'VIPs'"},
		{[]string{"--name", "Bad", "--criteria", `[` + tier + `"operator_type":"1"}]`}, "criteria[0].operator_type: must be an integer"},
		{[]string{"--name", "Bad", "--criteria", `[` + tier + `"operator_type":3}]`}, "criteria[0].operator_type: GREATER_THAN does not fit STRING"},
	} {
		if _, err := runCmd(t, e, append([]string{"segment", "create", "--brand", id}, c.args...)...); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("segment create %v: %v, want %q", c.args, err, c.want)
		}
	}

	// Serve and call as the new credential.
	stdout, _ := startServe(t, dir)
	if _, err := os.Stat(filepath.Join(dir, devCredentialsFile)); err == nil {
		t.Error("serve wrote dev credentials for a database that already had a brand")
	}
	ce := env(map[string]string{"PARLEY_USERNAME": cred.Username, "PARLEY_SECRET": cred.Secret, "PARLEY_URL": serveURL(t, stdout.String())})
	out, err = runCmd(t, ce, "call", "GET", "/api/v1/segments")
	if err != nil || !strings.Contains(out, `"VIPs"`) || strings.Contains(out, `"Old"`) {
		t.Errorf("GET /segments: %v\n%s", err, out)
	}
	out, err = runCmd(t, ce, "call", "GET", "/api/v1/custom_data")
	if err != nil || !strings.Contains(out, `"Loyalty Tier"`) {
		t.Errorf("GET /custom_data: %v\n%s", err, out)
	}

	// The calls above moved last_used_at (issue #6).
	out, err = runCmd(t, e, "credential", "list", "--brand", id, "--json")
	if err != nil || !strings.Contains(out, `"last_used_at": "`) {
		t.Errorf("credential list after use: %v\n%s", err, out)
	}
	out, _ = runCmd(t, e, "credential", "list", "--brand", id)
	if !strings.Contains(out, "LAST USED") {
		t.Errorf("credential list has no LAST USED column:\n%s", out)
	}
	// Rotation: a new credential now, the old one until the grace ends.
	out, err = runCmd(t, e, "credential", "rotate", cred.Username, "--grace", "1h", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var rotated struct {
		Credential struct{ Username, Secret string }
		Old        struct {
			RevokedAt time.Time `json:"revoked_at"`
		}
	}
	if err := json.Unmarshal([]byte(out), &rotated); err != nil || len(rotated.Credential.Secret) != 43 ||
		rotated.Credential.Username == cred.Username || time.Until(rotated.Old.RevokedAt) < 59*time.Minute {
		t.Fatalf("credential rotate --json: %v\n%s", err, out)
	}
	ne := env(map[string]string{"PARLEY_USERNAME": rotated.Credential.Username, "PARLEY_SECRET": rotated.Credential.Secret, "PARLEY_URL": serveURL(t, stdout.String())})
	if _, err := runCmd(t, ne, "call", "GET", "/api/v1/brand"); err != nil {
		t.Errorf("the rotated-in credential: %v", err)
	}
	if _, err := runCmd(t, ce, "call", "GET", "/api/v1/brand"); err != nil {
		t.Errorf("the rotated-out credential during its grace period: %v", err)
	}
	if _, err := runCmd(t, e, "credential", "rotate", "pk_nobody"); err == nil {
		t.Error("rotating an unknown credential succeeded")
	}

	if _, err := runCmd(t, e, "credential", "revoke", cred.Username); err != nil {
		t.Fatal(err)
	}
	// The running server caches credentials briefly; a fresh process sees the revocation at once.
	out, err = runCmd(t, e, "credential", "list", "--brand", id, "--json")
	if err != nil || !strings.Contains(out, `"revoked_at": "`) {
		t.Errorf("credential list after revoke: %v\n%s", err, out)
	}
	if _, err := runCmd(t, e, "credential", "revoke", cred.Username); err == nil {
		t.Error("revoking twice succeeded")
	}
}

// serveURL reads the address serve announced.
func serveURL(t *testing.T, out string) string {
	t.Helper()
	_, rest, ok := strings.Cut(out, "Parley is serving on ")
	if !ok {
		t.Fatalf("no address in %q", out)
	}
	return strings.Fields(rest)[0]
}

// TestBrandUpdateReplies: the replies set with `brand update` are what
// keywords answer, and only the flags given change (issue #4).
func TestBrandUpdateReplies(t *testing.T) {
	dir := t.TempDir()
	e := env(map[string]string{"PARLEY_DATA_DIR": dir})
	if _, err := runCmd(t, e, "brand", "create", "--name", "Acme", "--phone", "+14155550100"); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, e, "brand", "update", "1", "--help-reply", "Acme help", "--stop-reply", "Bye"); err != nil {
		t.Fatal(err)
	}
	if _, err := runCmd(t, e, "brand", "update", "1", "--stop-reply", ""); err != nil {
		t.Fatal(err)
	}
	a, err := openForTest(t, dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := a.Service.BrandReplies(t.Context(), 1)
	if err != nil || r.Help != "Acme help" || r.Stop != "" || r.Start != "" {
		t.Errorf("replies = %+v %v; want help kept, stop cleared, start untouched", r, err)
	}
}

func openForTest(t *testing.T, dir string) (*app.App, error) {
	a, err := app.Open(t.Context(), app.Config{DataDir: dir, Role: "api"})
	if err == nil {
		t.Cleanup(func() { a.Close() })
	}
	return a, err
}

// TestTuneGC: serve raises GOGC and sets a memory limit unless the
// operator set GOGC or GOMEMLIMIT.
func TestTuneGC(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	tuneGC(func(k string) string { return map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}[k] })
	if p := debug.SetGCPercent(100); p != 100 {
		t.Errorf("GC percent %d with GOGC set, want it left alone", p)
	}
	if l := debug.SetMemoryLimit(-1); l != math.MaxInt64 {
		t.Errorf("memory limit %d with GOMEMLIMIT set, want it left alone", l)
	}
	tuneGC(func(string) string { return "" })
	if p := debug.SetGCPercent(100); p != 400 {
		t.Errorf("GC percent %d, want 400", p)
	}
	if l := debug.SetMemoryLimit(-1); l != 100<<20 {
		t.Errorf("memory limit %d, want 100 MiB", l)
	}
}

// Boolean flags follow Go's flag convention (DESIGN.md): the flag alone
// means true, --flag=false false; PARLEY_* values true/false/1/0 still
// set the default. Observed through what --webhook-allow-private allows:
// a webhook on a loopback http:// URL.
func TestServeBoolFlags(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "parley-data")
	for _, tc := range []struct {
		name  string
		env   map[string]string
		flags []string
		allow bool
	}{
		{"Default", nil, nil, false},
		{"FlagAloneIsTrue", nil, []string{"--webhook-allow-private"}, true},
		{"FlagFalse", map[string]string{"PARLEY_WEBHOOK_ALLOW_PRIVATE": "true"}, []string{"--webhook-allow-private=false"}, false},
		{"EnvOne", map[string]string{"PARLEY_WEBHOOK_ALLOW_PRIVATE": "1"}, nil, true},
		{"EnvZero", map[string]string{"PARLEY_WEBHOOK_ALLOW_PRIVATE": "0"}, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, stop := startServeWith(t, dir, env(tc.env), tc.flags...)
			defer stop()
			// A body of its own: the same one within a second is a replay (D2).
			hook := `{"url":"http://127.0.0.1:9/` + tc.name + `","event_types":["*"]}`
			out, err := runCmd(t, env(nil), "call", "POST", "/api/v1/webhooks", "--data", hook, "--data-dir", dir)
			if tc.allow && err != nil {
				t.Errorf("webhook on a loopback URL refused: %v\n%s", err, out)
			}
			if !tc.allow && (err == nil || !strings.Contains(out, "validation_error")) {
				t.Errorf("webhook on a loopback URL: err %v, out %s; want a validation_error", err, out)
			}
		})
	}
	for _, tc := range []struct {
		name  string
		env   map[string]string
		flags []string
	}{
		{"BadEnv", map[string]string{"PARLEY_WEBHOOK_ALLOW_PRIVATE": "maybe"}, nil},
		{"BadValue", nil, []string{"--webhook-allow-private=maybe"}},
		// The old spelling would now leave "true" as an argument: refused, not ignored.
		{"SeparateValue", nil, []string{"--webhook-allow-private", "true"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", dir}, tc.flags...)
			// A serve that starts runs until its context ends, then returns nil.
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			var out, errOut apitest.LogBuffer
			if err := run(ctx, args, env(tc.env), &out, &errOut); err == nil {
				t.Errorf("serve %v with env %v started", tc.flags, tc.env)
			}
		})
	}
}

// TestServeBodyTimeoutFlags: the body deadlines (#15) take positive
// durations, from flags or the environment, and say which is wrong.
func TestServeBodyTimeoutFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string
	}{
		{[]string{"--body-timeout", "0s"}, nil, "--body-timeout: want a positive duration"},
		{[]string{"--upload-timeout", "soon"}, nil, "--upload-timeout: want a positive duration"},
		{nil, map[string]string{"PARLEY_BODY_TIMEOUT": "-1s"}, "--body-timeout: want a positive duration"},
	} {
		getenv := func(k string) string { return tc.env[k] }
		args := append([]string{"serve", "--data-dir", t.TempDir()}, tc.args...)
		err := run(t.Context(), args, getenv, io.Discard, io.Discard)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("serve %v (env %v): error %v, want %q", tc.args, tc.env, err, tc.want)
		}
	}
}
