package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"

	"golang.org/x/term"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/app"
)

// stdin is where --password-stdin and the password prompt read; tests
// replace it.
var stdin io.Reader = os.Stdin

// runOperator manages the console's operators (D19):
//
//	parley operator add --brand ID --email E --role admin|agent [--password-stdin]
//	parley operator link --brand ID --email E
//	parley operator list --brand ID
//	parley operator remove --brand ID --email E
//
// add takes the password from --password-stdin, else asks for it on a
// terminal, else prints a one-time sign-in link. An operator is a brand's:
// one email may be an operator of several brands (issue #31 item 10), so
// every verb names the brand.
func runOperator(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	verb, rest, err := parseSub(args, "add", "link", "list", "remove")
	if err != nil {
		return fmt.Errorf("operator: %w", err)
	}
	var brand *int64
	var email, role, publicURL *string
	var pwStdin *bool
	return adminCmd(ctx, "operator "+verb, rest, getenv, func(fs *flagSet) {
		brand = fs.Int64("brand", 0, "brand id")
		if verb != "list" {
			email = fs.String("email", "", "the operator's email: what they sign in with")
		}
		if verb == "add" || verb == "link" {
			publicURL = stringFlag(fs.FlagSet, getenv, "public-url", "http://127.0.0.1:8080", "the server's address, for the sign-in link")
		}
		if verb == "add" {
			role = fs.String("role", "agent", "admin (everything) or agent (contacts, inbox, replies)")
			pwStdin = fs.Bool("password-stdin", false, "read the password from the first line of standard input")
		}
	}, func(a *app.App, asJSON bool) error {
		switch verb {
		case "list":
			ops, err := a.Operators.List(ctx, *brand)
			if err != nil {
				return describe(err)
			}
			if asJSON {
				out := make([]map[string]any, len(ops))
				for i, o := range ops {
					out[i] = map[string]any{"id": o.ID, "brand_id": o.BrandID, "email": o.Email, "role": o.Role,
						"has_password": o.HasPassword, "date_created": o.DateCreated}
				}
				return printJSON(stdout, out)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tEMAIL\tROLE\tPASSWORD")
			for _, o := range ops {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%v\n", o.ID, o.Email, o.Role, o.HasPassword)
			}
			return tw.Flush()
		case "link":
			return printLink(ctx, a, *brand, *email, *publicURL, stdout)
		case "remove":
			if err := a.Operators.RemoveByEmail(ctx, *brand, *email); err != nil {
				return describe(err)
			}
			fmt.Fprintf(stdout, "Removed operator %s of brand %d; their sessions have ended.\n", strings.ToLower(strings.TrimSpace(*email)), *brand)
			return nil
		}
		pw, err := operatorPassword(*pwStdin, stdout)
		if err != nil {
			return err
		}
		op, err := a.Operators.Add(ctx, *brand, *email, parley.OperatorRole(*role), pw)
		if err != nil {
			return describe(err)
		}
		fmt.Fprintf(stdout, "Created %s %s (id %d) for brand %d.\n", op.Role, op.Email, op.ID, op.BrandID)
		if pw != "" {
			fmt.Fprintf(stdout, "Sign in at %s with that email and password.\n", strings.TrimRight(*publicURL, "/")+"/console/")
			return nil
		}
		return printLink(ctx, a, op.BrandID, op.Email, *publicURL, stdout)
	})
}

// operatorPassword reads the password: the first line of stdin with
// --password-stdin, else twice at a prompt on a terminal, else none ("":
// the operator gets a sign-in link).
func operatorPassword(fromStdin bool, stdout io.Writer) (string, error) {
	if fromStdin {
		line, err := bufio.NewReader(stdin).ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return "", fmt.Errorf("--password-stdin: %w", err)
		}
		pw := strings.TrimRight(line, "\r\n")
		if pw == "" {
			return "", errors.New("--password-stdin: no password on standard input")
		}
		return pw, nil
	}
	f, ok := stdin.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return "", nil
	}
	fmt.Fprint(stdout, "Password (empty for a one-time sign-in link): ")
	pw, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(stdout)
	if err != nil || len(pw) == 0 {
		return "", err
	}
	fmt.Fprint(stdout, "The same password again: ")
	again, err := term.ReadPassword(int(f.Fd()))
	fmt.Fprintln(stdout)
	if err != nil {
		return "", err
	}
	if string(again) != string(pw) {
		return "", errors.New("the two passwords differ")
	}
	return string(pw), nil
}

func printLink(ctx context.Context, a *app.App, brandID int64, email, publicURL string, stdout io.Writer) error {
	token, err := a.Operators.Link(ctx, brandID, email)
	if err != nil {
		return describe(err)
	}
	link := strings.TrimRight(publicURL, "/") + "/console/link?token=" + url.QueryEscape(token)
	fmt.Fprintf(stdout, "One-time sign-in link for %s (works once, for 24 hours, and no longer once they sign in with a password; keep it private):\n  %s\n", email, link)
	return nil
}

// consoleBanner is serve's line about the console (D19): where it is and,
// while a brand has no operator yet, how to create one.
func consoleBanner(ctx context.Context, a *app.App, baseURL string, stdout io.Writer) error {
	if a.Config.Role == "worker" {
		return nil
	}
	fmt.Fprintf(stdout, "Console: %s/console/\n", baseURL)
	simulatorHint(a, stdout)
	brands, err := a.Service.ListBrands(ctx)
	if err != nil {
		return err
	}
	for _, b := range brands[:min(len(brands), 20)] { // a quick look, not a scan of every brand
		ops, err := a.Operators.List(ctx, b.ID)
		if err != nil {
			return err
		}
		if len(ops) == 0 {
			fmt.Fprintf(stdout, "  No operator can sign in to brand %d yet; add one from another terminal:\n"+
				"  go run ./cmd/parley operator add --brand %d --email you@example.com --role admin\n", b.ID, b.ID)
			break
		}
	}
	return nil
}

// simulatorHint tells, on the simulator, how to watch a campaign send at
// any hour (issue #32): marketing texts wait for the sending window in each
// recipient's time, and the US rules apply on top of the brand's window.
func simulatorHint(a *app.App, stdout io.Writer) {
	if a.Config.Provider != "sim" {
		return
	}
	if a.Config.NoUSSendingRules {
		fmt.Fprintln(stdout, "  US sending rules are off (--us-sending-rules=false): only each brand's sending window holds marketing texts;\n"+
			"  make its start and end the same in the console's Settings to send them at any hour.")
		return
	}
	fmt.Fprintln(stdout, "  Marketing texts wait for quiet hours to end (08:00-21:00 in each recipient's time, plus the brand's sending window).\n"+
		"  To watch a campaign send on the simulator at any hour: make the sending window's start and end the same\n"+
		"  in the console's Settings, and restart with --us-sending-rules=false (or PARLEY_US_SENDING_RULES=false).")
}
