package service

import (
	"context"
	"errors"
	"github.com/parleyhq/parley/internal/audience"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// Segment evaluation (D14, D15): the service checks criteria against the
// brand's configuration as it is now, then the store answers with one
// query. The HTTP layer only decodes and encodes.

// scopeReader reads what criteria are checked against: the database, or
// a transaction that is about to change the brand's segments.
type scopeReader interface {
	ListCustomFields(ctx context.Context, brandID int64) ([]*parley.CustomField, error)
	ListSegments(ctx context.Context, brandID int64, visibleOnly bool) ([]*parley.Segment, error)
}

// criteriaScope reads what criteria are checked against: the brand's
// custom data fields and its segments, archived ones too (a segment may
// name an archived segment; it keeps its meaning).
func criteriaScope(ctx context.Context, r scopeReader, brandID, self int64) (parley.CriteriaScope, error) {
	return readScope(ctx, r, brandID, self, true)
}

// readScope is criteriaScope, without the segments unless withSegments:
// criteria that name none need not read them (nor fail on another
// segment's unreadable row).
func readScope(ctx context.Context, r scopeReader, brandID, self int64, withSegments bool) (parley.CriteriaScope, error) {
	sc := parley.CriteriaScope{Fields: map[string]int64{}, Segments: map[int64]*parley.Segment{}, Self: self}
	fields, err := r.ListCustomFields(ctx, brandID)
	if err != nil {
		return sc, err
	}
	for _, f := range fields {
		sc.Fields[parley.CustomDataKey(f.FieldName)] = int64(f.CustomDataType)
	}
	if !withSegments {
		return sc, nil
	}
	segs, err := r.ListSegments(ctx, brandID, false)
	if err != nil {
		return sc, err
	}
	for _, seg := range segs {
		sc.Segments[seg.ID] = seg
	}
	return sc, nil
}

func checkCriteria(ctx context.Context, r scopeReader, brandID, self int64, criteria []parley.SegmentCriterion) error {
	names := slices.ContainsFunc(criteria, func(c parley.SegmentCriterion) bool {
		return c.Attribute.DimensionType == parley.DimensionSegment
	})
	sc, err := readScope(ctx, r, brandID, self, names)
	if err != nil {
		return err
	}
	return parley.ValidateCriteria(criteria, sc)
}

// checkReferrers refuses a change of seg (its criteria or type) that
// would push a segment naming it, at any depth, over D14's limit of
// expanded criteria: that segment would be refused at every use after.
func checkReferrers(ctx context.Context, r scopeReader, brandID int64, seg *parley.Segment, criteria bool) error {
	before, err := criteriaScope(ctx, r, brandID, 0)
	if err != nil {
		return err
	}
	after := before
	after.Segments = maps.Clone(before.Segments)
	after.Segments[seg.ID] = seg
	member := "type"
	if criteria {
		member = "criteria"
	}
	return parley.CheckReferrers(seg.ID, before, after, member)
}

// CheckCriteria checks criteria for a segment of the brand (self: its id,
// 0 for a new one or a preview) against D14: an EValidation error that
// names the criterion's index, or nil.
func (s *Service) CheckCriteria(ctx context.Context, brandID, self int64, criteria []parley.SegmentCriterion) error {
	return checkCriteria(ctx, s.db, brandID, self, criteria)
}

// findSegment returns the brand's segment, ESegmentNotFound for an id of
// none or another brand's (D15).
func (s *Service) findSegment(ctx context.Context, brandID, id int64) (*parley.Segment, error) {
	seg, err := s.db.FindSegment(ctx, brandID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, parley.SegmentNotFound(id)
	}
	return seg, err
}

// FindSegment returns the brand's segment, archived or not (GET
// /segments/{id}). ESegmentNotFound.
func (s *Service) FindSegment(ctx context.Context, brandID, id int64) (*parley.Segment, error) {
	return s.findSegment(ctx, brandID, id)
}

// checkSegment checks and normalises the members of seg that do not
// depend on the brand: the one set of rules for v1, the admin API and the
// CLI (D15).
func checkSegment(seg *parley.Segment) error {
	seg.Name = strings.TrimSpace(seg.Name)
	switch {
	case seg.Name == "":
		return invalid("name", "required")
	case utf8.RuneCountInString(seg.Name) > parley.MaxSegmentName:
		return invalid("name", "at most "+strconv.Itoa(parley.MaxSegmentName)+" characters")
	case utf8.RuneCountInString(seg.Description) > parley.MaxSegmentDescription:
		return invalid("description", "at most "+strconv.Itoa(parley.MaxSegmentDescription)+" characters")
	case seg.ColorID < 0:
		return invalid("color_id", "must be ≥ 0")
	}
	if seg.Type == "" {
		seg.Type = parley.SegmentStandard
	}
	if seg.Type != parley.SegmentStandard && seg.Type != parley.SegmentPointInTime {
		return invalid("type", "must be STANDARD or POINT IN TIME")
	}
	if seg.Source = strings.TrimSpace(seg.Source); seg.Source == "" {
		seg.Source = parley.SourceUserDefined
	}
	if seg.Criteria == nil {
		seg.Criteria = parley.Criteria{}
	}
	return nil
}

// CreateSegment stores a segment for the brand (POST /segments, the admin
// API and `parley segment create` alike). Its members and criteria are
// checked inside the transaction that stores it, under the brand's segment
// lock, so no two writes can make a cycle together; a POINT IN TIME
// segment's members are frozen in the same transaction (D14). EValidation,
// EDuplicate for a name the brand uses (archived segments keep theirs),
// ENotFound for a missing brand.
func (s *Service) CreateSegment(ctx context.Context, o parley.Origin, brandID int64, seg *parley.Segment) (*parley.Segment, error) {
	if _, err := s.FindBrand(ctx, brandID); err != nil {
		return nil, err
	}
	if seg.ID != 0 {
		return nil, invalid("id", "set by the server")
	}
	seg.BrandID = brandID
	if err := checkSegment(seg); err != nil {
		return nil, err
	}
	err := s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		if err := tx.LockSegments(ctx, brandID); err != nil {
			return err
		}
		if err := checkCriteria(ctx, tx, brandID, 0, seg.Criteria); err != nil {
			return err
		}
		if err := tx.CreateSegment(ctx, seg); err != nil {
			return err
		}
		if seg.Type == parley.SegmentPointInTime {
			if _, err := tx.FreezeSegment(ctx, brandID, seg.ID); err != nil {
				return err
			}
		}
		tx.Answer(seg)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return seg, nil
}

// UpdateSegment changes the members sent (POST /segments/{id}, D4, D15).
// New criteria, or a new type, are checked again, cycles included.
// Sending criteria to a POINT IN TIME segment, or making a segment POINT
// IN TIME, freezes its members as of now; making it STANDARD drops the
// frozen members. An archived segment may be updated (to free its name,
// say); it stays archived. ESegmentNotFound, EValidation, EDuplicate.
func (s *Service) UpdateSegment(ctx context.Context, o parley.Origin, brandID, id int64, in parley.SegmentUpdate) (*parley.Segment, error) {
	for name, m := range map[string]parley.Optional[struct{}]{
		"name": presence(in.Name), "type": presence(in.Type), "color_id": presence(in.ColorID),
		"is_pinned": presence(in.IsPinned), "criteria": presence(in.Criteria),
	} {
		if m.Set && !m.Valid {
			return nil, invalid(name, "must not be null")
		}
	}
	var seg *parley.Segment
	err := s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		if err := tx.LockSegments(ctx, brandID); err != nil {
			return err
		}
		var err error
		if seg, err = tx.FindSegment(ctx, brandID, id); errors.Is(err, store.ErrNotFound) {
			return parley.SegmentNotFound(id)
		} else if err != nil {
			return err
		}
		wasType := seg.Type
		if in.Name.Set {
			seg.Name = in.Name.Value
		}
		if in.Description.Set {
			seg.Description = in.Description.Value // null clears it
		}
		if in.Type.Set {
			seg.Type = in.Type.Value
			if seg.Type == "" {
				return invalid("type", "must be STANDARD or POINT IN TIME")
			}
		}
		if in.Criteria.Set {
			seg.Criteria = in.Criteria.Value
		}
		if in.ColorID.Set {
			seg.ColorID = in.ColorID.Value
		}
		if in.IsPinned.Set {
			seg.IsPinned = in.IsPinned.Value
		}
		if err := checkSegment(seg); err != nil {
			return err
		}
		retyped := seg.Type != wasType
		if in.Criteria.Set || retyped {
			if err := checkCriteria(ctx, tx, brandID, id, seg.Criteria); err != nil {
				return err
			}
			if err := checkReferrers(ctx, tx, brandID, seg, in.Criteria.Set); err != nil {
				return err
			}
		}
		if !in.Name.Set && !in.Description.Set && !in.Type.Set && !in.Criteria.Set && !in.ColorID.Set && !in.IsPinned.Set {
			tx.Answer(seg) // nothing to change: date_last_updated stays
			return nil
		}
		if err := tx.UpdateSegment(ctx, seg); err != nil {
			return err
		}
		switch {
		case seg.Type == parley.SegmentPointInTime && (in.Criteria.Set || retyped):
			if _, err := tx.FreezeSegment(ctx, brandID, id); err != nil {
				return err
			}
		case wasType == parley.SegmentPointInTime && retyped:
			if err := tx.ThawSegment(ctx, brandID, id); err != nil {
				return err
			}
		}
		tx.Answer(seg)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return seg, nil
}

// presence keeps only whether an Optional member was sent and non-null.
func presence[T any](o parley.Optional[T]) parley.Optional[struct{}] {
	return parley.Optional[struct{}]{Set: o.Set, Valid: o.Valid}
}

// ArchiveSegment archives the brand's segment and returns it (DELETE
// /segments/{id}, the admin API, `parley segment archive`). It leaves GET
// /segments but keeps its name, its members and its meaning for segments
// that name it. Archiving an archived segment changes nothing.
// ESegmentNotFound.
func (s *Service) ArchiveSegment(ctx context.Context, o parley.Origin, brandID, id int64) (*parley.Segment, error) {
	var seg *parley.Segment
	err := s.db.WithOriginTx(ctx, o, func(tx *store.Tx) error {
		var err error
		if seg, err = tx.FindSegment(ctx, brandID, id); errors.Is(err, store.ErrNotFound) {
			return parley.SegmentNotFound(id)
		} else if err != nil {
			return err
		}
		if seg.IsArchived {
			return nil
		}
		if err := tx.ArchiveSegment(ctx, brandID, id); err != nil {
			return err
		}
		seg.IsArchived = true
		seg.DateLastUpdated = parley.Time{Time: tx.Now()}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return seg, nil
}

// segmentReader reads a stored segment and what its criteria are checked
// against: the database, or a transaction.
type segmentReader interface {
	scopeReader
	FindSegment(ctx context.Context, brandID, id int64) (*parley.Segment, error)
}

// usableSegment returns the brand's segment if it can be evaluated now:
// its criteria hold against today's fields and segments (a field may have
// been deleted since) and, with those of the segments it names, number at
// most parley.MaxExpandedCriteria (D14). Every use of a stored segment
// goes through it: count, users, export, campaign create and start, and
// flows (D21) when they come. ESegmentNotFound, EValidation.
func usableSegment(ctx context.Context, r segmentReader, brandID, id int64) (*parley.Segment, error) {
	seg, err := r.FindSegment(ctx, brandID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, parley.SegmentNotFound(id)
	} else if err != nil {
		return nil, err
	}
	if seg.Type != parley.SegmentPointInTime { // a frozen one reads its members
		if err := checkCriteria(ctx, r, brandID, seg.ID, seg.Criteria); err != nil {
			return nil, err
		}
	}
	return seg, nil
}

// segmentAudience is the audience of a stored segment that can be
// evaluated now (usableSegment).
func (s *Service) segmentAudience(ctx context.Context, brandID, id int64) (store.Audience, error) {
	seg, err := usableSegment(ctx, s.db, brandID, id)
	if err != nil {
		return store.Audience{}, err
	}
	return store.Audience{SegmentID: seg.ID}, nil
}

// CountSegment counts the live users of the brand's segment (GET
// /segments/{id}/count). ESegmentNotFound, EValidation, ERateLimited
// when the brand runs too many segment queries at once (segmentgate.go).
func (s *Service) CountSegment(ctx context.Context, brandID, id int64) (*parley.SegmentCount, error) {
	a, err := s.segmentAudience(ctx, brandID, id)
	if err != nil {
		return nil, err
	}
	release, err := s.segmentGate().enter(ctx, brandID)
	if err != nil {
		return nil, err
	}
	defer release()
	at := s.db.Now().UTC()
	n, err := s.aud.Count(ctx, brandID, a)
	if err != nil {
		return nil, s.audienceErr(id, err)
	}
	return &parley.SegmentCount{SegmentID: id, Count: n, ComputedAt: parley.Time{Time: at}}, nil
}

// SegmentUsers returns one page of the segment's users by id, and the
// cursor of the next ("" at the end) (GET /segments/{id}/users).
// ESegmentNotFound, EValidation.
func (s *Service) SegmentUsers(ctx context.Context, brandID, id int64, limit int, cursor string) ([]*parley.User, string, error) {
	// pageArgs' id is where the page starts; here pages go up from it.
	limit, after, err := pageArgs(limit, cursor)
	if err != nil {
		return nil, "", err
	}
	a, err := s.segmentAudience(ctx, brandID, id)
	if err != nil {
		return nil, "", err
	}
	release, err := s.segmentGate().enter(ctx, brandID)
	if err != nil {
		return nil, "", err
	}
	defer release()
	// One more than the page tells whether a next page exists.
	users, err := s.aud.Users(ctx, brandID, a, after, limit+1)
	if err != nil {
		return nil, "", s.audienceErr(id, err)
	}
	next := ""
	if len(users) > limit {
		users = users[:limit]
		next = encodeCursor(users[limit-1].ID)
	}
	return users, next, nil
}

// PreviewSegment counts the users that criteria not yet saved select and
// shows the first PreviewSampleSize of them by id (POST /segments/preview).
// EValidation.
func (s *Service) PreviewSegment(ctx context.Context, brandID int64, criteria []parley.SegmentCriterion) (*parley.SegmentPreview, error) {
	if err := s.CheckCriteria(ctx, brandID, 0, criteria); err != nil {
		return nil, err
	}
	release, err := s.segmentGate().enter(ctx, brandID)
	if err != nil {
		return nil, err
	}
	defer release()
	a := store.Audience{Criteria: criteria}
	n, sample, err := s.aud.CountAndUsers(ctx, brandID, a, parley.PreviewSampleSize)
	if err != nil {
		return nil, err
	}
	return &parley.SegmentPreview{Count: n, Sample: sample}, nil
}

// Audience is the service's audience engine (tests and benches set it
// Eager, to answer from memory at once).
func (s *Service) Audience() *audience.Engine { return s.aud }

// audienceErr maps the store's not-found for a segment deleted between the
// check and the query.
func (s *Service) audienceErr(id int64, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return parley.SegmentNotFound(id)
	}
	return err
}
