package openai_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/extract/openai"
)

const apiKey = "sk-test-0123456789abcdefSECRET"

var now = time.Date(2026, 5, 14, 15, 4, 0, 0, time.UTC)

// fields is a brand's auto-collected fields, one of each D6 type (D20).
func fields() []extract.Field {
	return []extract.Field{
		{Key: "vip", Name: "VIP", Type: extract.Boolean, Prompt: "Whether the contact wants to join the VIP club"},
		{Key: "age", Name: "Age", Type: extract.Integer, Prompt: "The contact's age in years"},
		{Key: "budget", Name: "Budget", Type: extract.Float, Prompt: "Monthly budget in dollars"},
		{Key: "birthday", Name: "Birthday", Type: extract.Date, Prompt: "The contact's date of birth"},
		{Key: "nickname", Name: "Nickname", Type: extract.String},
		{Key: "shirt_size", Name: "Shirt Size", Type: extract.String, Enum: []string{"S", "M", "L", "XL"}},
		{Key: "favorite_colors", Name: "Favorite Colors", Type: extract.List, Subtype: extract.String, Enum: []string{"Red", "Blue", "Green"}},
		{Key: "lucky_numbers", Name: "Lucky Numbers", Type: extract.List, Subtype: extract.Integer},
		{Key: "kids", Name: "Kids", Type: extract.Integer, Enum: []string{"0", "1", "2", "3"}},
	}
}

// request is an extraction after the contact answered the brand's question.
func request() extract.Request {
	return extract.Request{
		BrandID: 987654,
		Fields:  fields(),
		Conversation: []extract.Message{
			{Inbound: false, Body: "What's your shirt size?", At: now.Add(-2 * time.Minute)},
			{Inbound: true, Body: "I'm an M, and I'm 34", At: now.Add(-time.Minute)},
		},
		Now: now,
	}
}

// reply is one answer of the fake server.
type reply struct {
	status  int
	header  map[string]string
	body    string // the raw body; when empty, a chat completion with content
	content string
	hang    bool // answer nothing until the client gives up
	drop    bool // close the connection without an answer
}

// completion is a chat completion whose message content is content.
func completion(content string) string {
	b, _ := json.Marshal(map[string]any{
		"id": "chatcmpl-1", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
			"message": map[string]any{"role": "assistant", "content": content}}},
	})
	return string(b)
}

type recorded struct {
	path, auth, contentType string
	body                    []byte
}

// fake is an OpenAI-compatible server that answers with replies in turn
// (the last one again once they run out) and records the requests.
type fake struct {
	mu      sync.Mutex
	replies []reply
	reqs    []recorded
	srv     *httptest.Server
}

func newFake(t *testing.T, replies ...reply) *fake {
	t.Helper()
	f := &fake{replies: replies}
	done := make(chan struct{})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, recorded{r.URL.Path, r.Header.Get("Authorization"), r.Header.Get("Content-Type"), body})
		rep := f.replies[min(len(f.reqs), len(f.replies))-1]
		f.mu.Unlock()
		switch {
		case rep.hang:
			select {
			case <-r.Context().Done():
			case <-done:
			}
			return
		case rep.drop:
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close()
			}
			return
		}
		for k, v := range rep.header {
			w.Header().Set(k, v)
		}
		w.Header().Set("Content-Type", "application/json")
		if rep.status != 0 {
			w.WriteHeader(rep.status)
		}
		if rep.body != "" {
			io.WriteString(w, rep.body)
		} else {
			io.WriteString(w, completion(rep.content))
		}
	}))
	t.Cleanup(f.srv.Close)
	t.Cleanup(func() { close(done) }) // runs first: hanging handlers return
	return f
}

func (f *fake) requests() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]recorded(nil), f.reqs...)
}

// rig is an extractor on a fake server, with its log and its waits.
type rig struct {
	x     *openai.Extractor
	f     *fake
	log   *bytes.Buffer
	mu    sync.Mutex
	waits []time.Duration
}

func newRig(t *testing.T, cfg openai.Config, replies ...reply) *rig {
	t.Helper()
	rg := &rig{f: newFake(t, replies...), log: &bytes.Buffer{}}
	cfg.URL = rg.f.srv.URL
	if cfg.Model == "" {
		cfg.Model = "gpt-4o-mini"
	}
	cfg.Logger = slog.New(slog.NewTextHandler(&lockedWriter{w: rg.log}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	x, err := openai.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	openai.SetSleep(x, func(ctx context.Context, d time.Duration) error {
		rg.mu.Lock()
		rg.waits = append(rg.waits, d)
		rg.mu.Unlock()
		return ctx.Err()
	})
	rg.x = x
	return rg
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func valuesMap(t *testing.T, vs []extract.Value, trigger int) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, v := range vs {
		if !json.Valid(v.Value) {
			t.Fatalf("%s: invalid JSON %s", v.Key, v.Value)
		}
		if v.From != trigger {
			t.Errorf("%s: From = %d, want %d (the last inbound message)", v.Key, v.From, trigger)
		}
		if _, dup := got[v.Key]; dup {
			t.Errorf("%s: two values", v.Key)
		}
		got[v.Key] = string(v.Value)
	}
	return got
}

// TestAnswers: what the model answers is checked against D6 before it is
// returned; whatever is invalid is dropped, never returned (D20, D6).
func TestAnswers(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		content string
		want    map[string]string
	}{
		{"good answer", `{"vip":true,"age":34,"budget":12.5,"birthday":"1990-03-03","nickname":"  Annie ",` +
			`"shirt_size":"M","favorite_colors":["Red","Blue","Red"],"lucky_numbers":[7,13],"kids":2}`,
			map[string]string{"vip": `"true"`, "age": `34`, "budget": `12.5`, "birthday": `"03/03/1990"`,
				"nickname": `"Annie"`, "shirt_size": `"M"`, "favorite_colors": `["Red","Blue"]`,
				"lucky_numbers": `[7,13]`, "kids": `2`}},
		{"nulls are no answer", `{"vip":null,"age":null,"budget":null,"birthday":null,"nickname":null,` +
			`"shirt_size":null,"favorite_colors":null,"lucky_numbers":null,"kids":null}`, map[string]string{}},
		{"empty string and empty list are no answer", `{"nickname":"","favorite_colors":[]}`, map[string]string{}},
		{"false is stored as the string false", `{"vip":false}`, map[string]string{"vip": `"false"`}},
		{"whole float for INTEGER", `{"age":34.0,"kids":2.0}`, map[string]string{"age": `34`, "kids": `2`}},
		{"bad JSON", `{"age": 34, "shirt_size": "M"`, map[string]string{}},
		{"JSON in a code fence", "```json\n{\"age\": 34}\n```", map[string]string{}},
		{"not an object", `[{"age":34}]`, map[string]string{}},
		{"a bare string", `"M"`, map[string]string{}},
		{"empty content", ``, map[string]string{}},
		{"wrong types", `{"vip":"yes","age":"34","budget":"12.50","birthday":19900303,"nickname":5,` +
			`"shirt_size":["M"],"favorite_colors":"Red","lucky_numbers":["7"],"kids":{"n":2}}`, map[string]string{}},
		{"wrong types beside a good value", `{"vip":1,"age":34}`, map[string]string{"age": `34`}},
		{"fraction for INTEGER", `{"age":34.5}`, map[string]string{}},
		{"number out of range", `{"budget":1e999,"age":1e300}`, map[string]string{}},
		{"unknown keys", `{"age":34,"phone_number":"+14155552671","first_name":"Ann","loyalty_tier":"Gold"}`,
			map[string]string{"age": `34`}},
		{"enum value not allowed", `{"shirt_size":"XXL","kids":7}`, map[string]string{}},
		{"enum value in another case is written as the enum spells it", `{"shirt_size":"xl"}`,
			map[string]string{"shirt_size": `"XL"`}},
		{"a list with one value not allowed is dropped whole", `{"favorite_colors":["Red","Purple"]}`, map[string]string{}},
		{"a list with a null item is dropped", `{"favorite_colors":["Red",null]}`, map[string]string{}},
		{"a list item of the wrong type", `{"lucky_numbers":[7,"13"]}`, map[string]string{}},
		{"date as MM/DD/YYYY", `{"birthday":"03/03/1990"}`, map[string]string{}},
		{"date that does not exist", `{"birthday":"1990-02-30"}`, map[string]string{}},
		{"date with a time", `{"birthday":"1990-03-03T00:00:00Z"}`, map[string]string{}},
		{"date without zero padding", `{"birthday":"1990-3-3"}`, map[string]string{}},
		{"date in year 0000", `{"birthday":"0000-01-01"}`, map[string]string{}}, // #31 item 9: years 0001–9999 only
		{"control characters", `{"nickname":"Ann\u0000ie"}`, map[string]string{}},
		{"too long", `{"nickname":"` + strings.Repeat("a", 501) + `"}`, map[string]string{}},
		{"unicode kept as is", `{"nickname":"Zoë <3 & co"}`, map[string]string{"nickname": `"Zoë <3 & co"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rg := newRig(t, openai.Config{APIKey: apiKey}, reply{content: tc.content})
			vs, err := rg.x.Extract(t.Context(), request())
			if err != nil {
				t.Fatal(err)
			}
			if got := valuesMap(t, vs, 1); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("values %v, want %v", got, tc.want)
			}
			// The order is the fields' order (the extract.Extractor contract).
			keys := make([]string, len(vs))
			for i, v := range vs {
				keys[i] = v.Key
			}
			if !sort.SliceIsSorted(keys, func(i, j int) bool { return fieldIndex(keys[i]) < fieldIndex(keys[j]) }) {
				t.Errorf("values in order %v, want the fields' order", keys)
			}
			if strings.Contains(rg.log.String(), "Purple") || strings.Contains(rg.log.String(), "+14155552671") {
				t.Errorf("the log holds a value: %s", rg.log)
			}
		})
	}
}

func fieldIndex(key string) int {
	for i, f := range fields() {
		if f.Key == key {
			return i
		}
	}
	return -1
}

// TestNotAChatCompletion: a 200 that is not a chat completion (a proxy's
// page, a wrong --ai-url) is an error, not "no values"; a refusal is no values.
func TestNotAChatCompletion(t *testing.T) {
	t.Parallel()
	rg := newRig(t, openai.Config{}, reply{body: "<html>Welcome to nginx</html>"})
	if _, err := rg.x.Extract(t.Context(), request()); err == nil || !strings.Contains(err.Error(), "not a chat completion") {
		t.Errorf("err = %v, want not a chat completion", err)
	}
	if n := len(rg.f.requests()); n != 1 {
		t.Errorf("%d requests, want 1 (not tried again)", n)
	}
	rg = newRig(t, openai.Config{}, reply{body: `{"choices":[{"message":{"role":"assistant","content":null,"refusal":"I can't help with that."}}]}`})
	vs, err := rg.x.Extract(t.Context(), request())
	if err != nil || len(vs) != 0 {
		t.Errorf("refusal: %v, %v; want no values, no error", vs, err)
	}
}

// TestRetries: 429, 5xx, network errors and slow answers are tried again
// after a backoff (or the server's Retry-After); other 4xx are not (D20).
func TestRetries(t *testing.T) {
	t.Parallel()
	ok := reply{content: `{"age":34}`}
	for _, tc := range []struct {
		name      string
		cfg       openai.Config
		replies   []reply
		requests  int
		wantErr   string
		waits     []time.Duration // exact waits; nil: check backoff bounds
		minWaits  []time.Duration
		maxWaits  []time.Duration
		wantValue bool
		deadline  time.Duration // the caller's context's, when set
	}{
		{name: "500 then 200", replies: []reply{{status: 500, body: `{"error":{"message":"boom"}}`}, ok},
			requests: 2, wantValue: true, minWaits: []time.Duration{500 * time.Millisecond}, maxWaits: []time.Duration{time.Second}},
		{name: "502, 503 then 200", replies: []reply{{status: 502, body: "bad gateway"}, {status: 503, body: "busy"}, ok},
			requests: 3, wantValue: true,
			minWaits: []time.Duration{500 * time.Millisecond, time.Second}, maxWaits: []time.Duration{time.Second, 2 * time.Second}},
		{name: "429 with Retry-After in seconds", replies: []reply{{status: 429, header: map[string]string{"Retry-After": "7"}, body: `{"error":{}}`}, ok},
			requests: 2, wantValue: true, waits: []time.Duration{7 * time.Second}},
		{name: "429 with Retry-After as a date", replies: []reply{{status: 429, header: map[string]string{"Retry-After": time.Now().Add(time.Hour).UTC().Format(http.TimeFormat)}, body: `{}`}, ok},
			requests: 1, wantErr: "429"},
		{name: "429 asking for longer than MaxWait", replies: []reply{{status: 429, header: map[string]string{"Retry-After": "3600"}, body: `{}`}, ok},
			requests: 1, wantErr: "asks to wait 1h0m0s"},
		{name: "429 without Retry-After", replies: []reply{{status: 429, body: `{}`}, ok},
			requests: 2, wantValue: true, minWaits: []time.Duration{500 * time.Millisecond}, maxWaits: []time.Duration{time.Second}},
		{name: "400 is not tried again", replies: []reply{{status: 400, body: `{"error":{"message":"Invalid schema for response_format"}}`}, ok},
			requests: 1, wantErr: "400 Bad Request: {\"error\":{\"message\":\"Invalid schema", waits: []time.Duration{}},
		{name: "404 no such model", replies: []reply{{status: 404, body: `{"error":"model not found"}`}, ok},
			requests: 1, wantErr: "404", waits: []time.Duration{}},
		{name: "500 every time: gives up after 3 attempts", replies: []reply{{status: 500, body: "down"}},
			requests: 3, wantErr: "500 Internal Server Error: down",
			minWaits: []time.Duration{500 * time.Millisecond, time.Second}, maxWaits: []time.Duration{time.Second, 2 * time.Second}},
		{name: "backoff is capped by MaxWait", cfg: openai.Config{Attempts: 4, MaxWait: 1500 * time.Millisecond}, replies: []reply{{status: 500, body: "down"}},
			requests: 4, wantErr: "500",
			minWaits: []time.Duration{500 * time.Millisecond, 750 * time.Millisecond, 750 * time.Millisecond},
			maxWaits: []time.Duration{time.Second, 1500 * time.Millisecond, 1500 * time.Millisecond}},
		{name: "no retry past the caller's deadline", deadline: 5 * time.Second,
			replies:  []reply{{status: 429, header: map[string]string{"Retry-After": "7"}, body: `{}`}, ok},
			requests: 1, wantErr: "no time left to try again", waits: []time.Duration{}},
		{name: "connection dropped then 200", replies: []reply{{drop: true}, ok}, requests: 2, wantValue: true,
			minWaits: []time.Duration{500 * time.Millisecond}, maxWaits: []time.Duration{time.Second}},
		{name: "slow server: the attempt times out, the retry succeeds", cfg: openai.Config{Timeout: time.Second},
			replies: []reply{{hang: true}, ok}, requests: 2, wantValue: true,
			minWaits: []time.Duration{500 * time.Millisecond}, maxWaits: []time.Duration{time.Second}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tc.cfg
			cfg.APIKey = apiKey
			if cfg.Backoff == 0 {
				cfg.Backoff = time.Second
			}
			rg := newRig(t, cfg, tc.replies...)
			ctx := t.Context()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			vs, err := rg.x.Extract(ctx, request())
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("err = %v, want one with %q", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := valuesMap(t, vs, 1); tc.wantValue && got["age"] != "34" {
				t.Errorf("values %v, want age 34", got)
			}
			if n := len(rg.f.requests()); n != tc.requests {
				t.Errorf("%d requests, want %d", n, tc.requests)
			}
			rg.mu.Lock()
			waits := rg.waits
			rg.mu.Unlock()
			if tc.waits != nil {
				if len(waits) != len(tc.waits) || len(waits) > 0 && !reflect.DeepEqual(waits, tc.waits) {
					t.Errorf("waits %v, want %v", waits, tc.waits)
				}
			}
			if tc.minWaits != nil {
				if len(waits) != len(tc.minWaits) {
					t.Fatalf("waits %v, want %d", waits, len(tc.minWaits))
				}
				for i, w := range waits {
					if w < tc.minWaits[i] || w > tc.maxWaits[i] {
						t.Errorf("wait %d = %v, want within [%v, %v] (exponential backoff with jitter)", i+1, w, tc.minWaits[i], tc.maxWaits[i])
					}
				}
			}
			for _, r := range rg.f.requests() {
				if r.auth != "Bearer "+apiKey {
					t.Errorf("Authorization %q, want the key as Bearer", r.auth)
				}
			}
			if err != nil && strings.Contains(err.Error(), apiKey) || strings.Contains(rg.log.String(), apiKey) {
				t.Errorf("the API key is in the error or the log")
			}
		})
	}
}

// TestCancel: a cancelled context ends the extraction at once, without
// more attempts.
func TestCancel(t *testing.T) {
	t.Parallel()
	rg := newRig(t, openai.Config{}, reply{status: 500, body: "down"})
	ctx, cancel := context.WithCancel(t.Context())
	openai.SetSleep(rg.x, func(context.Context, time.Duration) error { cancel(); return context.Canceled })
	if _, err := rg.x.Extract(ctx, request()); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	if n := len(rg.f.requests()); n != 1 {
		t.Errorf("%d requests, want 1", n)
	}
}

// TestKeyNeverLogged: the key goes as a Bearer token and nowhere else, even
// when the server echoes it in an error (D20: key from PARLEY_AI_API_KEY).
func TestKeyNeverLogged(t *testing.T) {
	t.Parallel()
	echo := `{"error":{"message":"Incorrect API key provided: ` + apiKey + `","type":"invalid_request_error"}}`
	for _, rep := range []reply{{status: 401, body: echo}, {status: 500, body: echo}} {
		rg := newRig(t, openai.Config{APIKey: apiKey, Attempts: 2}, rep)
		_, err := rg.x.Extract(t.Context(), request())
		if err == nil {
			t.Fatal("no error")
		}
		if strings.Contains(err.Error(), apiKey) {
			t.Errorf("the error holds the key: %v", err)
		}
		if !strings.Contains(err.Error(), "Incorrect API key provided: [api key]") {
			t.Errorf("err = %v, want the server's reason with the key taken out", err)
		}
		if strings.Contains(rg.log.String(), apiKey) {
			t.Errorf("the log holds the key: %s", rg.log)
		}
		for _, r := range rg.f.requests() {
			if bytes.Contains(r.body, []byte(apiKey)) {
				t.Error("the request body holds the key")
			}
		}
	}
	// No key: no Authorization header (local servers).
	rg := newRig(t, openai.Config{}, reply{content: `{}`})
	if _, err := rg.x.Extract(t.Context(), request()); err != nil {
		t.Fatal(err)
	}
	if r := rg.f.requests()[0]; r.auth != "" {
		t.Errorf("Authorization %q without a key, want none", r.auth)
	}
}

type budget struct {
	mu    sync.Mutex
	left  int
	err   error
	taken []int64
}

func (b *budget) Take(_ context.Context, brandID int64) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.taken = append(b.taken, brandID)
	if b.err != nil {
		return false, b.err
	}
	if b.left == 0 {
		return false, nil
	}
	b.left--
	return true, nil
}

// TestBudget: each extraction takes one call of the brand's daily budget
// before it calls, retries included; over budget, no request reaches the
// server and the error is extract.ErrOverBudget (issue #19).
func TestBudget(t *testing.T) {
	t.Parallel()
	b := &budget{left: 1}
	rg := newRig(t, openai.Config{Budget: b}, reply{status: 503, body: "busy"}, reply{content: `{"age":34}`})
	if vs, err := rg.x.Extract(t.Context(), request()); err != nil || len(vs) != 1 {
		t.Fatalf("first extraction: %v, %v", vs, err)
	}
	if len(b.taken) != 1 || b.taken[0] != 987654 {
		t.Errorf("budget taken for %v, want once for brand 987654 (a retry is the same call)", b.taken)
	}
	_, err := rg.x.Extract(t.Context(), request())
	if !errors.Is(err, extract.ErrOverBudget) {
		t.Errorf("over budget: err = %v, want extract.ErrOverBudget", err)
	}
	if n := len(rg.f.requests()); n != 2 {
		t.Errorf("%d requests, want 2 (none over budget)", n)
	}

	// A budget that cannot be read: an error, no request, not ErrOverBudget.
	b = &budget{err: errors.New("database is down")}
	rg = newRig(t, openai.Config{Budget: b}, reply{content: `{"age":34}`})
	if _, err := rg.x.Extract(t.Context(), request()); err == nil || errors.Is(err, extract.ErrOverBudget) {
		t.Errorf("err = %v, want the budget's error", err)
	}
	if n := len(rg.f.requests()); n != 0 {
		t.Errorf("%d requests, want none", n)
	}

	// Nothing to read: no call, no budget spent.
	b = &budget{left: 5}
	rg = newRig(t, openai.Config{Budget: b}, reply{content: `{"age":34}`})
	for _, r := range []extract.Request{
		{BrandID: 1, Fields: fields(), Conversation: []extract.Message{{Body: "What's your age?"}}},
		{BrandID: 1, Fields: fields(), Conversation: []extract.Message{{Inbound: true, Body: "  "}}},
		{BrandID: 1, Conversation: []extract.Message{{Inbound: true, Body: "34"}}},
	} {
		if vs, err := rg.x.Extract(t.Context(), r); err != nil || len(vs) != 0 {
			t.Errorf("%+v: %v, %v", r, vs, err)
		}
	}
	if len(b.taken) != 0 || len(rg.f.requests()) != 0 {
		t.Errorf("budget taken %v, %d requests; want none", b.taken, len(rg.f.requests()))
	}
}
