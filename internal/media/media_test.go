package media_test

import (
	"bytes"
	"encoding/binary"
	"slices"
	"testing"

	"github.com/parleyhq/parley/internal/media"
)

// cat concatenates byte slices and strings.
func cat(parts ...any) []byte {
	var b bytes.Buffer
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			b.WriteString(p)
		case []byte:
			b.Write(p)
		case byte:
			b.WriteByte(p)
		default:
			panic("cat: unsupported part")
		}
	}
	return b.Bytes()
}

// be32 is a big-endian uint32.
func be32(v uint32) []byte { return binary.BigEndian.AppendUint32(nil, v) }

// le32 is a little-endian uint32.
func le32(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }

// ftyp builds an ISO base media file: an ftyp box with the given major
// brand and compatible brands, followed by an empty mdat box.
func ftyp(major string, compatible ...string) []byte {
	body := cat(major, be32(0)) // major brand, minor version
	for _, c := range compatible {
		body = append(body, c...)
	}
	return cat(be32(uint32(8+len(body))), "ftyp", body, be32(8), "mdat")
}

// oggPage builds the first Ogg page carrying one packet.
func oggPage(packet []byte) []byte {
	return cat(
		"OggS", byte(0), byte(0x02), // version, header type: beginning of stream
		make([]byte, 8),            // granule position
		le32(0x1234),               // serial number
		le32(0),                    // page sequence number
		le32(0),                    // CRC (not checked by sniffers)
		byte(1), byte(len(packet)), // one segment
		packet,
	)
}

var (
	jpeg = cat([]byte{0xFF, 0xD8, 0xFF, 0xE0}, be32(0x00104A46)[:2], "JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00", []byte{0xFF, 0xD9})
	png  = cat("\x89PNG\r\n\x1a\n", be32(13), "IHDR", be32(1), be32(1), []byte{8, 2, 0, 0, 0}, be32(0x907753DE))
	apng = cat(png, be32(8), "acTL", be32(1), be32(0), be32(0))
	gif  = cat("GIF89a", []byte{1, 0, 1, 0, 0x80, 0, 0}, []byte{0, 0, 0, 0xFF, 0xFF, 0xFF}, ",", make([]byte, 9), []byte{2, 2, 0x44, 1, 0}, ";")
	webp = cat("RIFF", le32(4+8+10), "WEBP", "VP8X", le32(10), make([]byte, 10))

	mp4       = ftyp("isom", "isom", "iso2", "avc1", "mp41")
	mp4v2     = ftyp("mp42", "mp42", "isom")
	m4v       = ftyp("M4V ", "M4V ", "M4A ", "mp42", "isom")
	threeGP   = ftyp("3gp4", "3gp4", "isom")
	threeGP5  = ftyp("3gp5", "3gp5", "isom")
	threeG2   = ftyp("3g2a", "3g2a")
	quickTime = ftyp("qt  ", "qt  ")
	mqv       = ftyp("mqt ", "mqt ")
	qtMoov    = cat(be32(8), "moov", be32(8), "mdat")
	m4a       = ftyp("M4A ", "M4A ", "mp42", "isom")
	m4b       = ftyp("M4B ", "M4B ", "mp42", "isom")
	heic      = ftyp("heic", "mif1", "heic")
	avif      = ftyp("avif", "mif1", "avif")
	mj2       = ftyp("mjp2", "mjp2")

	mp3ID3   = cat("ID3", []byte{3, 0, 0}, []byte{0, 0, 0, 10}, make([]byte, 10), []byte{0xFF, 0xFB, 0x90, 0x64}, make([]byte, 413))
	mp3Frame = cat([]byte{0xFF, 0xFB, 0x90, 0x64}, make([]byte, 413), []byte{0xFF, 0xFB, 0x90, 0x64}, make([]byte, 413))

	vorbis = oggPage(cat("\x01vorbis", le32(0), byte(2), le32(44100), le32(0), le32(128000), le32(0), byte(0xB8), byte(1)))
	opus   = oggPage(cat("OpusHead", byte(1), byte(2), []byte{0x38, 0x01}, le32(48000), []byte{0, 0}, byte(0)))
	theora = oggPage(cat("\x80theora", []byte{3, 2, 1}, make([]byte, 35)))

	amr   = cat("#!AMR\n", []byte{0x3C, 0x48, 0xF5, 0x1F}, make([]byte, 28))
	amrWB = cat("#!AMR-WB\n", []byte{0x44}, make([]byte, 60))

	vcard    = []byte("BEGIN:VCARD\r\nVERSION:3.0\r\nN:Doe;Jane;;;\r\nFN:Jane Doe\r\nTEL;TYPE=CELL:+14155552671\r\nEND:VCARD\r\n")
	vcardLF  = []byte("BEGIN:VCARD\nVERSION:4.0\nFN:Jane Doe\nEND:VCARD\n")
	calendar = []byte("BEGIN:VCALENDAR\r\nVERSION:2.0\r\nPRODID:-//parley//test//EN\r\nBEGIN:VEVENT\r\nUID:1@example.invalid\r\nDTSTAMP:20240101T000000Z\r\nDTSTART:20240102T100000Z\r\nSUMMARY:Call\r\nEND:VEVENT\r\nEND:VCALENDAR\r\n")
	pdf      = []byte("%PDF-1.4\n%\xE2\xE3\xCF\xD3\n1 0 obj\n<< /Type /Catalog /Pages 2 0 R >>\nendobj\n2 0 obj\n<< /Type /Pages /Kids [] /Count 0 >>\nendobj\ntrailer\n<< /Root 1 0 R >>\n%%EOF\n")

	plain = []byte("Hello, this is just a plain text message.\n")
	html  = []byte("<!DOCTYPE html>\n<html><head><title>x</title></head><body>hi</body></html>\n")
	zip   = cat("PK\x03\x04", []byte{20, 0, 0, 0, 0, 0}, make([]byte, 16), []byte{5, 0, 0, 0}, "a.txt", "PK\x05\x06", make([]byte, 18))
	exe   = cat("MZ", []byte{0x90, 0}, make([]byte, 56), le32(0x80), make([]byte, 64), "PE\x00\x00")
	elf   = cat("\x7fELF", []byte{2, 1, 1, 0}, make([]byte, 8), []byte{2, 0, 0x3E, 0}, make([]byte, 44))
	wav   = cat("RIFF", le32(36), "WAVE", "fmt ", le32(16), make([]byte, 16), "data", le32(0))
	svg   = []byte(`<svg xmlns="http://www.w3.org/2000/svg" width="1" height="1"></svg>`)
	json  = []byte(`{"hello": "world"}`)
	tiff  = cat("II*\x00", le32(8), make([]byte, 8))
	flac  = cat("fLaC", []byte{0x80, 0, 0, 34}, make([]byte, 34))
	gzip  = cat([]byte{0x1f, 0x8b, 8, 0}, make([]byte, 16))
)

func TestDetect(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want string // "" = rejected
	}{
		{"jpeg", jpeg, "image/jpeg"},
		{"png", png, "image/png"},
		{"apng is png", apng, "image/png"},
		{"gif", gif, "image/gif"},
		{"webp", webp, "image/webp"},
		{"mp4 isom", mp4, "video/mp4"},
		{"mp4 mp42", mp4v2, "video/mp4"},
		{"m4v is mp4", m4v, "video/mp4"},
		{"3gp4", threeGP, "video/3gpp"},
		{"3gp5", threeGP5, "video/3gpp"},
		{"quicktime ftyp", quickTime, "video/quicktime"},
		{"quicktime mqv", mqv, "video/quicktime"},
		{"quicktime moov atom", qtMoov, "video/quicktime"},
		{"m4a", m4a, "audio/mp4"},
		{"m4b audiobook", m4b, "audio/mp4"},
		{"mp3 id3", mp3ID3, "audio/mpeg"},
		{"mp3 frame sync", mp3Frame, "audio/mpeg"},
		{"ogg vorbis", vorbis, "audio/ogg"},
		{"ogg opus", opus, "audio/ogg"},
		{"amr", amr, "audio/amr"},
		{"vcard crlf", vcard, "text/vcard"},
		{"vcard lf", vcardLF, "text/vcard"},
		{"icalendar", calendar, "text/calendar"},
		{"pdf", pdf, "application/pdf"},
		{"long input truncated", cat(pdf, bytes.Repeat([]byte{0}, 3*media.SniffLen)), "application/pdf"},

		{"empty", nil, ""},
		{"empty slice", []byte{}, ""},
		{"plain text", plain, ""},
		{"html", html, ""},
		{"svg", svg, ""},
		{"json", json, ""},
		{"zip", zip, ""},
		{"exe MZ", exe, ""},
		{"bare MZ", []byte("MZ"), ""},
		{"elf", elf, ""},
		{"wav", wav, ""},
		{"flac", flac, ""},
		{"tiff", tiff, ""},
		{"gzip", gzip, ""},
		{"ogg theora video", theora, ""},
		{"amr-wb", amrWB, ""},
		{"3gpp2", threeG2, ""},
		{"heic in mp4 container", heic, ""},
		{"avif in mp4 container", avif, ""},
		{"motion jpeg 2000", mj2, ""},
		{"truncated jpeg magic", []byte{0xFF, 0xD8}, ""},
		{"random binary", []byte{0x00, 0x01, 0x02, 0x03, 0x04, 0x05}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := media.Detect(tt.in)
			if ok != (tt.want != "") || got != tt.want {
				t.Errorf("Detect() = %q, %v; want %q, %v", got, ok, tt.want, tt.want != "")
			}
		})
	}
}

func TestDetectCoversAccepted(t *testing.T) {
	// Every accepted type must be producible by Detect from some sample.
	samples := [][]byte{jpeg, png, gif, webp, mp4, threeGP, quickTime, mp3ID3, m4a, vorbis, amr, vcard, calendar, pdf}
	seen := map[string]bool{}
	for _, s := range samples {
		if mt, ok := media.Detect(s); ok {
			seen[mt] = true
		}
	}
	for _, a := range media.Accepted() {
		if !seen[a] {
			t.Errorf("no sample detected as accepted type %q", a)
		}
	}
}

func TestAccepted(t *testing.T) {
	want := []string{
		"image/jpeg", "image/png", "image/gif", "image/webp",
		"video/mp4", "video/3gpp", "video/quicktime",
		"audio/mpeg", "audio/mp4", "audio/ogg", "audio/amr",
		"text/vcard", "text/calendar", "application/pdf",
	}
	got := media.Accepted()
	if !slices.Equal(got, want) {
		t.Fatalf("Accepted() = %v; want %v", got, want)
	}
	got[0] = "mutated"
	if media.Accepted()[0] != "image/jpeg" {
		t.Error("Accepted() returned shared backing array")
	}
}

func BenchmarkDetect(b *testing.B) {
	for _, bb := range []struct {
		name string
		in   []byte
	}{{"jpeg", jpeg}, {"mp4", mp4}, {"vcard", vcard}, {"plain4k", bytes.Repeat([]byte("abcdefgh "), media.SniffLen/9)}} {
		b.Run(bb.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				media.Detect(bb.in)
			}
		})
	}
}

func FuzzDetect(f *testing.F) {
	for _, s := range [][]byte{jpeg, png, gif, webp, mp4, threeGP, quickTime, m4a, mp3ID3, mp3Frame, vorbis, amr, amrWB, vcard, calendar, pdf, html, zip, exe, heic} {
		f.Add(s)
	}
	accepted := media.Accepted()
	f.Fuzz(func(t *testing.T, in []byte) {
		mt, ok := media.Detect(in)
		if ok != (mt != "") {
			t.Fatalf("Detect = %q, %v", mt, ok)
		}
		if ok && !slices.Contains(accepted, mt) {
			t.Fatalf("Detect returned non-accepted type %q", mt)
		}
	})
}
