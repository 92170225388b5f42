package store

import (
	"context"
	"fmt"
)

// sqliteAnalysisLimit bounds the rows SQLite's ANALYZE reads of each index
// (PRAGMA analysis_limit): a sample, as PostgreSQL's ANALYZE takes, so
// the statistics of a million contacts cost milliseconds of the one
// writer instead of a read of every index. SQLite's documentation
// suggests 100 – 1,000; the planner needs only rough row counts per key.
const sqliteAnalysisLimit = 1000

// AnalyzeContacts refreshes the planner's statistics of the contacts'
// tables (users, with their custom data, and user_history) after a bulk
// write such as an import (issue #34). Without it PostgreSQL plans a
// million imported users on the statistics of the empty brand they
// replaced until autovacuum comes round (never where it is off), and
// SQLite has none at all.
//
// PostgreSQL's ANALYZE samples 30,000 rows and takes a lock that writes
// do not wait for. SQLite's runs on the one writer, bounded by
// sqliteAnalysisLimit; its readers keep the statistics they loaded with
// the schema (measured: a reader connection that has run a query plans on
// the old statistics after another connection's ANALYZE), so the schema
// is changed and changed back, which makes each reader load the schema,
// and with it the new statistics, before its next statement.
func (db *DB) AnalyzeContacts(ctx context.Context) error {
	if db.engine == "postgres" {
		if _, err := db.write.ExecContext(ctx, `ANALYZE users, user_history`); err != nil {
			return fmt.Errorf("store: analyze contacts: %w", err)
		}
		return nil
	}
	conn, err := db.write.Conn(ctx)
	if err != nil {
		return fmt.Errorf("store: analyze contacts: %w", err)
	}
	defer conn.Close()
	for _, q := range []string{
		fmt.Sprintf(`PRAGMA analysis_limit = %d`, sqliteAnalysisLimit),
		`ANALYZE users`,
		`ANALYZE user_history`,
		`CREATE TABLE IF NOT EXISTS analyze_reload (x INTEGER)`,
		`DROP TABLE analyze_reload`,
	} {
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("store: analyze contacts: %s: %w", q, err)
		}
	}
	return nil
}
