package httpapi_test

import (
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
)

// TestImportCellText: an import applies the API's text rules to every
// cell (#15). A control character rejects the row, checked before cells
// are trimmed, so "\t=1+1" is refused rather than becoming the formula
// =1+1; a cell neutralised by an export (' then =, +, -, @) reads as its
// value; any other leading ' is text.
func TestImportCellText(t *testing.T) {
	t.Parallel()
	e := apitest.New(t)
	impStart(t, e)
	expFields(t, e, e.BrandA.ID)
	imp := impRun(t, e, e.A, "phone_number,first_name,last_name,custom_note,custom_visits\n"+
		"+14155550001,'=1+1,'Neil,'-x,'-5\n"+
		"+14155550002,\"\t=1+1\",Lee,,\n"+
		"+14155550003,Ann,Lee,\"a\tb\",\n"+
		"+14155550004,Ann,\"Lee\x1b\",,\n"+
		"+14155550005, Bo ,x,,-7\n", nil)
	impWantCounts(t, imp, 2, 0, 0, 3)
	impWantErrors(t, impErrors(t, e, e.A, imp.ID), [][3]string{
		{"3", "first_name", parley.EValidation},
		{"4", "custom_note", parley.EInvalidCustomData},
		{"5", "last_name", parley.EValidation},
	})
	u := impUser(t, e, e.A, "+14155550001")
	if *u.FirstName != "=1+1" || *u.LastName != "'Neil" || string(u.CustomData) != `{"note":"-x","visits":-5}` {
		t.Errorf("neutralised cells read as %q %q %s, want =1+1 'Neil {\"note\":\"-x\",\"visits\":-5}", *u.FirstName, *u.LastName, u.CustomData)
	}
	if u := impUser(t, e, e.A, "+14155550005"); *u.FirstName != "Bo" || string(u.CustomData) != `{"visits":-7}` {
		t.Errorf("spaces trimmed, negative number: %q %s", *u.FirstName, u.CustomData)
	}
	for _, phone := range []string{"+14155550002", "+14155550003", "+14155550004"} {
		if _, err := e.A.FindUserByPhone(e.Ctx, phone); !isAPIError(err, 404, parley.EUserNotFound) {
			t.Errorf("a refused row stored %s: %v", phone, err)
		}
	}
}
