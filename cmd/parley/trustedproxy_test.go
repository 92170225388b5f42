package main

import (
	"net/netip"
	"reflect"
	"strings"
	"testing"
)

// TestTrustedProxyFlag: --trusted-proxy (PARLEY_TRUSTED_PROXY) takes
// comma-separated CIDRs or bare addresses; anything else stops serve with
// a clear error (D19, issue #31 item 3).
func TestTrustedProxyFlag(t *testing.T) {
	t.Parallel()
	got, err := parseTrustedProxies(" 10.0.0.0/8, 192.0.2.7 ,fd00::/8,::1,::ffff:10.1.0.0/112,")
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.7/32"),
		netip.MustParsePrefix("fd00::/8"), netip.MustParsePrefix("::1/128"), netip.MustParsePrefix("10.1.0.0/16")}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("parse = %v, %v; want %v", got, err, want)
	}
	if got, err := parseTrustedProxies(""); err != nil || got != nil {
		t.Errorf("empty = %v, %v; want none", got, err)
	}
	for _, bad := range []string{"10.0.0.0/33", "proxy.example", "10.0.0.0/8;"} {
		if _, err := parseTrustedProxies(bad); err == nil || !strings.Contains(err.Error(), "--trusted-proxy") {
			t.Errorf("parse %q: %v, want an error naming --trusted-proxy", bad, err)
		}
	}
	e := env(map[string]string{"PARLEY_TRUSTED_PROXY": "not a cidr"})
	if _, err := runCmd(t, e, "serve", "--addr", "127.0.0.1:0"); err == nil || !strings.Contains(err.Error(), "--trusted-proxy") {
		t.Errorf("serve with PARLEY_TRUSTED_PROXY=not a cidr: %v, want an error naming --trusted-proxy", err)
	}
}
