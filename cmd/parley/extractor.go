package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/extract/openai"
	"github.com/parleyhq/parley/internal/extract/rules"
	"github.com/parleyhq/parley/internal/store"
)

// aiKeyEnv holds the openai extractor's API key. It has no flag: a flag's
// value shows in the process list.
const aiKeyEnv = "PARLEY_AI_API_KEY"

// aiFlags are serve's flags for the extractor of auto-collected custom data (D20).
type aiFlags struct {
	kind, url, model, budget, timeout *string
}

func addAIFlags(fs *flag.FlagSet, getenv func(string) string) *aiFlags {
	return &aiFlags{
		kind:    stringFlag(fs, getenv, "extractor", "", "extractor of auto-collected custom data: rules (offline) or openai (default: openai when --ai-url is set, else rules)"),
		url:     stringFlag(fs, getenv, "ai-url", "", "openai extractor: base URL of an OpenAI-compatible server, e.g. https://api.openai.com or http://127.0.0.1:11434 (Ollama); API key in "+aiKeyEnv),
		model:   stringFlag(fs, getenv, "ai-model", "", "openai extractor: the model, e.g. gpt-4o-mini"),
		budget:  stringFlag(fs, getenv, "ai-daily-budget", "1000", "openai extractor: calls per brand per UTC day, shared by all nodes (0: no limit)"),
		timeout: stringFlag(fs, getenv, "ai-timeout", "12s", "openai extractor: time one request to the model server may take; it is tried 3 times"),
	}
}

// configuredExtractor is the extractor the flags name. Its budget counts in
// the database, which app.Open opens after the flags are read: Bind hands
// it over before the workers start.
type configuredExtractor struct {
	extract.Extractor
	budget *lateBudget // nil: no budget
}

// Bind gives the extractor's budget its database.
func (c *configuredExtractor) Bind(db *store.DB) {
	if c.budget != nil {
		c.budget.db.Store(db)
	}
}

// extractor returns the extractor the flags configure.
func (f *aiFlags) extractor(getenv func(string) string, logger *slog.Logger) (*configuredExtractor, error) {
	kind := *f.kind
	if kind == "" {
		kind = "rules"
		if *f.url != "" {
			kind = "openai"
		}
	}
	switch kind {
	case "rules":
		return &configuredExtractor{Extractor: rules.Extractor{}}, nil
	case "openai":
	default:
		return nil, fmt.Errorf("--extractor: want rules or openai, not %q", kind)
	}
	if *f.url == "" {
		return nil, errors.New("--extractor openai: set --ai-url, the base URL of an OpenAI-compatible server")
	}
	if strings.TrimSpace(*f.model) == "" {
		return nil, errors.New("--extractor openai: set --ai-model, the model to ask (e.g. gpt-4o-mini, llama3.1)")
	}
	perDay, err := strconv.Atoi(*f.budget)
	if err != nil || perDay < 0 {
		return nil, fmt.Errorf("--ai-daily-budget: want a number of calls ≥ 0, not %q", *f.budget)
	}
	timeout, err := time.ParseDuration(*f.timeout)
	if err != nil || timeout <= 0 {
		return nil, fmt.Errorf("--ai-timeout: want a positive duration such as 12s, not %q", *f.timeout)
	}
	key := strings.TrimSpace(getenv(aiKeyEnv))
	if u, err := url.Parse(*f.url); err == nil && u.Scheme == "http" && key != "" && !loopback(u.Hostname()) {
		logger.Warn("--ai-url is plain http: " + aiKeyEnv + " crosses the network unencrypted")
	}
	c := &configuredExtractor{}
	cfg := openai.Config{URL: *f.url, Model: *f.model, APIKey: key, Timeout: timeout, Logger: logger}
	if perDay > 0 {
		c.budget = &lateBudget{perDay: perDay}
		cfg.Budget = c.budget
	}
	x, err := openai.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("--ai-url: %w", err)
	}
	c.Extractor = x
	return c, nil
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// lateBudget is a store.AIBudget whose database is set once it is open.
type lateBudget struct {
	perDay int
	db     atomic.Pointer[store.DB]
}

func (b *lateBudget) Take(ctx context.Context, brandID int64) (bool, error) {
	db := b.db.Load()
	if db == nil {
		return false, errors.New("the AI call budget has no database")
	}
	return store.AIBudget{DB: db, PerDay: b.perDay}.Take(ctx, brandID)
}
