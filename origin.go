package parley

// The sources of a change, as contact history records them (D18).
const (
	SourceAPI        = "api"        // a signed v1 request
	SourceKeyword    = "keyword"    // an inbound STOP, START… (D12)
	SourceCarrier    = "carrier"    // a carrier's report, such as error 21610
	SourceImport     = "import"     // a CSV import
	SourceConsole    = "console"    // an operator in the console (D19)
	SourceAdmin      = "admin"      // the admin API or CLI
	SourceExtraction = "extraction" // auto-collected from a conversation (D20)
)

// Origin is who asks for a change, and how: the source and detail that
// contact history records (D18) and, for a signed API request, its
// signature and Idempotency-Key, which the store checks and records in the
// change's own transaction (D2, D13). It is passed explicitly from the
// request to the store; the zero Origin is an unsigned API change.
type Origin struct {
	// Source is one of the Source constants; "" means SourceAPI.
	Source string
	// Detail is the keyword, error code, import id or operator email.
	Detail string
	// MessageID is the message that caused the change (an inbound
	// keyword, a carrier's report), 0 for none.
	MessageID int64
	// Signed is the request's signature; nil when replay protection is
	// off or the change was not asked for by a signed request.
	Signed *SignedWrite
	// Keyed is the request's Idempotency-Key; nil when it sent none.
	Keyed *KeyedWrite
}

// APIOrigin is the Origin of a v1 request with its signature and key.
func APIOrigin(signed *SignedWrite, keyed *KeyedWrite) Origin {
	return Origin{Source: SourceAPI, Signed: signed, Keyed: keyed}
}
