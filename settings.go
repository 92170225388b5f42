package parley

// BrandSettings are a brand's sending rules (D17): when MARKETING messages
// may reach a recipient, how many a recipient may get, and how fast the
// brand sends; and whose texts auto-collected custom data is read from
// (D20). Operators change them through the admin API, the CLI and
// the console; v1 GET /brand does not show them.
type BrandSettings struct {
	// SendingWindow is when, in the recipient's local time, MARKETING
	// messages are handed to the provider: start included, end excluded;
	// it may wrap midnight; start = end means always open.
	SendingWindow SendingWindow `json:"sending_window"`
	// TimeZone is the IANA zone of recipients whose zone neither their ZIP
	// nor their number's area code tells.
	TimeZone string `json:"time_zone"`
	// FrequencyCap bounds the MARKETING messages one recipient gets; nil
	// means no cap.
	FrequencyCap *FrequencyCap `json:"frequency_cap"`
	// SendRate bounds the brand's sends, in messages per second; 0 means no
	// limit.
	SendRate float64 `json:"send_rate"`
	// ExtractWhenOptedOut lets auto-collected custom data (D20) be read
	// from the texts of contacts whose messaging_consent is false; by
	// default they are left alone.
	ExtractWhenOptedOut bool `json:"extract_when_opted_out"`
	BrandIdentity
	// KeywordReplies are the brand's answers to STOP, START and HELP (D22).
	KeywordReplies KeywordReplies `json:"keyword_replies"`
}

// KeywordReplies are a brand's texts answering the keywords of D12; a nil
// member is the built-in text (D22).
type KeywordReplies struct {
	Stop  *string `json:"stop"`
	Start *string `json:"start"`
	Help  *string `json:"help"`
}

// KeywordRepliesUpdate changes the members sent; null restores the
// built-in text (D22).
type KeywordRepliesUpdate struct {
	Stop  Optional[string] `json:"stop,omitzero"`
	Start Optional[string] `json:"start,omitzero"`
	Help  Optional[string] `json:"help,omitzero"`
}

// SendingWindow is a daily window of local time, "HH:MM" to "HH:MM".
type SendingWindow struct {
	Start string `json:"start"`
	End   string `json:"end"`
}

// FrequencyCap is at most MaxMessages MARKETING messages per recipient in
// any PerHours hours.
type FrequencyCap struct {
	MaxMessages int `json:"max_messages"`
	PerHours    int `json:"per_hours"`
}

// DefaultBrandSettings are a new brand's (D17).
var DefaultBrandSettings = BrandSettings{
	SendingWindow: SendingWindow{Start: "08:00", End: "21:00"},
	TimeZone:      "America/New_York",
	BrandIdentity: BrandIdentity{DefaultCountry: DefaultCountry},
}

// BrandSettingsUpdate changes the members that are set; FrequencyCap set
// to null removes the cap.
type BrandSettingsUpdate struct {
	SendingWindow Optional[SendingWindow] `json:"sending_window,omitzero"`
	TimeZone      Optional[string]        `json:"time_zone,omitzero"`
	FrequencyCap  Optional[FrequencyCap]  `json:"frequency_cap,omitzero"`
	SendRate      Optional[float64]       `json:"send_rate,omitzero"`
	// ExtractWhenOptedOut is D20's opt-out setting (#19).
	ExtractWhenOptedOut Optional[bool] `json:"extract_when_opted_out,omitzero"`
	BrandIdentityUpdate
	// KeywordReplies: null restores every built-in text (D22).
	KeywordReplies Optional[KeywordRepliesUpdate] `json:"keyword_replies,omitzero"`
}
