package main

import (
	"fmt"
	"net/netip"
	"strings"
)

// parseTrustedProxies reads --trusted-proxy: comma-separated CIDRs (a bare
// address is its own /32 or /128) of the reverse proxies whose
// X-Forwarded-For the console believes (issue #31 item 3).
func parseTrustedProxies(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		if f == "" {
			continue
		}
		p, err := netip.ParsePrefix(f)
		if err != nil {
			a, aerr := netip.ParseAddr(f)
			if aerr != nil {
				return nil, fmt.Errorf("--trusted-proxy: %q is not a CIDR such as 10.0.0.0/8 or fd00::/8", f)
			}
			p = netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen())
		}
		if p.Addr().Is4In6() {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}
