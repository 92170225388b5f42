package httpapi_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/apitest"
)

// TestImportAnalyzesWhatItLoaded: an import that writes at least
// Importer.AnalyzeAfter rows refreshes the planner's statistics of the
// contacts before it says completed; a smaller one leaves them alone
// (issue #34).
func TestImportAnalyzesWhatItLoaded(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	e.App.Importer.BatchSize = 4
	e.App.Importer.AnalyzeAfter = 10
	impStart(t, e)

	impWantCounts(t, impRun(t, e, e.A, impPhones(9, 2003000, nil, nil), nil), 9, 0, 0, 0)
	if n := analyzedUsers(t, e); n >= 0 {
		t.Fatalf("after an import of 9 rows (below 10) the users' statistics say %d rows; want none taken", n)
	}
	impWantCounts(t, impRun(t, e, e.A, impPhones(10, 2004000, nil, nil), nil), 10, 0, 0, 0)
	n := analyzedUsers(t, e)
	// Taken before the last batch (2 rows) commits: 9 + 8 rows at least.
	if n < 17 {
		t.Fatalf("after an import of 10 rows the users' statistics say %d rows; want them taken with ≥ 17 users", n)
	}
}

// analyzedUsers is how many rows of users the planner's statistics hold,
// or -1 when users was never analyzed: sqlite_stat1's row count of the
// table, or pg_stat_user_tables' last_analyze and the rows pg_class has
// from it.
func analyzedUsers(t *testing.T, e *apitest.Env) int64 {
	t.Helper()
	if apitest.Engine() == "postgres" {
		if impQueryInt(t, e, `SELECT count(*) FROM pg_stat_user_tables
			WHERE schemaname = current_schema() AND relname = 'users' AND last_analyze IS NOT NULL`) == 0 {
			return -1
		}
		return impQueryInt(t, e, `SELECT reltuples::bigint FROM pg_class
			WHERE oid = (quote_ident(current_schema()) || '.users')::regclass`)
	}
	if impQueryInt(t, e, `SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_stat1'`) == 0 ||
		impQueryInt(t, e, `SELECT count(*) FROM sqlite_stat1 WHERE tbl = 'users'`) == 0 {
		return -1
	}
	var stat string
	if err := e.App.DB.Writer().QueryRowContext(e.Ctx,
		`SELECT stat FROM sqlite_stat1 WHERE tbl = 'users' AND idx IS NOT NULL LIMIT 1`).Scan(&stat); err != nil {
		t.Fatal(err)
	}
	rows, err := strconv.ParseInt(strings.Fields(stat)[0], 10, 64)
	if err != nil {
		t.Fatalf("sqlite_stat1 %q: %v", stat, err)
	}
	return rows
}
