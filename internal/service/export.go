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
// Free text is formula-safe (parley.FormulaSafe); the phone number and
// custom data numbers are written as they are. The users are read a page
// at a time, so memory does not grow with the brand.
func (im *Importer) ExportUsers(ctx context.Context, brandID int64, w io.Writer, f parley.ExportFilter) (int64, error) {
	each := func(fn func(*parley.User) error) error { return im.s.db.EachUser(ctx, brandID, fn) }
	if f.SegmentID != 0 { // only the segment's members (D14)
		a, err := im.s.segmentAudience(ctx, brandID, f.SegmentID)
		if err != nil {
			return 0, err
		}
		each = func(fn func(*parley.User) error) error {
			return im.s.audienceErr(f.SegmentID, im.s.aud.EachUser(ctx, brandID, a, fn))
		}
	}
	if !f.Contacts.IsZero() { // a console list's filter (issue #32)
		if _, err := im.s.contactQuery(ctx, brandID, f.Contacts, parley.SortOldest); err != nil {
			return 0, err // refused before anything is written
		}
		each = func(fn func(*parley.User) error) error { return im.s.EachContact(ctx, brandID, f.Contacts, fn) }
	}
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
	err = each(func(u *parley.User) error {
		clear(cells)
		cells[0] = u.PhoneNumber // E.164, validated: a spreadsheet reads +1… as a number
		cells[1], cells[2] = safeText(u.FirstName), safeText(u.LastName)
		cells[3], cells[4] = safeText(u.EmailAddress), safeText(u.DateOfBirth)
		if u.MessagingConsent != nil {
			cells[5] = strconv.FormatBool(*u.MessagingConsent)
		}
		if u.Location != nil {
			cells[6] = safeText(u.Location.PostalCode)
		}
		if len(u.CustomData) > 0 {
			var cd map[string]json.RawMessage
			if err := json.Unmarshal(u.CustomData, &cd); err != nil {
				return fmt.Errorf("service: user %d custom_data: %w", u.ID, err)
			}
			for i, key := range keys {
				cells[len(parley.ImportColumns)+i] = customCell(cd[key])
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

// safeText is a text member as a formula-safe cell.
func safeText(s *string) string {
	if s == nil {
		return ""
	}
	return parley.FormulaSafe(*s)
}

// customCell is a stored custom_data value as a formula-safe import cell.
// A number stays as it is (-5 is the number -5 to a spreadsheet, and the
// INTEGER field reads it back); anything else is text.
func customCell(v json.RawMessage) string {
	v = bytes.TrimSpace(v)
	if len(v) > 0 && (v[0] == '-' || (v[0] >= '0' && v[0] <= '9')) {
		return string(v)
	}
	return parley.FormulaSafe(cellText(v))
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

// HistoryColumns is the header of a history export.
var HistoryColumns = []string{"user_id", "phone_number", "field", "old_value", "new_value", "source", "detail", "message_id", "occurred_at"}

// ExportHistory writes the brand's contact history as CSV — every entry,
// deleted users' too, by user and oldest first — and returns how many
// entries it wrote (D18). Values are JSON, as the API shows them: a string
// starts with its quote, a number is a validated number; the detail is
// free text, so it is written formula-safe (#15).
func (s *Service) ExportHistory(ctx context.Context, brandID int64, w io.Writer) (int64, error) {
	cw := csv.NewWriter(w)
	if err := cw.Write(HistoryColumns); err != nil {
		return 0, err
	}
	var n int64
	cells := make([]string, len(HistoryColumns))
	err := s.db.EachHistory(ctx, brandID, func(e *parley.HistoryEntry, phone string) error {
		msg := ""
		if e.MessageID != nil {
			msg = strconv.FormatInt(*e.MessageID, 10)
		}
		cells = append(cells[:0], strconv.FormatInt(e.UserID, 10), phone, e.Field, jsonCell(e.OldValue), jsonCell(e.NewValue),
			e.Source, parley.FormulaSafe(e.Detail), msg, e.OccurredAt.UTC().Format(parley.TimeFormat))
		n++
		return cw.Write(cells)
	})
	if err != nil {
		return n, err
	}
	cw.Flush()
	return n, cw.Error()
}

func jsonCell(v json.RawMessage) string {
	if len(v) == 0 {
		return "null"
	}
	return string(v)
}
