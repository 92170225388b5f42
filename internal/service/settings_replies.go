package service

import (
	"strings"
	"unicode/utf8"

	"github.com/parleyhq/parley"
)

// applyKeywordReplies checks and applies D22's keyword_replies: each member
// sent is the brand's text for its keyword, null the built-in one; the
// whole member null restores all three.
func applyKeywordReplies(st *parley.BrandSettings, u parley.Optional[parley.KeywordRepliesUpdate]) error {
	if !u.Set {
		return nil
	}
	if !u.Valid {
		st.KeywordReplies = parley.KeywordReplies{}
		return nil
	}
	for _, f := range []struct {
		name string
		in   parley.Optional[string]
		out  **string
	}{{"stop", u.Value.Stop, &st.KeywordReplies.Stop}, {"start", u.Value.Start, &st.KeywordReplies.Start}, {"help", u.Value.Help, &st.KeywordReplies.Help}} {
		if !f.in.Set {
			continue
		}
		if !f.in.Valid {
			*f.out = nil
			continue
		}
		v := strings.TrimSpace(f.in.Value)
		switch {
		case v == "":
			return invalid("keyword_replies."+f.name, "must be the text to send, or null for the built-in one")
		case utf8.RuneCountInString(v) > parley.MaxMessageBody:
			return invalid("keyword_replies."+f.name, "must be at most 1600 characters")
		}
		*f.out = &v
	}
	return nil
}

// BuiltinKeywordReplies are the texts Parley sends for a brand named name
// when it has set none of its own (D12, D22).
func BuiltinKeywordReplies(name string) (stop, start, help string) {
	return orDefault("", defaultStopReply, name), orDefault("", defaultStartReply, name), orDefault("", defaultHelpReply, name)
}
