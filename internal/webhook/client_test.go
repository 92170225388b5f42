package webhook_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/parleyhq/parley/internal/webhook"
)

// fakeDNS maps hostnames to addresses for webhook.WithLookup.
func fakeDNS(m map[string][]string) webhook.LookupFunc {
	return func(_ context.Context, host string) ([]netip.Addr, error) {
		ss, ok := m[host]
		if !ok {
			return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
		}
		var ips []netip.Addr
		for _, s := range ss {
			ips = append(ips, netip.MustParseAddr(s))
		}
		return ips, nil
	}
}

// countingServer counts the requests it handles and, in *conns, the TCP
// connections it accepts.
func countingServer(t *testing.T, tls bool, h http.HandlerFunc) (*httptest.Server, *atomic.Int64) {
	srv, hits, _ := countingServerConns(t, tls, h)
	return srv, hits
}

func countingServerConns(t *testing.T, tls bool, h http.HandlerFunc) (srv *httptest.Server, hits, conns *atomic.Int64) {
	t.Helper()
	hits, conns = new(atomic.Int64), new(atomic.Int64)
	srv = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		if h != nil {
			h(w, r)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	if tls {
		srv.StartTLS()
	} else {
		srv.Start()
	}
	t.Cleanup(srv.Close)
	return srv, hits, conns
}

// viaHost rewrites srv.URL (on 127.0.0.1) to use host instead of the IP.
func viaHost(t *testing.T, srv *httptest.Server, host, path string) string {
	t.Helper()
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	u.Host = net.JoinHostPort(host, u.Port())
	u.Path = path
	return u.String()
}

func testHeaders(t *testing.T, secret string, body []byte) http.Header {
	t.Helper()
	h, err := webhook.Headers([]string{secret}, "evt_test", time.Now(), body)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestClientRefusesHostnameResolvingToLoopback(t *testing.T) {
	srv, hits, conns := countingServerConns(t, true, nil)
	c := webhook.Client(false, webhook.WithLookup(fakeDNS(map[string][]string{
		"internal.test": {"127.0.0.1"},
		"mapped.test":   {"::ffff:127.0.0.1"},
	})))
	for _, host := range []string{"internal.test", "mapped.test"} {
		endpoint := viaHost(t, srv, host, "/hook")
		// The URL itself is acceptable: only resolution reveals the target.
		if err := webhook.CheckURL(endpoint, false); err != nil {
			t.Fatalf("CheckURL(%q) = %v", endpoint, err)
		}
		res := webhook.Deliver(context.Background(), c, endpoint, testHeaders(t, webhook.NewSecret(), []byte(`{}`)), []byte(`{}`))
		if res.Err == nil || res.OK || res.Status != 0 {
			t.Fatalf("%s: Deliver = %+v, want refusal", host, res)
		}
		if !errors.Is(res.Err, webhook.ErrNonPublic) || !strings.Contains(res.Err.Error(), "127.0.0.1") {
			t.Errorf("%s: Err = %v, want ErrNonPublic naming 127.0.0.1", host, res.Err)
		}
		t.Logf("%s: %v", host, res.Err)
	}
	if n, c := hits.Load(), conns.Load(); n != 0 || c != 0 {
		t.Errorf("server saw %d requests and %d connections, want none", n, c)
	}
}

func TestClientRefusesLiteralPrivateIP(t *testing.T) {
	srv, hits, conns := countingServerConns(t, true, nil)
	res := webhook.Deliver(context.Background(), webhook.Client(false), srv.URL+"/hook", nil, []byte(`{}`))
	if !errors.Is(res.Err, webhook.ErrNonPublic) {
		t.Errorf("Err = %v, want ErrNonPublic", res.Err)
	}
	if n, c := hits.Load(), conns.Load(); n != 0 || c != 0 {
		t.Errorf("server saw %d requests and %d connections, want none", n, c)
	}
}

// Production path (system resolver): "localhost" resolves to loopback and
// the dialer's Control func refuses it after resolution.
func TestClientRefusesLocalhostWithSystemResolver(t *testing.T) {
	if addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", "localhost"); err != nil || len(addrs) == 0 {
		t.Skipf("localhost does not resolve here: %v", err)
	}
	srv, hits, conns := countingServerConns(t, true, nil)
	res := webhook.Deliver(context.Background(), webhook.Client(false), viaHost(t, srv, "localhost", "/"), nil, []byte(`{}`))
	if !errors.Is(res.Err, webhook.ErrNonPublic) {
		t.Errorf("Err = %v, want ErrNonPublic", res.Err)
	}
	if n, c := hits.Load(), conns.Load(); n != 0 || c != 0 {
		t.Errorf("server saw %d requests and %d connections, want none", n, c)
	}
}

// Every resolved address is checked, IPv4 and IPv6 alike.
func TestClientRefusesAllPrivateAddresses(t *testing.T) {
	srv, hits, conns := countingServerConns(t, true, nil)
	c := webhook.Client(false, webhook.WithLookup(fakeDNS(map[string][]string{
		"multi.test": {"10.0.0.1", "169.254.169.254", "127.0.0.1", "::1"},
	})))
	res := webhook.Deliver(context.Background(), c, viaHost(t, srv, "multi.test", "/"), nil, []byte(`{}`))
	if !errors.Is(res.Err, webhook.ErrNonPublic) {
		t.Errorf("Err = %v, want ErrNonPublic", res.Err)
	}
	if n, c := hits.Load(), conns.Load(); n != 0 || c != 0 {
		t.Errorf("server saw %d requests and %d connections, want none", n, c)
	}
}

func TestClientRefusesPlainHTTPUnlessAllowPrivate(t *testing.T) {
	// Refused before any dial: no network needed for this public address.
	res := webhook.Deliver(context.Background(), webhook.Client(false), "http://93.184.215.14/hook", nil, []byte(`{}`))
	if !errors.Is(res.Err, webhook.ErrInsecureScheme) {
		t.Errorf("Err = %v, want ErrInsecureScheme", res.Err)
	}
}

func TestClientAllowPrivateReachesServer(t *testing.T) {
	secret := webhook.NewSecret()
	body := []byte(`{"id":"evt_test","type":"user.created","data":{}}`)
	type seen struct {
		method, ctype, ua string
		err               error
	}
	got := make(chan seen, 2)
	srv, _ := countingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		wh, _ := standardwebhooks.NewWebhook(secret)
		got <- seen{r.Method, r.Header.Get("Content-Type"), r.Header.Get("User-Agent"), wh.Verify(b, r.Header)}
		w.WriteHeader(http.StatusNoContent)
	})
	// Proxy settings must be ignored (a proxy would bypass the guard).
	t.Setenv("HTTP_PROXY", "http://127.0.0.1:1")
	t.Setenv("HTTPS_PROXY", "http://127.0.0.1:1")
	c := webhook.Client(true, webhook.WithLookup(fakeDNS(map[string][]string{"internal.test": {"127.0.0.1"}})))
	for _, endpoint := range []string{srv.URL + "/hook", viaHost(t, srv, "internal.test", "/hook")} {
		res := webhook.Deliver(context.Background(), c, endpoint, testHeaders(t, secret, body), body)
		if !res.OK || res.Status != http.StatusNoContent || res.Err != nil || res.Disable {
			t.Fatalf("%s: Deliver = %+v, want 204 OK", endpoint, res)
		}
		if res.Latency <= 0 {
			t.Errorf("Latency = %v", res.Latency)
		}
		s := <-got
		if s.method != http.MethodPost || s.ctype != "application/json" || s.ua != webhook.UserAgent {
			t.Errorf("server saw %+v", s)
		}
		if s.err != nil {
			t.Errorf("receiver's library Verify: %v", s.err)
		}
	}
}

func TestClientDoesNotFollowRedirects(t *testing.T) {
	target, targetHits := countingServer(t, false, nil)
	srv, _ := countingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, target.URL+"/elsewhere", http.StatusFound)
	})
	res := webhook.Deliver(context.Background(), webhook.Client(true), srv.URL, nil, []byte(`{}`))
	if res.Status != http.StatusFound || res.OK || res.Disable || res.Err != nil {
		t.Errorf("Deliver = %+v, want 302 not OK", res)
	}
	if n := targetHits.Load(); n != 0 {
		t.Errorf("redirect target saw %d requests, want 0", n)
	}
}

func TestDeliverReadsAtMost1KiB(t *testing.T) {
	var wrote atomic.Int64
	srv, _ := countingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		chunk := []byte(strings.Repeat("x", 32<<10))
		for range 1024 { // 32 MiB unless the client hangs up
			n, err := w.Write(chunk)
			wrote.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	res := webhook.Deliver(context.Background(), webhook.Client(true), srv.URL, nil, []byte(`{}`))
	if !res.OK || res.Status != 200 {
		t.Fatalf("Deliver = %+v", res)
	}
	if len(res.Response) != webhook.MaxResponseBytes || strings.Trim(res.Response, "x") != "" {
		t.Errorf("Response is %d bytes, want %d x", len(res.Response), webhook.MaxResponseBytes)
	}
	srv.Close() // wait for the handler
	if n := wrote.Load(); n >= 32<<20 {
		t.Errorf("server wrote the whole %d bytes: response was drained", n)
	}
}

func TestDeliverExcerptIsValidUTF8(t *testing.T) {
	// 1023 ASCII bytes then a 2-byte rune cut by the limit.
	srv, _ := countingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, strings.Repeat("a", 1023)+"é and more")
	})
	res := webhook.Deliver(context.Background(), webhook.Client(true), srv.URL, nil, nil)
	if res.Response != strings.Repeat("a", 1023) {
		t.Errorf("Response = %d bytes %q...", len(res.Response), res.Response[len(res.Response)-4:])
	}
	srv2, _ := countingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte{'o', 'k', 0xff, 0xfe, '!'})
	})
	if res := webhook.Deliver(context.Background(), webhook.Client(true), srv2.URL, nil, nil); res.Response != "ok\uFFFD!" {
		t.Errorf("Response = %q", res.Response)
	}
}

func TestDeliverTimeout(t *testing.T) {
	srv, _ := countingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body) // lets the server notice the client hanging up
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	start := time.Now()
	res := webhook.Deliver(context.Background(), webhook.Client(true, webhook.WithTimeout(100*time.Millisecond)), srv.URL, nil, []byte(`{}`))
	if elapsed := time.Since(start); elapsed > 5*time.Second {
		t.Errorf("Deliver took %v", elapsed)
	}
	if res.Err == nil || res.OK || res.Status != 0 {
		t.Fatalf("Deliver = %+v, want timeout", res)
	}
	if !errors.Is(res.Err, webhook.ErrTimeout) {
		t.Errorf("Err = %v, want ErrTimeout", res.Err)
	}
	if res.Latency < 100*time.Millisecond {
		t.Errorf("Latency = %v, want ≥ timeout", res.Latency)
	}
	t.Log(res.Err)
}

func TestDeliverStatuses(t *testing.T) {
	for _, c := range []struct {
		status        int
		ok, disable   bool
		wantRespStart string
	}{
		{200, true, false, "status 200"},
		{201, true, false, "status 201"},
		{299, true, false, "status 299"},
		{304, false, false, ""},
		{400, false, false, "status 400"},
		{404, false, false, "status 404"},
		{410, false, true, "status 410"},
		{429, false, false, "status 429"},
		{500, false, false, "status 500"},
		{503, false, false, "status 503"},
	} {
		srv, _ := countingServer(t, false, func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(c.status)
			io.WriteString(w, "status "+strconv.Itoa(c.status))
		})
		res := webhook.Deliver(context.Background(), webhook.Client(true), srv.URL, nil, []byte(`{}`))
		if res.Status != c.status || res.OK != c.ok || res.Disable != c.disable || res.Err != nil {
			t.Errorf("status %d: Deliver = %+v", c.status, res)
		}
		if res.Response != c.wantRespStart {
			t.Errorf("status %d: Response = %q, want %q", c.status, res.Response, c.wantRespStart)
		}
	}
}

func TestDeliverCancelledContext(t *testing.T) {
	srv, hits := countingServer(t, false, nil)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	res := webhook.Deliver(ctx, webhook.Client(true), srv.URL, nil, nil)
	if !errors.Is(res.Err, context.Canceled) || res.OK {
		t.Errorf("Deliver = %+v, want context.Canceled", res)
	}
	if hits.Load() != 0 {
		t.Error("server saw a request")
	}
}

func TestDeliverInvalidURL(t *testing.T) {
	res := webhook.Deliver(context.Background(), webhook.Client(true), "://bad", nil, nil)
	if res.Err == nil || res.OK {
		t.Errorf("Deliver = %+v, want error", res)
	}
}
