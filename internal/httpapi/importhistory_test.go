package httpapi_test

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley"
)

// TestImportHistoryAsTheAPIWould: each contact an import creates has the
// history the API writes for the same contact (D18): its consent when set,
// then each custom data value, every type and escaped text as stored, in
// the same order, once each, with source import and the import's id; and
// no entry for the rows the import rejects or skips (issue #35: the
// import writes these entries in SQL, the API in Go).
func TestImportHistoryAsTheAPIWould(t *testing.T) {
	t.Parallel()
	e := cdEnv(t)
	impStart(t, e)
	yes := true
	existing := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552600"),
		UserFields: parley.UserFields{MessagingConsent: parley.Some(yes)}})
	file := "phone_number,messaging_consent,custom_loyalty_tier,custom_order_count,custom_lifetime_value,custom_tags," +
		"custom_sizes,custom_anything,custom_vip,custom_signup_date,custom_nickname\n" +
		"+14155552601,yes,GOLD,12,1.50,a|b<c>|d&e,1|3,x|y,1,2024-02-29,\"<b>\"\"Zoë\"\" \\ & </b>\"\n" +
		"+14155552602,no,,0,-0.25,,,,0,,\n" +
		"+14155552603,,silver,,,,,,,,née\n" +
		"+14155552604,,,,,,,,,,\n" +
		"+14155552600,no,gold,,,,,,,,skipped\n" + // the brand's: skipped, no entry
		"+14155552601,no,,,,,,,,,twice\n" + // a duplicate in the file: rejected
		"not-a-number,yes,,,,,,,,,bad\n"
	imp := impRun(t, e, e.A, file, nil)
	impWantCounts(t, imp, 4, 0, 1, 2)
	id := strconv.FormatInt(imp.ID, 10)
	stripped := func(lines []string, suffix string) []string {
		t.Helper()
		out := make([]string, len(lines))
		for i, l := range lines {
			var ok bool
			if out[i], ok = strings.CutSuffix(l, suffix); !ok {
				t.Errorf("entry %q: want source and detail %q", l, suffix)
			}
		}
		return out
	}
	entries := 0
	for i, phone := range []string{"+14155552601", "+14155552602", "+14155552603", "+14155552604"} {
		u := impUser(t, e, e.A, phone)
		got := historyOf(t, e, u.ID, "")
		entries += len(got)
		// The same contact through the API: its history is the rule.
		in := parley.UserCreate{PhoneNumber: parley.Some(fmt.Sprintf("+1415555270%d", i))}
		if u.MessagingConsent != nil {
			in.MessagingConsent = parley.Some(*u.MessagingConsent)
		}
		if u.CustomData != nil && string(u.CustomData) != "null" {
			in.CustomData = parley.Some(u.CustomData)
		}
		twin := e.MustCreateUser(t, e.A, in)
		want := stripped(historyOf(t, e, twin.ID, ""), " api ")
		wantHistory(t, stripped(got, " import "+id), want...)
		if len(want) == 0 && i < 3 {
			t.Errorf("%s: the API recorded no history for %s / %s", phone, impVal(u.MessagingConsent), u.CustomData)
		}
	}
	wantHistory(t, historyOf(t, e, existing.ID, ""), "messaging_consent null→true api ")
	// 1 entry for the existing contact, each twin's as many as its
	// original's: no other row (rejected, skipped, or one written twice).
	if n := e.Count(t, "user_history"); n != 1+2*entries {
		t.Errorf("%d history rows, want %d", n, 1+2*entries)
	}
	first := historyOf(t, e, impUser(t, e, e.A, "+14155552601").ID, "")
	if len(first) != 10 {
		t.Errorf("the first row's history has %d entries, want consent and 9 values:\n  %s", len(first), strings.Join(first, "\n  "))
	}
}
