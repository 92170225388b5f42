package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestEmbedsTZData: the binary carries the time zone database, so the IANA
// zones of users' ZIPs (D17) load wherever it runs, with or without
// /usr/share/zoneinfo. This machine has one, so the test asks the build.
func TestEmbedsTZData(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", ".").Output()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains("\n"+string(out), "\ntime/tzdata\n") {
		t.Error("cmd/parley does not import time/tzdata")
	}
}
