package httpapi_test

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/service"
)

// impGenerate writes a file of n users with names, email, date of birth,
// consent, a postal code and three custom data fields (issue #7's
// benchmark shape), with numbers valid in strict mode.
func impGenerate(n int) []byte {
	zips := []string{"10001", "94105", "60601", "73301", "02108", "98101", "30301", "33101", "80202", "19103"}
	tiers := []string{"gold", "silver", "bronze"}
	var b bytes.Buffer
	b.WriteString("phone_number,first_name,last_name,email_address,date_of_birth,messaging_consent,postal_code," +
		"custom_loyalty_tier,custom_tags,custom_visits\n")
	for i := range n {
		fmt.Fprintf(&b, "+1415%07d,First%d,Last%d,user%d@example.com,%02d/%02d/%d,%t,%s,%s,a|b%d,%d\n",
			2000000+i, i, i, i, 1+i%12, 1+i%28, 1950+i%50, i%3 != 0, zips[i%10], tiers[i%3], i%5, i%100)
	}
	return b.Bytes()
}

// impBenchFields configures the benchmark's three custom data fields.
func impBenchFields(b testing.TB, e *apitest.Env, brandID int64) {
	e.MustCreateField(b, &parley.CustomField{BrandID: brandID, FieldName: "Loyalty Tier", CustomDataType: parley.CustomString,
		AvailableEnumValues: []string{"gold", "silver", "bronze"}})
	e.MustCreateField(b, &parley.CustomField{BrandID: brandID, FieldName: "Tags", CustomDataType: parley.CustomList,
		Subtype: parley.CustomString})
	e.MustCreateField(b, &parley.CustomField{BrandID: brandID, FieldName: "Visits", CustomDataType: parley.CustomInteger})
}

// BenchmarkImport100k uploads a 100,000-row file through POST /imports
// into an empty brand and runs its import to the end (the job's code path,
// called directly so no polling interval is measured). rows/s counts the
// whole: upload, checks, inserts, progress. With a webhook endpoint
// subscribed to every event, each user also writes its user.created (and
// user.subscribed/unsubscribed) event and delivery job in the batch.
func BenchmarkImport100k(b *testing.B) {
	const rows = 100_000
	data := impGenerate(rows)
	for _, hooked := range []bool{false, true} {
		name := "Plain"
		if hooked {
			name = "WebhookSubscribed"
		}
		b.Run(name, func(b *testing.B) {
			e := apitest.New(b)
			var total time.Duration
			for i := 0; b.Loop(); i++ {
				brand, _, c := e.NewBrand(b, fmt.Sprintf("Bench %d", i), "+14155550100")
				impBenchFields(b, e, brand.ID)
				if hooked {
					resp, err := c.Do(e.Ctx, "POST", "/webhooks", []byte(`{"url":"http://127.0.0.1:9/hook","event_types":["*"]}`), "application/json")
					if err != nil || resp.StatusCode != 201 {
						b.Fatalf("webhook: %v %v", err, resp)
					}
				}
				start := time.Now()
				resp := impUpload(b, e, c, "users.csv", data, nil)
				if resp.StatusCode != 201 {
					b.Fatalf("upload: %d %s", resp.StatusCode, resp.Body)
				}
				up := time.Since(start)
				imp := impDecode(b, resp.Body)
				done, err := e.App.Importer.RunImport(e.Ctx, brand.ID, imp.ID, service.RunOptions{})
				if err != nil || !done {
					b.Fatalf("RunImport: %v (done %v)", err, done)
				}
				took := time.Since(start)
				total += took
				got := impGet(b, e, c, imp.ID)
				if got.Created != rows {
					b.Fatalf("created %d of %d (failed %d)", got.Created, rows, got.Failed)
				}
				b.Logf("%s: upload and checks %v, whole import %v", apitest.Engine(), up.Round(time.Millisecond), took.Round(time.Millisecond))
			}
			b.ReportMetric(float64(rows*b.N)/total.Seconds(), "rows/s")
		})
	}
}
