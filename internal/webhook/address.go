package webhook

import (
	"errors"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// MaxURLLength bounds an endpoint URL.
const MaxURLLength = 2048

// CheckURL validates a webhook endpoint URL when it is created or updated;
// see NormalizeURL.
func CheckURL(raw string, allowPrivate bool) error {
	_, err := NormalizeURL(raw, allowPrivate)
	return err
}

// NormalizeURL validates a webhook endpoint URL when it is created or
// updated and returns it as it is to be stored. It must be absolute, http
// or https, with a host, a valid port if any, and no userinfo. Unless
// allowPrivate is set it must be https, and a host that is a literal IP
// must be public (IsPublic); "localhost" names and numeric non-canonical
// IPv4 forms (such as "2130706433" or "0x7f.1") are refused too. Hostnames
// are not resolved here: the dialer of Client checks the resolved address
// at connect time.
//
// A host that is not ASCII is first converted as net/http converts it
// before dialing (IDNA, UTS #46 lookup mapping), so "127。0。0。1" or
// fullwidth digits are checked as the 127.0.0.1 they become. The URL
// returned carries that ASCII host (punycode for an international name)
// and the rest of raw unchanged; an ASCII host leaves raw as it is.
//
// The error message is meant to follow a field name, as in a 422
// validation_error "url: must use https"; it carries no "url:" prefix.
func NormalizeURL(raw string, allowPrivate bool) (string, error) {
	if raw == "" {
		return "", errors.New("is required")
	}
	if len(raw) > MaxURLLength {
		return "", errors.New("must be at most " + strconv.Itoa(MaxURLLength) + " characters")
	}
	u, err := url.Parse(raw)
	if err != nil {
		return "", errors.New("is not a valid URL")
	}
	if !u.IsAbs() || u.Opaque != "" {
		return "", errors.New("must be an absolute http(s) URL")
	}
	switch u.Scheme {
	case "https":
	case "http":
		if !allowPrivate {
			return "", errors.New("must use https")
		}
	default:
		if allowPrivate {
			return "", errors.New("must use http or https")
		}
		return "", errors.New("must use https")
	}
	if u.User != nil {
		return "", errors.New("must not contain credentials")
	}
	host := u.Hostname()
	if host == "" {
		return "", errors.New("must include a host")
	}
	port := u.Port()
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", errors.New("has an invalid port")
		}
	}
	if !isASCII(host) {
		ascii, err := idna.Lookup.ToASCII(host)
		if err != nil || ascii == "" {
			return "", errors.New("must include a valid host name")
		}
		host = ascii
		raw = withHost(raw, u.Scheme, host, port)
		if len(raw) > MaxURLLength {
			return "", errors.New("must be at most " + strconv.Itoa(MaxURLLength) + " characters")
		}
	}
	if allowPrivate {
		return raw, nil
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if !IsPublic(ip) {
			return "", errors.New("must not point to a private, loopback, link-local or otherwise non-public address")
		}
		return raw, nil
	}
	name := strings.ToLower(strings.TrimSuffix(host, "."))
	if name == "localhost" || strings.HasSuffix(name, ".localhost") {
		return "", errors.New("must not point to a private, loopback, link-local or otherwise non-public address")
	}
	if numericLabel(name[strings.LastIndexByte(name, '.')+1:]) {
		return "", errors.New("must use a hostname or a canonical IP address")
	}
	return raw, nil
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// withHost replaces the authority of raw, an absolute URL without
// userinfo, keeping the rest as written (url.URL.String would escape a
// path's Unicode).
func withHost(raw, scheme, host, port string) string {
	rest := raw[strings.Index(raw, "//")+2:]
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[i:]
	} else {
		rest = ""
	}
	if port != "" {
		host += ":" + port
	}
	return scheme + "://" + host + rest
}

// numericLabel reports whether a final DNS label looks like part of an IPv4
// address in a legacy notation (decimal, octal or 0x hex). No TLD is
// numeric, and some resolvers (getaddrinfo's inet_aton) accept such forms.
func numericLabel(l string) bool {
	if l == "" {
		return false
	}
	if h, ok := strings.CutPrefix(l, "0x"); ok {
		l = h
		if l == "" {
			return true
		}
		for _, c := range l {
			if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
				return false
			}
		}
		return true
	}
	for _, c := range l {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

var (
	// nonPublic4 lists every IPv4 range that is not globally reachable
	// unicast (IANA special-purpose registry).
	nonPublic4 = prefixes(
		"0.0.0.0/8",       // "this network", includes unspecified 0.0.0.0
		"10.0.0.0/8",      // private
		"100.64.0.0/10",   // CGNAT shared address space (Alibaba metadata 100.100.100.200)
		"127.0.0.0/8",     // loopback
		"169.254.0.0/16",  // link-local (AWS/GCP/Azure metadata 169.254.169.254)
		"172.16.0.0/12",   // private
		"192.0.0.0/24",    // IETF protocol assignments (Oracle metadata 192.0.0.192)
		"192.0.2.0/24",    // TEST-NET-1
		"192.88.99.0/24",  // deprecated 6to4 relay anycast
		"192.168.0.0/16",  // private
		"198.18.0.0/15",   // benchmarking
		"198.51.100.0/24", // TEST-NET-2
		"203.0.113.0/24",  // TEST-NET-3
		"224.0.0.0/4",     // multicast
		"240.0.0.0/4",     // reserved, includes broadcast 255.255.255.255
	)
	// global6 is IPv6 global unicast; everything outside it (loopback,
	// unspecified, ULA fc00::/7 incl. fd00:ec2::254, link-local fe80::/10,
	// multicast ff00::/8, discard 100::/64, IPv4-compatible ::/96, ...) is
	// refused, except NAT64 addresses of public IPv4 hosts.
	global6 = netip.MustParsePrefix("2000::/3")
	// nonPublic6 are the non-public ranges inside 2000::/3.
	nonPublic6 = prefixes(
		"2001::/32",     // Teredo (embeds arbitrary IPv4)
		"2001:2::/48",   // benchmarking
		"2001:10::/28",  // ORCHID
		"2001:20::/28",  // ORCHIDv2
		"2001:db8::/32", // documentation
		"3fff::/20",     // documentation (RFC 9637)
	)
	nat64     = netip.MustParsePrefix("64:ff9b::/96") // well-known NAT64, IPv4 in the last 32 bits
	sixToFour = netip.MustParsePrefix("2002::/16")    // 6to4, IPv4 in bits 16-47
)

func prefixes(ss ...string) []netip.Prefix {
	ps := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		ps[i] = netip.MustParsePrefix(s)
	}
	return ps
}

// IsPublic reports whether ip is a globally reachable unicast address that
// may be dialed when private addresses are not allowed. It refuses
// unspecified, loopback, private (RFC 1918, ULA), link-local, CGNAT,
// multicast, broadcast, reserved, benchmarking, documentation and cloud
// metadata addresses, zoned addresses, and IPv4-mapped, NAT64 and 6to4
// IPv6 forms of refused IPv4 addresses.
func IsPublic(ip netip.Addr) bool {
	if !ip.IsValid() || ip.Zone() != "" {
		return false
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return public4(ip)
	}
	if !global6.Contains(ip) {
		if nat64.Contains(ip) {
			b := ip.As16()
			return public4(netip.AddrFrom4([4]byte(b[12:16])))
		}
		return false
	}
	for _, p := range nonPublic6 {
		if p.Contains(ip) {
			return false
		}
	}
	if sixToFour.Contains(ip) {
		b := ip.As16()
		return public4(netip.AddrFrom4([4]byte(b[2:6])))
	}
	return true
}

func public4(ip netip.Addr) bool {
	for _, p := range nonPublic4 {
		if p.Contains(ip) {
			return false
		}
	}
	return true
}
