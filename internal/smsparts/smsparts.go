// Package smsparts computes how an SMS body is encoded on the air and how
// many segments (billable message parts) it takes, as Messages report it in
// `encoding` and `num_segments` (decision D16).
//
// Encoding. A body is sent as GSM-7 when every character is in the GSM 03.38
// default alphabet or its extension table, else as UCS-2. The tables are
// those of 3GPP TS 23.038 §6.2.1, with the Unicode consortium's mapping
// (GSM0338.TXT): position 0x09 is "Ç" (capital), so "ç" forces UCS-2; the
// escape position 0x1B is not a character. Only these characters are GSM-7:
//
//	@ £ $ ¥ è é ù ì ò Ç LF Ø ø CR Å å Δ _ Φ Γ Λ Ω Π Ψ Σ Θ Ξ Æ æ ß É
//	space ! " # ¤ % & ' ( ) * + , - . / 0–9 : ; < = > ? ¡ A–Z Ä Ö Ñ Ü §
//	¿ a–z ä ö ñ ü à, and from the extension table: form feed ^ { } \ [ ~ ] | €
//
// Units. In GSM-7 a character takes one septet, an extension character two
// (ESC + the character). In UCS-2 every UTF-16 code unit counts: a character
// outside the Basic Multilingual Plane (most emoji) takes two. CR and LF
// count one each and are not normalised: "\r\n" is two septets. Invalid
// UTF-8 bytes count as one U+FFFD each (so they force UCS-2).
//
// Segments. A body of at most 160 septets (GSM-7) or 70 units (UCS-2) is one
// segment. A longer one is split into parts of at most 153 septets or 67
// units (the rest of each part's 140 bytes carries the concatenation
// header). Parts never split an ESC + character pair nor a UTF-16 surrogate
// pair: when one would straddle a boundary it moves whole to the next part,
// which can cost an extra segment. This is the split that handsets and
// providers (Twilio among them) use.
//
// Media. A message with media is sent as MMS: one segment whatever the body
// (D16). Its Encoding and Units still describe the body.
//
// Empty body. A body with no characters and no media counts as one GSM-7
// segment of zero units: every message that exists takes at least one
// segment, so stats and pacing never see zero. (The API refuses such
// messages anyway, D8.)
//
// Counts assume the body is sent as written. A provider that rewrites
// characters before sending (Twilio's optional Smart Encoding, which turns
// curly quotes into straight ones) may bill fewer segments than reported.
package smsparts

import "unicode/utf8"

// Encoding is the on-air character encoding of an SMS body.
type Encoding string

// The two encodings, named as the API reports them (D16).
const (
	GSM7 Encoding = "GSM-7"
	UCS2 Encoding = "UCS-2"
)

// Segment limits of 3GPP TS 23.040: 140 bytes per part, less a 6-byte
// concatenation header (7 septets, 3 UCS-2 units) when there are several.
const (
	GSM7Single = 160 // septets in a one-part message
	GSM7Multi  = 153 // septets per part of a multipart message
	UCS2Single = 70  // UTF-16 units in a one-part message
	UCS2Multi  = 67  // UTF-16 units per part of a multipart message
)

// Parts is what Count reports about a message.
type Parts struct {
	Encoding Encoding // GSM7 or UCS2
	Segments int      // parts billed; at least 1
	Units    int      // septets (GSM-7) or UTF-16 code units (UCS-2) of the body
}

// Count returns the encoding, segment count and length in units of an SMS
// with the given body and number of media items. mediaCount > 0 makes it an
// MMS: one segment. Count does not allocate and is safe for concurrent use.
func Count(body string, mediaCount int) Parts {
	p, ok := countGSM7(body)
	if !ok {
		p = countUCS2(body)
	}
	if mediaCount > 0 {
		p.Segments = 1
	}
	return p
}

// countGSM7 counts body in septets, or reports ok == false at the first
// character that GSM-7 cannot carry.
func countGSM7(body string) (p Parts, ok bool) {
	total, segs, fill := 0, 1, 0
	for i := 0; i < len(body); {
		var cost int
		if c := body[i]; c < utf8.RuneSelf {
			cost = int(asciiSeptets[c])
			i++
		} else {
			r, size := utf8.DecodeRuneInString(body[i:])
			cost = nonASCIISeptets(r)
			i += size
		}
		if cost == 0 {
			return Parts{}, false
		}
		total += cost
		// Multipart packing, kept in the same pass: a pair that does not fit
		// the current part starts the next one.
		if fill+cost > GSM7Multi {
			segs++
			fill = 0
		}
		fill += cost
	}
	if total <= GSM7Single {
		segs = 1
	}
	return Parts{Encoding: GSM7, Segments: segs, Units: total}, true
}

// countUCS2 counts body in UTF-16 code units.
func countUCS2(body string) Parts {
	total, segs, fill := 0, 1, 0
	for _, r := range body {
		cost := 1
		if r >= 0x10000 {
			cost = 2 // a surrogate pair
		}
		total += cost
		if fill+cost > UCS2Multi {
			segs++
			fill = 0
		}
		fill += cost
	}
	if total <= UCS2Single {
		segs = 1
	}
	return Parts{Encoding: UCS2, Segments: segs, Units: total}
}

// asciiSeptets is the septet cost of each ASCII byte: 1 in the default
// alphabet, 2 in the extension table, 0 when GSM-7 lacks it (` and the
// control characters other than LF, CR and form feed).
var asciiSeptets = func() (t [utf8.RuneSelf]uint8) {
	for c := ' '; c <= '~'; c++ {
		t[c] = 1
	}
	t['\n'], t['\r'] = 1, 1
	t['`'] = 0
	for _, c := range "\f^{}\\[~]|" {
		t[c] = 2
	}
	return t
}()

// nonASCIISeptets is the septet cost of a non-ASCII rune: 1 for the default
// alphabet's Latin-1 and Greek letters, 2 for €, 0 otherwise.
func nonASCIISeptets(r rune) int {
	switch r {
	case '£', '¥', 'è', 'é', 'ù', 'ì', 'ò', 'Ç', 'Ø', 'ø', 'Å', 'å',
		'Δ', 'Φ', 'Γ', 'Λ', 'Ω', 'Π', 'Ψ', 'Σ', 'Θ', 'Ξ', 'Æ', 'æ', 'ß', 'É',
		'¤', '¡', 'Ä', 'Ö', 'Ñ', 'Ü', '§', '¿', 'ä', 'ö', 'ñ', 'ü', 'à':
		return 1
	case '€':
		return 2
	}
	return 0
}
