package rules_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/extract"
)

// Issue #31 item 7: what one extraction costs is bounded, whatever a
// brand stored.

// TestRulesReadBoundedText: only the first 1,600 characters of a message
// are read; a value named after them is not seen.
func TestRulesReadBoundedText(t *testing.T) {
	fs := []extract.Field{{Key: "loyalty_tier", Name: "Loyalty Tier", Type: extract.String, Enum: []string{"Bronze", "Silver", "Gold"}}}
	pad := strings.Repeat("é", 1600-len("my tier is gold")-1) + " "
	if got := run(t, fs, conv("< "+pad+"my tier is gold")); got["loyalty_tier"] != `"Gold"` {
		t.Errorf("named within 1,600 characters: %v", got)
	}
	if got := run(t, fs, conv("< "+pad+"x my tier is gold")); len(got) != 0 {
		t.Errorf("named past 1,600 characters: %v, want nothing", got)
	}
}

// TestRulesLongEnum: a field holding 80,000 values (saved before the
// bound of parley.MaxEnumValues) is read up to that bound; matching goes
// through an index of the values' first words, so its time per message
// (logged) no longer grows with the list.
func TestRulesLongEnum(t *testing.T) {
	values := make([]string, 80000)
	for i := range values {
		values[i] = fmt.Sprintf("Model %d", i)
	}
	fs := []extract.Field{{Key: "model", Name: "Model", Type: extract.String, Enum: values}}
	if got := run(t, fs, conv("< mine is model 42")); got["model"] != `"Model 42"` {
		t.Errorf("value 42: %v", got)
	}
	if got := run(t, fs, conv(fmt.Sprintf("< mine is model %d", parley.MaxEnumValues))); len(got) != 0 {
		t.Errorf("value %d, past the bound: %v, want nothing", parley.MaxEnumValues, got)
	}
	text := "< " + strings.Repeat("model one two three four model 7 ", 45)
	start := time.Now()
	const n = 20
	for range n {
		run(t, fs, conv(text))
	}
	t.Logf("a %d-character reply against 80,000 stored values: %v per message", len(text), time.Since(start)/n)
}
