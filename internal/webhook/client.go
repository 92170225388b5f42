package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"
)

// Delivery limits from D11.
const (
	// Timeout bounds one delivery attempt: connect, TLS, request and
	// reading the response excerpt.
	Timeout = 15 * time.Second
	// MaxResponseBytes is how much of a response body is read and kept.
	MaxResponseBytes = 1024
	// UserAgent is sent unless the caller's headers set one.
	UserAgent = "Parley-Webhooks/1"
)

var (
	// ErrNonPublic is wrapped by the error of an attempt refused by the SSRF
	// guard because the resolved address is not public.
	ErrNonPublic = errors.New("webhook: refusing to connect to non-public address")
	// ErrInsecureScheme is wrapped by the error of an attempt to a non-https
	// URL through a client that does not allow private addresses.
	ErrInsecureScheme = errors.New("webhook: refusing non-https URL")
	// ErrTimeout is wrapped by Result.Err when an attempt timed out.
	ErrTimeout = errors.New("webhook: request timed out")
)

// LookupFunc resolves a hostname to IP addresses, like
// (*net.Resolver).LookupNetIP(ctx, "ip", host).
type LookupFunc func(ctx context.Context, host string) ([]netip.Addr, error)

// Option configures Client.
type Option func(*clientConfig)

type clientConfig struct {
	timeout time.Duration
	lookup  LookupFunc
}

// WithTimeout overrides the per-attempt timeout (default Timeout, 15 s).
// Meant for tests.
func WithTimeout(d time.Duration) Option {
	return func(c *clientConfig) { c.timeout = d }
}

// WithLookup makes the client resolve hostnames with fn instead of the
// system resolver, e.g. to make "internal.test" resolve to 127.0.0.1 in a
// test. Resolved addresses still pass the dialer's guard. Meant for tests.
func WithLookup(fn LookupFunc) Option {
	return func(c *clientConfig) { c.lookup = fn }
}

// Client returns the *http.Client for deliveries. Build it once and share it:
// it is safe for concurrent use and keeps connections alive.
//
//   - The whole attempt is bounded by Timeout (15 s).
//   - Redirects are not followed: the 3xx response itself is returned.
//   - No proxy is used, whatever the environment says (a proxy would dial the
//     target itself, past the guard).
//   - Unless allowPrivate, only https URLs are requested (ErrInsecureScheme),
//     and the net.Dialer's Control func refuses every address that is not
//     IsPublic (ErrNonPublic). Control runs after DNS resolution, on the exact
//     IP about to be connected, so hostnames that resolve or rebind to
//     127.0.0.1, 10.x, 169.254.169.254 and the like are refused.
func Client(allowPrivate bool, opts ...Option) *http.Client {
	cfg := clientConfig{timeout: Timeout}
	for _, o := range opts {
		o(&cfg)
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !allowPrivate {
		dialer.Control = guardControl
	}
	dial := dialer.DialContext
	if cfg.lookup != nil {
		dial = lookupDialer(dialer, cfg.lookup)
	}
	var rt http.RoundTripper = &http.Transport{
		Proxy:                  nil,
		DialContext:            dial,
		ForceAttemptHTTP2:      true,
		MaxIdleConns:           100,
		MaxIdleConnsPerHost:    4,
		IdleConnTimeout:        90 * time.Second,
		TLSHandshakeTimeout:    10 * time.Second,
		ExpectContinueTimeout:  1 * time.Second,
		MaxResponseHeaderBytes: 64 << 10,
	}
	if !allowPrivate {
		rt = httpsOnly{rt}
	}
	return &http.Client{
		Transport: rt,
		Timeout:   cfg.timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		},
	}
}

// guardControl is the net.Dialer Control func: address is the resolved
// "ip:port" about to be connected.
func guardControl(network, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w %q", ErrNonPublic, address)
	}
	if !IsPublic(ap.Addr()) {
		return fmt.Errorf("%w %s", ErrNonPublic, ap.Addr())
	}
	return nil
}

// lookupDialer resolves hostnames with lookup and dials the resulting IPs
// one after the other through d, whose Control func (if any) checks each.
func lookupDialer(d *net.Dialer, lookup LookupFunc) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, port, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if _, err := netip.ParseAddr(host); err == nil {
			return d.DialContext(ctx, network, addr)
		}
		ips, err := lookup(ctx, host)
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: network, Err: err}
		}
		var errs []error
		for _, ip := range ips {
			ip = ip.Unmap()
			if network == "tcp4" && !ip.Is4() || network == "tcp6" && !ip.Is6() {
				continue
			}
			c, err := d.DialContext(ctx, network, net.JoinHostPort(ip.String(), port))
			if err == nil {
				return c, nil
			}
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
		if len(errs) == 0 {
			return nil, &net.OpError{Op: "dial", Net: network, Err: &net.DNSError{Err: "no addresses for " + network, Name: host, IsNotFound: true}}
		}
		return nil, errors.Join(errs...)
	}
}

// httpsOnly refuses requests that are not https.
type httpsOnly struct{ rt http.RoundTripper }

func (t httpsOnly) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.URL.Scheme != "https" {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, fmt.Errorf("%w %q", ErrInsecureScheme, r.URL.Scheme)
	}
	return t.rt.RoundTrip(r)
}

// Result is the outcome of one delivery attempt, ready to be logged.
type Result struct {
	// Status is the HTTP status code, 0 if no response was received.
	Status int
	// Latency is the time from sending the request to having read the
	// response excerpt (or failing).
	Latency time.Duration
	// Response is the start of the response body: at most MaxResponseBytes
	// bytes, valid UTF-8 (invalid bytes replaced, a cut rune dropped).
	Response string
	// Err is set when no response was received: refused by the guard
	// (ErrNonPublic, ErrInsecureScheme), timed out (ErrTimeout), connection
	// or TLS failure, or ctx cancelled. An error while reading the body after
	// the status arrived is not reported: the status decides.
	Err error
	// Reason says why no response was received, for the tenant's delivery
	// log: one of a few fixed texts that never hold an address (see reason).
	// Err, with the detail, is for the operator's log.
	Reason string
	// Disable is set on 410 Gone: the endpoint asks to be disabled.
	Disable bool
	// OK is set on a 2xx status: the event is delivered.
	OK bool
}

// Deliver makes one delivery attempt: it POSTs body to endpoint with the
// headers h (see Headers) plus Content-Type application/json and
// User-Agent unless h sets them, reads at most MaxResponseBytes of the
// response and returns the outcome. Anything that is neither OK nor Disable
// should be retried per NextRetry. c should come from Client.
func Deliver(ctx context.Context, c *http.Client, endpoint string, h http.Header, body []byte) Result {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return Result{Err: fmt.Errorf("webhook: invalid request: %w", err), Reason: "invalid URL"}
	}
	req.Header = h.Clone()
	if req.Header == nil {
		req.Header = make(http.Header)
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", UserAgent)
	}

	start := time.Now()
	resp, err := c.Do(req)
	if err != nil {
		err = deliveryError(err)
		return Result{Latency: time.Since(start), Err: err, Reason: reason(err)}
	}
	buf, _ := io.ReadAll(io.LimitReader(resp.Body, MaxResponseBytes))
	resp.Body.Close()
	return Result{
		Status:   resp.StatusCode,
		Latency:  time.Since(start),
		Response: excerpt(buf),
		Disable:  resp.StatusCode == http.StatusGone,
		OK:       resp.StatusCode >= 200 && resp.StatusCode <= 299,
	}
}

// deliveryError drops the *url.Error wrapper (method and URL, which the
// delivery log already holds) and marks timeouts with ErrTimeout.
func deliveryError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout() {
		return fmt.Errorf("%w: %w", ErrTimeout, err)
	}
	return err
}

// reason names the failure of an attempt for the tenant. Tenants choose
// the URL, so the text must not turn deliveries into a probe of the
// server's network: the guard's error names what a host resolved to, a DNS
// error the resolver's address, a connection error the server's own
// address. Only known causes get a name; the rest is "connection failed".
func reason(err error) string {
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var alert tls.AlertError
	var record tls.RecordHeaderError
	switch {
	case errors.Is(err, ErrNonPublic):
		return "refused: non-public address"
	case errors.Is(err, ErrInsecureScheme):
		return "refused: not https"
	case errors.As(err, &dnsErr):
		return "DNS lookup failed"
	case errors.Is(err, ErrTimeout):
		return "timed out"
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, syscall.ECONNREFUSED):
		return "connection refused"
	case errors.Is(err, syscall.ECONNRESET):
		return "connection reset"
	case errors.As(err, &certErr):
		return "TLS certificate verification failed"
	case errors.As(err, &alert), errors.As(err, &record):
		return "TLS handshake failed"
	case errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return "connection closed without a response"
	}
	return "connection failed"
}

// excerpt makes b valid UTF-8 of at most MaxResponseBytes bytes.
func excerpt(b []byte) string {
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if len(s) > MaxResponseBytes {
		s = s[:MaxResponseBytes]
	}
	// Drop a rune cut by the limit (or turned into U+FFFD by the cut).
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return s
}
