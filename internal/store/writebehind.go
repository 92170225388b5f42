package store

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/parleyhq/parley"
)

// writeBehind holds the users that the writes of a PostgreSQL group commit
// created, for one INSERT between them instead of one each (issue #15).
// Each INSERT was a round trip to the server and a statement for its
// backend; with the server, its backends and the clients sharing two
// cores, those were most of what a create cost beyond SQLite's.
//
// A write sees no difference: InsertUser gives the user its id at once,
// from ids reserved from the table's sequence (userIDs), and any
// statement of the transaction that may see users first sends the users
// held (flushFor), and so does the commit, so every statement still sees
// every row written before it. What comes late is a refusal: a number
// taken (D5) is known only when the rows go. Then the group fails with
// errBehindConflict and runs again, in one transaction, with each insert
// sent on its own, where the refusal fails its write alone.
type writeBehind struct {
	users []*parley.User
	// err is a failed send, found by a statement that cannot return it
	// (QueryRow, SQL): the transaction must not commit.
	err error
}

// userIDs are ids reserved from the users' sequence for held users, so
// that a group does not ask for them each time. They are given out for
// a second at most after they were reserved: a user's id then tells
// when it was created about as well as an id the INSERT took (which
// also commits later than it was taken). Ids not given by then are
// skipped, as those of a rolled-back insert are: never reused, not
// gapless.
type userIDs struct {
	mu    sync.Mutex
	ids   []int64
	until time.Time
}

// userIDBlock is how many ids one reservation takes.
const userIDBlock = 128

// userIDLife is how long reserved ids are given out.
const userIDLife = time.Second

// take returns a reserved id, or false when none is left or fresh.
func (p *userIDs) take(now time.Time) (int64, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.ids) == 0 || now.After(p.until) {
		return 0, false
	}
	id := p.ids[0]
	p.ids = p.ids[1:]
	return id, true
}

// put replaces the reserved ids with ids, fresh until until.
func (p *userIDs) put(ids []int64, until time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.ids, p.until = ids, until
}

// errBehindConflict fails a group whose held users could not all be
// inserted: a number was taken. Its writes run again without holding.
var errBehindConflict = errors.New("store: a held user's number is taken")

// qReserveUserIDs reserves ids from the sequence behind users.id.
const qReserveUserIDs = `SELECT nextval(pg_get_serial_sequence('users', 'id')) FROM generate_series(1, ?)`

// qInsertHeldUsers inserts the held users, one array per column: one
// statement whatever their number, so one prepared statement per connection.
const qInsertHeldUsers = `INSERT INTO users (id, brand_id, phone_number, first_name, last_name, email_address,
	date_of_birth, messaging_consent, postal_code, city, county, state, state_code, time_zone,
	custom_data, channel, is_deleted, date_created, date_last_updated)
	SELECT id, brand_id, phone_number, first_name, last_name, email_address, date_of_birth,
		messaging_consent, postal_code, city, county, state, state_code, time_zone,
		custom_data::json, channel, is_deleted, date_created, date_last_updated
	FROM unnest(?::bigint[], ?::bigint[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[],
		?::boolean[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[], ?::text[],
		?::text[], ?::text[], ?::boolean[], ?::bigint[], ?::bigint[])
		AS t(id, brand_id, phone_number, first_name, last_name, email_address, date_of_birth,
		messaging_consent, postal_code, city, county, state, state_code, time_zone,
		custom_data, channel, is_deleted, date_created, date_last_updated)
	ON CONFLICT (brand_id, phone_number) WHERE is_deleted = FALSE DO NOTHING RETURNING id`

// holdUser gives u an id and holds it for the next send.
func (tx *Tx) holdUser(ctx context.Context, u *parley.User) error {
	id, ok := tx.db.userIDs.take(time.Now())
	if !ok {
		ids, err := tx.reserveUserIDs(ctx)
		if err != nil {
			return err
		}
		id = ids[0]
		tx.db.userIDs.put(ids[1:], time.Now().Add(userIDLife))
	}
	u.ID = id
	tx.behind.users = append(tx.behind.users, u)
	return nil
}

// reserveUserIDs reserves a block of ids from the users' sequence. The
// sequence is outside transactions: the ids stay taken if tx rolls back.
func (tx *Tx) reserveUserIDs(ctx context.Context) ([]int64, error) {
	rows, err := tx.query(ctx, qReserveUserIDs, userIDBlock)
	if err != nil {
		return nil, fmt.Errorf("store: reserve user ids: %w", err)
	}
	ids, err := collect(rows, func(scan func(...any) error) (int64, error) {
		var id int64
		return id, scan(&id)
	})
	if err != nil {
		return nil, fmt.Errorf("store: reserve user ids: %w", err)
	}
	if len(ids) == 0 {
		return nil, errors.New("store: reserve user ids: none")
	}
	return ids, nil
}

// seesHeld reports whether a statement may need the users held: every
// statement but a SELECT that names no users' table (a SELECT runs no
// trigger, so it reads only what it names), and the ids' reservation.
func seesHeld(query string) bool {
	if query == qReserveUserIDs {
		return false
	}
	q := strings.TrimLeft(query, " \t\n")
	return len(q) < 6 || !strings.EqualFold(q[:6], "SELECT") || strings.Contains(q, "user") || strings.Contains(q, "USER")
}

// flushBehind sends the users held, before any other statement of the
// transaction and before it commits. Once a send has failed, every later
// one fails the same way.
func (tx *Tx) flushBehind(ctx context.Context) error {
	return tx.flushFor(ctx, "")
}

// flushFor sends the users held before query runs, if it may see them
// (seesHeld); "" is any statement.
func (tx *Tx) flushFor(ctx context.Context, query string) error {
	wb := tx.behind
	if wb == nil || wb.err != nil || len(wb.users) == 0 || (query != "" && !seesHeld(query)) {
		if wb != nil {
			return wb.err
		}
		return nil
	}
	users := wb.users
	wb.users = nil
	wb.err = tx.insertHeld(ctx, users)
	return wb.err
}

// insertHeld inserts users with their ids, in number order, so that two
// groups inserting the same numbers take their locks in one order.
func (tx *Tx) insertHeld(ctx context.Context, users []*parley.User) error {
	users = slices.Clone(users)
	slices.SortFunc(users, func(a, b *parley.User) int {
		return cmp.Or(cmp.Compare(a.BrandID, b.BrandID), strings.Compare(a.PhoneNumber, b.PhoneNumber))
	})
	n := len(users)
	var (
		ids, brands, created, updated                 = make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
		phones                                        = make([]string, n)
		first, last, email, dob, postal, city, county = nulls(n), nulls(n), nulls(n), nulls(n), nulls(n), nulls(n), nulls(n)
		state, stCode, tz, custom, channel            = nulls(n), nulls(n), nulls(n), nulls(n), nulls(n)
		consent, deleted                              = make([]*bool, n), make([]bool, n)
	)
	for i, u := range users {
		loc := u.Location
		if loc == nil {
			loc = &parley.Location{}
		}
		ids[i], brands[i], phones[i] = u.ID, u.BrandID, u.PhoneNumber
		first[i], last[i], email[i], dob[i] = u.FirstName, u.LastName, u.EmailAddress, u.DateOfBirth
		consent[i] = u.MessagingConsent
		postal[i], city[i], county[i], state[i], stCode[i], tz[i] = loc.PostalCode, loc.City, loc.County, loc.State, loc.StateCode, loc.TimeZone
		if cd := nullJSON(u.CustomData); cd.Valid {
			custom[i] = &cd.String
		}
		channel[i], deleted[i] = u.Channel, u.IsDeleted
		created[i], updated[i] = micros(u.DateCreated.Time), micros(u.DateLastUpdated.Time)
	}
	rows, err := tx.tx.QueryContext(ctx, tx.db.rebind(qInsertHeldUsers), ids, brands, phones, first, last, email, dob,
		consent, postal, city, county, state, stCode, tz, custom, channel, deleted, created, updated)
	if err != nil {
		return fmt.Errorf("store: insert users: %w", err)
	}
	inserted, err := collect(rows, func(scan func(...any) error) (int64, error) {
		var id int64
		return id, scan(&id)
	})
	if err != nil {
		return fmt.Errorf("store: insert users: %w", err)
	}
	if len(inserted) != n {
		return errBehindConflict
	}
	return nil
}

func nulls(n int) []*string { return make([]*string, n) }

// canceled is an ended context: a QueryRow under it fails at once and
// touches nothing, for a statement that cannot return the failed send
// that stops it (the transaction then fails with that send's error).
var canceled = func() context.Context {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	return ctx
}()
