package store_test

import (
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/store"
)

// TestSegmentScale measures, never asserts: with SEGPERF_N=1000000 it
// seeds that many users with custom data and activity, then logs the time
// of a count of 3 criteria in 2 groups (a contact, a custom-data and an
// activity field), of members pages, and the engine's plan (issue #16).
// Run it alone: SEGPERF_N=1000000 go test ./internal/store -run TestSegmentScale -v
func TestSegmentScale(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("SEGPERF_N"))
	if n == 0 {
		t.Skip()
	}
	db := mustOpenDB(t)
	ctx := t.Context()
	brand := mustBrand(t, db)
	mustBrand(t, db)
	var q string
	if apitest.Engine() == "postgres" {
		q = `INSERT INTO users (brand_id, phone_number, first_name, state_code, custom_data, is_deleted, date_created, date_last_updated, inbound_count, last_inbound_at)
		SELECT ?, '+1' || (2000000000 + x), 'n' || x, CASE WHEN x % 7 = 0 THEN 'MA' ELSE 'CA' END,
		json_build_object('tier', CASE WHEN x % 5 = 0 THEN 'gold' ELSE 'silver' END, 'age', x % 80, 'tags', json_build_array('a', 'b'), 'note', repeat('x', 100)),
		FALSE, 1700000000000000 + x, 1700000000000000, x % 4, CASE WHEN x % 4 > 0 THEN 1766000000000000 - x * 1000000 END
		FROM generate_series(1::bigint, ?) x`
	} else {
		q = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < ?)
		INSERT INTO users (brand_id, phone_number, first_name, state_code, custom_data, is_deleted, date_created, date_last_updated, inbound_count, last_inbound_at)
		SELECT ?, '+1' || (2000000000 + x), 'n' || x, CASE WHEN x % 7 = 0 THEN 'MA' ELSE 'CA' END,
		json_object('tier', CASE WHEN x % 5 = 0 THEN 'gold' ELSE 'silver' END, 'age', x % 80, 'tags', json_array('a', 'b'), 'note', printf('%.100c', 'x')),
		0, 1700000000000000 + x, 1700000000000000, x % 4, CASE WHEN x % 4 > 0 THEN 1766000000000000 - x * 1000000 END
		FROM c`
	}
	start := time.Now()
	var err error
	if apitest.Engine() == "postgres" {
		err = db.Exec(ctx, q, brand, n)
		db.Exec(ctx, `ANALYZE users`)
	} else {
		err = db.Exec(ctx, q, n, brand)
		db.Exec(ctx, `ANALYZE`)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("seeded %d in %v", n, time.Since(start))
	v := "MA"
	tier := "gold"
	days := int64(30)
	age := int64(40)
	crit := []parley.SegmentCriterion{
		{Attribute: parley.SegmentAttribute{DimensionType: 1, FieldName: "state_code", FieldType: 3}, OperatorType: 1, StrFieldValue: &v, AndGroupNum: 0},
		{Attribute: parley.SegmentAttribute{DimensionType: 2, FieldName: "tier", FieldType: 3}, OperatorType: 1, StrFieldValue: &tier, AndGroupNum: 0},
		{Attribute: parley.SegmentAttribute{DimensionType: 3, FieldName: "last_inbound_at", FieldType: 6}, OperatorType: 12, IntFieldValue: &days, AndGroupNum: 1},
	}
	crit2 := []parley.SegmentCriterion{
		{Attribute: parley.SegmentAttribute{DimensionType: 2, FieldName: "age", FieldType: 1}, OperatorType: 3, IntFieldValue: &age, AndGroupNum: 0},
	}
	db.Now = func() time.Time { return time.UnixMicro(1766000000000000) }
	for _, c := range [][]parley.SegmentCriterion{crit, crit2} {
		a := store.Audience{Criteria: c}
		sqlText, args, _ := db.AudienceSQL(ctx, brand, a)
		t.Logf("SQL: %s %v", sqlText, args)
		for i := range 5 {
			s := time.Now()
			cnt, err := db.CountAudience(ctx, brand, a)
			t.Logf("count %d in %v (%v)", cnt, time.Since(s), err)
			_ = i
		}
		s := time.Now()
		us, err := db.AudienceUsers(ctx, brand, a, 0, 100)
		t.Logf("page of %d in %v (%v)", len(us), time.Since(s), err)
		s = time.Now()
		us, err = db.AudienceUsers(ctx, brand, a, int64(n/2), 100)
		t.Logf("mid page of %d in %v (%v)", len(us), time.Since(s), err)
		t.Logf("plan:\n%s", db.Plan(ctx, sqlText, args))
	}
}
