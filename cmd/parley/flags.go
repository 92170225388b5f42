package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/parleyhq/parley/internal/app"
)

// newFlags returns a FlagSet that reports errors instead of exiting.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("parley "+name, flag.ContinueOnError)
	return fs
}

// envName is the variable a flag reads its default from: --data-dir → PARLEY_DATA_DIR.
func envName(flagName string) string {
	return "PARLEY_" + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// stringFlag defines a string flag whose default comes from the environment.
func stringFlag(fs *flag.FlagSet, getenv func(string) string, name, def, help string) *string {
	if v := getenv(envName(name)); v != "" {
		def = v
	}
	return fs.String(name, def, help+" (env "+envName(name)+")")
}

// boolFlag defines a boolean flag in Go's convention (--name alone is
// true, --name=false false) whose default comes from the environment as
// strconv.ParseBool reads it (true/false/1/0). parseFlags reports an
// environment value that is not a boolean, unless the command line sets it.
func boolFlag(fs *flag.FlagSet, getenv func(string) string, name string, def bool, help string) *bool {
	b := &boolValue{v: def}
	if s := getenv(envName(name)); s != "" {
		if v, err := strconv.ParseBool(s); err == nil {
			b.v = v
		} else {
			b.badEnv = envName(name) + "=" + strconv.Quote(s)
		}
	}
	fs.Var(b, name, help+" (env "+envName(name)+")")
	return &b.v
}

// boolValue is a boolFlag's flag.Value.
type boolValue struct {
	v      bool
	badEnv string // the unusable environment setting, until the command line overrides it
}

func (b *boolValue) String() string {
	if b == nil {
		return "false"
	}
	return strconv.FormatBool(b.v)
}

func (b *boolValue) Set(s string) error {
	v, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	b.v, b.badEnv = v, ""
	return nil
}

// IsBoolFlag lets the flag stand alone, as flag.Bool does.
func (b *boolValue) IsBoolFlag() bool { return true }

// parseFlags parses args and then reports a boolFlag's unusable
// environment value.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		return err
	}
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if b, ok := f.Value.(*boolValue); ok && b.badEnv != "" && err == nil {
			err = fmt.Errorf("%s: want true or false (1 or 0)", b.badEnv)
		}
	})
	return err
}

// dbFlags are the flags every command that opens the database takes.
type dbFlags struct {
	db, dataDir, secretKey, phoneValidation, maxConns *string
}

func addDBFlags(fs *flag.FlagSet, getenv func(string) string) *dbFlags {
	return &dbFlags{
		db:              stringFlag(fs, getenv, "db", "", "database URL: sqlite:PATH (default sqlite:<data-dir>/parley.db)"),
		dataDir:         stringFlag(fs, getenv, "data-dir", app.DefaultDataDir, "directory for the default database, media, key file and dev credentials"),
		secretKey:       stringFlag(fs, getenv, "secret-key", "", "server key sealing secrets at rest, 32 bytes base64 or hex (default: a key file in data-dir)"),
		phoneValidation: stringFlag(fs, getenv, "phone-validation", "strict", "phone number check: strict or possible"),
		maxConns:        stringFlag(fs, getenv, "db-max-conns", "0", "size of each of the two connection pools, transactions and reads (PostgreSQL), or of the reader pool (SQLite); 0 picks one from the CPU count"),
	}
}

func (f *dbFlags) config() (app.Config, error) {
	n, err := strconv.Atoi(*f.maxConns)
	if err != nil || n < 0 {
		return app.Config{}, fmt.Errorf("--db-max-conns: want a number ≥ 0, not %q", *f.maxConns)
	}
	return app.Config{DB: *f.db, DataDir: *f.dataDir, SecretKey: *f.secretKey,
		PhoneValidation: *f.phoneValidation, DBMaxConns: n}, nil
}

// printJSON writes v indented, for --json output.
func printJSON(w io.Writer, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(w, string(b))
	return err
}

// parseSub splits "brand create --name x" into the verb and its flags.
func parseSub(args []string, verbs ...string) (string, []string, error) {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return "", nil, fmt.Errorf("want one of: %s", strings.Join(verbs, ", "))
	}
	for _, v := range verbs {
		if args[0] == v {
			return v, args[1:], nil
		}
	}
	return "", nil, fmt.Errorf("unknown %q; want one of: %s", args[0], strings.Join(verbs, ", "))
}

// flagSet is a FlagSet; the alias keeps admin command definitions short.
type flagSet struct{ *flag.FlagSet }

// isTerminal reports whether w is a terminal, where progress can redraw
// itself in place.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
