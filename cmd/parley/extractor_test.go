package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/extract/openai"
	"github.com/parleyhq/parley/internal/extract/rules"
	"github.com/parleyhq/parley/internal/store"
)

func parseAIFlags(t *testing.T, getenv func(string) string, args ...string) (*configuredExtractor, error) {
	t.Helper()
	fs := newFlags("serve")
	f := addAIFlags(fs, getenv)
	if err := parseFlags(fs, args); err != nil {
		t.Fatal(err)
	}
	return f.extractor(getenv, slog.New(slog.DiscardHandler))
}

// TestExtractorFlags: --extractor picks rules or openai; without it,
// openai when --ai-url is set; openai needs a URL and a model (D20).
func TestExtractorFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		env     map[string]string
		args    []string
		want    string // "rules", "openai" or an error's words
		wantErr bool
	}{
		{name: "default", want: "rules"},
		{name: "rules", args: []string{"--extractor", "rules"}, want: "rules"},
		{name: "--ai-url picks openai", args: []string{"--ai-url", "http://127.0.0.1:11434", "--ai-model", "llama3.1"}, want: "openai"},
		{name: "from the environment", env: map[string]string{"PARLEY_AI_URL": "https://api.openai.com", "PARLEY_AI_MODEL": "gpt-4o-mini"}, want: "openai"},
		{name: "--extractor rules wins over --ai-url", args: []string{"--extractor", "rules", "--ai-url", "https://api.openai.com"}, want: "rules"},
		{name: "openai without a URL", args: []string{"--extractor", "openai", "--ai-model", "m"}, want: "set --ai-url", wantErr: true},
		{name: "openai without a model", args: []string{"--ai-url", "https://api.openai.com"}, want: "set --ai-model", wantErr: true},
		{name: "a URL that is not http", args: []string{"--ai-url", "ftp://x", "--ai-model", "m"}, want: "--ai-url", wantErr: true},
		{name: "unknown extractor", args: []string{"--extractor", "gpt"}, want: "want rules or openai", wantErr: true},
		{name: "bad budget", args: []string{"--ai-url", "https://api.openai.com", "--ai-model", "m", "--ai-daily-budget", "-1"}, want: "--ai-daily-budget", wantErr: true},
		{name: "bad timeout", args: []string{"--ai-url", "https://api.openai.com", "--ai-model", "m", "--ai-timeout", "0s"}, want: "--ai-timeout", wantErr: true},
		{name: "no budget", args: []string{"--ai-url", "https://api.openai.com", "--ai-model", "m", "--ai-daily-budget", "0"}, want: "openai"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := parseAIFlags(t, env(tc.env), tc.args...)
			if tc.wantErr {
				if err == nil || !strings.Contains(err.Error(), tc.want) {
					t.Errorf("err = %v, want one with %q", err, tc.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			switch c.Extractor.(type) {
			case rules.Extractor:
				if tc.want != "rules" {
					t.Errorf("rules, want %s", tc.want)
				}
			case *openai.Extractor:
				if tc.want != "openai" {
					t.Errorf("openai, want %s", tc.want)
				}
			default:
				t.Errorf("extractor %T", c.Extractor)
			}
		})
	}
}

// TestExtractorFromFlags: the openai extractor the flags build sends the key
// from PARLEY_AI_API_KEY as Bearer to --ai-url with --ai-model, and counts
// its calls in the database's budget once bound: over --ai-daily-budget no
// request is sent (issue #19). On SQLite and, when set up, PostgreSQL.
func TestExtractorFromFlags(t *testing.T) {
	t.Parallel()
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			dsn := "sqlite:" + filepath.Join(t.TempDir(), "parley.db")
			if engine == "postgres" {
				if os.Getenv(apitest.EnvPostgresURL) == "" {
					t.Skip("needs PostgreSQL: set " + apitest.EnvPostgresURL)
				}
				dsn = apitest.PostgresURL(t)
			}
			var mu sync.Mutex
			var auths, bodies []string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				auths, bodies = append(auths, r.Header.Get("Authorization")), append(bodies, string(b))
				mu.Unlock()
				io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"{\"age\":34}"}}]}`)
			}))
			defer srv.Close()

			c, err := parseAIFlags(t, env(map[string]string{"PARLEY_AI_API_KEY": "sk-from-env"}),
				"--ai-url", srv.URL+"/v1", "--ai-model", "llama3.1", "--ai-daily-budget", "1")
			if err != nil {
				t.Fatal(err)
			}
			req := extract.Request{Fields: []extract.Field{{Key: "age", Name: "Age", Type: extract.Integer}},
				Conversation: []extract.Message{{Inbound: true, Body: "I'm 34"}}}
			if _, err := c.Extract(t.Context(), req); err == nil {
				t.Error("a call before Bind: no error, want one (no budget to count in)")
			}

			db, err := app.OpenDB(context.Background(), dsn, store.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			b := &parley.Brand{Name: "B", PhoneNumber: "+14155550100"}
			if err := db.WithTx(t.Context(), func(tx *store.Tx) error { return tx.CreateBrand(t.Context(), b) }); err != nil {
				t.Fatal(err)
			}
			c.Bind(db)
			req.BrandID = b.ID
			vs, err := c.Extract(t.Context(), req)
			if err != nil || len(vs) != 1 || string(vs[0].Value) != "34" {
				t.Fatalf("extract: %v, %v", vs, err)
			}
			if _, err := c.Extract(t.Context(), req); !errors.Is(err, extract.ErrOverBudget) {
				t.Errorf("second call of a budget of 1: %v, want extract.ErrOverBudget", err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(auths) != 1 || auths[0] != "Bearer sk-from-env" {
				t.Errorf("requests with Authorization %q, want one, Bearer sk-from-env", auths)
			}
			if len(bodies) == 1 && !strings.Contains(bodies[0], `"model":"llama3.1"`) {
				t.Errorf("body %s, want model llama3.1", bodies[0])
			}
		})
	}
}

// TestServeExtractorFlags: serve reads the extractor flags and refuses a
// configuration that cannot work before it starts anything.
func TestServeExtractorFlags(t *testing.T) {
	t.Parallel()
	for args, want := range map[string]string{
		"--extractor gpt":                     "want rules or openai",
		"--ai-url https://api.openai.com":     "set --ai-model",
		"--extractor openai --ai-model llama": "set --ai-url",
	} {
		_, err := runCmd(t, env(nil), append([]string{"serve", "--addr", "127.0.0.1:0", "--data-dir", t.TempDir()}, strings.Fields(args)...)...)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("serve %s: %v, want an error with %q", args, err, want)
		}
	}
}
