package store_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

func mustImport(t *testing.T, db *store.DB, brandID int64) *store.ImportRecord {
	t.Helper()
	consent := true
	r := &store.ImportRecord{Import: parley.Import{BrandID: brandID, Status: parley.ImportQueued, FileName: "users.csv",
		OnDuplicate: parley.OnDuplicateUpdate, MessagingConsentDefault: &consent, TotalRows: 10},
		BlobKey: "imports/1/x.csv", Delimiter: ";", Columns: []string{"phone_number", "custom_Tier"}, NextOffset: 30, NextLine: 2}
	if err := db.WithTx(t.Context(), func(tx *store.Tx) error { return tx.InsertImport(t.Context(), r) }); err != nil {
		t.Fatal(err)
	}
	return r
}

func TestImportRecordRoundTrip(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	r := mustImport(t, db, brand)
	got, err := db.FindImport(t.Context(), brand, r.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.FileName != "users.csv" || got.OnDuplicate != "update" || got.MessagingConsentDefault == nil || !*got.MessagingConsentDefault ||
		got.Delimiter != ";" || !slices.Equal(got.Columns, r.Columns) || got.NextOffset != 30 || got.NextLine != 2 ||
		got.TotalRows != 10 || got.Status != parley.ImportQueued || got.Error != nil || got.DateCompleted != nil ||
		!got.DateCreated.Equal(r.DateCreated.Time) {
		t.Errorf("stored %+v, read back %+v", r, got)
	}
	if _, err := db.FindImport(t.Context(), mustBrand(t, db), r.ID); err != store.ErrNotFound {
		t.Errorf("another brand's import: %v, want ErrNotFound", err)
	}
}

// A batch commits only from where the import stands, and only while it
// has not ended: two runs of one import cannot both commit a batch.
func TestClaimImportBatch(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	r := mustImport(t, db, brand)
	claim := func(offset int64) bool {
		var ok bool
		err := db.WithTx(t.Context(), func(tx *store.Tx) error {
			var err error
			ok, err = tx.ClaimImportBatch(t.Context(), brand, r.ID, offset)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return ok
	}
	if claim(0) {
		t.Error("claimed a batch at an offset the import is not at")
	}
	if !claim(30) {
		t.Fatal("could not claim the batch at the import's offset")
	}
	if got, _ := db.FindImport(t.Context(), brand, r.ID); got.Status != parley.ImportRunning {
		t.Errorf("status after a claim = %s, want running", got.Status)
	}
	r.NextOffset, r.ProcessedRows, r.Created = 90, 3, 3
	r.Status = parley.ImportRunning
	if err := db.WithTx(t.Context(), func(tx *store.Tx) error { return tx.SaveImportProgress(t.Context(), r) }); err != nil {
		t.Fatal(err)
	}
	if claim(30) {
		t.Error("a second run claimed the batch the first has committed")
	}
	if !claim(90) {
		t.Error("could not claim the next batch")
	}
	fail := func() bool {
		var ok bool
		db.WithTx(t.Context(), func(tx *store.Tx) error {
			var err error
			ok, err = tx.FailImport(t.Context(), brand, r.ID, "broken")
			return err
		})
		return ok
	}
	if !fail() {
		t.Fatal("could not fail a running import")
	}
	if claim(90) {
		t.Error("claimed a batch of a failed import")
	}
	if fail() {
		t.Error("failed an import that had already ended")
	}
	got, _ := db.FindImport(t.Context(), brand, r.ID)
	if got.Status != parley.ImportFailed || got.Error == nil || *got.Error != "broken" || got.DateCompleted == nil || got.Created != 3 {
		t.Errorf("failed import = %+v", got)
	}
}

func TestClaimImportPhones(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	a, b := mustImport(t, db, brand), mustImport(t, db, brand)
	claim := func(id int64, phones []string, lines []int64) map[string]int64 {
		var taken map[string]int64
		err := db.WithTx(t.Context(), func(tx *store.Tx) error {
			var err error
			taken, err = tx.ClaimImportPhones(t.Context(), brand, id, phones, lines)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return taken
	}
	if got := claim(a.ID, []string{"+1", "+2"}, []int64{2, 3}); len(got) != 0 {
		t.Errorf("first claims: taken %v", got)
	}
	if got := claim(a.ID, []string{"+2", "+3"}, []int64{7, 8}); len(got) != 1 || got["+2"] != 3 {
		t.Errorf("taken = %v, want +2 held by line 3", got)
	}
	if got := claim(b.ID, []string{"+2"}, []int64{2}); len(got) != 0 {
		t.Errorf("another import's claim: taken %v, want none (claims are per import)", got)
	}
	if err := db.WithTx(t.Context(), func(tx *store.Tx) error { return tx.DeleteImportPhones(t.Context(), brand, a.ID) }); err != nil {
		t.Fatal(err)
	}
	if got := claim(a.ID, []string{"+2"}, []int64{9}); len(got) != 0 {
		t.Errorf("after DeleteImportPhones: taken %v", got)
	}
}

// InsertUsers stores a batch in one go and leaves out, with ID 0, a user
// whose number a live user of the brand has (D5); it finds them after.
func TestInsertUsersLeavesLiveNumbers(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	live := &parley.User{BrandID: brand, PhoneNumber: "+14152000001"}
	if err := insertUser(t, db, live); err != nil {
		t.Fatal(err)
	}
	deleted := &parley.User{BrandID: brand, PhoneNumber: "+14152000002"}
	insertUser(t, db, deleted)
	deleted.IsDeleted = true
	db.WithTx(t.Context(), func(tx *store.Tx) error { return tx.UpdateUser(t.Context(), deleted) })

	name := "Ann"
	batch := []*parley.User{{BrandID: brand, PhoneNumber: "+14152000001", FirstName: &name},
		{BrandID: brand, PhoneNumber: "+14152000002", FirstName: &name}, {BrandID: brand, PhoneNumber: "+14152000003"}}
	var found map[string]*parley.User
	err := db.WithTx(t.Context(), func(tx *store.Tx) error {
		if err := tx.InsertUsers(t.Context(), batch); err != nil {
			return err
		}
		var err error
		found, err = tx.FindUsersByPhones(t.Context(), brand, []string{"+14152000001", "+14152000002", "+14152000009"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if batch[0].ID != 0 || batch[1].ID == 0 || batch[2].ID == 0 || batch[1].ID == deleted.ID {
		t.Errorf("ids %d %d %d: want 0 for the live number, new ids for the deleted one's and the new one",
			batch[0].ID, batch[1].ID, batch[2].ID)
	}
	if len(found) != 2 || found["+14152000001"].ID != live.ID || found["+14152000002"].ID != batch[1].ID {
		t.Errorf("FindUsersByPhones = %v, want the live users only", found)
	}
	u, _ := db.FindUserByID(t.Context(), brand, batch[1].ID)
	if u == nil || u.FirstName == nil || *u.FirstName != "Ann" {
		t.Errorf("inserted user reads back as %+v", u)
	}
}

func TestImportErrorsAndUsersInOrder(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand, other := mustBrand(t, db), mustBrand(t, db)
	r := mustImport(t, db, brand)
	errs := make([]parley.ImportError, 1200) // more than one statement's worth
	for i := range errs {
		errs[i] = parley.ImportError{Line: int64(i + 2), Field: "email_address", Type: parley.EValidation, Msg: fmt.Sprint("bad ", i)}
	}
	users := make([]*parley.User, 2100) // more than a page of EachUser
	for i := range users {
		users[i] = &parley.User{BrandID: brand, PhoneNumber: fmt.Sprintf("+1415%07d", 2000000+i)}
	}
	err := db.WithTx(t.Context(), func(tx *store.Tx) error {
		if err := tx.InsertImportErrors(t.Context(), brand, r.ID, errs); err != nil {
			return err
		}
		return tx.InsertUsers(t.Context(), users)
	})
	if err != nil {
		t.Fatal(err)
	}
	var lines []int64
	db.EachImportError(t.Context(), brand, r.ID, func(e *parley.ImportError) error {
		lines = append(lines, e.Line)
		return nil
	})
	if len(lines) != len(errs) || !slices.IsSorted(lines) {
		t.Errorf("read %d errors (sorted %v), want %d in file order", len(lines), slices.IsSorted(lines), len(errs))
	}
	n := 0
	db.EachImportError(t.Context(), other, r.ID, func(*parley.ImportError) error { n++; return nil })
	if n != 0 {
		t.Errorf("another brand reads %d of the import's errors", n)
	}

	users[5].IsDeleted = true
	db.WithTx(t.Context(), func(tx *store.Tx) error { return tx.UpdateUser(t.Context(), users[5]) })
	var ids []int64
	if err := db.EachUser(t.Context(), brand, func(u *parley.User) error { ids = append(ids, u.ID); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(users)-1 || !slices.IsSorted(ids) || slices.Contains(ids, users[5].ID) {
		t.Errorf("EachUser gave %d users (sorted %v), want %d live ones by id", len(ids), slices.IsSorted(ids), len(users)-1)
	}
}

func TestListImports(t *testing.T) {
	t.Parallel()
	db := mustOpenDB(t)
	brand := mustBrand(t, db)
	var ids []int64
	for range 3 {
		ids = append(ids, mustImport(t, db, brand).ID)
	}
	page, err := db.ListImports(t.Context(), brand, 0, 2)
	if err != nil || len(page) != 2 || page[0].ID != ids[2] || page[1].ID != ids[1] {
		t.Fatalf("first page %v %v", page, err)
	}
	page, _ = db.ListImports(t.Context(), brand, ids[1], 2)
	if len(page) != 1 || page[0].ID != ids[0] {
		t.Errorf("second page %v", page)
	}
}
