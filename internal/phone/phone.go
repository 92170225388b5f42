// Package phone normalises user-supplied phone numbers to E.164 using
// libphonenumber metadata (github.com/nyaruka/phonenumbers).
//
// The accepted input syntax is deliberately narrow (API decision D5): the
// number must start with "+", may contain ASCII digits and the separators
// space, '-', '.', '(' and ')', and must be at most MaxInputLen runes long.
// Letters, extensions, non-ASCII digits and national (no "+") formats are
// rejected rather than guessed at.
package phone

import (
	"fmt"
	"unicode/utf8"

	"github.com/nyaruka/phonenumbers"
)

// MaxInputLen is the maximum length, in runes, of a raw phone number input,
// separators included.
const MaxInputLen = 20

// maxE164Len is the longest E.164 string: "+" and at most 15 digits.
const maxE164Len = 16

// Mode selects how strictly Normalize checks a number against
// libphonenumber's metadata.
type Mode int

const (
	// Strict accepts only numbers libphonenumber considers valid: the
	// country calling code, length and number range must all be assigned,
	// and the number must also satisfy Possible. It is the zero value and
	// the production default.
	Strict Mode = iota
	// Possible accepts numbers whose length is plausible for their country
	// calling code, without checking number ranges. It exists for staging
	// environments that use fictional numbers (e.g. NANP 555-01xx).
	Possible
)

// ParseMode parses a mode name: "strict" or "possible".
func ParseMode(s string) (Mode, error) {
	switch s {
	case "strict":
		return Strict, nil
	case "possible":
		return Possible, nil
	}
	return 0, fmt.Errorf("phone: unknown mode %q (want \"strict\" or \"possible\")", s)
}

// String returns the mode name accepted by ParseMode.
func (m Mode) String() string {
	switch m {
	case Strict:
		return "strict"
	case Possible:
		return "possible"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Normalize returns the E.164 form of s, or ok=false when s is not a phone
// number under mode m.
//
// s must begin with "+" and be at most MaxInputLen runes long; spaces, '-',
// '.', '(' and ')' are stripped, and any other character (letters, an
// extension, non-ASCII digits) makes s invalid. An unknown mode is treated
// as invalid for every input.
func Normalize(s string, m Mode) (e164 string, ok bool) {
	return normalize(s, m, true)
}

// normalize implements Normalize. With fast set, inputs that the fast path
// (fastAccept) can vouch for skip phonenumbers; the result is the same
// either way.
func normalize(s string, m Mode, fast bool) (string, bool) {
	if m != Strict && m != Possible {
		return "", false
	}
	if len(s) < 2 || s[0] != '+' {
		return "", false
	}
	// Only ASCII survives the scan below, where bytes and runes coincide;
	// the rune count only matters for the (rejected anyway) other inputs.
	if len(s) > MaxInputLen && utf8.RuneCountInString(s) > MaxInputLen {
		return "", false
	}

	// Strip separators into a stack buffer. E.164 allows at most 15 digits.
	var buf [maxE164Len]byte
	buf[0] = '+'
	n := 1
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c >= '0' && c <= '9':
			if n == len(buf) {
				return "", false
			}
			buf[n] = c
			n++
		case c == ' ' || c == '-' || c == '.' || c == '(' || c == ')':
		default:
			return "", false
		}
	}
	if n == 1 {
		return "", false
	}

	// Avoid a copy when the input is already compact.
	compact := s
	if n != len(s) {
		compact = string(buf[:n])
	}

	if fast && fastAccept(compact, m) {
		return compact, true
	}
	return normalizeSlow(compact, m)
}

// normalizeSlow normalises compact, which is "+" followed by 1–15 ASCII
// digits, using phonenumbers.
func normalizeSlow(compact string, m Mode) (string, bool) {
	out, ok := normalizeCompact(compact, m)
	if !ok {
		return "", false
	}
	if out != compact {
		// libphonenumber dropped digits, typically a national (trunk) prefix
		// written after the country code, as in "+44 (0)20 …". Accept that
		// only when the result is itself stable, so that Normalize is
		// idempotent: in Possible mode a number such as "+82 0 0…" would
		// otherwise lose another leading zero on every pass.
		again, ok := normalizeCompact(out, m)
		if !ok || again != out {
			return "", false
		}
	}
	return out, true
}

// normalizeCompact checks and formats compact, which is "+" followed by
// ASCII digits only.
func normalizeCompact(compact string, m Mode) (string, bool) {
	num, err := phonenumbers.Parse(compact, "")
	if err != nil || num.GetExtension() != "" {
		return "", false
	}
	// Both modes require a length that is dialable in full from abroad
	// (IS_POSSIBLE, not IS_POSSIBLE_LOCAL_ONLY). Strict additionally requires
	// validity. Checking both in Strict matters for NANP: IsValidNumber
	// accepts Canada's 7-digit 310-xxxx numbers (e.g. +1 310 0000), which
	// the shared NANP length rules, and carriers, do not.
	if phonenumbers.IsPossibleNumberWithReason(num) != phonenumbers.IS_POSSIBLE {
		return "", false
	}
	if m == Strict && !phonenumbers.IsValidNumber(num) {
		return "", false
	}
	out := phonenumbers.Format(num, phonenumbers.E164)
	if len(out) < 2 || len(out) > maxE164Len {
		return "", false
	}
	return out, true
}
