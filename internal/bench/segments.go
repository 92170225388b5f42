package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"gocloud.dev/blob"
	_ "gocloud.dev/blob/fileblob" // the import's file

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/audience"
	"github.com/parleyhq/parley/internal/service"
	"github.com/parleyhq/parley/internal/store"
)

// ScenarioSegments counts a segment and reads pages of its members over
// a large brand (issue #16). It is not an HTTP load like the others: it
// seeds its own database in bulk and measures the segment calls one at a
// time, through a SegmentTarget.
const ScenarioSegments = "segments"

// SegmentOptions describe a segments run.
type SegmentOptions struct {
	// DB is "" for a temporary SQLite database, or a postgres:// URL in
	// whose database a schema of the run's own is created and dropped.
	DB string
	// Users is how many contacts are seeded (1,000,000 in issue #16).
	Users    int
	Duration time.Duration
	Progress io.Writer
	// Criteria, when set, is the segment's criteria as the API takes them
	// (a JSON array of D14 criteria; --criteria FILE); default the issue
	// #16 segment. They may name the seeded custom fields tier (STRING,
	// enum gold, silver, bronze), age (INTEGER) and note (STRING).
	Criteria []byte
	// Keep leaves the database behind (--keep: its path or schema is
	// printed), to study the segment's plans on the data measured.
	Keep bool
	// SQL answers from the SQL path only (--sql), not the audience engine.
	SQL bool
	// First is how long after the import the first answers are reported
	// apart (default 30 s): the gap until the engine answers.
	First time.Duration
}

// SegmentTarget is what the scenario measures: a segment's count and one
// page of its members. The in-process target calls the service, as the
// v1 handlers do; an HTTP target (GET /api/v1/segments/{id}/count and
// /users?limit=100&cursor=) needs only these two methods.
type SegmentTarget interface {
	Count(ctx context.Context) (int64, error)
	// Preview counts the criteria unsaved and reads a sample of members
	// (POST /segments/preview).
	Preview(ctx context.Context) error
	// Page returns how many users the page after cursor holds and the
	// next cursor ("" at the end).
	Page(ctx context.Context, cursor string) (int, string, error)
}

// SegmentResult is what a segments run measured. Latencies are in ms.
type SegmentResult struct {
	Scenario  string  `json:"scenario"`
	Engine    string  `json:"engine"`
	Users     int     `json:"users"`
	Messages  int     `json:"messages"`
	SeedS     float64 `json:"seed_s"`
	Criteria  string  `json:"criteria"`
	Members   int64   `json:"members"`
	Counts    int     `json:"counts"`
	Count     Spread  `json:"count_ms"`
	Previews  int     `json:"previews"`
	Preview   Spread  `json:"preview_ms"`
	Pages     int     `json:"pages"`
	Page      Spread  `json:"page_ms"`
	BenchCPUS float64 `json:"bench_cpu_s"` // the run's process, the database included on SQLite
	// Right after the import (issue #34): the first count, the counts of
	// the First window (SQL answers those the engine cannot yet), and how
	// long until the engine answered a count (−1: never); Count, Preview
	// and Page are then measured for Duration after that.
	FirstCountMS  float64 `json:"first_count_ms"`
	FirstWindowS  float64 `json:"first_window_s"`
	FirstCounts   int     `json:"first_counts"`
	FirstWindow   Spread  `json:"first_window_count_ms"`
	FirstFromSQL  int     `json:"first_window_sql_answers"`
	EngineAnswerS float64 `json:"engine_answered_s"`
	// A node started after the import (parley serve): the load of the
	// brand by a new engine's warm-up, and the Go heap it added
	// (runtime.MemStats after a GC) with the engine's own estimate.
	LoadS     float64 `json:"engine_load_s,omitempty"`
	HeapMiB   float64 `json:"engine_heap_mib,omitempty"`
	EngineMiB float64 `json:"engine_estimate_mib,omitempty"`
}

// Spread is latency percentiles in ms.
type Spread struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// segmentCriteria is issue #16's segment: 3 criteria in 2 groups, a
// contact field, a custom-data field and an activity field:
// (state_code = MA AND tier = gold) OR an inbound message in the last
// 30 days.
func segmentCriteria() []parley.SegmentCriterion {
	ma, gold, days := "MA", "gold", int64(30)
	return []parley.SegmentCriterion{
		{Attribute: parley.SegmentAttribute{DimensionType: parley.DimensionContact, FieldName: "state_code", FieldType: parley.CustomString},
			OperatorType: parley.OpEquals, StrFieldValue: &ma, AndGroupNum: 0},
		{Attribute: parley.SegmentAttribute{DimensionType: parley.DimensionCustomData, FieldName: "tier", FieldType: parley.CustomString},
			OperatorType: parley.OpEquals, StrFieldValue: &gold, AndGroupNum: 0},
		{Attribute: parley.SegmentAttribute{DimensionType: parley.DimensionActivity, FieldName: "last_inbound_at", FieldType: parley.CustomDate},
			OperatorType: parley.OpInLastDays, IntFieldValue: &days, AndGroupNum: 1},
	}
}

// RunSegments loads o.Users contacts with an import, as a user would
// (`parley import`: the import's own statistics refresh and nothing
// more), adds inbound messages, creates the segment, then for o.Duration
// alternates a count, a preview and a page of 100 members (walking the
// pages from the start, and again at the end).
func RunSegments(ctx context.Context, o SegmentOptions) (*SegmentResult, error) {
	if o.Users < 1 {
		return nil, fmt.Errorf("--users: want at least 1")
	}
	criteria := segmentCriteria()
	if o.Criteria != nil {
		criteria = nil
		if err := json.Unmarshal(o.Criteria, &criteria); err != nil {
			return nil, fmt.Errorf("--criteria: want a JSON array of D14 criteria: %w", err)
		}
	}
	dir, err := os.MkdirTemp("", "parley-bench-")
	if err != nil {
		return nil, err
	}
	dsn := o.DB
	if dsn == "" {
		dsn = "sqlite:" + filepath.Join(dir, "parley.db")
	} else {
		schemaDSN, drop, err := freshSchema(ctx, o.DB)
		if err != nil {
			return nil, err
		}
		if !o.Keep {
			defer drop()
		}
		dsn = schemaDSN
	}
	if o.Keep && o.Progress != nil {
		defer fmt.Fprintf(o.Progress, "kept the database: %s\n", dsn)
	} else if !o.Keep {
		defer os.RemoveAll(dir)
	}
	db, svc, closeAll, err := openService(ctx, dsn, dir, nil)
	if err != nil {
		return nil, err
	}
	defer closeAll()
	progress := progressTo(o.Progress)
	res := &SegmentResult{Scenario: ScenarioSegments, Engine: db.Engine(), Users: o.Users}
	// The node runs as parley serve runs it: its engine loads the brands
	// with segments and follows their changes (the import's too).
	if o.SQL {
		svc.Audience().Off = true
	} else {
		runCtx, stop := context.WithCancel(ctx)
		defer stop()
		go svc.Audience().Run(runCtx)
	}
	t0 := time.Now()
	progress("importing %d contacts…\n", o.Users)
	target, err := seedSegments(ctx, db, svc, dir, o.Users, criteria, res)
	if err != nil {
		return nil, fmt.Errorf("seeding: %w", err)
	}
	res.SeedS = round(time.Since(t0).Seconds(), 1)
	progress("seeded in %.1fs; measuring\n", res.SeedS)

	// Measure at once: the first window, then Duration once the engine
	// answers (or at most 10 minutes).
	first := cmp.Or(o.First, 30*time.Second)
	res.FirstWindowS = first.Seconds()
	var firsts, counts, previews, pages []time.Duration
	answered := time.Time{}
	cpu0 := SelfCPU()
	start := time.Now()
	cursor := ""
	for ctx.Err() == nil {
		el := time.Since(start)
		if el >= first && (o.SQL || !answered.IsZero() && time.Since(answered) >= o.Duration || el >= 10*time.Minute) {
			break
		}
		mem0, _ := svc.Audience().Answers()
		s := time.Now()
		n, err := target.Count(ctx)
		if err != nil {
			return nil, err
		}
		took := time.Since(s)
		res.Members = n
		mem1, _ := svc.Audience().Answers()
		if len(firsts) == 0 {
			res.FirstCountMS = msf(took)
		}
		if el < first {
			firsts = append(firsts, took)
			if mem1 == mem0 {
				res.FirstFromSQL++
			}
		}
		if answered.IsZero() && mem1 > mem0 {
			answered = time.Now()
			res.EngineAnswerS = round(answered.Sub(start).Seconds(), 2)
		}
		if answered.IsZero() && !o.SQL {
			continue
		}
		counts = append(counts, took)
		s = time.Now()
		if err := target.Preview(ctx); err != nil {
			return nil, err
		}
		previews = append(previews, time.Since(s))
		s = time.Now()
		_, next, err := target.Page(ctx, cursor)
		if err != nil {
			return nil, err
		}
		pages = append(pages, time.Since(s))
		cursor = next
	}
	if answered.IsZero() {
		res.EngineAnswerS = -1
	}
	res.BenchCPUS = round((SelfCPU() - cpu0).Seconds(), 2)
	res.FirstCounts, res.FirstWindow = len(firsts), spread(firsts)
	res.Counts, res.Count = len(counts), spread(counts)
	res.Previews, res.Preview = len(previews), spread(previews)
	res.Pages, res.Page = len(pages), spread(pages)
	if !o.SQL {
		if err := coldLoad(ctx, db, target.(serviceTarget).brand, res); err != nil {
			return nil, err
		}
	}
	return res, ctx.Err()
}

func spread(ds []time.Duration) Spread {
	if len(ds) == 0 {
		return Spread{}
	}
	s := append([]time.Duration(nil), ds...)
	for i := 1; i < len(s); i++ { // insertion sort: a few hundred samples
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
	q := func(p float64) float64 {
		i := int(p*float64(len(s)) + 0.5)
		return msf(s[min(max(i-1, 0), len(s)-1)])
	}
	return Spread{P50: q(0.50), P95: q(0.95), P99: q(0.99), Max: msf(s[len(s)-1])}
}

// Seed data: every 7th contact in MA (ZIP 02108; the others 94105, CA),
// every 5th "gold" (the others silver), age x % 80, every 10th with an
// inbound message, spread over the last 60 days (so half of those are
// within the 30 days of the default segment): its members ≈ 1/35 + 1/20
// of contacts.
const (
	seedBatch = 10000
	seedDays  = 60
)

func seedSegments(ctx context.Context, db *store.DB, svc *service.Service, dir string, n int,
	criteria []parley.SegmentCriterion, res *SegmentResult) (SegmentTarget, error) {
	b, err := svc.CreateBrand(ctx, "Bench", "+14155550100")
	if err != nil {
		return nil, err
	}
	for _, f := range []*parley.CustomField{
		{BrandID: b.ID, FieldName: "tier", CustomDataType: parley.CustomString, AvailableEnumValues: []string{"gold", "silver", "bronze"}},
		{BrandID: b.ID, FieldName: "age", CustomDataType: parley.CustomInteger},
		{BrandID: b.ID, FieldName: "note", CustomDataType: parley.CustomString},
	} {
		if err := svc.CreateCustomField(ctx, f); err != nil {
			return nil, err
		}
	}
	// The segment exists before the import, as a brand's would: the
	// engine has its brand in memory when the import starts.
	seg := &parley.Segment{BrandID: b.ID, Name: "bench", Source: "USER_DEFINED", Type: parley.SegmentStandard,
		IsActive: true, Criteria: criteria}
	seg, err = svc.CreateSegment(ctx, parley.Origin{Source: parley.SourceAdmin}, b.ID, seg)
	if err != nil {
		return nil, err
	}
	svc.Audience().Warm(ctx)
	path := filepath.Join(dir, "contacts.csv")
	if err := writeSegmentsFile(path, n); err != nil {
		return nil, err
	}
	if err := importFile(ctx, svc, b.ID, path, n); err != nil {
		return nil, err
	}

	// The users in file order (the import creates them in it), every
	// 10th with an inbound text: the activity triggers of migration 00009
	// count it on the user.
	now := time.Now().UTC()
	var ids []int64
	if err := db.EachUser(ctx, b.ID, func(u *parley.User) error { ids = append(ids, u.ID); return nil }); err != nil {
		return nil, err
	}
	var msgs []*parley.Message
	for start := 0; start < len(ids); start += seedBatch {
		msgs = msgs[:0]
		for x := start; x < min(start+seedBatch, len(ids)); x++ {
			if x%10 != 0 {
				continue
			}
			at := parley.Time{Time: now.Add(-time.Duration(x%(seedDays*24)) * time.Hour)}
			msgs = append(msgs, &parley.Message{BrandID: b.ID, UserID: ids[x], Direction: parley.DirectionInbound,
				Status: parley.StatusDelivered, Body: "hi", MediaItemUUIDs: []string{}, Type: parley.TypeConversational,
				DateCreated: at, DateSent: &at, DateDelivered: &at})
		}
		if err := db.WithTx(ctx, func(tx *store.Tx) error { return tx.InsertMessages(ctx, msgs) }); err != nil {
			return nil, err
		}
		res.Messages += len(msgs)
	}
	c, _ := json.Marshal(seg.Criteria)
	res.Criteria = string(c)
	return serviceTarget{svc: svc, brand: b.ID, segment: seg.ID, criteria: seg.Criteria}, nil
}

// writeSegmentsFile writes the CSV of n contacts that seedSegments
// imports.
func writeSegmentsFile(path string, n int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	w.WriteString("phone_number,first_name,postal_code,custom_tier,custom_age,custom_note\n")
	note := strings.Repeat("x", 100)
	var line []byte
	for x := range n {
		zip, tier := "94105", "silver"
		if x%7 == 0 {
			zip = "02108"
		}
		if x%5 == 0 {
			tier = "gold"
		}
		line = numbers{}.appendNumber(line[:0], uint64(x))
		line = append(line, ",n"...)
		line = strconv.AppendInt(line, int64(x), 10)
		line = append(append(append(line, ','), zip...), ',')
		line = append(append(line, tier...), ',')
		line = strconv.AppendInt(line, int64(x%80), 10)
		line = append(append(append(line, ','), note...), '\n')
		w.Write(line)
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

// serviceTarget calls the service in process, as the v1 handlers do.
type serviceTarget struct {
	svc            *service.Service
	brand, segment int64
	criteria       []parley.SegmentCriterion
}

func (t serviceTarget) Preview(ctx context.Context) error {
	_, err := t.svc.PreviewSegment(ctx, t.brand, t.criteria)
	return err
}

func (t serviceTarget) Count(ctx context.Context) (int64, error) {
	c, err := t.svc.CountSegment(ctx, t.brand, t.segment)
	if err != nil {
		return 0, err
	}
	return c.Count, nil
}

func (t serviceTarget) Page(ctx context.Context, cursor string) (int, string, error) {
	users, next, err := t.svc.SegmentUsers(ctx, t.brand, t.segment, 100, cursor)
	return len(users), next, err
}

// WriteText prints r for a person.
func (r *SegmentResult) WriteText(w io.Writer) error {
	_, err := fmt.Fprintf(w, "%s on %s: %d contacts, %d inbound messages (seeded in %.1fs); %d members\n"+
		"count of the segment (%d runs):  p50 %.1f ms  p95 %.1f ms  p99 %.1f ms  max %.1f ms\n"+
		"preview (%d runs):               p50 %.1f ms  p95 %.1f ms  p99 %.1f ms  max %.1f ms\n"+
		"page of 100 members (%d runs):   p50 %.2f ms  p95 %.2f ms  p99 %.2f ms  max %.2f ms\n",
		r.Scenario, r.Engine, r.Users, r.Messages, r.SeedS, r.Members,
		r.Counts, r.Count.P50, r.Count.P95, r.Count.P99, r.Count.Max,
		r.Previews, r.Preview.P50, r.Preview.P95, r.Preview.P99, r.Preview.Max,
		r.Pages, r.Page.P50, r.Page.P95, r.Page.P99, r.Page.Max)
	if err == nil {
		_, err = fmt.Fprintf(w, "right after the import: first count %.1f ms; first %.0f s: %d counts, %d by SQL, p50 %.1f ms p95 %.1f ms; engine answered after %.2f s\n",
			r.FirstCountMS, r.FirstWindowS, r.FirstCounts, r.FirstFromSQL, r.FirstWindow.P50, r.FirstWindow.P95, r.EngineAnswerS)
	}
	if err == nil && r.LoadS > 0 {
		_, err = fmt.Fprintf(w, "a node started after the import loads the brand in %.1f s; heap +%.1f MiB (estimate %.1f MiB)\n",
			r.LoadS, r.HeapMiB, r.EngineMiB)
	}
	return err
}

// WriteJSON prints r as one JSON object.
func (r *SegmentResult) WriteJSON(w io.Writer) error {
	return json.NewEncoder(w).Encode(r)
}

// coldLoad times what a node started after the import does: a new
// engine's warm-up loads the brand (SQL answers meanwhile), and measures
// the heap it holds.
func coldLoad(ctx context.Context, db *store.DB, brand int64, res *SegmentResult) error {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	eng := audience.New(db, nil)
	s := time.Now()
	if err := eng.Warm(ctx); err != nil {
		return err
	}
	res.LoadS = round(time.Since(s).Seconds(), 2)
	_, bytes, ok := eng.Stats(brand)
	if !ok {
		return fmt.Errorf("the new engine's warm-up did not load the brand")
	}
	res.EngineMiB = round(float64(bytes)/(1<<20), 1)
	runtime.GC()
	runtime.ReadMemStats(&after)
	res.HeapMiB = round((float64(after.HeapAlloc)-float64(before.HeapAlloc))/(1<<20), 1)
	runtime.KeepAlive(eng)
	return nil
}

// importFile loads the CSV at path into the brand through the import's
// own code, as `parley import` does (its ANALYZE the only one), and
// checks that all n contacts were created.
func importFile(ctx context.Context, svc *service.Service, brandID int64, path string, n int) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	im := service.NewImporter(svc, nil)
	im.MaxSize = 0
	imp, err := im.ImportLocal(ctx, brandID, "contacts.csv", f, parley.ImportOptions{})
	if err != nil {
		return err
	}
	if _, err := im.RunImport(ctx, brandID, imp.ID, service.RunOptions{}); err != nil {
		return err
	}
	if imp, err = im.FindImport(ctx, brandID, imp.ID); err != nil {
		return err
	}
	if imp.Status != parley.ImportCompleted || imp.Created != int64(n) {
		return fmt.Errorf("import %d: %s, %d created of %d", imp.ID, imp.Status, imp.Created, n)
	}
	return nil
}

// openService opens the bench's database at dsn and a service on it, its
// files under dir, as a node would; closeAll closes both.
func openService(ctx context.Context, dsn, dir string, q service.Enqueuer) (*store.DB, *service.Service, func(), error) {
	db, err := app.OpenDB(ctx, dsn, store.Options{})
	if err != nil {
		return nil, nil, nil, err
	}
	files := filepath.Join(dir, "blob")
	if err := os.Mkdir(files, 0o700); err != nil {
		db.Close()
		return nil, nil, nil, err
	}
	bucket, err := blob.OpenBucket(ctx, "file://"+files)
	if err != nil {
		db.Close()
		return nil, nil, nil, err
	}
	svc := service.New(db, q, bucket, nil, nil)
	return db, svc, func() { bucket.Close(); db.Close() }, nil
}
