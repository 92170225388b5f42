package console

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/parleyhq/parley"
)

// A message's status in plain words for the conversation (issue #32):
// failed and canceled messages say so, and why.
func init() {
	funcs["msgStatus"] = msgStatus
	funcs["msgFailed"] = func(m *parley.Message) bool {
		return m.Status == parley.StatusFailed || m.Status == parley.StatusUndelivered
	}
}

// errorWords are the error codes a marketer meets, in words.
var errorWords = map[string]string{
	parley.ErrorCodeCanceled: "canceled",
	"recipient_unsubscribed": "the contact had opted out",
	"recipient_not_found":    "the contact was deleted",
	"frequency_capped":       "the contact had reached the frequency cap",
	"outside_sending_window": "outside the sending window",
	"media_unavailable":      "its picture or file was no longer available",
	"send_outcome_unknown":   "the provider did not say whether it was sent",
	"invalid_number":         "not a number that can receive texts",
	"carrier_unreachable":    "the carrier could not reach the phone",
}

// msgStatus says where a message is, in words.
func msgStatus(loc *time.Location, m *parley.Message) string {
	if m.Direction == parley.DirectionInbound {
		return "Received"
	}
	why := ""
	if m.ErrorCode != nil {
		why = errorWords[*m.ErrorCode]
		if why == "" && m.ErrorMessage != nil {
			why = *m.ErrorMessage
		}
		if why == "" {
			why = *m.ErrorCode
		}
	}
	switch m.Status {
	case parley.StatusQueued:
		if m.ScheduledAt != nil {
			return "Waiting for the sending window, until " + when(loc, m.ScheduledAt.Time)
		}
		return "Waiting to send"
	case parley.StatusSent:
		return "Sent"
	case parley.StatusDelivered:
		return "Delivered"
	case parley.StatusUndelivered:
		if why != "" {
			return "Not delivered: " + why
		}
		return "Not delivered"
	case parley.StatusFailed:
		if why != "" {
			return "Not sent: " + why
		}
		return "Not sent"
	}
	return m.Status
}

// History in words: the field, its values and who changed it (D18).
func init() {
	funcs["histField"] = func(f string) string {
		if f == parley.HistoryFieldConsent {
			return "Consent"
		}
		if k, ok := strings.CutPrefix(f, parley.HistoryFieldCustomData); ok {
			return k
		}
		return f
	}
	funcs["histValue"] = func(f string, v json.RawMessage) string {
		s := string(v)
		switch {
		case len(v) == 0 || s == "null":
			return "(none)"
		case f == parley.HistoryFieldConsent && s == "true":
			return "opted in"
		case f == parley.HistoryFieldConsent && s == "false":
			return "opted out"
		}
		var str string
		if json.Unmarshal(v, &str) == nil {
			return str
		}
		return s
	}
	funcs["histSource"] = func(s string) string {
		if w, ok := sourceWords[s]; ok {
			return w
		}
		return s
	}
}

var sourceWords = map[string]string{
	parley.SourceAPI: "API", parley.SourceKeyword: "Text keyword", parley.SourceCarrier: "Carrier",
	parley.SourceImport: "Import", parley.SourceConsole: "Console", parley.SourceAdmin: "Admin",
	parley.SourceExtraction: "Read from a conversation",
}
