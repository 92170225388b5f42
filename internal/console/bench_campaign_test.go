package console_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
)

// BenchmarkConsoleSegmentCampaignPages renders the Segments and Campaigns
// pages over a brand of 1,000,000 contacts (issue #18: p95 ≤ 50 ms),
// through the whole HTTP handler, as BenchmarkConsolePages does, and
// reports p50 and p95. The segment counts (count on demand, the builder's
// live count) read every matching contact, so they are reported too but
// are the count's own figures, not a page's. PARLEY_CONSOLE_BENCH_USERS
// changes the size:
//
//	go test -run '^$' -bench ConsoleSegmentCampaignPages -benchtime 200x ./internal/console/
func BenchmarkConsoleSegmentCampaignPages(b *testing.B) {
	e, seed, s := benchConsole(b)
	o := parley.Origin{Source: "bench"}
	grace := "grace"
	seg, err := e.App.Service.CreateSegment(e.Ctx, o, seed.BrandID, &parley.Segment{Name: "Grace", IsActive: true,
		Criteria: parley.Criteria{{Attribute: parley.SegmentAttribute{DimensionType: 1, FieldName: "first_name", FieldType: 3},
			OperatorType: parley.OpEquals, StrFieldValue: &grace}}})
	if err != nil {
		b.Fatal(err)
	}
	var campID int64
	for i := range 30 { // more than a page of the list
		c, err := e.App.Service.CreateCampaign(e.Ctx, o, seed.BrandID, parley.CampaignCreate{Name: parley.Some(fmt.Sprint("Sale ", i)),
			SegmentID: parley.Some(seg.ID), Body: parley.Some("20% off today"),
			SendAt: parley.Some(e.Now().Add(24 * time.Hour).Format(time.RFC3339))})
		if err != nil {
			b.Fatal(err)
		}
		campID = c.ID
	}
	h := e.App.Server.Handler()
	do := func(b *testing.B, method, path string, form url.Values) {
		var req *http.Request
		if form == nil {
			req = httptest.NewRequest(method, path, nil)
		} else {
			req = httptest.NewRequest(method, path, strings.NewReader(form.Encode()))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("Sec-Fetch-Site", "same-origin")
		}
		req.AddCookie(&http.Cookie{Name: "parley_session", Value: s.Token})
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("%s %s: %d\n%s", method, path, rec.Code, rec.Body)
		}
	}
	sp, cp := fmt.Sprintf("/console/segments/%d", seg.ID), fmt.Sprintf("/console/campaigns/%d", campID)
	live := builder("", [3]string{"1:first_name:3", "9", "gra"})
	for _, p := range []struct {
		name, method, path string
		form               url.Values
	}{
		{"segments", "GET", "/console/segments", nil},
		{"segment-new", "GET", "/console/segments/new", nil},
		{"segment-edit", "GET", sp, nil},
		{"segment-members", "GET", sp + "/members", nil},
		{"campaigns", "GET", "/console/campaigns", nil},
		{"campaign-new", "GET", "/console/campaigns/new", nil},
		{"campaign-counter", "POST", "/console/campaigns/counter", url.Values{"body": {strings.Repeat("Our sale ends tonight! ", 10)}}},
		{"campaign", "GET", cp, nil},
		{"campaign-progress", "GET", cp + "/progress", nil},
		// The counts: their own figures (a query over the matching contacts).
		{"count-on-demand", "GET", "/console/segments?count=" + itoa(seg.ID), nil},
		{"live-count", "POST", "/console/segments/count", live},
	} {
		b.Run(p.name, func(b *testing.B) {
			do(b, p.method, p.path, p.form) // warm
			ds := make([]time.Duration, 0, b.N)
			for b.Loop() {
				t0 := time.Now()
				do(b, p.method, p.path, p.form)
				ds = append(ds, time.Since(t0))
			}
			reportPercentiles(b, ds)
		})
	}
}
