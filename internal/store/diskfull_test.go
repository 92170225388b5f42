package store

import (
	"fmt"
	"io/fs"
	"net"
	"os"
	"syscall"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestFilesystemErrorsAreNotUnavailable (issue #31 items 14, 15): a
// file's error is no sign the database is unreachable — syscall.Errno
// has Timeout and Temporary, so it passed for a net.Error — and a full
// disk is told apart from the other causes.
func TestFilesystemErrorsAreNotUnavailable(t *testing.T) {
	for _, err := range []error{
		&os.LinkError{Op: "rename", Old: "/tmp/a", New: "/data/a", Err: syscall.EXDEV},
		&fs.PathError{Op: "write", Path: "/data/media/x", Err: syscall.ENOSPC},
		fmt.Errorf("blob: %w", &fs.PathError{Op: "open", Path: "/data", Err: syscall.EACCES}),
	} {
		if IsUnavailable(err) {
			t.Errorf("IsUnavailable(%v) = true, want false: a filesystem error, not the database's", err)
		}
	}
	// A network error still is one.
	if op := (&net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}); !IsUnavailable(op) {
		t.Errorf("IsUnavailable(%v) = false, want true", op)
	}
	for _, err := range []error{
		&fs.PathError{Op: "write", Path: "/data/media/x", Err: syscall.ENOSPC},
		fmt.Errorf("w: %w", syscall.EDQUOT),
		&pgconn.PgError{Code: "53100"},
	} {
		if !IsStorageFull(err) {
			t.Errorf("IsStorageFull(%v) = false, want true", err)
		}
	}
	for _, err := range []error{nil, &os.LinkError{Op: "rename", Err: syscall.EXDEV}, &pgconn.PgError{Code: "53300"}} {
		if IsStorageFull(err) {
			t.Errorf("IsStorageFull(%v) = true, want false", err)
		}
	}
}
