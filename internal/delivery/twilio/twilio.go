// Package twilio is the Twilio implementation of delivery.Provider (D12).
//
// Outbound messages go through the Twilio REST API with twilio-go. Media
// reach Twilio as the signed, expiring GET /media/{id} links that Parley puts
// in delivery.Message.MediaURLs (D9); Twilio fetches them itself. Every send
// asks Twilio to report status changes to {PublicURL}/providers/twilio/status,
// and the brand numbers' messaging webhook is expected to point at
// {PublicURL}/providers/twilio/inbound. Both callbacks are served by the
// handlers of this package, which check X-Twilio-Signature and refuse forged
// requests with 403.
package twilio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/twilio/twilio-go/client"
	openapi "github.com/twilio/twilio-go/rest/api/v2010"

	"github.com/parleyhq/parley/internal/delivery"
)

// Callback paths, relative to Config.PublicURL. The HTTP server must route
// them to StatusHandler and InboundHandler.
const (
	StatusPath  = "/providers/twilio/status"
	InboundPath = "/providers/twilio/inbound"
)

// ErrorUnsubscribed is Twilio's error code for a recipient who opted out at
// the carrier or through Twilio's opt-out handling ("Attempt to send to
// unsubscribed recipient").
const ErrorUnsubscribed = 21610

// defaultTimeout bounds one API call when Config.HTTPClient is not given.
const defaultTimeout = 15 * time.Second

// Config configures a Provider.
type Config struct {
	// AccountSID and AuthToken authenticate API calls (HTTP basic auth) and
	// AuthToken is the key of X-Twilio-Signature. Both are required.
	AccountSID string
	AuthToken  string
	// MessagingServiceSID, when set, is sent as MessagingServiceSid instead
	// of From, and Twilio picks the sender from the service's pool.
	MessagingServiceSID string
	// PublicURL is Parley's externally visible base URL, e.g.
	// https://parley.example.com (no trailing slash needed). The status
	// callback is PublicURL + StatusPath, and a callback's signature is
	// checked against PublicURL + the request URI the handler receives, so
	// the handlers must see the path Twilio called (mount them without
	// stripping prefixes). Required.
	PublicURL string
	// BaseURL, when set, replaces Twilio's API origin (scheme and host, e.g.
	// the URL of an httptest.Server); any path in it is prepended to the API
	// path. Meant for tests and for API proxies.
	BaseURL string
	// HTTPClient, when set, is the client for API calls: its Transport,
	// CheckRedirect and Jar are used, and its Timeout bounds each Send (as a
	// context deadline). The default has a 15 s timeout and does not follow
	// redirects (like twilio-go's own default).
	HTTPClient *http.Client
	// Logger receives warnings about refused callbacks and failed sink
	// calls. Nil discards them.
	Logger *slog.Logger
}

// Provider sends messages through Twilio and serves Twilio's callbacks.
// It is safe for concurrent use.
type Provider struct {
	accountSID     string
	authToken      string
	serviceSID     string
	publicURL      string
	statusCallback string
	base           *url.URL // nil: Twilio's own hosts
	httpClient     *http.Client
	timeout        time.Duration
	validator      client.RequestValidator
	logger         *slog.Logger
	now            func() time.Time
}

// New checks cfg and returns a Provider.
func New(cfg Config) (*Provider, error) {
	if cfg.AccountSID == "" || cfg.AuthToken == "" {
		return nil, errors.New("twilio: account SID and auth token are required")
	}
	pub, err := url.Parse(cfg.PublicURL)
	if err != nil || (pub.Scheme != "http" && pub.Scheme != "https") || pub.Host == "" {
		return nil, fmt.Errorf("twilio: public URL %q is not an absolute http(s) URL", cfg.PublicURL)
	}
	if pub.RawQuery != "" || pub.Fragment != "" {
		return nil, fmt.Errorf("twilio: public URL %q must not have a query or fragment", cfg.PublicURL)
	}
	p := &Provider{
		accountSID: cfg.AccountSID,
		authToken:  cfg.AuthToken,
		serviceSID: cfg.MessagingServiceSID,
		publicURL:  strings.TrimRight(cfg.PublicURL, "/"),
		validator:  client.NewRequestValidator(cfg.AuthToken),
		logger:     cfg.Logger,
		now:        time.Now,
	}
	p.statusCallback = p.publicURL + StatusPath
	if cfg.BaseURL != "" {
		b, err := url.Parse(cfg.BaseURL)
		if err != nil || (b.Scheme != "http" && b.Scheme != "https") || b.Host == "" {
			return nil, fmt.Errorf("twilio: base URL %q is not an absolute http(s) URL", cfg.BaseURL)
		}
		b.Path = strings.TrimRight(b.Path, "/")
		b.RawPath = ""
		p.base = b
	}
	if cfg.HTTPClient != nil {
		c := *cfg.HTTPClient
		p.httpClient = &c
	} else {
		p.httpClient = &http.Client{
			Timeout: defaultTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error {
				return http.ErrUseLastResponse
			},
		}
	}
	p.timeout = p.httpClient.Timeout
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	return p, nil
}

// Name returns "twilio".
func (p *Provider) Name() string { return "twilio" }

// Send creates the message with Twilio's Messages API: To, Body (when not
// empty), one MediaUrl per media link, From = m.From (or MessagingServiceSid
// when configured) and StatusCallback = PublicURL + StatusPath. The receipt
// carries the message SID.
//
// Refusals are *delivery.Error: Twilio error 21610 has Unsubscribed set;
// HTTP 408, 429 and 5xx, network failures, timeouts and a cancelled ctx are
// Temporary; any other API error is permanent with Twilio's numeric code
// and message. ctx bounds the API call (twilio-go itself takes no context).
func (p *Provider) Send(ctx context.Context, m delivery.Message) (delivery.Receipt, error) {
	if err := ctx.Err(); err != nil {
		return delivery.Receipt{}, contextError(err)
	}
	// The client's Timeout is applied as a context deadline: the transport
	// below replaces the request's context, which is where http.Client
	// would put its own deadline.
	if p.timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, p.timeout)
		defer cancel()
	}
	params := &openapi.CreateMessageParams{}
	params.SetTo(m.To)
	if p.serviceSID != "" {
		params.SetMessagingServiceSid(p.serviceSID)
	} else {
		if m.From == "" {
			return delivery.Receipt{}, &delivery.Error{
				Code:    "missing_from",
				Message: "the message has no From number and no Twilio messaging service is configured",
			}
		}
		params.SetFrom(m.From)
	}
	if m.Body != "" {
		params.SetBody(m.Body)
	}
	if len(m.MediaURLs) > 0 {
		params.SetMediaUrl(m.MediaURLs)
	}
	// Our message id rides in the callback URL (which Twilio signs), so a
	// callback that overtakes the recording of the SID still finds its message.
	params.SetStatusCallback(p.statusCallback + "?message_id=" + strconv.FormatInt(m.ID, 10))

	// twilio-go builds its requests with context.Background(); a client per
	// call lets the transport attach ctx (and record the HTTP status, which
	// twilio-go drops when an error body does not decode).
	rt := &callTransport{ctx: ctx, next: p.httpClient.Transport, base: p.base}
	if rt.next == nil {
		rt.next = http.DefaultTransport
	}
	hc := *p.httpClient
	hc.Transport = rt
	hc.Timeout = 0
	c := &client.Client{
		Credentials: client.NewCredentials(p.accountSID, p.authToken),
		HTTPClient:  &hc,
	}
	c.SetAccountSid(p.accountSID)
	api := openapi.NewApiServiceWithClient(c)

	msg, err := api.CreateMessage(params)
	if err != nil {
		return delivery.Receipt{}, classify(ctx, err, rt.status)
	}
	if msg == nil || msg.Sid == nil || *msg.Sid == "" {
		return delivery.Receipt{}, &delivery.Error{
			Code:      "bad_response",
			Message:   "Twilio accepted the request but returned no message SID",
			Temporary: true,
		}
	}
	return delivery.Receipt{ProviderID: *msg.Sid}, nil
}

// classify turns what twilio-go returned into a *delivery.Error. status is
// the HTTP status of the last response (0 when none arrived).
func classify(ctx context.Context, err error, status int) *delivery.Error {
	var rest *client.TwilioRestError
	if errors.As(err, &rest) {
		if status == 0 {
			status = rest.Status
		}
		return apiError(rest.Code, rest.Message, status)
	}
	var restV1 *client.RestErrorV1
	if errors.As(err, &restV1) {
		if status == 0 {
			status = restV1.HttpStatusCode
		}
		return apiError(restV1.Code, restV1.Message, status)
	}
	if status >= 400 || (status > 0 && status < 200) {
		// An error status whose body is not Twilio's error JSON (a proxy's
		// page, an empty 429 or 503).
		return apiError(0, http.StatusText(status), status)
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return contextError(ctxErr)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return contextError(context.DeadlineExceeded)
	}
	var netErr net.Error
	if errors.As(err, &netErr) && netErr.Timeout() {
		return &delivery.Error{Code: "timeout", Message: "timed out calling Twilio: " + cause(err), Temporary: true}
	}
	var urlErr *url.Error
	if errors.As(err, &urlErr) || errors.As(err, &netErr) {
		return &delivery.Error{Code: "network_error", Message: "could not reach Twilio: " + cause(err), Temporary: true}
	}
	if status >= 200 && status < 300 {
		return &delivery.Error{Code: "bad_response", Message: "unreadable response from Twilio: " + err.Error(), Temporary: true}
	}
	return &delivery.Error{Code: "provider_error", Message: err.Error(), Temporary: true}
}

// apiError maps an error answer of the API.
func apiError(code int, msg string, status int) *delivery.Error {
	e := &delivery.Error{Message: msg}
	if code != 0 {
		e.Code = strconv.Itoa(code)
	} else {
		e.Code = "http_" + strconv.Itoa(status)
	}
	switch {
	case code == ErrorUnsubscribed:
		e.Unsubscribed = true
	case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests, status >= 500:
		e.Temporary = true
	}
	return e
}

// contextError names a call cut short by its context. Not "canceled": that
// error_code means a campaign's cancel (D16), and a message failed on its
// last retry keeps the provider's code.
func contextError(err error) *delivery.Error {
	if errors.Is(err, context.DeadlineExceeded) {
		return &delivery.Error{Code: "timeout", Message: "timed out calling Twilio", Temporary: true}
	}
	return &delivery.Error{Code: "request_canceled", Message: "call to Twilio canceled", Temporary: true}
}

// cause is the innermost useful text of a transport error, without the
// request URL that *url.Error adds.
func cause(err error) string {
	var urlErr *url.Error
	if errors.As(err, &urlErr) && urlErr.Err != nil {
		return urlErr.Err.Error()
	}
	return err.Error()
}

// maxErrorBody bounds how much of an error response is kept.
const maxErrorBody = 64 << 10

// callTransport serves one Send: it attaches the caller's context, sends to
// base instead of Twilio's hosts when set, records the response status and
// buffers error bodies (twilio-go does not close them).
type callTransport struct {
	ctx    context.Context
	next   http.RoundTripper
	base   *url.URL
	status int
}

func (t *callTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(t.ctx)
	if t.base != nil {
		r.URL.Scheme = t.base.Scheme
		r.URL.Host = t.base.Host
		r.URL.Path = t.base.Path + r.URL.Path
		r.URL.RawPath = ""
		r.Host = ""
	}
	resp, err := t.next.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	t.status = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode >= 400 {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		resp.Body.Close()
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	return resp, nil
}
