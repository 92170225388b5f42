package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/app"
)

// runBrandSettings prints a brand's sending rules (D17) and, with --set,
// changes the members of the JSON object given first, as the admin API's
// POST /admin/v1/brands/{id}/settings does.
func runBrandSettings(ctx context.Context, args []string, getenv func(string) string, stdout io.Writer) error {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		return errors.New("brand settings: want ID")
	}
	id, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil {
		return fmt.Errorf("brand settings: bad id %q", args[0])
	}
	var set *string
	return adminCmd(ctx, "brand settings", args[1:], getenv, func(fs *flagSet) {
		set = fs.String("set", "", `members to change, as JSON: '{"sending_window": {"start": "09:00", "end": "20:00"}, "frequency_cap": {"max_messages": 4, "per_hours": 168}}'`)
	}, func(a *app.App, _ bool) error {
		st, err := a.Service.BrandSettings(ctx, id)
		if *set != "" && err == nil {
			var u parley.BrandSettingsUpdate
			dec := json.NewDecoder(bytes.NewReader([]byte(*set)))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&u); err != nil {
				return fmt.Errorf("brand settings: --set: %w", err)
			}
			st, err = a.Service.UpdateBrandSettings(ctx, id, u)
		}
		if err != nil {
			return describe(err)
		}
		return printJSON(stdout, st)
	})
}
