package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/parleyhq/parley/internal/apitest"
)

// TestImportDataDirOnOtherFilesystem (issue #31 item 14): parley import
// with the data directory on another filesystem than os.TempDir (a tmpfs,
// as a container volume would be) succeeds: the file goes to the media
// store, whose temporary files are made beside their destination, not
// renamed across devices.
func TestImportDataDirOnOtherFilesystem(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			if engine == "postgres" && os.Getenv(apitest.EnvPostgresURL) == "" {
				t.Skipf("%s is not set", apitest.EnvPostgresURL)
			}
			dir := apitest.MountTmpfs(t, "32m")
			m, _ := importEnv(t, engine == "postgres")
			m["PARLEY_DATA_DIR"] = dir
			if engine == "sqlite" {
				m["PARLEY_DB"] = "sqlite:" + filepath.Join(dir, "parley.db")
			}
			e := env(m)
			out := mustRun(t, e, "brand", "create", "--name", "Acme", "--phone", "+14155550100", "--json")
			var b struct{ ID int64 }
			if err := json.Unmarshal([]byte(out), &b); err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "users.csv")
			os.WriteFile(file, []byte("phone_number,first_name\n+14152000001,Ann\n+14152000002,Bob\n"), 0o600)
			var stdout, errOut bytes.Buffer
			if err := run(t.Context(), []string{"import", file, "--brand", strconv.FormatInt(b.ID, 10)}, e, &stdout, &errOut); err != nil {
				t.Fatalf("import with the data directory on another filesystem: %v\n%s", err, errOut.String())
			}
			if got, want := stdout.String(), "Import 1 completed: 2 rows: 2 created, 0 updated, 0 skipped, 0 failed\n"; got != want {
				t.Errorf("stdout = %q, want %q", got, want)
			}
		})
	}
}
