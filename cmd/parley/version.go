package main

import (
	"fmt"
	"io"
	"runtime/debug"
	"strings"
)

// runVersion prints what this binary was built from, for bug reports.
func runVersion(stdout io.Writer) error {
	bi, _ := debug.ReadBuildInfo()
	_, err := io.WriteString(stdout, versionText(bi))
	return err
}

// versionText is the module version, the VCS revision (with its time, and
// whether the tree had changes) and the Go version of a build.
func versionText(bi *debug.BuildInfo) string {
	version, rev, goVersion := "(devel)", "unknown", ""
	var when string
	var modified bool
	if bi != nil {
		if bi.Main.Version != "" {
			version = bi.Main.Version
		}
		goVersion = bi.GoVersion
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "parley %s\nrevision %s", version, rev)
	if when != "" {
		fmt.Fprintf(&b, " (%s)", when)
	}
	if modified {
		b.WriteString(", modified")
	}
	b.WriteString("\n")
	if goVersion != "" {
		b.WriteString(goVersion + "\n")
	}
	return b.String()
}
