package service

import (
	"context"
	"errors"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// Segment evaluation (D14, D15): the service checks criteria against the
// brand's configuration as it is now, then the store answers with one
// query. The HTTP layer only decodes and encodes.

// criteriaScope reads what criteria are checked against: the brand's
// custom data fields and its segments.
func (s *Service) criteriaScope(ctx context.Context, brandID, self int64) (parley.CriteriaScope, error) {
	sc := parley.CriteriaScope{Fields: map[string]int64{}, Segments: map[int64]*parley.Segment{}, Self: self}
	fields, err := s.db.ListCustomFields(ctx, brandID)
	if err != nil {
		return sc, err
	}
	for _, f := range fields {
		sc.Fields[parley.CustomDataKey(f.FieldName)] = int64(f.CustomDataType)
	}
	segs, err := s.db.ListSegments(ctx, brandID, false)
	if err != nil {
		return sc, err
	}
	for _, seg := range segs {
		sc.Segments[seg.ID] = seg
	}
	return sc, nil
}

// CheckCriteria checks criteria for a segment of the brand (self: its id,
// 0 for a new one or a preview) against D14: an EValidation error that
// names the criterion's index, or nil.
func (s *Service) CheckCriteria(ctx context.Context, brandID, self int64, criteria []parley.SegmentCriterion) error {
	sc, err := s.criteriaScope(ctx, brandID, self)
	if err != nil {
		return err
	}
	return parley.ValidateCriteria(criteria, sc)
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

// segmentAudience checks a stored segment before it is evaluated: its
// criteria must hold against today's fields and segments (a field may have
// been deleted since). A POINT IN TIME segment reads its frozen members.
func (s *Service) segmentAudience(ctx context.Context, brandID, id int64) (store.Audience, error) {
	seg, err := s.findSegment(ctx, brandID, id)
	if err != nil {
		return store.Audience{}, err
	}
	if seg.Type != parley.SegmentPointInTime {
		if err := s.CheckCriteria(ctx, brandID, seg.ID, seg.Criteria); err != nil {
			return store.Audience{}, err
		}
	}
	return store.Audience{SegmentID: seg.ID}, nil
}

// CountSegment counts the live users of the brand's segment (GET
// /segments/{id}/count). ESegmentNotFound, EValidation.
func (s *Service) CountSegment(ctx context.Context, brandID, id int64) (*parley.SegmentCount, error) {
	a, err := s.segmentAudience(ctx, brandID, id)
	if err != nil {
		return nil, err
	}
	at := s.db.Now().UTC()
	n, err := s.db.CountAudience(ctx, brandID, a)
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
	// One more than the page tells whether a next page exists.
	users, err := s.db.AudienceUsers(ctx, brandID, a, after, limit+1)
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
	a := store.Audience{Criteria: criteria}
	n, err := s.db.CountAudience(ctx, brandID, a)
	if err != nil {
		return nil, err
	}
	sample, err := s.db.AudienceUsers(ctx, brandID, a, 0, parley.PreviewSampleSize)
	if err != nil {
		return nil, err
	}
	return &parley.SegmentPreview{Count: n, Sample: sample}, nil
}

// audienceErr maps the store's not-found for a segment deleted between the
// check and the query.
func (s *Service) audienceErr(id int64, err error) error {
	if errors.Is(err, store.ErrNotFound) {
		return parley.SegmentNotFound(id)
	}
	return err
}
