// Package openai is the extractor that asks a language model (D20, issue #19):
// any server that answers OpenAI's `POST /v1/chat/completions` with JSON-schema
// structured output — OpenAI itself, Ollama, vLLM, the llama.cpp server.
//
// One extraction is one call. Its request holds a system prompt (the task, the
// D20 flags of each field, today's date, Request.Known), the conversation's
// texts as JSON, and a strict JSON schema with one nullable property per field
// (see schema.go). Nothing else about the contact leaves the server: no phone
// number, no ids, no message times, no custom data but Request.Known, which
// the caller fills with the include_in_ai_prompt fields only.
//
// The answer is not trusted: a value of the wrong type, a key that is no field,
// an enum value not in the list, a date that is not a real YYYY-MM-DD day, text
// with control characters — each is dropped and logged (key and reason, never
// the value), and an answer that is not a JSON object gives no values at all.
// What is returned is already in the form D6 stores.
//
// Robustness: each attempt has its own timeout; 429, 5xx, network errors and
// timed-out attempts are tried again after an exponential backoff with jitter
// (or the server's Retry-After, when it sends one), other 4xx answers are not.
// Before the call the brand's daily budget is consulted (Budget); a brand over
// it gets extract.ErrOverBudget and no request is sent.
package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/parleyhq/parley/internal/extract"
)

// Budget is a per-brand allowance of calls. Take spends one call of the
// brand's allowance for today and reports whether there was one left; an
// error means the allowance could not be read (the extraction fails and may
// be tried again).
type Budget interface {
	Take(ctx context.Context, brandID int64) (ok bool, err error)
}

// Config configures an Extractor. URL and Model are required.
type Config struct {
	// URL is the server's base URL, e.g. https://api.openai.com or
	// http://127.0.0.1:11434 (Ollama); requests go to URL + /v1/chat/completions.
	// A URL that already ends in /v1 is taken as it is.
	URL string
	// Model names the model, as the server knows it ("gpt-4o-mini", "llama3.1").
	Model string
	// APIKey is sent as "Authorization: Bearer <key>"; empty sends no
	// Authorization header (local servers). It is never logged.
	APIKey string
	// Budget, when set, is consulted before each call.
	Budget Budget
	// Timeout bounds one attempt, the answer's body included; 0 means 12 s.
	// The defaults keep three attempts and their waits inside the 45 s
	// the extraction sweep gives one extraction.
	Timeout time.Duration
	// Attempts is how many times one extraction is tried, the first
	// included; 0 means 3.
	Attempts int
	// Backoff is the wait before the first retry; it doubles at each
	// further retry, and a random part of it (up to half) is taken off so
	// that retries of many jobs spread out. 0 means 1 s.
	Backoff time.Duration
	// MaxWait caps the wait between attempts. A server whose Retry-After asks
	// for longer ends the extraction with its error at once: the job that
	// called can run again later, a worker should not sleep for minutes. 0
	// means 10 s.
	MaxWait time.Duration
	// Client sends the requests; nil means a client of the extractor's own.
	Client *http.Client
	// Logger receives retries and dropped values; nil discards them.
	Logger *slog.Logger
}

// Extractor is the openai extractor; it is safe for concurrent use.
type Extractor struct {
	cfg      Config
	endpoint string
	client   *http.Client
	log      *slog.Logger
	// sleep waits between attempts; tests replace it to record the waits.
	sleep func(ctx context.Context, d time.Duration) error
	// now reads Retry-After dates.
	now func() time.Time
}

var _ extract.Extractor = (*Extractor)(nil)

// maxAnswer bounds the answer's body: a few fields' values fit many times over.
const maxAnswer = 1 << 20

// New returns an Extractor for cfg.
func New(cfg Config) (*Extractor, error) {
	endpoint, err := Endpoint(cfg.URL)
	if err != nil {
		return nil, err
	}
	if strings.TrimSpace(cfg.Model) == "" {
		return nil, errors.New("openai: no model named")
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 12 * time.Second
	}
	if cfg.Attempts <= 0 {
		cfg.Attempts = 3
	}
	if cfg.Backoff <= 0 {
		cfg.Backoff = time.Second
	}
	if cfg.MaxWait <= 0 {
		cfg.MaxWait = 10 * time.Second
	}
	x := &Extractor{cfg: cfg, endpoint: endpoint, client: cfg.Client, log: cfg.Logger, sleep: sleep, now: time.Now}
	if x.client == nil {
		// No overall timeout here: Timeout bounds each attempt through its
		// context. No redirects: a redirect would carry the key elsewhere.
		x.client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	if x.log == nil {
		x.log = slog.New(slog.DiscardHandler)
	}
	return x, nil
}

// Endpoint returns the chat completions URL of a server's base URL, or why
// the base URL is unusable.
func Endpoint(base string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(base))
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("openai: %q is not an http:// or https:// URL", base)
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("openai: the URL %q must not carry a query or fragment", u.Redacted())
	}
	p := strings.TrimSuffix(u.Path, "/")
	p = strings.TrimSuffix(p, "/v1")
	u.Path = p + "/v1/chat/completions"
	return u.String(), nil
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Extract implements extract.Extractor. A conversation without an inbound
// text, or a request without fields, gives no values and makes no call.
func (x *Extractor) Extract(ctx context.Context, r extract.Request) ([]extract.Value, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	trigger := -1
	for i := len(r.Conversation) - 1; i >= 0; i-- {
		if r.Conversation[i].Inbound {
			trigger = i
			break
		}
	}
	if trigger < 0 || len(r.Fields) == 0 || strings.TrimSpace(r.Conversation[trigger].Body) == "" {
		return nil, nil
	}
	if x.cfg.Budget != nil {
		ok, err := x.cfg.Budget.Take(ctx, r.BrandID)
		if err != nil {
			return nil, fmt.Errorf("openai: budget: %w", err)
		}
		if !ok {
			return nil, fmt.Errorf("openai: brand %d: %w", r.BrandID, extract.ErrOverBudget)
		}
	}
	body, err := json.Marshal(newChatRequest(x.cfg.Model, r, trigger))
	if err != nil {
		return nil, fmt.Errorf("openai: %w", err)
	}
	content, err := x.call(ctx, body)
	if err != nil {
		return nil, err
	}
	return x.values(r, content, trigger), nil
}

// call posts body, trying again as Config says, and returns the answer's
// message content ("" when the model refused).
func (x *Extractor) call(ctx context.Context, body []byte) (string, error) {
	for attempt := 1; ; attempt++ {
		content, retry, wait, err := x.attempt(ctx, body)
		if err == nil {
			return content, nil
		}
		if !retry || attempt >= x.cfg.Attempts || ctx.Err() != nil {
			return "", err
		}
		if wait > x.cfg.MaxWait {
			return "", fmt.Errorf("%w (the server asks to wait %s)", err, wait)
		}
		if wait <= 0 {
			wait = x.backoff(attempt)
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			// The caller's time (the job's timeout) ends before the wait
			// does: say why now rather than after.
			return "", fmt.Errorf("%w (no time left to try again)", err)
		}
		x.log.Warn("openai extractor: trying again", "attempt", attempt, "wait", wait, "error", err.Error())
		if err := x.sleep(ctx, wait); err != nil {
			return "", err
		}
	}
}

// backoff is the wait after failed attempt n (1, 2, …): Backoff doubled n-1
// times, capped by MaxWait, less a random part of up to half of it.
func (x *Extractor) backoff(n int) time.Duration {
	d := x.cfg.Backoff
	for i := 1; i < n && d < x.cfg.MaxWait; i++ {
		d *= 2
	}
	d = min(d, x.cfg.MaxWait)
	return d - rand.N(d/2+1)
}

// attempt makes one request. retry says whether another attempt may do
// better, wait is the server's Retry-After (0 when it sent none).
func (x *Extractor) attempt(ctx context.Context, body []byte) (content string, retry bool, wait time.Duration, err error) {
	actx, cancel := context.WithTimeout(ctx, x.cfg.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(actx, http.MethodPost, x.endpoint, bytes.NewReader(body))
	if err != nil {
		return "", false, 0, fmt.Errorf("openai: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if x.cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+x.cfg.APIKey)
	}
	resp, err := x.client.Do(req)
	if err == nil {
		var b []byte
		b, err = io.ReadAll(io.LimitReader(resp.Body, maxAnswer+1))
		resp.Body.Close()
		if err == nil {
			return x.answer(resp, b)
		}
	}
	if ctx.Err() != nil {
		return "", false, 0, ctx.Err()
	}
	// A network error or this attempt's timeout: the next may get through.
	return "", true, 0, fmt.Errorf("openai: %s", x.redact(err.Error()))
}

// answer reads one HTTP answer.
func (x *Extractor) answer(resp *http.Response, b []byte) (content string, retry bool, wait time.Duration, err error) {
	switch {
	case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
		return "", true, retryAfter(resp.Header.Get("Retry-After"), x.now()), x.statusErr(resp, b)
	case resp.StatusCode != http.StatusOK:
		// 400 (a schema the server does not take), 401, 404 (no such
		// model): the same request will fail the same way.
		return "", false, 0, x.statusErr(resp, b)
	case len(b) > maxAnswer:
		return "", false, 0, fmt.Errorf("openai: the answer is larger than %d bytes", maxAnswer)
	}
	var cc struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
				Refusal *string `json:"refusal"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &cc); err != nil || len(cc.Choices) == 0 {
		return "", false, 0, errors.New("openai: the answer is not a chat completion (is --ai-url an OpenAI-compatible server?)")
	}
	c := cc.Choices[0]
	if c.Message.Content == nil || c.Message.Refusal != nil && *c.Message.Refusal != "" {
		x.log.Warn("openai extractor: the model gave no content", "finish_reason", c.FinishReason)
		return "", false, 0, nil
	}
	return *c.Message.Content, false, 0, nil
}

// statusErr describes an HTTP error answer with the start of its body (the
// servers put their reason there), the API key taken out in case it is echoed.
func (x *Extractor) statusErr(resp *http.Response, b []byte) error {
	s := strings.Join(strings.Fields(string(b)), " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return fmt.Errorf("openai: %s: %s", resp.Status, x.redact(s))
}

// redact takes the API key out of s.
func (x *Extractor) redact(s string) string {
	if x.cfg.APIKey == "" {
		return s
	}
	return strings.ReplaceAll(s, x.cfg.APIKey, "[api key]")
}

// retryAfter reads a Retry-After header: seconds or an HTTP date; 0 when
// absent or unreadable.
func retryAfter(h string, now time.Time) time.Duration {
	h = strings.TrimSpace(h)
	if h == "" {
		return 0
	}
	if n, err := strconv.Atoi(h); err == nil {
		return time.Duration(max(n, 0)) * time.Second
	}
	if t, err := http.ParseTime(h); err == nil {
		return max(t.Sub(now), 0)
	}
	return 0
}
