package console_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserImport: in Chromium, at 1280 px and at phone width, an admin
// imports a list with national numbers and its own column names through
// the column-mapping step, watches it finish, sees the rejected row with
// its error, downloads the rejected-rows file, fixes it and uploads it
// again as it is, and the fixed contact is imported (D22, issue #32).
func TestBrowserImport(t *testing.T) {
	t.Parallel()
	for _, width := range []string{"desktop", "phone"} {
		t.Run(width, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			b := newBrowser(t, e.Server.URL)
			if width == "phone" {
				b.Phone()
			}
			dir := t.TempDir()
			file := filepath.Join(dir, "spring list.csv")
			os.WriteFile(file, []byte("Mobile,Name,Notes\n305.876.7787,Ann,vip\n(212) 555-0100,Bob,\n555-01,Cy,call back\n"), 0o600)
			b.signIn("admin@a.example", password)
			b.Nav("Imports")
			b.checkPage()
			b.shot("imports", width == "phone")
			e.startWorkers(t)

			importFile := func(path, rows string) {
				t.Helper()
				b.do(chromedp.SetUploadFiles(labelled("CSV file"), []string{path}))
				b.WaitText("Match your columns")
				b.do(chromedp.SendKeys(labelled("Name"), "First name"))
				b.checkPage()
				b.shot("mapping", width == "phone")
				b.Submit("Import contacts")
				b.WaitText("Status: finished")
				if txt := b.Text(); !strings.Contains(txt, rows) {
					t.Errorf("finished import shows:\n%s\nwant %q", txt, rows)
				}
				b.checkPage()
			}
			importFile(file, "3 of 3 rows")
			txt := b.Text()
			if !strings.Contains(txt, "Rejected rows") || !strings.Contains(txt, "Invalid phone number [555-01]") {
				t.Errorf("the rejected row is not shown with its error:\n%s", txt)
			}
			b.shot("import-done", width == "phone")
			if u := e.mustFindUser(t, "+13058767787"); u.FirstName == nil || *u.FirstName != "Ann" {
				t.Errorf("305.876.7787 imported as %+v", u)
			}
			e.mustFindUser(t, "+12125550100")

			// Download the rejected rows as the link does.
			ctx, cancel := b.step()
			got, err := chromedp.Run(ctx, chromedp.Evaluate[[]string](`(async () => {
				const a = [...document.querySelectorAll('a')].find(a => a.innerText.trim() === 'Download the rejected rows (CSV)');
				const r = await fetch(a.href);
				return [r.headers.get('Content-Disposition'), await r.text()];
			})()`, chromedp.EvalAwaitPromise))
			cancel()
			if err != nil || len(got) != 2 {
				t.Fatalf("download: %v %v", got, err)
			}
			if got[0] != `attachment; filename="spring list-rejected-rows.csv"` ||
				!strings.HasPrefix(got[1], "Mobile,Name,Notes,errors\n555-01,Cy,call back,Invalid phone number [555-01]") {
				t.Fatalf("rejected rows file %q:\n%s", got[0], got[1])
			}
			fixed := filepath.Join(dir, "spring list-rejected-rows.csv")
			os.WriteFile(fixed, []byte(strings.Replace(got[1], "555-01,", "(212) 555-0199,", 1)), 0o600)
			b.Follow("All imports")
			importFile(fixed, "1 of 1 rows")
			if u := e.mustFindUser(t, "+12125550199"); u.FirstName == nil || *u.FirstName != "Cy" {
				t.Errorf("the fixed row imported as %+v", u)
			}
		})
	}
}
