package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/service"
)

// maxErrorsShown is how many rejected rows import prints; --errors writes
// them all.
const maxErrorsShown = 10

// runImport imports a CSV file of users into a brand, directly on the
// database, through the same checks and batches as POST /imports.
func runImport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("import")
	dbf := addDBFlags(fs, getenv)
	brand := fs.Int64("brand", 0, "brand id (required)")
	onDup := fs.String("on-duplicate", parley.OnDuplicateSkip, "a row of a user the brand has: skip, or update it")
	consent := fs.String("messaging-consent-default", "", "messaging_consent of created users whose cell is empty: true or false (default: none)")
	errorsOut := fs.String("errors", "", "write every rejected row to this CSV file (line, field, type, msg)")
	asJSON := fs.Bool("json", false, "print the import as JSON")
	fs.Usage = func() {
		fmt.Fprintln(fs.Output(), "Usage: parley import FILE --brand ID [--on-duplicate update] [flags]")
		fs.PrintDefaults()
	}
	path, err := parseWithFile(fs, args)
	if err != nil {
		return err
	}
	if *brand < 1 {
		return errors.New("import: --brand ID is required")
	}
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()

	a, err := openAdmin(ctx, dbf)
	if err != nil {
		return err
	}
	defer a.Close()
	if _, err := a.Service.FindBrand(ctx, *brand); err != nil {
		return describe(err)
	}
	// A local file is the operator's own: the upload bound is for the API.
	a.Importer.MaxSize = 0
	imp, err := a.Importer.ImportLocal(ctx, *brand, filepath.Base(path), f,
		parley.ImportOptions{OnDuplicate: *onDup, MessagingConsentDefault: *consent})
	if err != nil {
		return describe(err)
	}
	p := newProgress(stderr, imp, time.Now)
	p.show(imp)
	_, err = a.Importer.RunImport(ctx, *brand, imp.ID, service.RunOptions{Progress: p.show})
	p.done()
	if err != nil {
		reason := "the import stopped: " + err.Error()
		if ctx.Err() != nil {
			reason = "interrupted: the parley import command stopped"
		}
		a.Importer.FailImport(context.WithoutCancel(ctx), *brand, imp.ID, reason+"; the rows committed so far stay imported")
		return fmt.Errorf("import %d: %w", imp.ID, err)
	}
	if imp, err = a.Importer.FindImport(ctx, *brand, imp.ID); err != nil {
		return err
	}
	if err := reportImportErrors(ctx, a, imp, *errorsOut, stderr); err != nil {
		return err
	}
	if *asJSON {
		if err := printJSON(stdout, imp); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdout, "Import %d %s: %d rows: %d created, %d updated, %d skipped, %d failed\n",
			imp.ID, imp.Status, imp.ProcessedRows, imp.Created, imp.Updated, imp.Skipped, imp.Failed)
	}
	if imp.Status == parley.ImportFailed && imp.Error != nil {
		return fmt.Errorf("import %d failed: %s", imp.ID, *imp.Error)
	}
	return nil
}

// reportImportErrors prints the first rejected rows and writes them all to
// path when given.
func reportImportErrors(ctx context.Context, a *app.App, imp *parley.Import, path string, stderr io.Writer) error {
	shown := 0
	err := a.Importer.EachImportError(ctx, imp.BrandID, imp.ID, func(e *parley.ImportError) error {
		if shown < maxErrorsShown {
			field := ""
			if e.Field != "" && !strings.HasPrefix(e.Msg, e.Field+":") {
				field = e.Field + ": "
			}
			fmt.Fprintf(stderr, "line %d: %s%s (%s)\n", e.Line, field, e.Msg, e.Type)
			shown++
		}
		return nil
	})
	if err != nil {
		return err
	}
	if path == "" {
		if imp.Failed > int64(shown) {
			fmt.Fprintf(stderr, "… and %d more rejected rows (--errors FILE writes them all)\n", imp.Failed-int64(shown))
		}
		return nil
	}
	out, err := os.Create(path)
	if err != nil {
		return err
	}
	defer out.Close()
	if err := a.Importer.WriteRejectedRows(ctx, imp.BrandID, imp.ID, out); err != nil {
		return err
	}
	if err := out.Close(); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "Rejected rows written to %s\n", path)
	return nil
}

// runExport writes a brand's users as CSV in the import format and, with
// --history, the contacts' history as a second file (D18).
func runExport(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := newFlags("export")
	dbf := addDBFlags(fs, getenv)
	brand := fs.Int64("brand", 0, "brand id (required)")
	outPath := fs.String("out", "", "file to write (default: standard output)")
	historyPath := fs.String("history", "", "also write the contacts' consent and custom data history (CSV) to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("export: unexpected argument %q", fs.Arg(0))
	}
	if *brand < 1 {
		return errors.New("export: --brand ID is required")
	}
	a, err := openAdmin(ctx, dbf)
	if err != nil {
		return err
	}
	defer a.Close()
	if _, err := a.Service.FindBrand(ctx, *brand); err != nil {
		return describe(err)
	}
	users := func(w io.Writer) (int64, error) { return a.Importer.ExportUsers(ctx, *brand, w, parley.ExportFilter{}) }
	if *outPath == "" {
		if _, err := users(stdout); err != nil {
			return err
		}
	} else {
		n, err := writeFile(*outPath, users)
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "Exported %d users to %s\n", n, *outPath)
	}
	if *historyPath != "" {
		n, err := writeFile(*historyPath, func(w io.Writer) (int64, error) { return a.Service.ExportHistory(ctx, *brand, w) })
		if err != nil {
			return err
		}
		fmt.Fprintf(stderr, "Exported %d history entries to %s\n", n, *historyPath)
	}
	return nil
}

// writeFile writes path with write, beside it first and then renamed, so
// a failed export leaves no half file behind.
func writeFile(path string, write func(io.Writer) (int64, error)) (int64, error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".parley-export-*")
	if err != nil {
		return 0, err
	}
	defer os.Remove(tmp.Name())
	n, err := write(tmp)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return n, err
	}
	return n, os.Rename(tmp.Name(), path)
}

// parseWithFile parses flags around one positional FILE, which may come
// before the flags (parley import users.csv --brand 1) or after them.
func parseWithFile(fs *flag.FlagSet, args []string) (string, error) {
	var path string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		path, args = args[0], args[1:]
	}
	if err := fs.Parse(args); err != nil {
		return "", err
	}
	rest := fs.Args()
	if path == "" && len(rest) > 0 {
		path, rest = rest[0], rest[1:]
	}
	if len(rest) > 0 {
		return "", fmt.Errorf("%s: unexpected argument %q", fs.Name(), rest[0])
	}
	if path == "" {
		return "", fmt.Errorf("%s: want the CSV FILE to import", fs.Name())
	}
	return path, nil
}

// openAdmin opens the app for a command that works on the database itself.
func openAdmin(ctx context.Context, dbf *dbFlags) (*app.App, error) {
	cfg, err := dbf.config()
	if err != nil {
		return nil, err
	}
	cfg.Role = "api" // no workers for an admin command
	return app.Open(ctx, cfg)
}

// progress shows how an import advances: a bar redrawn in place on a
// terminal, plain lines at most once a second otherwise (logs, CI).
type progress struct {
	w        io.Writer
	terminal bool
	now      func() time.Time
	start    time.Time
	last     time.Time // when progress was last shown
	shown    int64     // rows processed then; -1 before the first time
	id       int64
	total    int64
	drawn    bool
}

func newProgress(w io.Writer, imp *parley.Import, now func() time.Time) *progress {
	return &progress{w: w, terminal: isTerminal(w), now: now, start: now(), shown: -1, id: imp.ID, total: imp.TotalRows}
}

// show is called after every committed batch.
func (p *progress) show(imp *parley.Import) {
	t := p.now()
	every := time.Second
	if p.terminal {
		every = 100 * time.Millisecond
	}
	last := imp.ProcessedRows >= p.total
	if imp.ProcessedRows == p.shown || (!last && p.shown >= 0 && t.Sub(p.last) < every) {
		return
	}
	p.last, p.shown = t, imp.ProcessedRows
	pct := int64(100)
	if p.total > 0 {
		pct = imp.ProcessedRows * 100 / p.total
	}
	rate, eta := 0.0, "?"
	if s := t.Sub(p.start).Seconds(); s > 0 && imp.ProcessedRows > 0 {
		rate = float64(imp.ProcessedRows) / s
		eta = (time.Duration(float64(p.total-imp.ProcessedRows)/rate) * time.Second).Round(time.Second).String()
	}
	if !p.terminal {
		fmt.Fprintf(p.w, "import %d: %d/%d rows (%d%%), %.0f rows/s, ETA %s\n", p.id, imp.ProcessedRows, p.total, pct, rate, eta)
		return
	}
	const width = 30
	fill := int(pct * width / 100)
	bar := strings.Repeat("#", fill) + strings.Repeat("-", width-fill)
	fmt.Fprintf(p.w, "\r%3d%% [%s] %d/%d rows  %.0f rows/s  ETA %s\x1b[K", pct, bar, imp.ProcessedRows, p.total, rate, eta)
	p.drawn = true
}

// done ends the bar's line.
func (p *progress) done() {
	if p.drawn {
		fmt.Fprintln(p.w)
	}
}
