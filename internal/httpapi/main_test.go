package httpapi_test

import (
	"testing"

	"github.com/parleyhq/parley/internal/apitest"
)

// TestMain runs every test here on SQLite and, when PARLEY_TEST_POSTGRES_URL
// is set, again on PostgreSQL.
func TestMain(m *testing.M) { apitest.Main(m) }
