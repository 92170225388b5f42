package webhook_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/netip"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/webhook"
)

// anAddress matches an IPv4 or IPv6 address, with or without a port.
var anAddress = regexp.MustCompile(`\d{1,3}(\.\d{1,3}){3}|\[?[0-9a-fA-F]*:[0-9a-fA-F:]*:[0-9a-fA-F]*\]?`)

// Result.Reason, which tenants read in their delivery log, names what went
// wrong without an address: not the resolver's, not what a name resolved
// to, not the server's own (#15). Result.Err keeps the detail for the
// operator's log.
func TestDeliverReasonRevealsNoAddress(t *testing.T) {
	refusing, _ := countingServer(t, true, nil)
	closed, _ := countingServer(t, false, nil)
	closedURL := closed.URL
	closed.Close()
	slow, _ := countingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // lets the server notice the client hanging up
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	dnsFails := func(_ context.Context, host string) ([]netip.Addr, error) {
		return nil, &net.DNSError{Err: "server misbehaving", Name: host, Server: "10.20.30.40:53", IsTemporary: true}
	}
	guarded := webhook.Client(false, webhook.WithLookup(fakeDNS(map[string][]string{
		"internal.test": {"10.1.2.3", "fd00::7"},
		"loop.test":     {"127.0.0.1"},
	})))
	for _, c := range []struct {
		name   string
		client *http.Client
		url    string
		want   string
	}{
		{"name resolving to private addresses", guarded, viaHost(t, refusing, "internal.test", "/"), "refused: non-public address"},
		{"name resolving to loopback", guarded, viaHost(t, refusing, "loop.test", "/"), "refused: non-public address"},
		{"literal loopback", webhook.Client(false), refusing.URL, "refused: non-public address"},
		{"resolver failure", webhook.Client(false, webhook.WithLookup(dnsFails)), "https://hooks.example.com/", "DNS lookup failed"},
		{"unknown name", guarded, "https://unknown.test/", "DNS lookup failed"},
		{"plain http", webhook.Client(false), "http://93.184.215.14/", "refused: not https"},
		{"connection refused", webhook.Client(true), closedURL, "connection refused"},
		{"timeout", webhook.Client(true, webhook.WithTimeout(100*time.Millisecond)), slow.URL, "timed out"},
		{"untrusted certificate", webhook.Client(true), refusing.URL, "TLS certificate verification failed"},
	} {
		res := webhook.Deliver(context.Background(), c.client, c.url, nil, []byte(`{}`))
		if res.Err == nil {
			t.Errorf("%s: Deliver = %+v, want an error", c.name, res)
			continue
		}
		if res.Reason != c.want {
			t.Errorf("%s: Reason = %q, want %q (Err: %v)", c.name, res.Reason, c.want, res.Err)
		}
		if a := anAddress.FindString(res.Reason); a != "" || strings.Contains(res.Reason, "10.20.30.40") {
			t.Errorf("%s: Reason %q reveals the address %s", c.name, res.Reason, a)
		}
	}
	ok, _ := countingServer(t, false, nil)
	if res := webhook.Deliver(context.Background(), webhook.Client(true), ok.URL, nil, nil); res.Reason != "" || res.Err != nil {
		t.Errorf("a response: Reason = %q, want none", res.Reason)
	}
}
