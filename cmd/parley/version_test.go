package main

import (
	"io"
	"net/http"
	"runtime/debug"
	"strings"
	"testing"
)

// `parley version` and `parley --version` print the build's module
// version and VCS revision (DESIGN.md), as debug.ReadBuildInfo gives them.
func TestVersionCommand(t *testing.T) {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		t.Skip("no build info in this binary")
	}
	want := versionText(bi)
	for _, arg := range []string{"version", "--version", "-version"} {
		out, err := runCmd(t, env(nil), arg)
		if err != nil || out != want {
			t.Errorf("parley %s = %q, %v; want %q", arg, out, err, want)
		}
	}
}

func TestVersionText(t *testing.T) {
	for _, tc := range []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"Release", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "v1.2.3"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789abcdef"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"},
				{Key: "vcs.modified", Value: "false"}}},
			"parley v1.2.3\nrevision 0123456789abcdef (2026-01-02T03:04:05Z)\ngo1.26.8\n"},
		{"Modified", &debug.BuildInfo{GoVersion: "go1.26.8", Main: debug.Module{Version: "(devel)"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}},
			"parley (devel)\nrevision abc, modified\ngo1.26.8\n"},
		{"NoVCS", &debug.BuildInfo{GoVersion: "go1.26.8"},
			"parley (devel)\nrevision unknown\ngo1.26.8\n"},
		{"NoBuildInfo", nil, "parley (devel)\nrevision unknown\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := versionText(tc.bi); got != tc.want {
				t.Errorf("versionText = %q, want %q", got, tc.want)
			}
		})
	}
}

// The version is for operators at a shell: /readyz, which anyone who can
// reach the port may call, does not reveal it.
func TestReadyzWithoutVersion(t *testing.T) {
	dir := t.TempDir()
	stdout, _ := startServe(t, dir)
	resp := httpGet(t, serveURL(t, stdout.String())+"/readyz")
	if resp != `{"status":"ready"}` {
		t.Errorf("/readyz = %q, want exactly {\"status\":\"ready\"}", resp)
	}
	bi, _ := debug.ReadBuildInfo()
	if bi != nil && bi.Main.Version != "" && strings.Contains(resp, bi.Main.Version) {
		t.Errorf("/readyz shows the version: %s", resp)
	}
}

// httpGet returns the body of a 200 answer to GET url, without its final newline.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("GET %s = %d %s, %v", url, resp.StatusCode, b, err)
	}
	return strings.TrimSuffix(string(b), "\n")
}
