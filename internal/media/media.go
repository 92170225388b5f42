// Package media sniffs the content type of uploaded media from its leading
// bytes and restricts it to the types the API accepts (API decision D9).
//
// Detection is done by github.com/gabriel-vasile/mimetype; this package maps
// its results, which use their own names and a hierarchy of sub-formats, onto
// a fixed set of canonical MIME types. The client-declared Content-Type is
// never trusted.
package media

import (
	"bytes"
	"strings"

	"github.com/gabriel-vasile/mimetype"
)

// SniffLen is how many leading bytes Detect needs. It equals mimetype's
// default read limit; bytes past it are ignored, and passing fewer (for a
// file shorter than SniffLen) is fine.
const SniffLen = 4096

// accepted holds the canonical accepted types, in documentation order.
var accepted = [...]string{
	"image/jpeg",
	"image/png",
	"image/gif",
	"image/webp",
	"video/mp4",
	"video/3gpp",
	"video/quicktime",
	"audio/mpeg",
	"audio/mp4",
	"audio/ogg",
	"audio/amr",
	"text/vcard",
	"text/calendar",
	"application/pdf",
}

// synonyms maps mimetype result names that denote an accepted type but are
// not aliases of it in mimetype's table.
var synonyms = map[string]string{
	"audio/x-m4a": "audio/mp4", // iTunes "M4A " brand: AAC audio in MP4
	"video/x-m4v": "video/mp4", // iTunes "M4V " brand: H.264 video in MP4
}

// distinct lists sub-formats that mimetype files under an accepted type
// (all three sit under video/mp4, as ISO base media files) but that are
// different formats a recipient expecting the parent type cannot be assumed
// to play. They are rejected instead of being relabelled as their parent.
var distinct = map[string]bool{
	"video/3gpp2":        true, // 3GPP2 (CDMA) container, not in D9
	"video/mj2":          true, // Motion JPEG 2000
	"video/vnd.dvb.file": true,
}

// Accepted lists the accepted canonical types (for docs / OpenAPI). The
// returned slice is a fresh copy.
func Accepted() []string {
	out := make([]string, len(accepted))
	copy(out, accepted[:])
	return out
}

// Detect sniffs the content type from the file's leading bytes (at most
// SniffLen are examined) and returns one of the accepted canonical types, or
// ok=false when the content is not an accepted type.
//
// A detected sub-format is mapped to an accepted ancestor in mimetype's
// hierarchy (for example APNG to image/png) only while the top-level type is
// unchanged, so that an image format stored in an MP4-style container (HEIC,
// AVIF) is not passed off as video/mp4.
func Detect(head []byte) (mimeType string, ok bool) {
	if len(head) == 0 {
		return "", false
	}
	if len(head) > SniffLen {
		head = head[:SniffLen]
	}
	mt, ok := canonical(mimetype.Detect(head))
	if !ok {
		return "", false
	}
	// mimetype reports AMR-WB ("#!AMR-WB\n") and multi-channel AMR as
	// audio/amr too; D9 accepts narrow-band AMR only.
	if mt == "audio/amr" && !bytes.HasPrefix(head, []byte("#!AMR\n")) {
		return "", false
	}
	return mt, true
}

// canonical walks m and its ancestors and returns the first accepted type
// one of them is (by name or alias) or stands for.
func canonical(m *mimetype.MIME) (string, bool) {
	top := topLevel(m.String())
	for n := m; n != nil; n = n.Parent() {
		name := n.String()
		if topLevel(name) != top || distinct[baseType(name)] {
			return "", false
		}
		for _, a := range accepted {
			if n.Is(a) {
				return a, true
			}
		}
		if s, ok := synonyms[baseType(name)]; ok {
			return s, true
		}
	}
	return "", false
}

// baseType strips MIME parameters such as "; charset=utf-8".
func baseType(name string) string {
	if i := strings.IndexByte(name, ';'); i >= 0 {
		name = name[:i]
	}
	return strings.TrimSpace(name)
}

// topLevel returns the part of a MIME type before the slash.
func topLevel(name string) string {
	if i := strings.IndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return name
}
