package webhook_test

import (
	"net/netip"
	"strings"
	"testing"

	"github.com/parleyhq/parley/internal/webhook"
)

func TestIsPublic(t *testing.T) {
	refused := []string{
		// unspecified
		"0.0.0.0", "0.1.2.3", "::", "::ffff:0.0.0.0",
		// loopback
		"127.0.0.1", "127.255.255.254", "::1", "::ffff:127.0.0.1", "::ffff:7f00:1",
		// private
		"10.0.0.1", "10.255.255.255", "172.16.0.1", "172.31.255.255", "192.168.0.1", "192.168.255.255",
		"::ffff:10.0.0.1", "::ffff:192.168.1.1",
		// link-local and cloud metadata
		"169.254.0.1", "169.254.169.254", "::ffff:169.254.169.254", "fe80::1", "febf::1",
		"fd00:ec2::254", "100.100.100.200", "192.0.0.192",
		// CGNAT
		"100.64.0.1", "100.127.255.255", "::ffff:100.64.0.1",
		// IETF protocol assignments, documentation, benchmarking, 6to4 relay
		"192.0.0.1", "192.0.0.255", "192.0.2.1", "198.51.100.1", "203.0.113.1",
		"198.18.0.1", "198.19.255.255", "192.88.99.1",
		// multicast, reserved, broadcast
		"224.0.0.1", "239.255.255.255", "240.0.0.1", "255.255.255.254", "255.255.255.255",
		"ff02::1", "ff05::1:3", "ff0e::1",
		// IPv6 ULA, docs, discard, deprecated site-local, IPv4-compatible, Teredo, ORCHID, benchmark
		"fc00::1", "fdff:ffff::1", "2001:db8::1", "2001:db8:ffff::1", "3fff::1",
		"100::1", "fec0::1", "::127.0.0.1", "::8.8.8.8", "2001::1", "2001:0:4136:e378::1",
		"2001:10::1", "2001:20::1", "2001:2::1",
		// NAT64 and 6to4 forms of non-public IPv4, local-use NAT64
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b::a00:1", "2002:7f00:1::1", "2002:a9fe:a9fe::1",
		"2002:c0a8:101::1", "64:ff9b:1::808:808",
		// zoned
		"fe80::1%eth0",
	}
	allowed := []string{
		"8.8.8.8", "1.1.1.1", "9.9.9.9", "93.184.215.14", "100.63.255.255", "100.128.0.0",
		"172.15.255.255", "172.32.0.0", "192.0.1.1", "192.167.255.255", "192.169.0.0",
		"198.17.255.255", "198.20.0.0", "223.255.255.255", "11.0.0.1", "126.255.255.255", "128.0.0.1",
		"::ffff:8.8.8.8", "2606:4700::1111", "2606:4700:4700::1001", "2001:4860:4860::8888",
		"2a00:1450:4001::1", "64:ff9b::808:808", "2002:808:808::1",
	}
	for _, s := range refused {
		if webhook.IsPublic(netip.MustParseAddr(s)) {
			t.Errorf("IsPublic(%s) = true, want false", s)
		}
	}
	for _, s := range allowed {
		if !webhook.IsPublic(netip.MustParseAddr(s)) {
			t.Errorf("IsPublic(%s) = false, want true", s)
		}
	}
	if webhook.IsPublic(netip.Addr{}) {
		t.Error("IsPublic(zero Addr) = true")
	}
}

func TestCheckURL(t *testing.T) {
	const ok = ""
	cases := []struct {
		url          string
		strict       string // error substring with allowPrivate=false, "" = valid
		allowPrivate string // error substring with allowPrivate=true
	}{
		{"https://example.com/hooks", ok, ok},
		{"https://example.com:8443/hooks?x=1#frag", ok, ok},
		{"HTTPS://Example.COM/", ok, ok},
		{"https://8.8.8.8/hook", ok, ok},
		{"https://[2606:4700::1111]/hook", ok, ok},
		{"https://hooks.example.com./x", ok, ok},
		{"http://example.com/hooks", "must use https", ok},
		{"http://127.0.0.1:8080/hook", "must use https", ok},
		{"https://127.0.0.1/hook", "non-public", ok},
		{"https://localhost/hook", "non-public", ok},
		{"https://api.LOCALHOST./hook", "non-public", ok},
		{"https://10.1.2.3/", "non-public", ok},
		{"https://169.254.169.254/latest/meta-data", "non-public", ok},
		{"https://[::1]/", "non-public", ok},
		{"https://[::ffff:127.0.0.1]/", "non-public", ok},
		{"https://[fd00:ec2::254]/", "non-public", ok},
		{"https://[fe80::1%25eth0]/", "non-public", ok},
		{"https://0.0.0.0/", "non-public", ok},
		{"https://100.64.1.1/", "non-public", ok},
		{"https://2130706433/", "canonical", ok},
		{"https://0x7f.1/", "canonical", ok},
		{"https://127.1/", "canonical", ok},
		{"https://user:pass@example.com/", "credentials", "credentials"},
		{"https://user@example.com/", "credentials", "credentials"},
		{"ftp://example.com/", "must use https", "http or https"},
		{"javascript:alert(1)", "absolute", "absolute"},
		{"https:example.com", "absolute", "absolute"},
		{"/relative/path", "absolute", "absolute"},
		{"example.com/hook", "absolute", "absolute"},
		{"", "required", "required"},
		{"https://", "host", "host"},
		{"https:///path", "host", "host"},
		{"https://example.com:0/", "port", "port"},
		{"https://example.com:99999/", "port", "port"},
		{"https://example.com:abc/", "valid URL", "valid URL"},
		{"https://exa mple.com/", "valid URL", "valid URL"},
		{"https://example.com/" + strings.Repeat("a", 2100), "at most", "at most"},
	}
	for _, c := range cases {
		for _, ap := range []bool{false, true} {
			want := c.strict
			if ap {
				want = c.allowPrivate
			}
			err := webhook.CheckURL(c.url, ap)
			switch {
			case want == ok && err != nil:
				t.Errorf("CheckURL(%q, %v) = %v, want nil", c.url, ap, err)
			case want != ok && err == nil:
				t.Errorf("CheckURL(%q, %v) = nil, want error containing %q", c.url, ap, want)
			case want != ok && !strings.Contains(err.Error(), want):
				t.Errorf("CheckURL(%q, %v) = %v, want error containing %q", c.url, ap, err, want)
			case err != nil && strings.HasPrefix(err.Error(), "url"):
				t.Errorf("CheckURL(%q, %v) = %q: message should not carry the field name", c.url, ap, err)
			}
		}
	}
}

// Hosts are read as the resolver and net/http read them, through IDNA
// (UTS #46 mapping): "127。0。0。1" and fullwidth digits are 127.0.0.1, so
// they are refused as such, and the URL comes back with the host in ASCII.
func TestNormalizeURLUnicodeHost(t *testing.T) {
	for _, c := range []struct {
		url  string
		want string // error substring when strict, "" = valid
	}{
		{"https://127。0。0。1/hook", "non-public"},         // U+3002 ideographic full stop
		{"https://１２７．０．０．１/hook", "non-public"},         // fullwidth digits and full stop
		{"https://127．0。0.１:8443/hook", "non-public"},    // mixed
		{"https://①②⑦.0.0.1/", "non-public"},             // circled digits
		{"https://10｡1｡2｡3/", "non-public"},              // U+FF61 halfwidth ideographic full stop
		{"https://169｡254｡169｡254/latest", "non-public"}, // metadata
		{"https://127%E3%80%820.0.1/", "non-public"},     // the stop percent-encoded
		{"https://ｌｏｃａｌｈｏｓｔ/", "non-public"},
		{"https://api.ｌｏｃａｌｈｏｓｔ/", "non-public"},
		{"https://0x7f｡1/", "canonical"},
		{"https://２１３０７０６４３３/", "canonical"},
		{"https://127.0.0.1\u200b/", "non-public"}, // a zero-width space is dropped
		{"https://\u00ad/", "host"},                // nothing left
		{"https://exa\u2025mple.com/", "host"},     // not a valid name
	} {
		if _, err := webhook.NormalizeURL(c.url, false); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("NormalizeURL(%q) = %v, want an error containing %q", c.url, err, c.want)
		}
		if err := webhook.CheckURL(c.url, false); err == nil {
			t.Errorf("CheckURL(%q) = nil, want an error", c.url)
		}
	}
	for in, want := range map[string]string{
		"https://bücher.example/hooks/ü?x=1#f": "https://xn--bcher-kva.example/hooks/ü?x=1#f",
		"https://BÜCHER.example:8443/":         "https://xn--bcher-kva.example:8443/",
		"https://例え.テスト/h":                     "https://xn--r8jz45g.xn--zckzah/h",
		"https://hooks.example.com/a%2Fb?q=ü":  "https://hooks.example.com/a%2Fb?q=ü", // ASCII host: as sent
		"https://xn--bcher-kva.example/":       "https://xn--bcher-kva.example/",
		"https://HOOKS.example.com/Path":       "https://HOOKS.example.com/Path",
		"https://[2606:4700::1111]:8443/hook":  "https://[2606:4700::1111]:8443/hook",
		"https://ex\u200bample.com/x":          "https://example.com/x",
		"https://hooks.example.com./trailing":  "https://hooks.example.com./trailing",
	} {
		if got, err := webhook.NormalizeURL(in, false); err != nil || got != want {
			t.Errorf("NormalizeURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	// Allowed private addresses are still stored as they will be dialed.
	if got, err := webhook.NormalizeURL("http://127。0。0。1:8080/h", true); err != nil || got != "http://127.0.0.1:8080/h" {
		t.Errorf("NormalizeURL with private allowed = %q, %v; want http://127.0.0.1:8080/h", got, err)
	}
}
