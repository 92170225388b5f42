// Command parley runs Parley's messaging and contact-management service and
// administers it. See the README for every subcommand.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	// The zones users get from their ZIP (D17) must load on hosts without a
	// zoneinfo database too (scratch or distroless images); about 450 KB.
	_ "time/tzdata"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "parley:", err)
		os.Exit(1)
	}
}

const usage = `Usage: parley <command> [flags]

Commands:
  serve        run the API server
  migrate      create or upgrade the database schema
  brand        create | list brands
  credential   create | list | revoke API credentials
  field        create | list | update | delete custom data fields
  segment      create | list | archive segments
  operator     add | link | list console operators (D19)
  call         send a signed request to the API
  import       import users from a CSV file: parley import FILE --brand ID
  export       write a brand's users as CSV: parley export --brand ID [--out FILE]
  bench        load-test a server and report throughput and latency
  version      print the version and VCS revision of this build

Run 'parley <command> -h' for a command's flags. Every flag also reads
from the environment as PARLEY_<FLAG> (e.g. --db → PARLEY_DB).
`

// run is main without the process: tests call it directly.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("no command")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return runServe(ctx, rest, getenv, stdout, stderr)
	case "migrate":
		return runMigrate(ctx, rest, getenv, stdout)
	case "brand":
		return runBrand(ctx, rest, getenv, stdout)
	case "credential":
		return runCredential(ctx, rest, getenv, stdout)
	case "field":
		return runField(ctx, rest, getenv, stdout)
	case "segment":
		return runSegment(ctx, rest, getenv, stdout)
	case "operator":
		return runOperator(ctx, rest, getenv, stdout)
	case "call":
		return runCall(ctx, rest, getenv, stdout, stderr)
	case "import":
		return runImport(ctx, rest, getenv, stdout, stderr)
	case "export":
		return runExport(ctx, rest, getenv, stdout, stderr)
	case "bench":
		return runBench(ctx, rest, getenv, stdout, stderr)
	case "version", "-version", "--version":
		return runVersion(stdout)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprint(stderr, usage)
	return fmt.Errorf("unknown command %q", cmd)
}
