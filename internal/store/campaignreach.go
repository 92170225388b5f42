package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/parleyhq/parley"
)

// Reach is what a campaign to an audience would do now (issue #32, the
// console's review step): its members, those with messaging_consent
// true (a MARKETING campaign messages only them, D16), and the first of
// those by id, nil when none, to preview the body with.
type Reach struct {
	Members, Consented int64
	Sample             *parley.User
}

// AudienceReach counts a's members and consenting members in one pass
// and reads the first consenting member.
func (db *DB) AudienceReach(ctx context.Context, brandID int64, a Audience) (*Reach, error) {
	where, args, err := db.audienceFilter(ctx, db, brandID, a, db.Now())
	if err != nil {
		return nil, err
	}
	release, err := db.holdReaders(ctx, 1)
	if err != nil {
		return nil, err
	}
	defer release()
	var r Reach
	if err := db.queryRow(ctx, `SELECT count(*), coalesce(sum(CASE WHEN u.messaging_consent = TRUE THEN 1 ELSE 0 END), 0)
	FROM users u WHERE `+where, args...).Scan(&r.Members, &r.Consented); err != nil {
		return nil, fmt.Errorf("store: audience reach: %w", err)
	}
	if r.Consented == 0 {
		return &r, nil
	}
	u, err := scanUserFrom(db.queryRow(ctx, `SELECT `+prefixed("u.", userColumns)+` FROM users u WHERE `+where+
		` AND u.messaging_consent = TRUE ORDER BY u.id LIMIT 1`, args...).Scan)
	if errors.Is(err, sql.ErrNoRows) {
		return &r, nil
	} else if err != nil {
		return nil, fmt.Errorf("store: audience reach: sample: %w", err)
	}
	r.Sample = u
	return &r, nil
}
