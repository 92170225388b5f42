package console_test

import (
	"testing"

	"github.com/parleyhq/parley/internal/apitest"
)

// TestMain runs every test on SQLite and, with PARLEY_TEST_POSTGRES_URL
// set, again on PostgreSQL.
func TestMain(m *testing.M) { apitest.Main(m) }
