package service

import (
	"context"
	"encoding/base64"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/uuid"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/store"
)

// Page sizes of GET /messages (D8).
const (
	DefaultPageSize = 50
	MaxPageSize     = 100
)

var messageTypes = []string{parley.TypeConversational, parley.TypeMarketing, parley.TypeTransactional}

// SendMessage implements parley.MessageService.
func (s *Service) SendMessage(ctx context.Context, o parley.Origin, brandID int64, in parley.MessageCreate) (*parley.Message, error) {
	m, err := validateMessage(in)
	if err != nil {
		return nil, err
	}
	m.BrandID = brandID
	// Sends that arrive together share a transaction (store.WithGroupTx),
	// and their jobs one insert.
	err = s.db.WithGroupTx(ctx, o, func(ctx context.Context, tx *store.Tx) error {
		if len(m.MediaItemUUIDs) > 0 {
			// The user is checked first, so a missing user is the error
			// reported when the media are wrong too.
			if _, err := tx.FindUserByID(ctx, brandID, m.UserID); errors.Is(err, store.ErrNotFound) {
				return store.Unchanged(parley.UserNotFound(m.UserID))
			} else if err != nil {
				return err
			}
			var refused *parley.Error
			if err := checkMedia(ctx, tx, brandID, m.MediaItemUUIDs); errors.As(err, &refused) {
				return store.Unchanged(err)
			} else if err != nil {
				return err
			}
		}
		m.DateCreated = parley.Time{Time: tx.Now()}
		switch err := tx.InsertMessageToUser(ctx, m); {
		case errors.Is(err, store.ErrNotFound):
			return store.Unchanged(parley.UserNotFound(m.UserID))
		case err != nil:
			return err
		}
		s.jobsOf(tx).Delivery(brandID, m.ID)
		tx.Answer(m)
		return s.emit(ctx, tx, brandID, parley.EventMessageQueued, m)
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// validateMessage applies the body rules of D8 that need no database.
func validateMessage(in parley.MessageCreate) (*parley.Message, error) {
	m := &parley.Message{
		Direction:      parley.DirectionOutbound,
		Status:         parley.StatusQueued,
		Type:           parley.TypeConversational,
		MediaItemUUIDs: []string{},
	}
	if !in.UserID.Valid {
		return nil, invalid("user_id", "required")
	}
	if in.UserID.Value < 1 {
		return nil, invalid("user_id", "must be an integer ≥ 1")
	}
	m.UserID = in.UserID.Value
	if err := checkContent(m, in.Body, in.MediaItemUUIDs); err != nil {
		return nil, err
	}
	if in.Type.Set {
		t, ok := oneOf(in.Type, messageTypes)
		if !ok {
			return nil, invalid("type", "must be one of "+strings.Join(messageTypes, ", "))
		}
		m.Type = t
	}
	if m.Body == "" && len(m.MediaItemUUIDs) == 0 {
		return nil, invalid("body", "required when there are no media items")
	}
	return m, nil
}

// checkContent applies D8's limits on a message's body and media, which a
// campaign's share (D16), and sets them on m. That there is a body or
// media is checked by the caller, after its other members.
func checkContent(m *parley.Message, body parley.Optional[string], media parley.Optional[[]string]) error {
	if body.Set {
		if !body.Valid {
			return invalid("body", "must be a string, not null")
		}
		if utf8.RuneCountInString(body.Value) > parley.MaxMessageBody {
			return invalid("body", "at most "+strconv.Itoa(parley.MaxMessageBody)+" characters")
		}
		m.Body = body.Value
	}
	if media.Set {
		if !media.Valid {
			return invalid("media_item_uuids", "must be an array, not null")
		}
		if len(media.Value) > parley.MaxMediaItems {
			return invalid("media_item_uuids", "at most "+strconv.Itoa(parley.MaxMediaItems)+" items")
		}
		m.MediaItemUUIDs = media.Value
	}
	return nil
}

// oneOf matches a present, non-null value case-insensitively against allowed
// and returns the canonical spelling.
func oneOf(o parley.Optional[string], allowed []string) (string, bool) {
	if !o.Valid {
		return "", false
	}
	for _, a := range allowed {
		if equalFoldASCII(o.Value, a) {
			return a, true
		}
	}
	return "", false
}

// checkMedia insists that every id names a file of the brand (D8).
func checkMedia(ctx context.Context, tx *store.Tx, brandID int64, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	for i, id := range ids {
		if u, err := uuid.Parse(id); err != nil || u.String() != id {
			return mediaErr(i, id)
		}
	}
	found, err := tx.ExistingFiles(ctx, brandID, ids)
	if err != nil {
		return err
	}
	for i, id := range ids {
		if !found[id] {
			return mediaErr(i, id)
		}
	}
	return nil
}

func mediaErr(i int, id string) *parley.Error {
	field := "media_item_uuids[" + strconv.Itoa(i) + "]"
	return &parley.Error{
		Code:    parley.EInvalidMediaItem,
		Message: field + ": [" + id + "] is not a file uploaded by this brand",
		Field:   field,
	}
}

// FindMessageByID implements parley.MessageService.
func (s *Service) FindMessageByID(ctx context.Context, brandID, id int64) (*parley.Message, error) {
	m, err := s.db.FindMessage(ctx, brandID, id)
	if errors.Is(err, store.ErrNotFound) {
		return nil, parley.Errorf(parley.ENotFound, "Message with ID [%d] not found.", id)
	}
	return m, err
}

// ListMessages implements parley.MessageService. The cursor is opaque to
// callers; it encodes the last id of the page.
func (s *Service) ListMessages(ctx context.Context, brandID int64, f parley.MessageFilter) ([]*parley.Message, string, error) {
	limit, before, err := pageArgs(f.Limit, f.Cursor)
	if err != nil {
		return nil, "", err
	}
	f.Limit = limit
	if f.UserID < 0 {
		return nil, "", invalid("user_id", "must be an integer ≥ 1")
	}
	if f.CampaignID < 0 {
		return nil, "", invalid("campaign_id", "must be an integer ≥ 1")
	}
	if f.CampaignID > 0 {
		// An id that names no campaign of the brand is 404 rather than an
		// empty page: a mistyped id should not look like a campaign that
		// has not started (D16, docs/api.md).
		if _, err := s.db.FindCampaign(ctx, brandID, f.CampaignID); errors.Is(err, store.ErrNotFound) {
			return nil, "", parley.CampaignNotFound(f.CampaignID)
		} else if err != nil {
			return nil, "", err
		}
	}
	msgs, err := s.db.FindMessages(ctx, brandID, store.MessageQuery{UserID: f.UserID, CampaignID: f.CampaignID,
		BeforeID: before, Limit: f.Limit + 1})
	if err != nil {
		return nil, "", err
	}
	next := ""
	if len(msgs) > f.Limit {
		msgs = msgs[:f.Limit]
		next = encodeCursor(msgs[len(msgs)-1].ID)
	}
	return msgs, next, nil
}

// pageArgs checks a list's limit (0 means the default) and decodes its
// cursor into the id the page starts before (0 for the first page).
func pageArgs(limit int, cursor string) (int, int64, error) {
	if limit == 0 {
		limit = DefaultPageSize
	}
	if limit < 1 || limit > MaxPageSize {
		return 0, 0, invalid("limit", "must be between 1 and "+strconv.Itoa(MaxPageSize))
	}
	var before int64
	if cursor != "" {
		var ok bool
		if before, ok = decodeCursor(cursor); !ok {
			return 0, 0, invalid("cursor", "is not a cursor this API returned")
		}
	}
	return limit, before, nil
}

func encodeCursor(id int64) string {
	return base64.RawURLEncoding.EncodeToString([]byte("m:" + strconv.FormatInt(id, 10)))
}

func decodeCursor(c string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, false
	}
	rest, ok := strings.CutPrefix(string(b), "m:")
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(rest, 10, 64)
	return id, err == nil && id > 0
}
