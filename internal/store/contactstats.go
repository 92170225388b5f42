package store

import (
	"context"
	"fmt"
)

// AnalyzeContacts refreshes the planner's statistics of the contacts'
// tables (users, with their custom data, and user_history) after a bulk
// write such as an import (issue #34). Without it PostgreSQL plans a
// million imported users on the statistics of the empty brand they
// replaced until autovacuum comes round (never where it is off), and
// SQLite has none at all.
//
// PostgreSQL's ANALYZE samples 30,000 rows and takes a lock that writes
// do not wait for. SQLite's reads every entry of users' indexes on the
// one writer (1.8 s at 1,000,000 contacts on a loaded machine, once per
// large import): a sample (PRAGMA analysis_limit) cannot be used, since
// it caps the rows per key it reports at about its limit (measured: a
// brand of 1,000,000 contacts recorded as 1,001), which turns the count's
// read of the brand's id range into an index walk with a seek per row,
// 2 – 3× slower. user_history is not analyzed there: no segment reads
// it, and it is three times larger. SQLite's reader connections keep the statistics
// they loaded when they opened (measured: a reader that had planned a
// count kept its plan after the ANALYZE, even with the schema changed and
// changed back, while a new connection took the better one), so the
// reader pool's idle connections are closed: the next reads open ones
// that load the new statistics. A reader busy meanwhile keeps the old
// ones until it closes.
func (db *DB) AnalyzeContacts(ctx context.Context) error {
	if db.engine == "postgres" {
		if _, err := db.write.ExecContext(ctx, `ANALYZE users, user_history`); err != nil {
			return fmt.Errorf("store: analyze contacts: %w", err)
		}
		return nil
	}
	if _, err := db.write.ExecContext(ctx, `ANALYZE users`); err != nil {
		return fmt.Errorf("store: analyze contacts: %w", err)
	}
	db.read.SetMaxIdleConns(0)
	db.read.SetMaxIdleConns(db.readConns)
	return nil
}
