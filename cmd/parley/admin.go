package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/service"
	"github.com/parleyhq/parley/internal/store"
)

func runMigrate(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	fs := newFlags("migrate")
	dbf := addDBFlags(fs, getenv)
	if err := fs.Parse(args); err != nil {
		return err
	}
	cfg, err := dbf.config()
	if err != nil {
		return err
	}
	cfg.Role = "api"             // no workers for an admin command
	a, err := app.Open(ctx, cfg) // Open migrates
	if err != nil {
		return err
	}
	defer a.Close()
	fmt.Fprintf(stdout, "Database %s is up to date.\n", store.Redact(a.Config.DB))
	return nil
}

// adminCmd parses a verb's flags, opens the app and runs fn.
func adminCmd(ctx context.Context, name string, args []string, getenv func(string) string,
	define func(fs *flagSet), fn func(a *app.App, asJSON bool) error) error {
	fs := &flagSet{FlagSet: newFlags(name)}
	dbf := addDBFlags(fs.FlagSet, getenv)
	asJSON := fs.Bool("json", false, "print JSON")
	define(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%s: unexpected argument %q", name, fs.Arg(0))
	}
	cfg, err := dbf.config()
	if err != nil {
		return err
	}
	cfg.Role = "api" // no workers for an admin command
	a, err := app.Open(ctx, cfg)
	if err != nil {
		return err
	}
	defer a.Close()
	return fn(a, *asJSON)
}

func runBrand(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) > 0 && args[0] == "settings" {
		return runBrandSettings(ctx, args[1:], getenv, stdout)
	}
	verb, rest, err := parseSub(args, "create", "list", "update")
	if err != nil {
		return fmt.Errorf("brand: %w", err)
	}
	var id int64
	if verb == "update" {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return errors.New("brand update: want ID")
		}
		if id, err = strconv.ParseInt(rest[0], 10, 64); err != nil {
			return fmt.Errorf("brand update: bad id %q", rest[0])
		}
		rest = rest[1:]
	}
	var name, phone, help, stop, start *string
	var flags *flagSet
	return adminCmd(ctx, "brand "+verb, rest, getenv, func(fs *flagSet) {
		flags = fs
		if verb != "list" {
			name = fs.String("name", "", "brand name")
			phone = fs.String("phone", "", "the brand's sending number, E.164")
		}
		if verb == "update" {
			help = fs.String("help-reply", "", "answer to HELP/INFO")
			stop = fs.String("stop-reply", "", "confirmation of STOP and the other opt-out keywords")
			start = fs.String("start-reply", "", "confirmation of START/UNSTOP/YES")
		}
	}, func(a *app.App, asJSON bool) error {
		switch verb {
		case "update":
			var u store.BrandUpdate
			fs := map[string]**string{"name": &u.Name, "phone": &u.PhoneNumber, "help-reply": &u.HelpReply,
				"stop-reply": &u.StopReply, "start-reply": &u.StartReply}
			vals := map[string]*string{"name": name, "phone": phone, "help-reply": help, "stop-reply": stop, "start-reply": start}
			// Only the flags given change: --help-reply '' clears, no flag keeps.
			flags.Visit(func(f *flag.Flag) {
				if dst, ok := fs[f.Name]; ok {
					*dst = vals[f.Name]
				}
			})
			b, err := a.Service.UpdateBrand(ctx, id, u)
			if err != nil {
				return describe(err)
			}
			if asJSON {
				return printJSON(stdout, brandJSON(b))
			}
			fmt.Fprintf(stdout, "Updated brand %d %q %s\n", b.ID, b.Name, b.PhoneNumber)
			return nil
		case "create":
			b, err := a.Service.CreateBrand(ctx, *name, *phone)
			if err != nil {
				return describe(err)
			}
			if asJSON {
				return printJSON(stdout, brandJSON(b))
			}
			fmt.Fprintf(stdout, "Created brand %d %q %s\n", b.ID, b.Name, b.PhoneNumber)
			return nil
		default:
			bs, err := a.Service.ListBrands(ctx)
			if err != nil {
				return err
			}
			if asJSON {
				out := make([]any, 0, len(bs))
				for _, b := range bs {
					out = append(out, brandJSON(b))
				}
				return printJSON(stdout, out)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tPHONE\tCREATED")
			for _, b := range bs {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", b.ID, b.Name, b.PhoneNumber, b.DateCreated.Format(parley.TimeFormat))
			}
			return tw.Flush()
		}
	})
}

func brandJSON(b *parley.Brand) map[string]any {
	return map[string]any{"id": b.ID, "name": b.Name, "phone_number": b.PhoneNumber, "date_created": b.DateCreated}
}

func runCredential(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	verb, rest, err := parseSub(args, "create", "list", "revoke", "rotate")
	if err != nil {
		return fmt.Errorf("credential: %w", err)
	}
	var brand *int64
	var grace *time.Duration
	var username string
	if verb == "revoke" || verb == "rotate" {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return fmt.Errorf("credential %s: want USERNAME", verb)
		}
		username, rest = rest[0], rest[1:]
	}
	return adminCmd(ctx, "credential "+verb, rest, getenv, func(fs *flagSet) {
		switch verb {
		case "create", "list":
			brand = fs.Int64("brand", 0, "brand id (required)")
		case "rotate":
			grace = fs.Duration("grace", service.DefaultRotationGrace, "how long the old secret keeps working")
		}
	}, func(a *app.App, asJSON bool) error {
		switch verb {
		case "create":
			c, err := a.Service.CreateCredential(ctx, *brand)
			if err != nil {
				return describe(err)
			}
			if asJSON {
				return printJSON(stdout, c)
			}
			fmt.Fprintf(stdout, "Created credential for brand %d. The secret is shown only now:\nusername: %s\nsecret:   %s\n",
				c.BrandID, c.Username, c.Secret)
			return nil
		case "list":
			cs, err := a.Service.ListCredentials(ctx, *brand)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(stdout, cs)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "USERNAME\tCREATED\tREVOKED\tLAST USED")
			for _, c := range cs {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", c.Username, c.CreatedAt.Format(parley.TimeFormat), orDash(c.RevokedAt), orDash(c.LastUsedAt))
			}
			return tw.Flush()
		case "rotate":
			c, old, err := a.Service.RotateCredential(ctx, username, *grace)
			if err != nil {
				return describe(err)
			}
			if asJSON {
				return printJSON(stdout, map[string]any{"credential": c, "old": old})
			}
			fmt.Fprintf(stdout, "Rotated %s: it keeps working until %s. The new secret is shown only now:\nusername: %s\nsecret:   %s\n",
				old.Username, old.RevokedAt.Format(parley.TimeFormat), c.Username, c.Secret)
			return nil
		default:
			if err := a.Service.RevokeCredential(ctx, username); err != nil {
				return describe(err)
			}
			if asJSON {
				return printJSON(stdout, map[string]any{"username": username, "revoked": true})
			}
			fmt.Fprintf(stdout, "Revoked %s\n", username)
			return nil
		}
	})
}

func orDash(t *parley.Time) string {
	if t == nil {
		return "-"
	}
	return t.Format(parley.TimeFormat)
}

var typeCodes = map[string]int{"INTEGER": 1, "FLOAT": 2, "STRING": 3, "LIST": 4, "BOOLEAN": 5, "DATE": 6}

func parseType(s string) (int, error) {
	if s == "" {
		return 0, nil
	}
	if n, ok := typeCodes[strings.ToUpper(s)]; ok {
		return n, nil
	}
	return 0, fmt.Errorf("unknown type %q; want INTEGER, FLOAT, STRING, LIST, BOOLEAN or DATE", s)
}

func runField(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	verb, rest, err := parseSub(args, "create", "list", "update", "delete")
	if err != nil {
		return fmt.Errorf("field: %w", err)
	}
	var id int64
	if verb == "delete" || verb == "update" {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return fmt.Errorf("field %s: want ID", verb)
		}
		if id, err = strconv.ParseInt(rest[0], 10, 64); err != nil {
			return fmt.Errorf("field %s: bad id %q", verb, rest[0])
		}
		rest = rest[1:]
	}
	var (
		brand                                                    *int64
		name, typ, subtype, enum, desc, prompt                   *string
		appendFlag, aiPrompt, userAnswers, autoCollec, cur, pers *bool
		flags                                                    *flagSet
	)
	return adminCmd(ctx, "field "+verb, rest, getenv, func(fs *flagSet) {
		flags = fs
		brand = fs.Int64("brand", 0, "brand id (required)")
		if verb == "create" {
			name = fs.String("name", "", "field name as shown, e.g. 'Loyalty Tier' (key loyalty_tier)")
			typ = fs.String("type", "", "INTEGER, FLOAT, STRING, LIST, BOOLEAN or DATE")
			subtype = fs.String("subtype", "", "type of a LIST's items")
		}
		if verb == "create" || verb == "update" {
			enum = fs.String("enum", "", "comma-separated allowed values")
			desc = fs.String("description", "", "description")
			prompt = fs.String("extraction-prompt", "", "what to look for in the contact's texts (D20)")
			appendFlag = fs.Bool("append", false, "LIST updates append instead of replacing")
			aiPrompt = fs.Bool("include-in-ai-prompt", false, "include_in_ai_prompt: the value is context for extractions")
			userAnswers = fs.Bool("include-user-answers", false, "include_user_answers")
			autoCollec = fs.Bool("auto-collected", false, "is_auto_collected: fill from the contact's texts (D20)")
			cur = fs.Bool("emphasize-current", false, "is_emphasize_current")
			pers = fs.Bool("emphasize-personal", false, "is_emphasize_personal")
		}
	}, func(a *app.App, asJSON bool) error {
		switch verb {
		case "create":
			t, err := parseType(*typ)
			if err != nil {
				return err
			}
			st, err := parseType(*subtype)
			if err != nil {
				return err
			}
			f := &parley.CustomField{BrandID: *brand, FieldName: *name, CustomDataType: t, Subtype: st,
				AvailableEnumValues: splitList(*enum), Description: *desc, ExtractionPrompt: *prompt,
				IsAppend: *appendFlag, IncludeInAIPrompt: *aiPrompt, IncludeUserAnswers: *userAnswers,
				IsAutoCollected: *autoCollec, IsEmphasizeCurrent: *cur, IsEmphasizePersonal: *pers}
			if err := a.Service.CreateCustomField(ctx, f); err != nil {
				return describe(err)
			}
			if asJSON {
				return printJSON(stdout, f)
			}
			fmt.Fprintf(stdout, "Created field %d %q (custom_data key %q)\n", f.ID, f.FieldName, parley.CustomDataKey(f.FieldName))
			return nil
		case "update":
			// Only the flags given change, as the admin API's POST changes
			// only the members sent: --extraction-prompt '' clears the prompt,
			// --auto-collected=false turns collection off.
			var u parley.CustomFieldUpdate
			flags.Visit(func(fl *flag.Flag) {
				switch fl.Name {
				case "enum":
					u.AvailableEnumValues = parley.Some(splitList(*enum))
				case "description":
					u.Description = parley.Some(*desc)
				case "extraction-prompt":
					u.ExtractionPrompt = parley.Some(*prompt)
				case "append":
					u.IsAppend = parley.Some(*appendFlag)
				case "include-in-ai-prompt":
					u.IncludeInAIPrompt = parley.Some(*aiPrompt)
				case "include-user-answers":
					u.IncludeUserAnswers = parley.Some(*userAnswers)
				case "auto-collected":
					u.IsAutoCollected = parley.Some(*autoCollec)
				case "emphasize-current":
					u.IsEmphasizeCurrent = parley.Some(*cur)
				case "emphasize-personal":
					u.IsEmphasizePersonal = parley.Some(*pers)
				}
			})
			f, err := a.Service.UpdateCustomField(ctx, *brand, id, u)
			if err != nil {
				return describe(err)
			}
			if asJSON {
				return printJSON(stdout, f)
			}
			fmt.Fprintf(stdout, "Updated field %d %q (auto-collected: %t)\n", f.ID, f.FieldName, f.IsAutoCollected)
			return nil
		case "list":
			fs, err := a.Service.ListCustomFields(ctx, *brand)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(stdout, fs)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tKEY\tTYPE\tAUTO-COLLECTED")
			for _, f := range fs {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%t\n", f.ID, f.FieldName, parley.CustomDataKey(f.FieldName), f.CustomDataType, f.IsAutoCollected)
			}
			return tw.Flush()
		default:
			if err := a.Service.DeleteCustomField(ctx, *brand, id); err != nil {
				return describe(err)
			}
			if asJSON {
				return printJSON(stdout, map[string]any{"id": id, "deleted": true})
			}
			fmt.Fprintf(stdout, "Deleted field %d\n", id)
			return nil
		}
	})
}

// cliOrigin is the Origin of the admin commands' changes (D18).
var cliOrigin = parley.Origin{Source: parley.SourceAdmin}

func runSegment(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	verb, rest, err := parseSub(args, "create", "list", "archive")
	if err != nil {
		return fmt.Errorf("segment: %w", err)
	}
	var id int64
	if verb == "archive" {
		if len(rest) == 0 || strings.HasPrefix(rest[0], "-") {
			return errors.New("segment archive: want ID")
		}
		if id, err = strconv.ParseInt(rest[0], 10, 64); err != nil {
			return fmt.Errorf("segment archive: bad id %q", rest[0])
		}
		rest = rest[1:]
	}
	var (
		brand                         *int64
		name, typ, source, crit, desc *string
		inactive, archived, pinned    *bool
		color                         *int64
		ltv, aov, apf                 *float64
	)
	return adminCmd(ctx, "segment "+verb, rest, getenv, func(fs *flagSet) {
		brand = fs.Int64("brand", 0, "brand id (required)")
		if verb == "create" {
			name = fs.String("name", "", "segment name, unique in the brand (required)")
			typ = fs.String("type", "STANDARD", "segment type, e.g. STANDARD or 'POINT IN TIME'")
			source = fs.String("source", "USER_DEFINED", "where the segment comes from")
			crit = fs.String("criteria", "[]", "criteria as a JSON array of segment criteria")
			desc = fs.String("description", "", "description")
			inactive = fs.Bool("inactive", false, "create it inactive")
			archived = fs.Bool("archived", false, "create it archived")
			pinned = fs.Bool("pinned", false, "is_pinned")
			color = fs.Int64("color", 0, "color_id")
			ltv = fs.Float64("ltv", 0, "average lifetime value")
			aov = fs.Float64("aov", 0, "average order value")
			apf = fs.Float64("apf", 0, "average purchase frequency")
		}
	}, func(a *app.App, asJSON bool) error {
		switch verb {
		case "create":
			s := &parley.Segment{BrandID: *brand, Name: *name, Type: *typ, Source: *source, Description: *desc,
				IsActive: !*inactive, IsArchived: *archived, IsPinned: *pinned, ColorID: *color,
				LTV: *ltv, AverageOrderValue: *aov, AveragePurchaseFrequency: *apf}
			// Criteria decode as in the API, naming the criterion at fault.
			if err := json.Unmarshal([]byte(*crit), &s.Criteria); err != nil {
				return fmt.Errorf("--criteria: %w", describe(err))
			}
			if _, err := a.Service.CreateSegment(ctx, cliOrigin, *brand, s); err != nil {
				return describe(err)
			}
			if asJSON {
				return printJSON(stdout, s)
			}
			fmt.Fprintf(stdout, "Created segment %d %q\n", s.ID, s.Name)
			return nil
		case "list":
			ss, err := a.Service.AllSegments(ctx, *brand)
			if err != nil {
				return err
			}
			if asJSON {
				return printJSON(stdout, ss)
			}
			tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "ID\tNAME\tTYPE\tACTIVE\tARCHIVED")
			for _, s := range ss {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%t\t%t\n", s.ID, s.Name, s.Type, s.IsActive, s.IsArchived)
			}
			return tw.Flush()
		default:
			if _, err := a.Service.ArchiveSegment(ctx, cliOrigin, *brand, id); err != nil {
				return describe(err)
			}
			if asJSON {
				return printJSON(stdout, map[string]any{"id": id, "archived": true})
			}
			fmt.Fprintf(stdout, "Archived segment %d\n", id)
			return nil
		}
	})
}

func splitList(s string) []string {
	if s == "" {
		return []string{}
	}
	parts := strings.Split(s, ",")
	for i := range parts {
		parts[i] = strings.TrimSpace(parts[i])
	}
	return parts
}

// describe turns a domain error into a one-line CLI message.
func describe(err error) error {
	var pe *parley.Error
	if errors.As(err, &pe) {
		return errors.New(pe.Message)
	}
	return err
}
