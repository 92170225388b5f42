package service

import (
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/parleyhq/parley"
)

// ExportUsers writes the brand's live users as CSV in the import format,
// with a column for every custom data field, and returns how many it wrote:
// importing the file into a brand with the same fields gives the same users.
func (im *Importer) ExportUsers(ctx context.Context, brandID int64, w io.Writer) (int64, error) {
	fields, err := im.s.db.ListCustomFields(ctx, brandID)
	if err != nil {
		return 0, err
	}
	header := slices.Clone(parley.ImportColumns)
	keys := make([]string, len(fields))
	for i, f := range fields {
		keys[i] = parley.CustomDataKey(f.FieldName)
		header = append(header, parley.CustomColumnPrefix+keys[i])
	}
	cw := csv.NewWriter(w)
	if err := cw.Write(header); err != nil {
		return 0, err
	}
	var n int64
	cells := make([]string, len(header))
	err = im.s.db.EachUser(ctx, brandID, func(u *parley.User) error {
		clear(cells)
		cells[0] = u.PhoneNumber
		cells[1], cells[2], cells[3], cells[4] = deref(u.FirstName), deref(u.LastName), deref(u.EmailAddress), deref(u.DateOfBirth)
		if u.MessagingConsent != nil {
			cells[5] = strconv.FormatBool(*u.MessagingConsent)
		}
		if u.Location != nil {
			cells[6] = deref(u.Location.PostalCode)
		}
		if len(u.CustomData) > 0 {
			var cd map[string]json.RawMessage
			if err := json.Unmarshal(u.CustomData, &cd); err != nil {
				return fmt.Errorf("service: user %d custom_data: %w", u.ID, err)
			}
			for i, key := range keys {
				cells[len(parley.ImportColumns)+i] = cellText(cd[key])
			}
		}
		n++
		return cw.Write(cells)
	})
	if err != nil {
		return n, err
	}
	cw.Flush()
	return n, cw.Error()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// cellText is a stored custom_data value as an import cell: a string's
// text, a number's literal, a list's items joined by |.
func cellText(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) == 0 || string(v) == "null" {
		return ""
	}
	switch v[0] {
	case '"':
		var s string
		if json.Unmarshal(v, &s) == nil {
			return s
		}
	case '[':
		var items []json.RawMessage
		if json.Unmarshal(v, &items) == nil {
			texts := make([]string, len(items))
			for i, it := range items {
				texts[i] = cellText(it)
			}
			return strings.Join(texts, parley.ListSeparator)
		}
	}
	return string(v)
}
