package parley

// ContactFilter selects a brand's live contacts in the console's contacts
// list and its export (issue #32). The zero value selects every one.
type ContactFilter struct {
	// Consent is ConsentIn, ConsentOut, ConsentNone or "" (any).
	Consent string
	// StateCode is a US state's two-letter code, "" for any.
	StateCode string
	// SegmentID keeps one segment's members, 0 for any.
	SegmentID int64
	// Field is a custom data key and Value what it must equal (for a
	// list: hold); Field "" for any.
	Field, Value string
}

// The consent a ContactFilter selects.
const (
	ConsentIn   = "in"   // messaging_consent true
	ConsentOut  = "out"  // messaging_consent false
	ConsentNone = "none" // messaging_consent null: never given
)

// IsZero reports whether f selects every contact.
func (f ContactFilter) IsZero() bool { return f == ContactFilter{} }

// Contact list orders (ContactQuery.Sort).
const (
	SortNewest   = "newest"   // newest first (by id)
	SortOldest   = "oldest"   // oldest first
	SortName     = "name"     // by first and last name, A to Z; nameless last
	SortActivity = "activity" // latest text in or out first; never texted last
)
