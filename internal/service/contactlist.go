package service

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// The console's contacts list (issue #32): a filtered, sorted list a page
// at a time (store.ContactList tells which index serves what).

// ContactWindow is how many contacts a page of a filter no index serves
// looks through (a segment, a custom field).
func ContactWindow() int { return store.ContactWindow }

// SetContactWindow sets ContactWindow, for tests that page through a
// window without a brand of thousands; it returns how to put it back.
func SetContactWindow(n int) (undo func()) {
	old := store.ContactWindow
	store.ContactWindow = n
	return func() { store.ContactWindow = old }
}

// ContactListPage is one page of the contacts list and the cursors of the
// pages around it ("" when there is none).
type ContactListPage struct {
	Users      []*parley.User
	Next, Prev string
	// Partial: the page looked through store.ContactWindow contacts and
	// found fewer than a page; Next looks further.
	Partial bool
}

// ContactListQuery asks for one page.
type ContactListQuery struct {
	Filter parley.ContactFilter
	Sort   string
	Cursor string
	Limit  int
}

// ListContacts reads one page of the brand's contacts list. A cursor it
// did not write, an unknown sort or consent, or a custom field value of
// the wrong type is EValidation; a segment of none or another brand's
// ESegmentNotFound; an unknown field EValidation on "field".
func (s *Service) ListContacts(ctx context.Context, brandID int64, in ContactListQuery) (*ContactListPage, error) {
	q, err := s.contactQuery(ctx, brandID, in.Filter, in.Sort)
	if err != nil {
		return nil, err
	}
	q.Limit = in.Limit
	if in.Cursor != "" {
		k, back, ok := decodeContactCursor(in.Cursor)
		if !ok {
			return nil, invalid("cursor", "is not a cursor this list wrote")
		}
		q.After, q.Back = &k, back
	}
	page, err := s.aud.ContactList(ctx, brandID, q)
	if err != nil {
		return nil, s.audienceErr(in.Filter.SegmentID, err)
	}
	out := &ContactListPage{Users: page.Users}
	n := len(page.Keys)
	// The way read goes on past the page: More, or a window's end.
	var further string
	switch {
	case page.More:
		if q.Back {
			further = encodeContactCursor(page.Keys[0], true)
		} else {
			further = encodeContactCursor(page.Keys[n-1], false)
		}
	case page.WindowEnd != nil:
		further = encodeContactCursor(*page.WindowEnd, q.Back)
		out.Partial = true
	}
	if q.Back {
		out.Prev = further
		if q.After != nil { // the page it came back from
			out.Next = encodeContactCursor(*q.After, false)
			if n > 0 {
				out.Next = encodeContactCursor(page.Keys[n-1], false)
			}
		}
	} else {
		out.Next = further
		if q.After != nil {
			out.Prev = encodeContactCursor(*q.After, true)
			if n > 0 {
				out.Prev = encodeContactCursor(page.Keys[0], true)
			}
		}
	}
	return out, nil
}

// ContactTotal is how many contacts a filter selects (store.ContactCount).
type ContactTotal = store.ContactCount

// CountContactList counts the contacts f selects, within the page budget:
// exactly up to store.ContactCountCap by index, or among the newest
// store.ContactWindow contacts for a segment or custom field.
func (s *Service) CountContactList(ctx context.Context, brandID int64, f parley.ContactFilter) (ContactTotal, error) {
	q, err := s.contactQuery(ctx, brandID, f, parley.SortNewest)
	if err != nil {
		return ContactTotal{}, err
	}
	n, err := s.db.CountContactList(ctx, brandID, q)
	return n, s.audienceErr(f.SegmentID, err)
}

// EachContact calls fn with every contact f selects, by id, a page at a
// time (the export of a filtered list).
func (s *Service) EachContact(ctx context.Context, brandID int64, f parley.ContactFilter, fn func(*parley.User) error) error {
	q, err := s.contactQuery(ctx, brandID, f, parley.SortOldest)
	if err != nil {
		return err
	}
	q.Limit = 1000
	for {
		page, err := s.db.ContactList(ctx, brandID, q)
		if err != nil {
			return s.audienceErr(f.SegmentID, err)
		}
		for _, u := range page.Users {
			if err := fn(u); err != nil {
				return err
			}
		}
		switch {
		case page.More:
			k := page.Keys[len(page.Keys)-1]
			q.After = &k
		case page.WindowEnd != nil:
			q.After = page.WindowEnd
		default:
			return nil
		}
	}
}

// contactQuery checks f and sort and turns them into the store's query.
func (s *Service) contactQuery(ctx context.Context, brandID int64, f parley.ContactFilter, sort string) (store.ContactQuery, error) {
	q := store.ContactQuery{Sort: sort, Consent: f.Consent, StateCode: strings.ToUpper(strings.TrimSpace(f.StateCode))}
	switch sort {
	case "":
		q.Sort = parley.SortNewest
	case parley.SortNewest, parley.SortOldest, parley.SortName, parley.SortActivity:
	default:
		return q, invalid("sort", "must be newest, oldest, name or activity")
	}
	switch f.Consent {
	case "", parley.ConsentIn, parley.ConsentOut, parley.ConsentNone:
	default:
		return q, invalid("consent", "must be in, out or none")
	}
	if f.SegmentID != 0 {
		if _, err := usableSegment(ctx, s.db, brandID, f.SegmentID); err != nil {
			return q, err
		}
		id := f.SegmentID
		q.Audience.Criteria = append(q.Audience.Criteria, parley.SegmentCriterion{
			Attribute:    parley.SegmentAttribute{DimensionType: parley.DimensionSegment},
			OperatorType: parley.OpEquals, IntFieldValue: &id})
	}
	if f.Field != "" {
		cr, err := s.fieldCriterion(ctx, brandID, f.Field, f.Value)
		if err != nil {
			return q, err
		}
		q.Audience.Criteria = append(q.Audience.Criteria, cr)
	}
	return q, nil
}

// fieldCriterion is the D14 criterion "custom field key equals value" (for
// a list: holds it), as the segment builder would save it.
func (s *Service) fieldCriterion(ctx context.Context, brandID int64, key, value string) (parley.SegmentCriterion, error) {
	fields, err := s.customFields(ctx, brandID)
	if err != nil {
		return parley.SegmentCriterion{}, err
	}
	f := fields[key]
	if f == nil {
		return parley.SegmentCriterion{}, invalid("field", "is not a custom field of the brand")
	}
	value = strings.TrimSpace(value)
	cr := parley.SegmentCriterion{
		Attribute:    parley.SegmentAttribute{DimensionType: parley.DimensionCustomData, FieldName: key, FieldType: int64(f.CustomDataType)},
		OperatorType: parley.OpEquals,
	}
	if value == "" {
		cr.OperatorType = parley.OpIsSet
		return cr, nil
	}
	switch f.CustomDataType {
	case parley.CustomInteger:
		n, err := strconv.ParseInt(value, 10, 64)
		if err != nil {
			return cr, invalid("value", "must be a whole number")
		}
		cr.IntFieldValue = &n
	case parley.CustomFloat:
		x, err := strconv.ParseFloat(value, 64)
		if err != nil {
			return cr, invalid("value", "must be a number")
		}
		cr.FloatFieldValue = &x
	case parley.CustomBoolean:
		b, err := strconv.ParseBool(strings.ToLower(value))
		if err != nil {
			return cr, invalid("value", "must be yes or no")
		}
		cr.BoolFieldValue = &b
	case parley.CustomDate:
		cr.DateFieldValue = &value
	case parley.CustomList:
		cr.OperatorType = parley.OpContains
		cr.StrFieldValue = &value
	default:
		cr.StrFieldValue = &value
	}
	return cr, nil
}

// contactCursor is a place in the contacts list and the way to read.
type contactCursor struct {
	Name string `json:"n,omitempty"`
	Act  int64  `json:"a,omitempty"`
	ID   int64  `json:"i"`
	Back bool   `json:"b,omitempty"`
}

func encodeContactCursor(k store.ContactKey, back bool) string {
	b, _ := json.Marshal(contactCursor{Name: k.Name, Act: k.Activity, ID: k.ID, Back: back})
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeContactCursor(s string) (store.ContactKey, bool, bool) {
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return store.ContactKey{}, false, false
	}
	var c contactCursor
	if json.Unmarshal(b, &c) != nil || c.ID < 1 {
		return store.ContactKey{}, false, false
	}
	return store.ContactKey{Name: c.Name, Activity: c.Act, ID: c.ID}, c.Back, true
}
