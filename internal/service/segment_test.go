package service_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// TestMain runs these tests on SQLite and, when PARLEY_TEST_POSTGRES_URL
// is set, on PostgreSQL.
func TestMain(m *testing.M) { apitest.Main(m) }

func tierIs(v string) parley.SegmentCriterion {
	return parley.SegmentCriterion{Attribute: parley.SegmentAttribute{DimensionType: 2, FieldName: "tier", FieldType: 3},
		OperatorType: parley.OpEquals, StrFieldValue: &v}
}

func memberOf(id int64) parley.SegmentCriterion {
	return parley.SegmentCriterion{Attribute: parley.SegmentAttribute{DimensionType: 4, FieldType: 1},
		OperatorType: parley.OpEquals, IntFieldValue: &id}
}

func wantErr(t *testing.T, err error, code, field string) {
	t.Helper()
	e, ok := err.(*parley.Error)
	if !ok || e.Code != code || e.Field != field {
		t.Errorf("err = %#v, want %s on %q", err, code, field)
	}
}

// TestSegmentService: criteria are checked against the brand before use,
// and count, users and preview answer from one query each (D14, D15).
func TestSegmentService(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	svc, ctx := e.App.Service, e.Ctx
	brand, other := e.BrandA.ID, e.BrandB.ID
	for _, b := range []int64{brand, other} {
		if err := svc.CreateCustomField(ctx, &parley.CustomField{BrandID: b, FieldName: "Tier", CustomDataType: parley.CustomString}); err != nil {
			t.Fatal(err)
		}
	}
	var gold []int64
	for i := range 12 {
		tier := "gold"
		if i%4 == 3 {
			tier = "silver"
		}
		u, err := svc.CreateUser(ctx, parley.Origin{}, brand, parley.UserCreate{PhoneNumber: parley.Some(fmt.Sprintf("+1415555%04d", 100+i)),
			UserFields: parley.UserFields{CustomData: parley.Some(json.RawMessage(`{"tier":"` + tier + `"}`))}})
		if err != nil {
			t.Fatal(err)
		}
		if tier == "gold" {
			gold = append(gold, u.ID)
		}
	}
	seg := &parley.Segment{BrandID: brand, Name: "Gold", Type: parley.SegmentStandard, Criteria: []parley.SegmentCriterion{tierIs("GOLD")}}
	if _, err := svc.CreateSegment(ctx, parley.Origin{}, seg.BrandID, seg); err != nil {
		t.Fatal(err)
	}
	theirs := &parley.Segment{BrandID: other, Name: "Theirs", Type: parley.SegmentStandard}
	if _, err := svc.CreateSegment(ctx, parley.Origin{}, theirs.BrandID, theirs); err != nil {
		t.Fatal(err)
	}

	t.Run("Count", func(t *testing.T) {
		c, err := svc.CountSegment(ctx, brand, seg.ID)
		if err != nil || c.Count != int64(len(gold)) || c.SegmentID != seg.ID || c.ComputedAt.IsZero() {
			t.Errorf("count = %+v, %v; want %d", c, err, len(gold))
		}
	})
	t.Run("UsersPagesByID", func(t *testing.T) {
		var got []int64
		cursor := ""
		for range 10 {
			page, next, err := svc.SegmentUsers(ctx, brand, seg.ID, 4, cursor)
			if err != nil {
				t.Fatal(err)
			}
			for _, u := range page {
				got = append(got, u.ID)
			}
			if next == "" {
				break
			}
			cursor = next
		}
		if !slices.Equal(got, gold) {
			t.Errorf("users %v, want %v by id", got, gold)
		}
		_, _, err := svc.SegmentUsers(ctx, brand, seg.ID, 4, "nope")
		wantErr(t, err, parley.EValidation, "cursor")
		_, _, err = svc.SegmentUsers(ctx, brand, seg.ID, 101, "")
		wantErr(t, err, parley.EValidation, "limit")
	})
	t.Run("PreviewSamplesTenByID", func(t *testing.T) {
		p, err := svc.PreviewSegment(ctx, brand, nil)
		if err != nil || p.Count != 12 || len(p.Sample) != parley.PreviewSampleSize {
			t.Fatalf("preview = %+v, %v; want 12 and a sample of 10", p, err)
		}
		if !slices.IsSortedFunc(p.Sample, func(a, b *parley.User) int { return int(a.ID - b.ID) }) {
			t.Error("sample not by id")
		}
		p, err = svc.PreviewSegment(ctx, brand, []parley.SegmentCriterion{memberOf(seg.ID)})
		if err != nil || p.Count != int64(len(gold)) {
			t.Errorf("preview of membership = %+v, %v", p, err)
		}
	})
	t.Run("SegmentOfNoneOrOtherBrandIsNotFound", func(t *testing.T) {
		for _, id := range []int64{theirs.ID, 9999} {
			_, err := svc.CountSegment(ctx, brand, id)
			wantErr(t, err, parley.ESegmentNotFound, "")
			_, _, err = svc.SegmentUsers(ctx, brand, id, 0, "")
			wantErr(t, err, parley.ESegmentNotFound, "")
		}
	})
	t.Run("BadCriteriaNamesTheIndex", func(t *testing.T) {
		gt := tierIs("x")
		gt.OperatorType = parley.OpGreaterThan
		_, err := svc.PreviewSegment(ctx, brand, []parley.SegmentCriterion{tierIs("a"), gt})
		wantErr(t, err, parley.EValidation, "criteria[1].operator_type")
		_, err = svc.PreviewSegment(ctx, brand, []parley.SegmentCriterion{memberOf(theirs.ID)})
		wantErr(t, err, parley.EValidation, "criteria[0].int_field_value")
		_, err = svc.CreateSegment(ctx, parley.Origin{}, brand, &parley.Segment{Name: "Bad", Criteria: []parley.SegmentCriterion{memberOf(theirs.ID)}})
		wantErr(t, err, parley.EValidation, "criteria[0].int_field_value")
		segs, _ := svc.AllSegments(ctx, brand)
		if len(segs) != 1 {
			t.Errorf("a refused segment was stored: %d segments", len(segs))
		}
	})
	t.Run("FieldDeletedAfterSaveIsValidationError", func(t *testing.T) {
		fields, err := svc.ListCustomFields(ctx, other)
		if err != nil {
			t.Fatal(err)
		}
		s := &parley.Segment{BrandID: other, Name: "Tiered", Criteria: []parley.SegmentCriterion{tierIs("gold")}}
		if _, err := svc.CreateSegment(ctx, parley.Origin{}, s.BrandID, s); err != nil {
			t.Fatal(err)
		}
		if err := svc.DeleteCustomField(ctx, other, fields[0].ID); err != nil {
			t.Fatal(err)
		}
		_, err = svc.CountSegment(ctx, other, s.ID)
		wantErr(t, err, parley.EValidation, "criteria[0].attribute.field_name")
	})
	t.Run("PointInTimeFrozenOnCreate", func(t *testing.T) {
		pit := &parley.Segment{BrandID: brand, Name: "Gold then", Type: parley.SegmentPointInTime,
			Criteria: []parley.SegmentCriterion{tierIs("gold")}}
		if _, err := svc.CreateSegment(ctx, parley.Origin{}, pit.BrandID, pit); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.UpdateUser(ctx, parley.Origin{}, brand, gold[0], parley.UserUpdate{UserFields: parley.UserFields{
			CustomData: parley.Some(json.RawMessage(`{"tier":"silver"}`))}}); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.DeleteUser(ctx, parley.Origin{}, brand, gold[1]); err != nil {
			t.Fatal(err)
		}
		c, err := svc.CountSegment(ctx, brand, pit.ID)
		if err != nil || c.Count != int64(len(gold)-1) {
			t.Errorf("frozen count = %+v, %v; want %d (the changed user stays, the deleted one drops out)", c, err, len(gold)-1)
		}
		c, err = svc.CountSegment(ctx, brand, seg.ID)
		if err != nil || c.Count != int64(len(gold)-2) {
			t.Errorf("standard count = %+v, %v; want %d", c, err, len(gold)-2)
		}
	})
}
