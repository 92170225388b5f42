package bench

import (
	"os"
	"testing"
)

// TestRunCampaignAudience: the campaign-audience scenario imports its
// contacts and writes the campaign's audience whole (the run checks the
// recipients, the skipped and the messages itself), with the engine and
// without, on SQLite and, when PARLEY_TEST_POSTGRES_URL is set,
// PostgreSQL.
func TestRunCampaignAudience(t *testing.T) {
	dbs := []string{""}
	if pg := os.Getenv("PARLEY_TEST_POSTGRES_URL"); pg != "" {
		dbs = append(dbs, pg)
	}
	for _, db := range dbs {
		for _, sql := range []bool{false, true} {
			res, err := RunCampaignAudience(t.Context(), CampaignAudienceOptions{DB: db, Users: 120, SQL: sql})
			if err != nil {
				t.Fatal(err)
			}
			if res.Recipients != 120 || res.Unsubscribed != 3 || res.Messages != 117 {
				t.Errorf("%s: %+v; want 120 recipients, 3 unsubscribed, 117 messages", res.Engine, res)
			}
		}
	}
}
