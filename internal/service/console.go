package service

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/phone"
)

// The console's reads (D19): contact search, the inbox and the dashboard.

// SearchLimit is how many contacts a console search shows.
const SearchLimit = 50

// SearchContacts finds the brand's contacts by phone, email or name, each
// through an index (migration 00015):
//   - an email or its beginning (it holds "@"), in any case;
//   - digits (with + ( ) - . and spaces): a number, whole or its
//     beginning, with its country code or, without a "+", a North
//     American one ("+1 415 555", "(415) 555-0123", "1617");
//   - words: a name: one word is the beginning of a first or last name
//     or of an email ("jane.d" finds jane.doe@example.com), two or more are
//     a first name and the beginning of the last.
//
// An empty query gives the newest contacts.
func (s *Service) SearchContacts(ctx context.Context, brandID int64, q string) ([]*parley.User, error) {
	q = strings.TrimSpace(q)
	// No contact's name, email or number holds a NUL or bytes that are not
	// UTF-8 (PostgreSQL stores neither, and refuses them as a parameter):
	// such a query finds nobody, rather than failing the page.
	if strings.ContainsRune(q, 0) || !utf8.ValidString(q) {
		return []*parley.User{}, nil
	}
	switch {
	case q == "":
		return s.db.RecentUsers(ctx, brandID, SearchLimit)
	case strings.Contains(q, "@"):
		lo := strings.ToLower(q)
		return s.db.UsersByEmailRange(ctx, brandID, lo, prefixEnd(lo), SearchLimit)
	case isPhoneQuery(q):
		if e164, ok := phone.Normalize(q, s.PhoneMode); ok {
			return s.db.UsersByPhoneRange(ctx, brandID, e164, prefixEnd(e164), SearchLimit)
		}
		digits := strings.Map(func(r rune) rune {
			if r >= '0' && r <= '9' {
				return r
			}
			return -1
		}, q)
		// Without a "+", a number is North American unless it starts with
		// its country code 1: "(415) 555-0123" and "1415555" both work.
		lo := "+" + digits
		if !strings.HasPrefix(q, "+") && !strings.HasPrefix(digits, "1") {
			lo = "+1" + digits
		}
		return s.db.UsersByPhoneRange(ctx, brandID, lo, prefixEnd(lo), SearchLimit)
	}
	words := strings.Fields(strings.ToLower(q))
	if len(words) == 1 {
		w := words[0]
		byFirst, err := s.db.UsersByNameRange(ctx, brandID, "first_name", w, prefixEnd(w), "", SearchLimit)
		if err != nil {
			return nil, err
		}
		byLast, err := s.db.UsersByNameRange(ctx, brandID, "last_name", w, prefixEnd(w), "", SearchLimit)
		if err != nil {
			return nil, err
		}
		byEmail, err := s.db.UsersByEmailRange(ctx, brandID, w, prefixEnd(w), SearchLimit)
		if err != nil {
			return nil, err
		}
		seen := map[int64]bool{}
		out := make([]*parley.User, 0, SearchLimit)
		for _, u := range slices.Concat(byFirst, byLast, byEmail) {
			if !seen[u.ID] && len(out) < SearchLimit {
				seen[u.ID] = true
				out = append(out, u)
			}
		}
		return out, nil
	}
	last := strings.Join(words[1:], " ")
	return s.db.UsersByNameRange(ctx, brandID, "last_name", last, prefixEnd(last), words[0], SearchLimit)
}

// isPhoneQuery reports whether q looks like (part of) a phone number.
func isPhoneQuery(q string) bool {
	digits := 0
	for _, r := range q {
		switch {
		case r >= '0' && r <= '9':
			digits++
		case strings.ContainsRune("+()-. ", r):
		default:
			return false
		}
	}
	return digits > 0
}

// prefixEnd returns the least string greater than every string that
// begins with p, in byte order ("" when there is none): [p, prefixEnd(p))
// is p's range in an index. A digit 9 carries, so the bound stays a
// number ("+1419" → "+142").
func prefixEnd(p string) string {
	for len(p) > 0 {
		r, size := utf8.DecodeLastRuneInString(p)
		p = p[:len(p)-size]
		if r == '9' && len(p) > 0 && unicode.IsDigit(rune(p[len(p)-1])) {
			continue
		}
		if r < utf8.MaxRune && r != utf8.RuneError {
			return p + string(r+1)
		}
	}
	return ""
}

// DashboardStats are the figures of the console's dashboard.
type DashboardStats struct {
	Contacts, OptedIn, OptedOut int64
	// Last24h counts the messages created in the last 24 hours: outbound
	// by status, "canceled" apart from "failed", inbound as "received".
	Last24h map[string]int64
	// Since is the start of the first hour of Sent and Delivered: 7 days
	// of hourly counts of outbound messages sent and delivered.
	Since           time.Time
	Sent, Delivered []int64
	// OptIns and OptOuts count, per hour from Since, the contacts whose
	// messaging_consent became true and false.
	OptIns, OptOuts []int64
	// At is when the figures were read.
	At time.Time
}

// ChartHours is the dashboard chart's span: 7 days.
const ChartHours = 7 * 24

// Dashboard reads the dashboard's figures, at most TTL old: the counts
// read a brand's index of contacts (a million entries take tens to
// hundreds of ms), so a console left open, or many operators, do not read
// it again on every view. Figures older than TTL but younger than MaxStale
// are shown while one refresh runs in the background, so only the first
// view of a brand on a node, or one after a long quiet spell, waits for them.
type Dashboard struct {
	s *Service
	// TTL is how long figures are fresh; 0 means 30 s. MaxStale is how old
	// they may be shown while a refresh runs; 0 means 5 min.
	TTL, MaxStale time.Duration

	mu    sync.Mutex
	cache map[int64]*dashEntry
}

type dashEntry struct {
	st         *DashboardStats
	refreshing bool
}

// NewDashboard returns the dashboard reads on s.
func NewDashboard(s *Service) *Dashboard {
	return &Dashboard{s: s, cache: map[int64]*dashEntry{}}
}

// Stats returns the brand's figures.
func (d *Dashboard) Stats(ctx context.Context, brandID int64) (*DashboardStats, error) {
	now := d.s.db.Now()
	d.mu.Lock()
	e := d.cache[brandID]
	if e != nil && !now.Before(e.st.At) {
		age := now.Sub(e.st.At)
		if age < or(d.TTL, 30*time.Second) || e.refreshing && age < or(d.MaxStale, 5*time.Minute) {
			d.mu.Unlock()
			return e.st, nil
		}
		if age < or(d.MaxStale, 5*time.Minute) {
			e.refreshing = true
			d.mu.Unlock()
			go d.refresh(context.WithoutCancel(ctx), brandID, now)
			return e.st, nil
		}
	}
	d.mu.Unlock()
	st, err := d.read(ctx, brandID, now)
	if err != nil {
		return nil, err
	}
	d.store(brandID, st)
	return st, nil
}

func (d *Dashboard) refresh(ctx context.Context, brandID int64, now time.Time) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	st, err := d.read(ctx, brandID, now)
	if err != nil {
		d.s.logger.Warn("dashboard: refresh failed", "brand_id", brandID, "err", err)
		d.mu.Lock()
		if e := d.cache[brandID]; e != nil {
			e.refreshing = false
		}
		d.mu.Unlock()
		return
	}
	d.store(brandID, st)
}

func (d *Dashboard) store(brandID int64, st *DashboardStats) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if len(d.cache) > 10_000 { // many brands: keep memory bounded
		clear(d.cache)
	}
	if e := d.cache[brandID]; e != nil && e.st.At.After(st.At) {
		return // a newer read landed first
	}
	d.cache[brandID] = &dashEntry{st: st}
}

func (d *Dashboard) read(ctx context.Context, brandID int64, now time.Time) (*DashboardStats, error) {
	st := &DashboardStats{At: now}
	c, err := d.s.db.CountContacts(ctx, brandID)
	if err != nil {
		return nil, err
	}
	st.Contacts, st.OptedIn, st.OptedOut = c.Total, c.OptedIn, c.OptedOut
	day := now.Add(-24 * time.Hour)
	from, err := d.s.db.FirstMessageIDSince(ctx, brandID, day)
	if err != nil {
		return nil, err
	}
	if st.Last24h, err = d.s.db.MessageStatusCounts(ctx, brandID, from, day); err != nil {
		return nil, err
	}
	st.Since = now.Truncate(time.Hour).Add(-(ChartHours - 1) * time.Hour)
	// A message is sent after it is created: one created a day before the
	// chart starts (held for a sending window) may be sent within it.
	from, err = d.s.db.FirstMessageIDSince(ctx, brandID, st.Since.Add(-24*time.Hour))
	if err != nil {
		return nil, err
	}
	st.Sent, st.Delivered, err = d.s.db.HourlySentDelivered(ctx, brandID, from, st.Since, ChartHours)
	if err != nil {
		return nil, err
	}
	st.OptIns, st.OptOuts, err = d.s.db.HourlyConsent(ctx, brandID, st.Since, ChartHours)
	if err != nil {
		return nil, err
	}
	return st, nil
}
