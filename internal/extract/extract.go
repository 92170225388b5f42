// Package extract defines how Parley turns a contact's replies into custom data
// (D20, issue #19): the Extractor interface and the request and value types that
// every extractor (rules/, openai/) shares.
//
// An extractor reads nothing about the contact but its Request (no database; no
// clock: the time is Request.Now; openai/ calls its model server and counts the
// brand's calls) and returns values already in the form D6 stores, so the caller only validates them against D6 once more and
// writes them with history source "extraction".
//
// What a caller can rely on, whatever the extractor:
//   - at most one Value per Field, in the order of Request.Fields;
//   - a Field with no answer in the conversation gives no Value (never a null);
//   - Value.From names the inbound message the value was read from, so the
//     history entry (D18) can cite its message id.
package extract

import (
	"context"
	"encoding/json"
	"errors"
	"time"
)

// ErrOverBudget is the error of an extractor that did not run because the
// brand has spent its calls for the day (the openai extractor's budget): the
// caller counts the extraction as skipped, not failed, and need not retry it
// before the next day.
var ErrOverBudget = errors.New("extract: the brand's daily budget of extractor calls is spent")

// Custom data types (D6 custom_data_type codes).
const (
	Integer = 1
	Float   = 2
	String  = 3
	List    = 4
	Boolean = 5
	Date    = 6
)

// Field is one is_auto_collected custom data field of the brand.
type Field struct {
	Key     string   // the custom_data key (snake_case of Name, D6)
	Name    string   // the field's display name, e.g. "Shoe Size"
	Type    int      // D6 type code
	Subtype int      // item type of a List field; 0 when unset
	Enum    []string // available_enum_values; empty means any value of Type
	Prompt  string   // extraction_prompt; may be empty

	// IncludeUserAnswers reads every earlier inbound text of Conversation, not
	// only the last one.
	IncludeUserAnswers bool
	// EmphasizeCurrent makes the latest statement win when statements disagree.
	EmphasizeCurrent bool
	// EmphasizePersonal ignores statements about other people.
	EmphasizePersonal bool
}

// Message is one message of the conversation, as the contact or the brand sent it.
type Message struct {
	Inbound bool      // sent by the contact
	Body    string    // the text; media-only messages have an empty body
	At      time.Time // when it was sent or received; zero if unknown
}

// Request is what an extractor reads.
type Request struct {
	// BrandID is the brand whose contact wrote: extractors that cost money
	// count their calls by brand. It never leaves the server.
	BrandID int64
	Fields  []Field
	// Conversation is the contact's recent messages, oldest first; its last
	// inbound message is the one that triggered the extraction.
	Conversation []Message
	// Known holds the current values of the brand's include_in_ai_prompt fields,
	// by key. Other fields are never here (D20).
	Known map[string]json.RawMessage
	// Now is the time of the extraction, in the brand's time zone: relative words
	// ("today") and two-digit years are read against it.
	Now time.Time
}

// Value is one extracted custom data value.
type Value struct {
	Key   string          // Field.Key
	Value json.RawMessage // as D6 stores it: a JSON number, string or array
	From  int             // index in Request.Conversation of the message it came from
}

// Extractor finds values for fields in a conversation.
type Extractor interface {
	// Extract returns the values it found, at most one per field, in the order of
	// r.Fields. It returns an error only when it could not run at all (a cancelled
	// ctx, an unreachable model server); "no answer" is an empty result.
	Extract(ctx context.Context, r Request) ([]Value, error)
}

// InProcess marks an extractor whose calls are the node's own CPU (the
// rules), not a wait on a model server: a sweep runs such calls one at a
// time and paced, so that they never hold the cores the node's requests
// need (issue #19's inbound p99), where a model's calls run many at once.
type InProcess interface {
	Extractor
	InProcess()
}
