package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/bench"
	"github.com/parleyhq/parley/internal/service"
)

// benchConsole seeds a brand of PARLEY_CONSOLE_BENCH_USERS contacts
// (default 1,000,000) and signs an admin of it in.
func benchConsole(b *testing.B) (*apitest.Env, *bench.ConsoleSeed, *service.Session) {
	n := 1_000_000
	if s := os.Getenv("PARLEY_CONSOLE_BENCH_USERS"); s != "" {
		n, _ = strconv.Atoi(s)
	}
	e := apitest.New(b)
	start := time.Now()
	seed, err := bench.SeedConsole(e.Ctx, e.App.DB, e.App.Service, n)
	if err != nil {
		b.Fatal(err)
	}
	b.Logf("%s: seeded %d contacts and %d messages in %s", apitest.Engine(), n, seed.Messages, time.Since(start).Round(time.Second))
	if _, err := e.App.Operators.Add(e.Ctx, seed.BrandID, "bench@example.com", parley.RoleAdmin, password); err != nil {
		b.Fatal(err)
	}
	s, _, err := e.App.Operators.SignIn(e.Ctx, "bench@example.com", password, "bench")
	if err != nil {
		b.Fatal(err)
	}
	return e, seed, s
}

// BenchmarkConsolePages renders each console page server-side over a
// brand of 1,000,000 contacts (issue #18: p95 ≤ 50 ms), through the whole
// HTTP handler (session, brand, query, template), and reports p50 and p95.
// PARLEY_CONSOLE_BENCH_USERS changes the size. Seeding takes minutes:
//
//	go test -run '^$' -bench ConsolePages -benchtime 200x ./internal/console/
func BenchmarkConsolePages(b *testing.B) {
	e, seed, s := benchConsole(b)
	h := e.App.Server.Handler()
	get := func(b *testing.B, path string) {
		req := httptest.NewRequest("GET", path, nil)
		req.AddCookie(&http.Cookie{Name: "parley_session", Value: s.Token})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("GET %s: %d\n%s", path, rec.Code, rec.Body)
		}
	}
	contact := fmt.Sprintf("/console/contacts/%d", seed.ContactID)
	field := benchFields(b, e, seed.BrandID)
	builderPage := benchSegments(b, e, seed.BrandID)
	segment := benchContactFilters(b, e, seed.BrandID)
	for _, p := range []struct{ name, path string }{
		{"dashboard", "/console/"},
		{"contacts", "/console/contacts"},
		{"search-phone", "/console/contacts?q=%2B1200000"},
		{"search-phone-full", "/console/contacts?q=%2B12000000007"},
		{"search-name", "/console/contacts?q=gra"},
		{"search-first-last", "/console/contacts?q=grace+tur"},
		{"search-email", "/console/contacts?q=c500000%40example.com"},
		{"contact", contact},
		{"conversation", contact + "/conversation"},
		{"inbox", "/console/inbox"},                            // issue #32: conversations_brand_view
		{"inbox-unassigned", "/console/inbox?view=unassigned"}, // conversations_brand_assignee
		{"inbox-mine", "/console/inbox?view=mine"},             // conversations_brand_assignee
		{"inbox-resolved", "/console/inbox?view=all&state=resolved"},
		{"inbox-page-2", inboxPage2(b, h, s.Token)},
		{"inbox-conversation", fmt.Sprintf("/console/inbox/%d", seed.ContactID)}, // the first contact texted,
		{"imports", "/console/imports"},                                          // the admin pages; their detail pages: TestAdminPagesScale
		{"webhooks", "/console/webhooks"},
		{"settings", "/console/settings"},
		{"fields", "/console/fields"}, // 40 fields, half auto-collected (#19)
		{"field", field},
		{"segments", "/console/segments"}, // 20 segments as sentences; counts load after the page (issue #32)
		{"segment", builderPage},
		// The contacts list's filters and sorts (issue #32; docs/performance.md
		// names the index of each). Every seeded contact's tier is "gold":
		// "silver" matches none, the worst case of a filter no index serves.
		{"list-opted-out", "/console/contacts?consent=out"},
		{"list-no-consent", "/console/contacts?consent=none"},
		{"list-state", "/console/contacts?state=CA"},
		{"list-state-none", "/console/contacts?state=NY"},
		{"list-oldest", "/console/contacts?sort=oldest"},
		{"list-name", "/console/contacts?sort=name"},
		{"list-activity", "/console/contacts?sort=activity"},
		{"list-name-opted-out", "/console/contacts?sort=name&consent=out"},
		{"list-segment", "/console/contacts?segment=" + segment},
		{"list-field", "/console/contacts?field=tier&value=gold"},
		{"list-field-none", "/console/contacts?field=tier&value=silver&sort=activity"},
		{"search-email-prefix", "/console/contacts?q=c50000"},
		{"contact-edit", contact + "/edit"},
	} {
		b.Run(p.name, func(b *testing.B) {
			get(b, p.path) // warm: statements prepared, pages cached by the OS
			ds := make([]time.Duration, 0, b.N)
			for b.Loop() {
				t0 := time.Now()
				get(b, p.path)
				ds = append(ds, time.Since(t0))
			}
			reportPercentiles(b, ds)
		})
	}
	// While a brand loads, SQL answers the latest-activity order: a sort of
	// the brand's contacts, no index since migration 00058.
	b.Run("list-activity-loading", func(b *testing.B) {
		aud := e.App.Service.Audience()
		aud.Off = true
		defer func() { aud.Off = false }()
		ds := make([]time.Duration, 0, b.N)
		for b.Loop() {
			t0 := time.Now()
			get(b, "/console/contacts?sort=activity")
			ds = append(ds, time.Since(t0))
		}
		reportPercentiles(b, ds)
	})
	// The dashboard's figures are kept 30 s; this is the read behind them,
	// which the first view after that pays.
	b.Run("dashboard-uncached", func(b *testing.B) {
		ds := make([]time.Duration, 0, b.N)
		for b.Loop() {
			t0 := time.Now()
			if _, err := service.NewDashboard(e.App.Service).Stats(e.Ctx, seed.BrandID); err != nil {
				b.Fatal(err)
			}
			ds = append(ds, time.Since(t0))
		}
		reportPercentiles(b, ds)
	})
}

func reportPercentiles(b *testing.B, ds []time.Duration) {
	if len(ds) == 0 {
		return
	}
	slices.Sort(ds)
	at := func(q float64) float64 {
		return float64(ds[min(len(ds)-1, int(q*float64(len(ds))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
}

// benchContactFilters gives the brand the Tier field the seed's custom
// data holds and a segment (California, opted in), and returns its id.
func benchContactFilters(b *testing.B, e *apitest.Env, brandID int64) string {
	if err := e.App.Service.CreateCustomField(e.Ctx, &parley.CustomField{BrandID: brandID, FieldName: "Tier",
		CustomDataType: parley.CustomString}); err != nil {
		b.Fatal(err)
	}
	ca, yes := "CA", true
	seg, err := e.App.Service.CreateSegment(e.Ctx, parley.Origin{}, brandID, &parley.Segment{Name: "California opted in",
		Type: parley.SegmentStandard, Criteria: parley.Criteria{
			{Attribute: parley.SegmentAttribute{DimensionType: parley.DimensionContact, FieldName: "state_code", FieldType: parley.CustomString},
				OperatorType: parley.OpEquals, StrFieldValue: &ca},
			{Attribute: parley.SegmentAttribute{DimensionType: parley.DimensionContact, FieldName: "messaging_consent", FieldType: parley.CustomBoolean},
				OperatorType: parley.OpEquals, BoolFieldValue: &yes}}})
	if err != nil {
		b.Fatal(err)
	}
	return strconv.FormatInt(seg.ID, 10)
}

// benchFields gives the brand 40 custom data fields, half of them
// auto-collected with a long prompt, and returns one's edit page.
func benchFields(b *testing.B, e *apitest.Env, brandID int64) string {
	var last int64
	for i := range 40 {
		f := &parley.CustomField{BrandID: brandID, FieldName: fmt.Sprintf("Bench Field %d", i), CustomDataType: parley.CustomString,
			AvailableEnumValues: []string{"small", "medium", "large"}, IsAutoCollected: i%2 == 0, IncludeInAIPrompt: i%2 == 0}
		if f.IsAutoCollected {
			f.ExtractionPrompt = strings.Repeat("What size the contact says they wear. ", 40)
		}
		if err := e.App.Service.CreateCustomField(e.Ctx, f); err != nil {
			b.Fatal(err)
		}
		last = f.ID
	}
	return fmt.Sprintf("/console/fields/%d", last)
}

// benchSegments gives the brand 20 segments of a few conditions each (an
// enum field of benchFields, states as "is one of", opted in) and returns
// one's builder page.
func benchSegments(b *testing.B, e *apitest.Env, brandID int64) string {
	var last int64
	for i := range 20 {
		ny, nj, size := "NY", "NJ", "medium"
		yes := true
		state := parley.SegmentAttribute{DimensionType: parley.DimensionContact, FieldName: "state_code", FieldType: parley.CustomString}
		consent := parley.SegmentAttribute{DimensionType: parley.DimensionContact, FieldName: "messaging_consent", FieldType: parley.CustomBoolean}
		field := parley.SegmentAttribute{DimensionType: parley.DimensionCustomData, FieldName: "bench_field_1", FieldType: parley.CustomString}
		seg, err := e.App.Service.CreateSegment(e.Ctx, parley.Origin{Source: "bench"}, brandID, &parley.Segment{
			Name: fmt.Sprintf("Bench segment %d", i), IsActive: true, Criteria: parley.Criteria{
				{Attribute: state, OperatorType: parley.OpEquals, StrFieldValue: &ny},
				{Attribute: consent, OperatorType: parley.OpEquals, BoolFieldValue: &yes},
				{Attribute: state, OperatorType: parley.OpEquals, StrFieldValue: &nj, AndGroupNum: 1},
				{Attribute: consent, OperatorType: parley.OpEquals, BoolFieldValue: &yes, AndGroupNum: 1},
				{Attribute: field, OperatorType: parley.OpEquals, StrFieldValue: &size, AndGroupNum: 2},
			}})
		if err != nil {
			b.Fatal(err)
		}
		last = seg.ID
	}
	return fmt.Sprintf("/console/segments/%d", last)
}

// inboxPage2 is the link to the inbox's second page, read from the first.
func inboxPage2(b *testing.B, h http.Handler, token string) string {
	req := httptest.NewRequest("GET", "/console/inbox", nil)
	req.AddCookie(&http.Cookie{Name: "parley_session", Value: token})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	body := rec.Body.String()
	i := strings.Index(body, `/console/inbox?after=`)
	if i < 0 {
		b.Fatalf("inbox: no link to an older page")
	}
	return strings.ReplaceAll(body[i:i+strings.IndexByte(body[i:], '"')], "&amp;", "&")
}
