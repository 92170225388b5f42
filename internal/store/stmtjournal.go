package store

import (
	"errors"
	"fmt"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// stmtJournalSpill is how large a statement journal SQLite keeps in
// memory before it moves it to a temporary file (issue #35). Each
// statement of a write transaction copies the pages it changes to one
// first, so that it can be undone alone. SQLite's default is 64 KiB:
// less than one contact's insert with its nine indexes, so every create
// of a group commit moved its journal to a file, two pwrite calls a page
// (29 % of the server's CPU in keyed creates; a campaign's drain 12 %
// faster without). 16 MiB holds the journal of any statement the API or
// a campaign's batches run; a bulk statement larger than that (a segment
// of a million contacts cleared, say) still goes to a file, so the
// memory this takes stays bounded. Only the one writer connection keeps
// statement journals: readers write nothing.
const stmtJournalSpill = 16 << 20

// stmtJournalErr is why SQLite refused the setting; openSQLite reports
// it. SQLite takes it only before its first connection, so it is set as
// the package initializes.
var stmtJournalErr = setStmtJournalSpill(stmtJournalSpill)

func setStmtJournalSpill(n int32) error {
	tls := libc.NewTLS()
	defer tls.Close()
	va := libc.NewVaList(n)
	if va == 0 {
		return errors.New("store: sqlite3_config: out of memory")
	}
	defer libc.Xfree(tls, va)
	if rc := sqlite3.Xsqlite3_config(tls, sqlite3.SQLITE_CONFIG_STMTJRNL_SPILL, va); rc != sqlite3.SQLITE_OK {
		return fmt.Errorf("store: sqlite3_config(SQLITE_CONFIG_STMTJRNL_SPILL) returned %d", rc)
	}
	return nil
}
