package httpapi_test

import (
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/extract"
	"github.com/parleyhq/parley/internal/extract/rules"
	"github.com/parleyhq/parley/internal/service"
)

// Auto-collected custom data (D20, #19): a sweep over the inbound texts
// that are not keywords fills the contacts' is_auto_collected fields.

// exSizeField is D20's example: Size, enum S/M/L, auto-collected.
func exSizeField(t *testing.T, e *apitest.Env, brandID int64) *parley.CustomField {
	t.Helper()
	return e.MustCreateField(t, &parley.CustomField{BrandID: brandID, FieldName: "Size", CustomDataType: parley.CustomString,
		AvailableEnumValues: []string{"S", "M", "L"}, IsAutoCollected: true})
}

// exSwept reports whether the extraction sweep has passed the message.
func exSwept(t *testing.T, e *apitest.Env, messageID int64) bool {
	t.Helper()
	ok, err := e.App.DB.ExtractionSwept(e.Ctx, messageID)
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

// exSweep sweeps until the sweep has passed the message, failing after
// 15 s. It drives the sweep itself, whether or not the node's own sweeper
// runs beside it (their claims keep them apart); on PostgreSQL a text is
// swept once every transaction older than it has ended, which may take
// more than one sweep.
func exSweep(t *testing.T, e *apitest.Env, messageID int64) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for !exSwept(t, e, messageID) {
		if _, err := e.App.Service.SweepExtractions(e.Ctx); err != nil {
			t.Fatalf("sweep: %v", err)
		}
		if time.Now().After(deadline) {
			t.Fatalf("message %d not swept after 15 s", messageID)
		}
		time.Sleep(5 * time.Millisecond)
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
		exSweep(t, e, simMessage(t, simInbound(t, e, "+14155552671", "size M, like I said")).ID)
		if h := exHistory(t, e, m.UserID, "size"); len(h) != 1 {
			t.Errorf("history of size = %d entries after the same value again, want 1", len(h))
		}
	})
}

// countingExtractor runs the rules extractor and records, for each call,
// the brand and the contact's text it was asked about (the
// conversation's last inbound one).
type countingExtractor struct {
	mu    sync.Mutex
	texts []string
}

func (c *countingExtractor) Extract(ctx context.Context, r extract.Request) ([]extract.Value, error) {
	last := ""
	for _, m := range r.Conversation {
		if m.Inbound {
			last = m.Body
		}
	}
	c.mu.Lock()
	c.texts = append(c.texts, last)
	c.mu.Unlock()
	return rules.Extractor{}.Extract(ctx, r)
}

func (c *countingExtractor) calls() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.texts)
}

// noSweeper leaves the sweep to the test (Service.SweepExtractions).
func noSweeper(c *app.Config) { c.ExtractionSweep = -1 }

// TestExtractionSweepSkips: the sweep asks the extractor about inbound
// texts that are not keywords (D12), to brands with an auto-collected
// field, and passes the others without work: keywords, outbound messages,
// texts to other brands (D20, #19).
func TestExtractionSweepSkips(t *testing.T) {
	t.Parallel()
	x := &countingExtractor{}
	e := apitest.New(t, noSweeper, func(c *app.Config) { c.Extractor = x })
	exSizeField(t, e, e.BrandA.ID)
	// Brand B has fields, none auto-collected.
	bSize := e.MustCreateField(t, &parley.CustomField{BrandID: e.BrandB.ID, FieldName: "Size", CustomDataType: parley.CustomString,
		AvailableEnumValues: []string{"S", "M", "L"}})
	const from = "+14155552671"

	m := simMessage(t, simInbound(t, e, from, "I'm a size M"))
	exSweep(t, e, m.ID)
	if got := x.calls(); len(got) != 1 || got[0] != "I'm a size M" {
		t.Fatalf("extractor calls %q, want one for the text (D20)", got)
	}
	var last int64
	for _, kw := range []string{"STOP", "help", "Unsubscribe", " start ", "YES", "info"} {
		last = simMessage(t, simInbound(t, e, from, kw)).ID
	}
	if _, err := e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(m.UserID), Body: parley.Some("What size are you? Reply S, M or L")}); err != nil {
		t.Fatal(err)
	}
	exSweep(t, e, last)
	if got := x.calls(); len(got) != 1 {
		t.Errorf("extractor calls %q after keywords and an outbound message, want still 1 (D20: non-keyword texts only)", got)
	}
	m = simMessage(t, simInbound(t, e, from, "STOP sending me sizes, I'm L"))
	exSweep(t, e, m.ID)
	if got := x.calls(); len(got) != 2 || got[1] != "STOP sending me sizes, I'm L" {
		t.Errorf("extractor calls %q, want a second for a text that only starts with STOP", got)
	}
	if got := exCustomData(t, e, m.UserID); got != `{"size":"L"}` {
		t.Errorf("custom_data = %s, want {\"size\":\"L\"}", got)
	}

	// Brand B: no auto-collected field, the cursor passes its text.
	in := func(body string) int64 {
		t.Helper()
		m, err := e.B.SimulateInbound(e.Ctx, parley.SimulatedInbound{From: parley.Some(from), Body: parley.Some(body)})
		if err != nil {
			t.Fatalf("brand B inbound: %v", err)
		}
		return m.ID
	}
	exSweep(t, e, in("I'm a size M"))
	if got := x.calls(); len(got) != 2 {
		t.Errorf("extractor calls %q after a text to a brand without auto-collected fields, want still 2", got)
	}
	// Turned on, the field's next text is read at once: no node goes on
	// with what it remembered of the brand's fields.
	if _, err := e.App.Service.UpdateCustomField(e.Ctx, e.BrandB.ID, bSize.ID, parley.CustomFieldUpdate{IsAutoCollected: parley.Some(true)}); err != nil {
		t.Fatal(err)
	}
	exSweep(t, e, in("I'm a size S"))
	if got := x.calls(); len(got) != 3 || got[2] != "I'm a size S" {
		t.Errorf("extractor calls %q, want a third once brand B's field is auto-collected", got)
	}
}

// failingExtractor fails for texts that say "fail", as a model server
// that is down does after its retries, and runs the rules otherwise.
type failingExtractor struct{}

func (failingExtractor) Extract(ctx context.Context, r extract.Request) ([]extract.Value, error) {
	for _, m := range r.Conversation {
		if m.Inbound && strings.Contains(m.Body, "fail") {
			return nil, errors.New("model server down")
		}
	}
	return rules.Extractor{}.Extract(ctx, r)
}

// TestExtractionSweepExtractorFails: a text whose extraction fails (after
// the extractor's own retries) is left unread and counted; it does not hold
// up the texts after it (D20, #19).
func TestExtractionSweepExtractorFails(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, noSweeper, func(c *app.Config) { c.Extractor = failingExtractor{} })
	exSizeField(t, e, e.BrandA.ID)
	failed := exMetric(t, e, `parley_extractions_total{outcome="error"}`)
	bad := simMessage(t, simInbound(t, e, "+14155552671", "size M, or fail"))
	good := simMessage(t, simInbound(t, e, "+14155552672", "I'm a size L"))
	exSweep(t, e, good.ID)
	if got := exCustomData(t, e, good.UserID); got != `{"size":"L"}` {
		t.Errorf("custom_data after a failed extraction before it = %s, want {\"size\":\"L\"}", got)
	}
	if got := exCustomData(t, e, bad.UserID); got != "null" {
		t.Errorf("custom_data of the failed text = %s, want null", got)
	}
	if got := exMetric(t, e, `parley_extractions_total{outcome="error"}`); got != failed+1 {
		t.Errorf(`parley_extractions_total{outcome="error"} = %v, want %v`, got, failed+1)
	}
}

// TestExtractionSweepCrash: a sweeper that dies — holding its claim on a
// batch, or after some of a batch's transactions committed — leaves the
// next sweep to do the rest: every text is read, and each value and its
// history entry are written once (D20, D18, #19).
func TestExtractionSweepCrash(t *testing.T) {
	t.Parallel()
	x := &countingExtractor{}
	e := apitest.New(t, noSweeper, func(c *app.Config) { c.Extractor = x })
	exSizeField(t, e, e.BrandA.ID)
	sizes := []string{"S", "M", "L"}
	var users []int64
	text := func(i int) *parley.Message {
		t.Helper()
		m := simMessage(t, simInbound(t, e, "+1415555"+strconv.Itoa(3000+i), "I'm a size "+sizes[i%3]))
		if i == len(users) {
			users = append(users, m.UserID)
		}
		return m
	}
	// The first batch, swept whole.
	for i := range 5 {
		text(i)
	}
	exSweep(t, e, text(5).ID)

	// A sweeper claims the next batch and dies: the claim holds the batch
	// until it runs out, then the next sweep reads it.
	for i := 6; i < 12; i++ {
		text(i)
	}
	last := text(12).ID
	b, err := e.App.DB.ReadExtractionBatch(e.Ctx, service.SweepBatch)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := e.App.DB.ClaimExtraction(e.Ctx, b.From, e.Now().Add(time.Minute)); err != nil || !ok {
		t.Fatalf("claim: %v %v", ok, err)
	}
	if n, err := e.App.Service.SweepExtractions(e.Ctx); err != nil || n != 0 || exSwept(t, e, last) {
		t.Fatalf("sweep beside a live claim read %d texts (%v), want none", n, err)
	}
	e.Advance(time.Minute + time.Second)
	exSweep(t, e, last)

	// A batch whose writes fail from one contact on: what committed before
	// stays, the rest is read again (SQLite writes a batch in several
	// transactions, PostgreSQL in one).
	for i := 13; i < 40; i++ {
		text(i)
	}
	last = text(40).ID
	failOn := users[30]
	crash(t, e, failOn)
	// On PostgreSQL a sweep may first read only part of the texts (those
	// of transactions all ended): sweep until one reaches the contact.
	for deadline := time.Now().Add(15 * time.Second); ; {
		if _, err := e.App.Service.SweepExtractions(e.Ctx); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the sweep did not fail")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if exSwept(t, e, last) {
		t.Fatal("the failed batch passed its last text")
	}
	uncrash(t, e)
	exSweep(t, e, last)

	for i, id := range users {
		want := `{"size":"` + sizes[i%3] + `"}`
		if got := exCustomData(t, e, id); got != want {
			t.Errorf("contact %d: custom_data %s, want %s", i, got, want)
		}
		if h := exHistory(t, e, id, "size"); len(h) != 1 {
			t.Errorf("contact %d: %d history entries, want 1 (each value written once)", i, len(h))
		}
	}
	if got := e.Count(t, "user_history WHERE source = 'extraction'"); got != len(users) {
		t.Errorf("%d extraction history entries, want %d", got, len(users))
	}
}

// crash makes every history entry written for the user fail, as a
// database or node failing in the middle of a batch would.
func crash(t *testing.T, e *apitest.Env, userID int64) {
	t.Helper()
	q := []string{`CREATE TRIGGER crash BEFORE INSERT ON user_history WHEN NEW.user_id = ` + strconv.FormatInt(userID, 10) +
		` BEGIN SELECT RAISE(ABORT, 'crash'); END`}
	if apitest.Engine() == "postgres" {
		q = []string{`CREATE FUNCTION crash() RETURNS trigger AS $$ BEGIN RAISE EXCEPTION 'crash'; END $$ LANGUAGE plpgsql`,
			`CREATE TRIGGER crash BEFORE INSERT ON user_history FOR EACH ROW WHEN (NEW.user_id = ` + strconv.FormatInt(userID, 10) +
				`) EXECUTE FUNCTION crash()`}
	}
	for _, s := range q {
		if _, err := e.App.DB.Writer().ExecContext(e.Ctx, s); err != nil {
			t.Fatal(err)
		}
	}
}

func uncrash(t *testing.T, e *apitest.Env) {
	t.Helper()
	q := "DROP TRIGGER crash"
	if apitest.Engine() == "postgres" {
		q = "DROP TRIGGER crash ON user_history"
	}
	if _, err := e.App.DB.Writer().ExecContext(e.Ctx, q); err != nil {
		t.Fatal(err)
	}
}

// TestExtractionSweepTwoNodes: two nodes on one database sweep at once;
// each text is read by one of them, once, and each value written once
// (D20, #19).
func TestExtractionSweepTwoNodes(t *testing.T) {
	t.Parallel()
	x := &countingExtractor{}
	e := apitest.New(t, noSweeper, func(c *app.Config) { c.Extractor = x })
	n2 := apitest.Attach(t, e)
	exSizeField(t, e, e.BrandA.ID)
	sizes := []string{"S", "M", "L"}
	const contacts = 450 // three batches
	var users []int64
	var last int64
	for i := range contacts {
		m := simMessage(t, simInbound(t, e, "+1415556"+strconv.Itoa(1000+i), "I'm a size "+sizes[i%3]+" #"+strconv.Itoa(i)))
		users, last = append(users, m.UserID), m.ID
	}
	var wg sync.WaitGroup
	for _, node := range []*apitest.Env{e, n2} {
		wg.Go(func() {
			deadline := time.Now().Add(30 * time.Second)
			for ok := false; !ok && time.Now().Before(deadline); {
				if _, err := node.App.Service.SweepExtractions(e.Ctx); err != nil {
					t.Errorf("sweep: %v", err)
					return
				}
				ok, _ = node.App.DB.ExtractionSwept(e.Ctx, last)
			}
		})
	}
	wg.Wait()
	if !exSwept(t, e, last) {
		t.Fatal("not swept after 30 s")
	}
	calls := x.calls()
	seen := map[string]int{}
	for _, c := range calls {
		seen[c]++
	}
	if len(calls) != contacts || len(seen) != contacts {
		t.Errorf("%d extractor calls for %d distinct texts, want %d: each text once", len(calls), len(seen), contacts)
	}
	if got := e.Count(t, "user_history WHERE source = 'extraction'"); got != contacts {
		t.Errorf("%d extraction history entries, want %d", got, contacts)
	}
	for i, id := range users {
		if got, want := exCustomData(t, e, id), `{"size":"`+sizes[i%3]+`"}`; got != want {
			t.Errorf("contact %d: custom_data %s, want %s", i, got, want)
		}
	}
}

// TestExtractionSweepJob: the sweep is one durable River job for the
// whole service (D20: "a durable job"; #19), however many worker nodes
// run: two nodes started on one database hold one unfinished sweep job
// between them, and it extracts a text's value.
func TestExtractionSweepJob(t *testing.T) {
	t.Parallel()
	// A rescue delay of 3 s makes runs of 1 s: the job runs a few times.
	e := whStarted(t, func(c *app.Config) { c.JobRescueAfter = 3 * time.Second })
	n2 := apitest.Attach(t, e)
	if err := n2.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n2.App.Stop(context.Background()) })
	exSizeField(t, e, e.BrandA.ID)
	m := simMessage(t, simInbound(t, e, "+14155552671", "I'm a size M"))
	for start := time.Now(); exCustomData(t, e, m.UserID) == "null" && time.Since(start) < 15*time.Second; {
		time.Sleep(5 * time.Millisecond)
	}
	if got := exCustomData(t, e, m.UserID); got != `{"size":"M"}` {
		t.Fatalf("custom_data = %s, want {\"size\":\"M\"} written by the sweep job", got)
	}
	// Each run ends with a snooze, which River counts in the job's
	// metadata and not as an attempt.
	snoozed := "river_job WHERE kind = 'extraction_sweep' AND CAST(json_extract(metadata, '$.snoozes') AS INTEGER) >= 3"
	if e.App.DB.Engine() == "postgres" {
		snoozed = "river_job WHERE kind = 'extraction_sweep' AND (metadata->>'snoozes')::int >= 3"
	}
	for start := time.Now(); e.Count(t, snoozed) == 0 && time.Since(start) < 15*time.Second; {
		time.Sleep(50 * time.Millisecond)
	}
	if n := e.Count(t, snoozed); n != 1 {
		t.Errorf("%d sweep jobs that ran 3 times, want 1 (runs of 1 s, each ending in a snooze)", n)
	}
	if n := e.Count(t, "river_job WHERE kind = 'extraction_sweep' AND attempt > 1"); n > 0 {
		t.Errorf("%d sweep jobs at attempt > 1, want 0: a snooze is no attempt, and runs do not fail", n)
	}
	if n := e.Count(t, "river_job WHERE kind = 'extraction_sweep'"); n != 1 {
		t.Errorf("%d sweep jobs in all, want 1: the one job runs again and again", n)
	}
	const unfinished = "river_job WHERE kind = 'extraction_sweep' AND state IN ('available', 'pending', 'retryable', 'running', 'scheduled')"
	if n := e.Count(t, unfinished); n != 1 {
		t.Errorf("%d unfinished extraction sweep jobs with two worker nodes, want 1", n)
	}
	if n := e.Count(t, "river_job WHERE kind = 'extraction_sweep' AND state = 'running'"); n > 1 {
		t.Errorf("%d sweep jobs running at once, want 1 at most", n)
	}
	// Both nodes stopped: the last run snoozed, and the job waits, which
	// is no backlog of work (the queue's metrics leave it out).
	for _, n := range []*apitest.Env{n2, e} {
		if err := n.App.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	if n := e.Count(t, "river_job WHERE kind = 'extraction_sweep' AND state = 'available'"); n != 1 {
		t.Errorf("%d sweep jobs waiting after both nodes stopped, want 1", n)
	}
	if n, _, err := e.App.DB.QueueStats(e.Ctx); err != nil || n != 0 {
		t.Errorf("QueueStats = %d jobs waiting, %v; want 0: the sweep's job is no backlog", n, err)
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

	exSweep(t, e, simMessage(t, simInbound(t, e, from, "I'm a size M")).ID)
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
	exSweep(t, e, simMessage(t, simInbound(t, e, from, "I'm a size L")).ID)
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
	exSweep(t, e, m.ID)
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
	exSweep(t, e, m2.ID)
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
	exSweep(t, e, simMessage(t, simInbound(t, e, from, "I'm a size M")).ID)

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
// calls (the openai extractor's budget, D20) leaves the text at once — no
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
	m := simMessage(t, simInbound(t, e, from, "I'm a size M"))
	exSweep(t, e, m.ID)
	// A later text is read, and the earlier one not again.
	exSweep(t, e, simMessage(t, simInbound(t, e, "+14155552672", "I'm a size S")).ID)
	if got := exMetric(t, e, `parley_extractions_total{outcome="skipped_over_budget"}`); got != skipped+2 {
		t.Errorf("skipped_over_budget = %v, want %v", got, skipped+2)
	}
	if got := exCustomData(t, e, u.ID); got != "null" {
		t.Errorf("custom_data = %s, want null", got)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if len(x.brands) != 2 || x.brands[0] != e.BrandA.ID {
		t.Errorf("the extractor was asked for brands %v, want [%d %[2]d]: once per text", x.brands, e.BrandA.ID)
	}
}
