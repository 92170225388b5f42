package httpapi_test

import (
	"context"
	"encoding/json"
	"regexp"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/extract/rules"
)

// Auto-collected custom data (D20, #19): an inbound text that is not a
// keyword queues a job that fills the contact's is_auto_collected fields.

// exSizeField is D20's example: Size, enum S/M/L, auto-collected.
func exSizeField(t *testing.T, e *apitest.Env, brandID int64) *parley.CustomField {
	t.Helper()
	return e.MustCreateField(t, &parley.CustomField{BrandID: brandID, FieldName: "Size", CustomDataType: parley.CustomString,
		AvailableEnumValues: []string{"S", "M", "L"}, IsAutoCollected: true})
}

// exJobs counts extraction jobs, all of them or in one state.
func exJobs(t *testing.T, e *apitest.Env, state string) int {
	t.Helper()
	where := "river_job WHERE kind = 'extract_custom_data'"
	if state != "" {
		where += " AND state = '" + state + "'"
	}
	return e.Count(t, where)
}

// exWaitJobs waits until n extraction jobs have completed, failing after 15 s.
func exWaitJobs(t *testing.T, e *apitest.Env, n int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for exJobs(t, e, "completed") < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d extraction jobs completed after 15 s, want %d (jobs: %d)", exJobs(t, e, "completed"), n, exJobs(t, e, ""))
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// exCustomData returns a user's custom_data as text ("null" when unset).
func exCustomData(t *testing.T, e *apitest.Env, id int64) string {
	t.Helper()
	u, err := e.A.GetUser(e.Ctx, id)
	if err != nil {
		t.Fatalf("GET /users/%d: %v", id, err)
	}
	if len(u.CustomData) == 0 {
		return "null"
	}
	return string(u.CustomData)
}

// exHistory returns a user's history of one custom data key.
func exHistory(t *testing.T, e *apitest.Env, id int64, key string) []*parley.HistoryEntry {
	t.Helper()
	h, _, err := e.A.UserHistory(e.Ctx, id, parley.HistoryFilter{Field: parley.HistoryFieldCustomData + key})
	if err != nil {
		t.Fatalf("history of %d: %v", id, err)
	}
	return h
}

// exMetric reads one sample of /metrics (0 when absent).
func exMetric(t *testing.T, e *apitest.Env, series string) float64 {
	t.Helper()
	m := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(series) + ` (\S+)$`).FindStringSubmatch(scrape(t, e))
	if m == nil {
		return 0
	}
	v, _ := strconv.ParseFloat(m[1], 64)
	return v
}

// TestExtractionEndToEnd is D20's acceptance case on the rules extractor:
// "I'm a size M" through the simulator (D12) gives custom_data size M, a
// history entry with source extraction and the inbound message's id (D18),
// and a user.updated event (D11), well within D20's 10 s.
func TestExtractionEndToEnd(t *testing.T) {
	t.Parallel()
	e := whStarted(t)
	rc := whNewReceiver(t, nil)
	whCreate(t, e.A, rc.URL(), parley.EventUserUpdated)
	exSizeField(t, e, e.BrandA.ID)
	writtenBefore := exMetric(t, e, "parley_extraction_values_written_total")

	sent := time.Now()
	m := simMessage(t, simInbound(t, e, "+14155552671", "I'm a size M"))
	for exCustomData(t, e, m.UserID) == "null" && time.Since(sent) < 15*time.Second {
		time.Sleep(5 * time.Millisecond)
	}
	// D20 wants 10 s; logged, not asserted (no timing assertions in tests).
	t.Logf("value written %v after the inbound POST", time.Since(sent).Round(time.Millisecond))
	ev := rc.event(t, parley.EventUserUpdated, "id", m.UserID)
	var data struct {
		CustomData json.RawMessage `json:"custom_data"`
	}
	json.Unmarshal(ev.Data, &data)
	if string(data.CustomData) != `{"size":"M"}` {
		t.Errorf("user.updated custom_data = %s, want {\"size\":\"M\"} (D20: the same event as an API update)", data.CustomData)
	}
	if got := exCustomData(t, e, m.UserID); got != `{"size":"M"}` {
		t.Errorf("custom_data = %s, want {\"size\":\"M\"} (D20)", got)
	}
	h := exHistory(t, e, m.UserID, "size")
	if len(h) != 1 {
		t.Fatalf("history of size = %d entries, want 1 (D18)", len(h))
	}
	if h[0].Source != parley.SourceExtraction || h[0].MessageID == nil || *h[0].MessageID != m.ID ||
		string(h[0].NewValue) != `"M"` || (h[0].OldValue != nil && string(h[0].OldValue) != "null") {
		b, _ := json.Marshal(h[0])
		t.Errorf("history entry %s, want source extraction, message_id %d, null → \"M\" (D18, D20)", b, m.ID)
	}
	if got := exMetric(t, e, "parley_extraction_values_written_total"); got != writtenBefore+1 {
		t.Errorf("parley_extraction_values_written_total = %v, want %v", got, writtenBefore+1)
	}
	if got := exMetric(t, e, `parley_extractions_total{outcome="ok"}`); got < 1 {
		t.Errorf(`parley_extractions_total{outcome="ok"} = %v, want ≥ 1`, got)
	}
	if got := exMetric(t, e, "parley_extraction_seconds_count"); got < 1 {
		t.Errorf("parley_extraction_seconds_count = %v, want ≥ 1", got)
	}

	t.Run("SameValueAgainWritesNothing", func(t *testing.T) {
		n := exJobs(t, e, "completed")
		simMessage(t, simInbound(t, e, "+14155552671", "size M, like I said"))
		exWaitJobs(t, e, n+1)
		if h := exHistory(t, e, m.UserID, "size"); len(h) != 1 {
			t.Errorf("history of size = %d entries after the same value again, want 1", len(h))
		}
	})
}

// TestExtractionQueuing: only a non-keyword inbound text to a brand with an
// auto-collected field queues an extraction, in the message's own
// transaction (D20, D12). The workers do not run here, so the jobs stay.
func TestExtractionQueuing(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	exSizeField(t, e, e.BrandA.ID)
	// Brand B has fields, none auto-collected.
	bSize := e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandB.ID, FieldName: "Size", CustomDataType: parley.CustomString,
		AvailableEnumValues: []string{"S", "M", "L"}})
	const from = "+14155552671"

	m := simMessage(t, simInbound(t, e, from, "I'm a size M"))
	if got := exJobs(t, e, ""); got != 1 {
		t.Fatalf("%d extraction jobs after a text, want 1 (D20)", got)
	}
	var args string
	e.App.DB.Writer().QueryRowContext(e.Ctx, "SELECT args FROM river_job WHERE kind = 'extract_custom_data'").Scan(&args)
	var a struct {
		BrandID    int64  `json:"brand_id"`
		UserID     int64  `json:"user_id"`
		MessageID  int64  `json:"message_id"`
		ProviderID string `json:"provider_id"`
	}
	json.Unmarshal([]byte(args), &a)
	// The job names the message by the provider's id: it is queued before
	// the message's insert (see service.receive).
	var named int64
	e.App.DB.Writer().QueryRowContext(e.Ctx, "SELECT id FROM messages WHERE provider_id = '"+a.ProviderID+"'").Scan(&named)
	if a.BrandID != e.BrandA.ID || a.UserID != m.UserID || (a.MessageID != m.ID && named != m.ID) {
		t.Errorf("job args %s, want brand %d, user %d, message %d", args, e.BrandA.ID, m.UserID, m.ID)
	}
	for _, kw := range []string{"STOP", " start ", "help", "YES", "Unsubscribe"} {
		simMessage(t, simInbound(t, e, from, kw))
		if got := exJobs(t, e, ""); got != 1 {
			t.Errorf("%d extraction jobs after the keyword %q, want still 1 (D20: non-keyword texts only)", got, kw)
		}
	}
	simMessage(t, simInbound(t, e, from, "STOP sending me sizes, I'm L"))
	if got := exJobs(t, e, ""); got != 2 {
		t.Errorf("%d extraction jobs after a text that only starts with STOP, want 2", got)
	}

	// Brand B: no auto-collected field, no job.
	if _, err := e.B.SimulateInbound(e.Ctx, parley.SimulatedInbound{From: parley.Some(from), Body: parley.Some("I'm a size M")}); err != nil {
		t.Fatalf("brand B inbound: %v", err)
	}
	if got := exJobs(t, e, ""); got != 2 {
		t.Errorf("%d extraction jobs after a text to a brand without auto-collected fields, want 2", got)
	}
	// Turned on, the field's next text queues one at once: the node does
	// not go on with what it remembered of the brand's fields.
	if _, err := e.App.Service.UpdateCustomField(e.Ctx, e.BrandB.ID, bSize.ID, parley.CustomFieldUpdate{IsAutoCollected: parley.Some(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.B.SimulateInbound(e.Ctx, parley.SimulatedInbound{From: parley.Some(from), Body: parley.Some("I'm a size L")}); err != nil {
		t.Fatal(err)
	}
	if got := exJobs(t, e, ""); got != 3 {
		t.Errorf("%d extraction jobs after brand B's field became auto-collected, want 3", got)
	}
}

// TestExtractionOptedOut: a contact whose messaging_consent is false is
// left alone unless the brand's extract_when_opted_out setting allows it
// (D20, D17 settings).
func TestExtractionOptedOut(t *testing.T) {
	t.Parallel()
	e := whStarted(t, func(c *app.Config) { c.AdminToken = admTok })
	exSizeField(t, e, e.BrandA.ID)
	const from = "+14155552671"
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some(from),
		UserFields: parley.UserFields{MessagingConsent: parley.Some(false)}})
	skipped := exMetric(t, e, `parley_extractions_total{outcome="skipped_opted_out"}`)

	simMessage(t, simInbound(t, e, from, "I'm a size M"))
	exWaitJobs(t, e, 1)
	if got := exCustomData(t, e, u.ID); got != "null" {
		t.Errorf("custom_data of an opted-out contact = %s, want null (D20: not processed by default)", got)
	}
	if h := exHistory(t, e, u.ID, "size"); len(h) != 0 {
		t.Errorf("history of an opted-out contact: %d entries, want none", len(h))
	}
	if got := exMetric(t, e, `parley_extractions_total{outcome="skipped_opted_out"}`); got != skipped+1 {
		t.Errorf("skipped_opted_out = %v, want %v", got, skipped+1)
	}

	path := "/brands/" + itoa(e.BrandA.ID) + "/settings"
	if st, body := admDo(t, e, admTok, "POST", path, map[string]any{"extract_when_opted_out": true}); st != 200 || body["extract_when_opted_out"] != true {
		t.Fatalf("POST settings extract_when_opted_out: %d %v", st, body)
	}
	simMessage(t, simInbound(t, e, from, "I'm a size L"))
	exWaitJobs(t, e, 2)
	if got := exCustomData(t, e, u.ID); got != `{"size":"L"}` {
		t.Errorf("custom_data with extract_when_opted_out = %s, want {\"size\":\"L\"}", got)
	}
	if got, _ := e.A.GetUser(e.Ctx, u.ID); got.MessagingConsent == nil || *got.MessagingConsent {
		t.Error("the extraction changed the contact's consent")
	}
}

// gatedExtractor runs the rules extractor once the test lets it: the test
// can change the contact while an extraction is under way.
type gatedExtractor struct {
	entered chan struct{}
	gate    chan struct{}
}

func (g *gatedExtractor) Extract(ctx context.Context, r extract.Request) ([]extract.Value, error) {
	g.entered <- struct{}{}
	select {
	case <-g.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	return rules.Extractor{}.Extract(ctx, r)
}

// TestExtractionKeepsLaterValues: a value the API set after the message an
// extracted value came from is not overwritten (D20), and one set before
// it is.
func TestExtractionKeepsLaterValues(t *testing.T) {
	t.Parallel()
	g := &gatedExtractor{entered: make(chan struct{}), gate: make(chan struct{})}
	e := whStarted(t, func(c *app.Config) { c.Extractor = g })
	exSizeField(t, e, e.BrandA.ID)
	const from = "+14155552671"
	wait := func() {
		t.Helper()
		select {
		case <-g.entered:
		case <-time.After(15 * time.Second):
			t.Fatal("the extraction did not start within 15 s")
		}
	}
	setSize := func(id int64, v string) {
		t.Helper()
		if _, err := e.A.UpdateUser(e.Ctx, id, parley.UserUpdate{UserFields: parley.UserFields{
			CustomData: parley.Some(json.RawMessage(`{"size":"` + v + `"}`))}}); err != nil {
			t.Fatal(err)
		}
	}
	superseded := exMetric(t, e, `parley_extraction_values_refused_total{reason="superseded"}`)

	m := simMessage(t, simInbound(t, e, from, "I'm a size M"))
	wait()
	e.Advance(time.Second)
	setSize(m.UserID, "L") // after the message
	g.gate <- struct{}{}
	exWaitJobs(t, e, 1)
	if got := exCustomData(t, e, m.UserID); got != `{"size":"L"}` {
		t.Errorf("custom_data = %s, want the API's later {\"size\":\"L\"} kept (D20)", got)
	}
	for _, h := range exHistory(t, e, m.UserID, "size") {
		if h.Source == parley.SourceExtraction {
			t.Errorf("an extraction entry was written over a later API value: %+v", h)
		}
	}
	if got := exMetric(t, e, `parley_extraction_values_refused_total{reason="superseded"}`); got != superseded+1 {
		t.Errorf("refused superseded = %v, want %v", got, superseded+1)
	}

	// A newer text wins over the API's older value.
	e.Advance(time.Second)
	m2 := simMessage(t, simInbound(t, e, from, "sorry, my size is S now"))
	wait()
	g.gate <- struct{}{}
	exWaitJobs(t, e, 2)
	if got := exCustomData(t, e, m.UserID); got != `{"size":"S"}` {
		t.Errorf("custom_data = %s, want {\"size\":\"S\"} from the text after the API's change", got)
	}
	h := exHistory(t, e, m.UserID, "size")
	if last := h[len(h)-1]; last.Source != parley.SourceExtraction || last.MessageID == nil || *last.MessageID != m2.ID ||
		string(last.OldValue) != `"L"` {
		b, _ := json.Marshal(last)
		t.Errorf("last entry %s, want extraction from message %d, \"L\" → \"S\"", b, m2.ID)
	}
}

// fixedExtractor answers every request with the same values.
type fixedExtractor []extract.Value

func (f fixedExtractor) Extract(context.Context, extract.Request) ([]extract.Value, error) {
	return f, nil
}

// TestExtractionRefusesInvalidValues: whatever an extractor returns passes
// D6 again before it is written; every bad value is dropped and counted,
// and nothing is written (D20).
func TestExtractionRefusesInvalidValues(t *testing.T) {
	t.Parallel()
	bad := fixedExtractor{
		{Key: "size", Value: json.RawMessage(`"XL"`), From: 1},             // not in the enum
		{Key: "size", Value: json.RawMessage(`true`), From: 1},             // a JSON boolean
		{Key: "size", Value: json.RawMessage(`{"v":"M"}`), From: 1},        // an object
		{Key: "size", Value: json.RawMessage(`null`), From: 1},             // null
		{Key: "size", Value: json.RawMessage(`"M`), From: 1},               // not JSON
		{Key: "size", Value: json.RawMessage(`"M"`), From: 7},              // from no message
		{Key: "size", Value: json.RawMessage(`"M"`), From: -1},             // from no message
		{Key: "kids", Value: json.RawMessage(`2.5`), From: 1},              // INTEGER
		{Key: "birthday", Value: json.RawMessage(`"02/30/1990"`), From: 1}, // no such date
		{Key: "tier", Value: json.RawMessage(`"Gold"`), From: 1},           // not auto-collected
		{Key: "nickname", Value: json.RawMessage(`"Bob"`), From: 1},        // no such field
		{Key: "vip", Value: json.RawMessage(`"maybe"`), From: 1},           // BOOLEAN
		{Key: "tags", Value: json.RawMessage(`["red", 3]`), From: 1},       // LIST of STRING
		{Key: "tags", Value: json.RawMessage(`"red"`), From: 1},            // not a LIST
		{Key: "kids", Value: json.RawMessage(`"two"`), From: 1},            // INTEGER
		{Key: "birthday", Value: json.RawMessage(`"1990-3-3"`), From: 1},   // neither D6 form
		{Key: "vip", Value: json.RawMessage(`2`), From: 1},                 // BOOLEAN 1/0 only
		{Key: "kids", Value: json.RawMessage(`1e400`), From: 1},            // out of range
		{Key: "size", Value: json.RawMessage(`"m"`), From: 1},              // enums match exactly (D6)
		{Key: "tags", Value: json.RawMessage(`[{"a": 1}]`), From: 1},       // an object item
		{Key: "kids", Value: json.RawMessage(`"3"`), From: 1},              // a string for an INTEGER
		{Key: "vip", Value: json.RawMessage(`"true"`), From: 0},            // from the brand's own message
		{Key: "size", Value: nil, From: 1},                                 // nothing at all
		{Key: "kids", Value: json.RawMessage(`3 4`), From: 1},              // two values
		{Key: "birthday", Value: json.RawMessage(`"13/01/1990"`), From: 1}, // no such month
		{Key: "tier", Value: json.RawMessage(`"Silver"`), From: 1},         // not auto-collected
		{Key: "size", Value: json.RawMessage(`["M"]`), From: 1},            // a list for a STRING
		{Key: "kids", Value: json.RawMessage(`-`), From: 1},                // not a number
		{Key: "tags", Value: json.RawMessage(`["red", "blue"]`), From: 0},  // from the brand's own message
		{Key: "vip", Value: json.RawMessage(`"yes"`), From: 1},             // BOOLEAN is "true"/"false"
		{Key: "", Value: json.RawMessage(`"M"`), From: 1},                  // no key
		{Key: "size", Value: json.RawMessage(`"M\u0000"`), From: 1},        // a control character, not in the enum
		{Key: "birthday", Value: json.RawMessage(`19900303`), From: 1},     // a number for a DATE
	}
	e := whStarted(t, func(c *app.Config) { c.Extractor = bad })
	rc := whNewReceiver(t, nil)
	whCreate(t, e.A, rc.URL(), parley.EventUserUpdated)
	exSizeField(t, e, e.BrandA.ID)
	for _, f := range []*parley.CustomField{
		{FieldName: "Kids", CustomDataType: parley.CustomInteger, IsAutoCollected: true},
		{FieldName: "Birthday", CustomDataType: parley.CustomDate, IsAutoCollected: true},
		{FieldName: "VIP", CustomDataType: parley.CustomBoolean, IsAutoCollected: true},
		{FieldName: "Tags", CustomDataType: parley.CustomList, Subtype: parley.CustomString, IsAutoCollected: true},
		{FieldName: "Tier", CustomDataType: parley.CustomString, AvailableEnumValues: []string{"Gold", "Silver"}},
	} {
		f.BrandID = e.BrandA.ID
		e.MustCreateField(t, f)
	}
	const from = "+14155552671"
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some(from)})
	// The conversation: the brand's question (From 0), the contact's text (From 1).
	if _, err := e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some("Hi! What size are you?")}); err != nil {
		t.Fatal(err)
	}
	refused := exMetric(t, e, `parley_extraction_values_refused_total{reason="invalid"}`)
	simMessage(t, simInbound(t, e, from, "I'm a size M"))
	exWaitJobs(t, e, 1)

	if got := exCustomData(t, e, u.ID); got != "null" {
		t.Errorf("custom_data = %s, want null: every value was invalid (D6, D20)", got)
	}
	if n := e.Count(t, "user_history WHERE source = 'extraction'"); n != 0 {
		t.Errorf("%d extraction history entries, want 0", n)
	}
	if got := exMetric(t, e, `parley_extraction_values_refused_total{reason="invalid"}`); got != refused+float64(len(bad)) {
		t.Errorf("refused invalid = %v, want %v (one per bad value)", got, refused+float64(len(bad)))
	}
	for _, q := range rc.requests() {
		if q.Type == parley.EventUserUpdated {
			t.Errorf("user.updated sent though nothing was written: %s", q.Body)
		}
	}
}

// overBudgetExtractor refuses every call as over its brand's budget and
// records the brand each request named.
type overBudgetExtractor struct {
	mu     sync.Mutex
	brands []int64
}

func (o *overBudgetExtractor) Extract(_ context.Context, r extract.Request) ([]extract.Value, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.brands = append(o.brands, r.BrandID)
	return nil, extract.ErrOverBudget
}

// TestExtractionOverBudget: an extractor whose brand has spent its daily
// calls (the openai extractor's budget, D20) ends the job at once — no
// retry would succeed today — counted as skipped_over_budget; the request
// names the brand the budget is kept for.
func TestExtractionOverBudget(t *testing.T) {
	t.Parallel()
	x := &overBudgetExtractor{}
	e := whStarted(t, func(c *app.Config) { c.Extractor = x })
	exSizeField(t, e, e.BrandA.ID)
	const from = "+14155552671"
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some(from)})
	skipped := exMetric(t, e, `parley_extractions_total{outcome="skipped_over_budget"}`)
	simMessage(t, simInbound(t, e, from, "I'm a size M"))
	exWaitJobs(t, e, 1)

	if n := exJobs(t, e, ""); n != 1 {
		t.Errorf("%d extraction jobs, want 1 completed and no retry", n)
	}
	if got := exMetric(t, e, `parley_extractions_total{outcome="skipped_over_budget"}`); got != skipped+1 {
		t.Errorf("skipped_over_budget = %v, want %v", got, skipped+1)
	}
	if got := exCustomData(t, e, u.ID); got != "null" {
		t.Errorf("custom_data = %s, want null", got)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.brands) != 1 || x.brands[0] != e.BrandA.ID {
		t.Errorf("the extractor was asked for brands %v, want [%d] once", x.brands, e.BrandA.ID)
	}
}
