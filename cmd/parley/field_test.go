package main

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"
)

// TestFieldAutoCollection: `parley field create` and `parley field update`
// set is_auto_collected, extraction_prompt and include_in_ai_prompt (#19,
// D20); update changes only the flags given; the service's rules refuse a
// bad prompt; `parley brand settings` sets extract_when_opted_out.
func TestFieldAutoCollection(t *testing.T) {
	e := env(map[string]string{"PARLEY_DATA_DIR": t.TempDir()})
	var brand struct {
		ID int64 `json:"id"`
	}
	json.Unmarshal([]byte(mustRun(t, e, "brand", "create", "--name", "Acme", "--phone", "+14155550100", "--json")), &brand)
	id := strconv.FormatInt(brand.ID, 10)

	var f map[string]any
	json.Unmarshal([]byte(mustRun(t, e, "field", "create", "--brand", id, "--name", "Size", "--type", "STRING", "--enum", "S,M,L",
		"--auto-collected", "--extraction-prompt", "Clothing size", "--include-in-ai-prompt", "--emphasize-current", "--json")), &f)
	if f["is_auto_collected"] != true || f["extraction_prompt"] != "Clothing size" || f["include_in_ai_prompt"] != true ||
		f["is_emphasize_current"] != true || f["is_emphasize_personal"] != false {
		t.Fatalf("field create: %v", f)
	}
	fid := strconv.FormatInt(int64(f["id"].(float64)), 10)

	json.Unmarshal([]byte(mustRun(t, e, "field", "update", fid, "--brand", id, "--auto-collected=false", "--extraction-prompt", "Size, S to L", "--json")), &f)
	if f["is_auto_collected"] != false || f["extraction_prompt"] != "Size, S to L" || f["include_in_ai_prompt"] != true ||
		f["is_emphasize_current"] != true {
		t.Errorf("field update: %v, want only the flags given changed", f)
	}
	if _, err := runCmd(t, e, "field", "update", fid, "--brand", id, "--extraction-prompt", strings.Repeat("x", 2001)); err == nil ||
		!strings.Contains(err.Error(), "extraction_prompt") {
		t.Errorf("field update with a 2,001-character prompt: %v, want refused on extraction_prompt", err)
	}
	if _, err := runCmd(t, e, "field", "update", fid, "--brand", id, "--extraction-prompt", "a\x00b"); err == nil ||
		!strings.Contains(err.Error(), "extraction_prompt") {
		t.Errorf("field update with NUL in the prompt: %v, want refused", err)
	}
	if _, err := runCmd(t, e, "field", "update", "999", "--brand", id, "--auto-collected"); err == nil {
		t.Error("field update of no field succeeded")
	}
	out := mustRun(t, e, "field", "list", "--brand", id, "--json")
	if !strings.Contains(out, `"extraction_prompt": "Size, S to L"`) || !strings.Contains(out, `"is_auto_collected": false`) {
		t.Errorf("field list after refused updates: %s", out)
	}

	out = mustRun(t, e, "brand", "settings", id, "--set", `{"extract_when_opted_out": true}`)
	if !strings.Contains(out, `"extract_when_opted_out": true`) {
		t.Errorf("brand settings --set extract_when_opted_out: %s", out)
	}
}
