package console_test

import (
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// TestAdminPagesScale measures, never asserts: the render time of the
// Imports, Webhooks and Settings pages (issue #18: p95 ≤ 50 ms with
// 1,000,000 contacts). It seeds CONSOLEPERF_N contacts into brand A, 30
// imports, an endpoint with 1,000 logged deliveries, then times 200 GETs
// of each page over HTTP, one at a time. Run it alone:
//
//	CONSOLEPERF_N=1000000 go test ./internal/console -run TestAdminPagesScale -v
//
// (with PARLEY_TEST_ENGINE=postgres and PARLEY_TEST_POSTGRES_URL for PostgreSQL).
func TestAdminPagesScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("CONSOLEPERF_N"))
	if n == 0 {
		t.Skip("set CONSOLEPERF_N to measure")
	}
	e := newEnv(t)
	db := e.App.DB.Writer()
	brand := itoa(e.BrandA.ID)
	start := time.Now()
	var q string
	if apitest.Engine() == "postgres" {
		q = `INSERT INTO users (brand_id, phone_number, first_name, custom_data, is_deleted, date_created, date_last_updated, inbound_count)
		SELECT ` + brand + `, '+1' || (2000000000 + x), 'n' || x, '{}', FALSE, 1700000000000000 + x, 1700000000000000, 0
		FROM generate_series(1::bigint, ` + strconv.Itoa(n) + `) x`
	} else {
		q = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ` + strconv.Itoa(n) + `)
		INSERT INTO users (brand_id, phone_number, first_name, custom_data, is_deleted, date_created, date_last_updated, inbound_count)
		SELECT ` + brand + `, '+1' || (2000000000 + x), 'n' || x, '{}', 0, 1700000000000000 + x, 1700000000000000, 0 FROM c`
	}
	if _, err := db.ExecContext(e.Ctx, q); err != nil {
		t.Fatal(err)
	}
	db.ExecContext(e.Ctx, "ANALYZE")
	t.Logf("%s: seeded %d contacts in %v", apitest.Engine(), n, time.Since(start))

	var impID int64
	for i := range 30 {
		imp, err := e.App.Importer.CreateImport(e.Ctx, consoleOrigin("admin@a.example"), e.BrandA.ID, fmt.Sprintf("batch-%d.csv", i),
			strings.NewReader("phone_number,first_name\n+14155550123,Ada\n+14155550124,Bo\n"), parley.ImportOptions{})
		if err != nil {
			t.Fatal(err)
		}
		impID = imp.ID
	}
	wh, err := e.App.Service.CreateWebhook(e.Ctx, consoleOrigin("admin@a.example"), e.BrandA.ID,
		parley.WebhookCreate{URL: parley.Some("https://a.example/hook"), EventTypes: parley.Some([]string{"*"})})
	if err != nil {
		t.Fatal(err)
	}
	ev, err := e.App.Service.TestWebhook(e.Ctx, consoleOrigin("admin@a.example"), e.BrandA.ID, wh.ID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 1000 {
		outcome, status := "delivered", "200"
		if i%3 == 0 {
			outcome, status = "retrying", "NULL"
		}
		if _, err := db.ExecContext(e.Ctx, fmt.Sprintf(`INSERT INTO webhook_deliveries (brand_id, endpoint_id, event_id, event_type,
			attempt, status, latency_ms, response, error, outcome, date_created)
			VALUES (%d, %d, '%s', 'webhook.test', %d, %s, 12, 'ok', '', '%s', %d)`,
			e.BrandA.ID, wh.ID, ev.ID, i%7+1, status, outcome, 1700000000000000+int64(i))); err != nil {
			t.Fatal(err)
		}
	}

	w := e.signedIn(t, "admin@a.example")
	imp, hook := itoa(impID), itoa(wh.ID)
	for _, path := range []string{"/console/imports", "/console/imports/" + imp, "/console/imports/" + imp + "/progress",
		"/console/webhooks", "/console/webhooks/" + hook, "/console/webhooks/" + hook + "/deliveries", "/console/settings"} {
		var took []time.Duration
		size := 0
		for i := range 220 {
			s := time.Now()
			p := w.get(path)
			d := time.Since(s)
			if p.Status != http.StatusOK {
				t.Fatalf("GET %s: %d", path, p.Status)
			}
			size = len(p.Body)
			if i >= 20 { // the first ones warm the caches
				took = append(took, d)
			}
		}
		slices.Sort(took)
		t.Logf("%s %-40s %6d bytes  p50 %6.2f ms  p95 %6.2f ms  max %6.2f ms", apitest.Engine(), path, size,
			ms(took[len(took)/2]), ms(took[len(took)*95/100]), ms(took[len(took)-1]))
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
