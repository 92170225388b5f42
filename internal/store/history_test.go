package store_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// TestHistoryBackfill: the consent events recorded before contact history
// existed become its first entries, in order, with the provider's source
// now called carrier (D18, migration 00010).
func TestHistoryBackfill(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, apitest.DatabaseURL(t, t.TempDir()), store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.MigrateTo(ctx, 8); err != nil {
		t.Fatal(err)
	}
	w := db.Writer()
	for _, q := range []string{
		`INSERT INTO brands (id, name, phone_number, date_created) VALUES (1, 'B', '+14155550100', 0)`,
		`INSERT INTO users (id, brand_id, phone_number, date_created, date_last_updated) VALUES (7, 1, '+14155552671', 0, 0)`,
		`INSERT INTO consent_events (brand_id, user_id, previous_value, new_value, source, detail, message_id, date_created)
			VALUES (1, 7, NULL, TRUE, 'api', '', NULL, 10), (1, 7, TRUE, FALSE, 'keyword', 'STOP', 3, 20),
			(1, 7, FALSE, NULL, 'provider', 'sim:21610', 4, 30)`,
	} {
		if _, err := w.ExecContext(ctx, db.Rebind(q)); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := db.ListHistory(ctx, 1, 7, "", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"null true api  <nil> 10", "true false keyword STOP 3 20", "false null carrier sim:21610 4 30"}
	if len(got) != len(want) {
		t.Fatalf("%d entries, want %d", len(got), len(want))
	}
	for i, h := range got {
		msg := "<nil>"
		if h.MessageID != nil {
			msg = fmt.Sprint(*h.MessageID)
		}
		old, new := string(h.OldValue), string(h.NewValue)
		if old == "" {
			old = "null"
		}
		if new == "" {
			new = "null"
		}
		line := fmt.Sprintf("%s %s %s %s %s %d", old, new, h.Source, h.Detail, msg, h.OccurredAt.UnixMicro())
		if h.Field != "messaging_consent" || line != want[i] {
			t.Errorf("entry %d: %s %s, want messaging_consent %s", i, h.Field, line, want[i])
		}
	}
}
