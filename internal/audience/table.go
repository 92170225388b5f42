package audience

import (
	"database/sql"
	"slices"
	"sort"

	"github.com/parleyhq/parley/internal/store"
)

// Contact text columns, in the order of textNames.
const (
	cFirstName = iota
	cLastName
	cEmail
	cPhone
	cDateOfBirth
	cPostalCode
	cCity
	cCounty
	cState
	cStateCode
	cTimeZone
	nText
)

var textNames = map[string]int{
	"first_name": cFirstName, "last_name": cLastName, "email_address": cEmail, "phone_number": cPhone,
	"date_of_birth": cDateOfBirth, "postal_code": cPostalCode, "city": cCity, "county": cCounty,
	"state": cState, "state_code": cStateCode, "time_zone": cTimeZone,
}

// Timestamp columns (microseconds), in the order of stampNames.
const (
	sDateCreated = iota
	sLastInbound
	sLastOutbound
	sLastDelivered
	nStamp
)

var stampNames = map[string]int{
	"date_created": sDateCreated, "last_inbound_at": sLastInbound, "last_outbound_at": sLastOutbound,
	"last_delivered_at": sLastDelivered,
}

// noStamp marks a missing timestamp (null).
const noStamp = -1 << 63

// table is one brand's users, a row each, by id.
type table struct {
	n        int
	ids      []int64 // ascending up to sorted; rows past it await sort()
	sorted   int
	live     bitmap // not deleted
	text     [nText]*textCol
	stamp    [nStamp][]int64
	consent  []int8 // −1 null, 0 false, 1 true
	inbound  []int64
	outbound []int64
	custom   map[string]*customCol
	scratch  []byte // put's lowered text
}

func newTable() *table {
	t := &table{custom: map[string]*customCol{}}
	for i := range t.text {
		t.text[i] = newTextCol()
	}
	return t
}

// reserve makes room for n rows in the columns every row has.
func (t *table) reserve(n int) {
	t.ids = slices.Grow(t.ids, n)
	t.live = slices.Grow(t.live, n/64+1)
	for s := range t.stamp {
		t.stamp[s] = slices.Grow(t.stamp[s], n)
	}
	t.consent = slices.Grow(t.consent, n)
	t.inbound, t.outbound = slices.Grow(t.inbound, n), slices.Grow(t.outbound, n)
	for _, c := range t.text {
		c.codes = slices.Grow(c.codes, n)
	}
}

// row finds id's row, or −1.
func (t *table) row(id int64) int {
	if i, ok := slices.BinarySearch(t.ids[:t.sorted], id); ok {
		return i
	}
	for i := t.sorted; i < t.n; i++ {
		if t.ids[i] == id {
			return i
		}
	}
	return -1
}

// put stores r, adding a row for a new id.
func (t *table) put(r *store.AudienceRow) {
	i := t.row(r.ID)
	added := i < 0
	if added {
		i = t.n
		t.n++
		t.ids = append(t.ids, r.ID)
		if t.sorted == i && (i == 0 || t.ids[i-1] < r.ID) {
			t.sorted++
		}
		for len(t.live)*64 < t.n {
			t.live = append(t.live, 0)
		}
		for s := range t.stamp {
			t.stamp[s] = append(t.stamp[s], noStamp)
		}
		t.consent = append(t.consent, -1)
		t.inbound = append(t.inbound, 0)
		t.outbound = append(t.outbound, 0)
	}
	if r.Deleted {
		t.live[i>>6] &^= 1 << (uint(i) & 63)
	} else {
		t.live.set(i)
	}
	for c, s := range r.Text {
		// A contact field null or "" is missing (D14).
		t.scratch = lowerAppend(t.scratch[:0], s)
		t.text[c].setBytes(i, t.scratch, len(s) > 0)
	}
	t.stamp[sDateCreated][i] = r.DateCreated
	for s, v := range [...]sql.NullInt64{sLastInbound: r.LastInbound, sLastOutbound: r.LastOutbound, sLastDelivered: r.LastDelivered} {
		if s != sDateCreated {
			t.stamp[s][i] = noStamp
			if v.Valid {
				t.stamp[s][i] = v.Int64
			}
		}
	}
	t.consent[i] = -1
	if r.Consent.Valid {
		t.consent[i] = 0
		if r.Consent.Bool {
			t.consent[i] = 1
		}
	}
	t.inbound[i], t.outbound[i] = r.InboundCount, r.OutboundCount
	// A row just added has no value in any column yet; a row changed
	// loses the keys its new data lacks.
	var seen map[string]bool
	if !added {
		seen = map[string]bool{}
	}
	eachMember(r.CustomData, func(key, v []byte) {
		c := t.custom[string(key)]
		if c == nil {
			c = &customCol{}
			t.custom[string(key)] = c
		}
		c.set(i, v, &t.scratch)
		if seen != nil {
			seen[string(key)] = true
		}
	})
	if seen != nil {
		for key, c := range t.custom {
			if !seen[key] {
				c.clear(i)
			}
		}
	}
}

// apply stores rows read for the changed users ids (rows of users no
// longer in the brand are missing: they go), in id order.
func (t *table) apply(ids []int64, rows []store.AudienceRow) {
	found := make(map[int64]bool, len(rows))
	for i := range rows {
		t.put(&rows[i])
		found[rows[i].ID] = true
	}
	for _, id := range ids {
		if !found[id] {
			t.gone(id)
		}
	}
	t.sort()
}

// gone marks id's row deleted (a user removed from the table).
func (t *table) gone(id int64) {
	if i := t.row(id); i >= 0 {
		t.live[i>>6] &^= 1 << (uint(i) & 63)
	}
}

// sort puts rows added out of id order (PostgreSQL commits out of id
// order) in their place, so rows are in id order for pages.
func (t *table) sort() {
	if t.sorted == t.n {
		return
	}
	perm := make([]int32, t.n)
	for i := range perm {
		perm[i] = int32(i)
	}
	sort.Slice(perm, func(a, b int) bool { return t.ids[perm[a]] < t.ids[perm[b]] })
	t.ids = permuted(t.ids, perm)
	live := newBitmap(t.n)
	for i, p := range perm {
		if t.live.has(int(p)) {
			live.set(i)
		}
	}
	t.live = live
	for _, c := range t.text {
		c.permute(perm)
	}
	for s := range t.stamp {
		t.stamp[s] = permuted(t.stamp[s], perm)
	}
	t.consent = permuted(t.consent, perm)
	t.inbound, t.outbound = permuted(t.inbound, perm), permuted(t.outbound, perm)
	for _, c := range t.custom {
		c.permute(perm)
	}
	t.sorted = t.n
}

// bytes estimates the table's memory.
func (t *table) bytes() int64 {
	n := int64(t.n)*(8+8*nStamp+1+16) + int64(len(t.live))*8
	for _, c := range t.text {
		n += c.bytes()
	}
	for k, c := range t.custom {
		n += int64(len(k)) + c.bytes()
	}
	return n
}
