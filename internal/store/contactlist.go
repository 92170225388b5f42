package store

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"

	"github.com/parleyhq/parley"
)

// The console's contacts list (issue #32): a page of a brand's live
// contacts in one of four orders, filtered, by keyset (no OFFSET, so a
// page costs the same deep in the list and paging never skips or repeats
// a contact).
//
// A page's filter is answered in one of two ways:
//   - by an index (migration 00036; docs/performance.md): no filter, the
//     consent or state filter, newest or oldest first;
//   - else in a window: the next ContactWindow contacts in the page's
//     order (read along the order's index) are filtered, and a page that
//     finds fewer than it shows ends where the window ended, with a link to
//     look further. A filter no index serves (a segment, a custom field)
//     so reads at most a window of rows per page, whatever the brand's size.
//
// The order by latest activity has no index (migration 00058): the
// audience engine answers it from memory (audience.Engine.ContactList,
// with ListedContacts); here it is a sort of the brand's contacts, for
// while a brand loads.

// ContactWindow is how many contacts, in the page's order, a page whose
// filter no index serves looks through (a variable for tests only).
var ContactWindow = 1000

// ContactQuery is one page of the contacts list.
type ContactQuery struct {
	// Sort is a parley.Sort* order ("" is newest).
	Sort string
	// Consent and StateCode filter by index; Audience (criteria of a
	// segment's membership and a custom field), when not zero, in the window.
	Consent, StateCode string
	Audience           Audience
	// After is where the page starts, from a ContactKey; Back reads the
	// page before it instead (the page still comes in the list's order).
	After *ContactKey
	Back  bool
	Limit int
}

// ContactKey is a contact's place in an order: its key there and its id.
type ContactKey struct {
	Name     string // SortName
	Activity int64  // SortActivity
	ID       int64
}

// ContactPage is what ContactList found.
type ContactPage struct {
	Users []*parley.User
	// Keys are the users' places, for the cursors of the pages around.
	Keys []ContactKey
	// More: the list goes on past the page (in the direction read).
	More bool
	// WindowEnd, when not nil, is where the window ended before the page
	// was full: the list may go on from there.
	WindowEnd *ContactKey
}

func (q *ContactQuery) windowed() bool {
	return !q.Audience.isZero() || (q.Sort != parley.SortNewest && q.Sort != parley.SortOldest && q.Sort != "" &&
		(q.Consent != "" || q.StateCode != ""))
}

func (a Audience) isZero() bool { return a.SegmentID == 0 && len(a.Criteria) == 0 }

// order is how a sort reads: the key's expression on the alias p ("" for
// id alone) and whether it goes down.
func (db *DB) order(sort, p string) (key string, desc bool) {
	switch sort {
	case parley.SortOldest:
		return "", false
	case parley.SortName:
		if db.engine == "postgres" {
			return `(coalesce(lower(` + p + `first_name) || ' ' || lower(` + p + `last_name), lower(` + p + `first_name), lower(` +
				p + `last_name), chr(1114111)) COLLATE "C")`, false
		}
		return `coalesce(lower(` + p + `first_name) || ' ' || lower(` + p + `last_name), lower(` + p + `first_name), lower(` +
			p + `last_name), char(1114111))`, false
	case parley.SortActivity:
		if db.engine == "postgres" {
			return `GREATEST(coalesce(` + p + `last_inbound_at, 0), coalesce(` + p + `last_outbound_at, 0))`, true
		}
		return `max(coalesce(` + p + `last_inbound_at, 0), coalesce(` + p + `last_outbound_at, 0))`, true
	}
	return "", true // newest
}

// orderSQL is the ORDER BY and the keyset condition after k (nil: none)
// of an order read forward, or backward when back.
func (db *DB) orderSQL(sort, p string, back bool, k *ContactKey) (orderBy, after string, args []any) {
	key, desc := db.order(sort, p)
	if back {
		desc = !desc
	}
	dir, cmp := " ASC", " > "
	if desc {
		dir, cmp = " DESC", " < "
	}
	if key == "" {
		orderBy = p + "id" + dir
	} else {
		orderBy = key + dir + ", " + p + "id" + dir
	}
	if k == nil {
		return orderBy, "", nil
	}
	if key == "" {
		return orderBy, " AND " + p + "id" + cmp + "?", []any{k.ID}
	}
	var kv any = k.Name
	if sort == parley.SortActivity {
		kv = k.Activity
	}
	// key >= k is a range of the index (SQLite reads neither an OR nor a
	// row value on an indexed expression as one); the rest drops the
	// cursor's own key's rows up to its id.
	return orderBy, " AND " + key + cmp[:2] + "= ? AND (" + key + cmp + "? OR " + p + "id" + cmp + "?)", []any{kv, kv, k.ID}
}

// indexFilter is the consent and state condition on the alias p.
func indexFilter(q *ContactQuery, p string) (string, []any) {
	var w string
	var args []any
	switch q.Consent {
	case parley.ConsentIn:
		w += " AND " + p + "messaging_consent = TRUE"
	case parley.ConsentOut:
		w += " AND " + p + "messaging_consent = FALSE"
	case parley.ConsentNone:
		w += " AND " + p + "messaging_consent IS NULL"
	}
	if q.StateCode != "" {
		w += " AND " + p + "state_code = ?"
		args = append(args, q.StateCode)
	}
	return w, args
}

// keyColumns selects the key of the order next to a user's columns.
func (db *DB) keyColumn(sort, p string) string {
	key, _ := db.order(sort, p)
	switch sort {
	case parley.SortName:
		return key
	case parley.SortActivity:
		return key
	}
	return "NULL"
}

// ContactList reads one page of the brand's contacts list. An Audience of
// a segment of none or another brand's is ErrNotFound; criteria that do
// not compile an EValidation *parley.Error.
func (db *DB) ContactList(ctx context.Context, brandID int64, q ContactQuery) (*ContactPage, error) {
	if q.Limit < 1 {
		return nil, fmt.Errorf("store: contact list: limit %d", q.Limit)
	}
	text, args, err := db.contactListSQL(ctx, brandID, &q)
	if err != nil {
		return nil, err
	}
	rows, err := db.query(ctx, text, db.customPlan(args)...)
	if err != nil {
		return nil, fmt.Errorf("store: contact list: %w", err)
	}
	page := &ContactPage{}
	for rows.Next() {
		var name sql.NullString
		var act sql.NullInt64
		var keyDest any = new(any)
		switch q.Sort {
		case parley.SortName:
			keyDest = &name
		case parley.SortActivity:
			keyDest = &act
		}
		u, err := scanUserFrom(func(dest ...any) error { return rows.Scan(append(dest, keyDest)...) })
		if err != nil {
			rows.Close()
			return nil, err
		}
		page.Users = append(page.Users, u)
		page.Keys = append(page.Keys, ContactKey{Name: name.String, Activity: act.Int64, ID: u.ID})
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("store: contact list: %w", err)
	}
	if len(page.Users) > q.Limit {
		page.Users, page.Keys, page.More = page.Users[:q.Limit], page.Keys[:q.Limit], true
	} else if q.windowed() {
		end, err := db.windowEnd(ctx, brandID, &q)
		if err != nil {
			return nil, err
		}
		page.WindowEnd = end
	}
	if q.Back { // read backward: the list's order is the other way
		slices.Reverse(page.Users)
		slices.Reverse(page.Keys)
	}
	return page, nil
}

// ListedContacts returns those of the brand's users ids that are live and
// pass q's consent and state filters, by id: a page of the contacts list
// in an order the audience engine keeps (its state codes are folded to
// lower case; the filter here is the list's own).
func (db *DB) ListedContacts(ctx context.Context, brandID int64, ids []int64, q *ContactQuery) ([]*parley.User, error) {
	idx, idxArgs := indexFilter(q, "u.")
	return db.usersByID(ctx, brandID, ids, ` AND u.is_deleted = FALSE`+idx, idxArgs...)
}

// contactListSQL is ContactList's query (console_plan_test.go checks the
// index each takes).
func (db *DB) contactListSQL(ctx context.Context, brandID int64, qp *ContactQuery) (string, []any, error) {
	q := *qp
	cols := prefixed("u.", userColumns) + ", " + db.keyColumn(q.Sort, "u.")
	idx, idxArgs := indexFilter(&q, "u.")
	var text string
	var args []any
	if !q.windowed() {
		orderBy, after, afterArgs := db.orderSQL(q.Sort, "u.", q.Back, q.After)
		text = `SELECT ` + cols + ` FROM users u WHERE u.brand_id = ? AND u.is_deleted = FALSE` + idx + after +
			` ORDER BY ` + orderBy + ` LIMIT ?`
		args = append(append(append([]any{brandID}, idxArgs...), afterArgs...), q.Limit+1)
	} else {
		where, wargs, err := db.audienceFilter(ctx, db, brandID, q.Audience, db.Now())
		if err != nil {
			return "", nil, err
		}
		innerOrder, after, afterArgs := db.orderSQL(q.Sort, "", q.Back, q.After)
		outerOrder, _, _ := db.orderSQL(q.Sort, "u.", q.Back, nil)
		text = `SELECT ` + cols + ` FROM (SELECT * FROM users WHERE brand_id = ? AND is_deleted = FALSE` + after +
			` ORDER BY ` + innerOrder + ` LIMIT ` + strconv.Itoa(ContactWindow) + `) u WHERE ` + where + idx +
			` ORDER BY ` + outerOrder + ` LIMIT ?`
		args = append(append(append(append([]any{brandID}, afterArgs...), wargs...), idxArgs...), q.Limit+1)
	}
	return text, args, nil
}

// windowEnd is the last contact of a full window after q.After, nil when
// the window held the rest of the list.
func (db *DB) windowEnd(ctx context.Context, brandID int64, q *ContactQuery) (*ContactKey, error) {
	orderBy, after, afterArgs := db.orderSQL(q.Sort, "", q.Back, q.After)
	var k ContactKey
	var name sql.NullString
	var act sql.NullInt64
	var keyDest any = new(any)
	switch q.Sort {
	case parley.SortName:
		keyDest = &name
	case parley.SortActivity:
		keyDest = &act
	}
	err := db.queryRow(ctx, `SELECT id, `+db.keyColumn(q.Sort, "")+` FROM users WHERE brand_id = ? AND is_deleted = FALSE`+
		after+` ORDER BY `+orderBy+` LIMIT 1 OFFSET `+strconv.Itoa(ContactWindow-1),
		append([]any{brandID}, afterArgs...)...).Scan(&k.ID, keyDest)
	if err == sql.ErrNoRows {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("store: contact list: %w", err)
	}
	k.Name, k.Activity = name.String, act.Int64
	return &k, nil
}

// ContactCountCap is where CountContactList stops counting.
const ContactCountCap = 10000

// ContactCount is how many contacts a filter selects: N exactly, or, when
// Capped, more than N; Window > 0 when N counts only the first Window
// contacts of the list (a filter no index serves).
type ContactCount struct {
	N      int64
	Capped bool
	Window int64
}

// CountContactList counts the contacts q's filter selects, within the
// page budget: by index up to ContactCountCap; a filter no index serves
// among the list's first ContactWindow contacts.
func (db *DB) CountContactList(ctx context.Context, brandID int64, q ContactQuery) (ContactCount, error) {
	idx, idxArgs := indexFilter(&q, "u.")
	var c ContactCount
	var text string
	var args []any
	if q.Audience.isZero() {
		text = `SELECT count(*) FROM (SELECT 1 FROM users u WHERE u.brand_id = ? AND u.is_deleted = FALSE` + idx +
			` LIMIT ` + strconv.Itoa(ContactCountCap+1) + `) c`
		args = append([]any{brandID}, idxArgs...)
	} else {
		where, wargs, err := db.audienceFilter(ctx, db, brandID, q.Audience, db.Now())
		if err != nil {
			return c, err
		}
		text = `SELECT count(*), (SELECT count(*) FROM (SELECT 1 FROM users WHERE brand_id = ? AND is_deleted = FALSE LIMIT ` +
			strconv.Itoa(ContactWindow) + `) w) FROM (SELECT * FROM users WHERE brand_id = ? AND is_deleted = FALSE ORDER BY id DESC LIMIT ` +
			strconv.Itoa(ContactWindow) + `) u WHERE ` + where + idx
		args = append(append([]any{brandID, brandID}, wargs...), idxArgs...)
		var seen int64
		if err := db.queryRow(ctx, text, db.customPlan(args)...).Scan(&c.N, &seen); err != nil {
			return c, fmt.Errorf("store: count contact list: %w", err)
		}
		if seen == int64(ContactWindow) {
			c.Window = int64(ContactWindow)
		}
		return c, nil
	}
	if err := db.queryRow(ctx, text, db.customPlan(args)...).Scan(&c.N); err != nil {
		return c, fmt.Errorf("store: count contact list: %w", err)
	}
	if c.N > ContactCountCap {
		c.N, c.Capped = ContactCountCap, true
	}
	return c, nil
}
