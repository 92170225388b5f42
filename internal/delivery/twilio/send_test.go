package twilio_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/delivery/twilio"
)

const (
	accountSID = "AC0123456789abcdef0123456789abcdef"
	authToken  = "0123456789abcdef0123456789abcdef"
	publicURL  = "https://parley.example.com"
	serviceSID = "MG0123456789abcdef0123456789abcdef"
)

// recorded is one request the fake Twilio API received.
type recorded struct {
	Method, Path, ContentType string
	User, Pass                string
	AuthOK                    bool
	Form                      url.Values
}

// fakeTwilio is a local stand-in for api.twilio.com. respond writes the
// answer; by default it accepts the message like Twilio does.
type fakeTwilio struct {
	*httptest.Server
	mu       sync.Mutex
	requests []recorded
	respond  func(w http.ResponseWriter, r *http.Request)
}

func newFakeTwilio(t *testing.T, respond func(w http.ResponseWriter, r *http.Request)) *fakeTwilio {
	t.Helper()
	f := &fakeTwilio{respond: respond}
	if f.respond == nil {
		f.respond = accept("SM00000000000000000000000000000001")
	}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Errorf("fake twilio: parse form: %v", err)
		}
		user, pass, ok := r.BasicAuth()
		f.mu.Lock()
		f.requests = append(f.requests, recorded{
			Method: r.Method, Path: r.URL.Path, ContentType: r.Header.Get("Content-Type"),
			User: user, Pass: pass, AuthOK: ok, Form: r.PostForm,
		})
		f.mu.Unlock()
		f.respond(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeTwilio) recorded() []recorded {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests)
}

// accept answers 201 with a message resource, as Twilio does.
func accept(sid string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json; charset=utf-8")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"account_sid":%q,"api_version":"2010-04-01","body":%q,"date_created":"Thu, 24 Aug 2023 05:01:45 +0000","direction":"outbound-api","error_code":null,"error_message":null,"from":%q,"messaging_service_sid":null,"num_media":"0","num_segments":"1","price":null,"price_unit":"USD","sid":%q,"status":"queued","to":%q,"uri":"/2010-04-01/Accounts/%s/Messages/%s.json"}`,
			accountSID, r.PostForm.Get("Body"), r.PostForm.Get("From"), sid, r.PostForm.Get("To"), accountSID, sid)
	}
}

// answer answers with a fixed status, content type and body.
func answer(status int, contentType, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// twilioError answers with Twilio's error JSON.
func twilioError(status, code int, msg string) func(http.ResponseWriter, *http.Request) {
	return answer(status, "application/json",
		fmt.Sprintf(`{"code":%d,"message":%q,"more_info":"https://www.twilio.com/docs/errors/%d","status":%d}`, code, msg, code, status))
}

func newProvider(t *testing.T, cfg twilio.Config) *twilio.Provider {
	t.Helper()
	if cfg.AccountSID == "" {
		cfg.AccountSID = accountSID
	}
	if cfg.AuthToken == "" {
		cfg.AuthToken = authToken
	}
	if cfg.PublicURL == "" {
		cfg.PublicURL = publicURL
	}
	p, err := twilio.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return p
}

var msg = delivery.Message{
	ID:      42,
	BrandID: 7,
	From:    "+15005550006",
	To:      "+14155552671",
	Body:    "Hello & welcome <3",
	MediaURLs: []string{
		"https://parley.example.com/media/3f1c0f8e-7c1a-4d8e-9d3c-0c6f9e5b2a11?expires=1795000000&sig=abc",
		"https://parley.example.com/media/9b2d1e44-1f0a-4c5b-8e7d-2a3b4c5d6e7f?expires=1795000000&sig=def",
	},
}

func TestName(t *testing.T) {
	p := newProvider(t, twilio.Config{})
	if p.Name() != "twilio" {
		t.Fatalf("Name() = %q", p.Name())
	}
	var _ delivery.Provider = p
}

func TestSendPostsMessage(t *testing.T) {
	f := newFakeTwilio(t, accept("SM1234567890abcdef1234567890abcd"))
	p := newProvider(t, twilio.Config{BaseURL: f.URL})

	rc, err := p.Send(context.Background(), msg)
	if err != nil {
		t.Fatalf("Send: %v", err)
	}
	if rc.ProviderID != "SM1234567890abcdef1234567890abcd" {
		t.Errorf("ProviderID = %q", rc.ProviderID)
	}
	reqs := f.recorded()
	if len(reqs) != 1 {
		t.Fatalf("%d requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Method != http.MethodPost || r.Path != "/2010-04-01/Accounts/"+accountSID+"/Messages.json" {
		t.Errorf("request = %s %s", r.Method, r.Path)
	}
	if r.ContentType != "application/x-www-form-urlencoded" {
		t.Errorf("Content-Type = %q", r.ContentType)
	}
	if !r.AuthOK || r.User != accountSID || r.Pass != authToken {
		t.Errorf("basic auth = %q/%q (%v), want the account SID and auth token", r.User, r.Pass, r.AuthOK)
	}
	want := url.Values{
		"To":             {msg.To},
		"From":           {msg.From},
		"Body":           {msg.Body},
		"MediaUrl":       msg.MediaURLs,
		"StatusCallback": {"https://parley.example.com/providers/twilio/status?message_id=42"},
	}
	if !equalForm(r.Form, want) {
		t.Errorf("form = %v\nwant   %v", r.Form, want)
	}
}

func TestSendWithMessagingService(t *testing.T) {
	f := newFakeTwilio(t, nil)
	p := newProvider(t, twilio.Config{BaseURL: f.URL, MessagingServiceSID: serviceSID, PublicURL: "https://parley.example.com/"})

	m := msg
	m.MediaURLs = nil
	if _, err := p.Send(context.Background(), m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	want := url.Values{
		"To":                  {m.To},
		"MessagingServiceSid": {serviceSID},
		"Body":                {m.Body},
		"StatusCallback":      {"https://parley.example.com/providers/twilio/status?message_id=42"},
	}
	if got := f.recorded()[0].Form; !equalForm(got, want) {
		t.Errorf("form = %v\nwant   %v", got, want)
	}
}

func TestSendMediaOnly(t *testing.T) {
	f := newFakeTwilio(t, nil)
	p := newProvider(t, twilio.Config{BaseURL: f.URL})

	m := msg
	m.Body = ""
	m.MediaURLs = m.MediaURLs[:1]
	if _, err := p.Send(context.Background(), m); err != nil {
		t.Fatalf("Send: %v", err)
	}
	form := f.recorded()[0].Form
	if _, ok := form["Body"]; ok {
		t.Errorf("Body sent for a media-only message: %q", form["Body"])
	}
	if got := form["MediaUrl"]; !slices.Equal(got, m.MediaURLs) {
		t.Errorf("MediaUrl = %q", got)
	}
}

func TestSendBaseURLWithPath(t *testing.T) {
	f := newFakeTwilio(t, nil)
	p := newProvider(t, twilio.Config{BaseURL: f.URL + "/proxy/"})
	if _, err := p.Send(context.Background(), msg); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if got, want := f.recorded()[0].Path, "/proxy/2010-04-01/Accounts/"+accountSID+"/Messages.json"; got != want {
		t.Errorf("path = %q, want %q", got, want)
	}
}

func TestSendWithoutFrom(t *testing.T) {
	f := newFakeTwilio(t, nil)
	p := newProvider(t, twilio.Config{BaseURL: f.URL})
	m := msg
	m.From = ""
	_, err := p.Send(context.Background(), m)
	de := asDeliveryError(t, err)
	if de.Temporary || de.Code != "missing_from" {
		t.Errorf("error = %+v", de)
	}
	if n := len(f.recorded()); n != 0 {
		t.Errorf("%d requests sent", n)
	}
}

func TestSendErrors(t *testing.T) {
	tests := []struct {
		name    string
		respond func(http.ResponseWriter, *http.Request)
		want    delivery.Error
	}{
		{
			name:    "21610 unsubscribed",
			respond: twilioError(400, 21610, "Attempt to send to unsubscribed recipient"),
			want:    delivery.Error{Code: "21610", Message: "Attempt to send to unsubscribed recipient", Unsubscribed: true},
		},
		{
			name:    "21211 invalid To",
			respond: twilioError(400, 21211, "The 'To' number +1415 is not a valid phone number."),
			want:    delivery.Error{Code: "21211", Message: "The 'To' number +1415 is not a valid phone number."},
		},
		{
			name:    "20003 authentication",
			respond: twilioError(401, 20003, "Authenticate"),
			want:    delivery.Error{Code: "20003", Message: "Authenticate"},
		},
		{
			name:    "429 too many requests",
			respond: twilioError(429, 20429, "Too Many Requests"),
			want:    delivery.Error{Code: "20429", Message: "Too Many Requests", Temporary: true},
		},
		{
			name:    "429 without a body",
			respond: answer(429, "", ""),
			want:    delivery.Error{Code: "http_429", Message: "Too Many Requests", Temporary: true},
		},
		{
			name:    "500 Twilio error",
			respond: twilioError(500, 20500, "Internal Server Error"),
			want:    delivery.Error{Code: "20500", Message: "Internal Server Error", Temporary: true},
		},
		{
			name:    "503 html",
			respond: answer(503, "text/html", "<html><body>Service Unavailable</body></html>"),
			want:    delivery.Error{Code: "http_503", Message: "Service Unavailable", Temporary: true},
		},
		{
			name:    "404 html",
			respond: answer(404, "text/html", "<html>nope</html>"),
			want:    delivery.Error{Code: "http_404", Message: "Not Found"},
		},
		{
			name:    "201 without a sid",
			respond: answer(201, "application/json", `{"status":"queued"}`),
			want:    delivery.Error{Code: "bad_response", Message: "Twilio accepted the request but returned no message SID", Temporary: true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeTwilio(t, tt.respond)
			p := newProvider(t, twilio.Config{BaseURL: f.URL})
			rc, err := p.Send(context.Background(), msg)
			if rc != (delivery.Receipt{}) {
				t.Errorf("receipt = %+v on error", rc)
			}
			if de := asDeliveryError(t, err); *de != tt.want {
				t.Errorf("error = %+v\nwant    %+v", *de, tt.want)
			}
		})
	}
}

func TestSendConnectionRefused(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()

	p := newProvider(t, twilio.Config{BaseURL: "http://" + addr})
	_, err = p.Send(context.Background(), msg)
	de := asDeliveryError(t, err)
	if !de.Temporary || de.Unsubscribed || de.Code != "network_error" {
		t.Errorf("error = %+v", de)
	}
	if strings.Contains(de.Message, accountSID) {
		t.Errorf("message leaks the request URL: %q", de.Message)
	}
}

// hang answers only when the client has gone away or the test ends.
func hang(done <-chan struct{}) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}
}

func TestSendContextTimeout(t *testing.T) {
	done := make(chan struct{})
	f := newFakeTwilio(t, hang(done))
	t.Cleanup(func() { close(done) }) // runs before f.Close
	p := newProvider(t, twilio.Config{BaseURL: f.URL})

	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := p.Send(ctx, msg)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Send took %v; the context deadline was not honoured", d)
	}
	de := asDeliveryError(t, err)
	if !de.Temporary || de.Code != "timeout" {
		t.Errorf("error = %+v", de)
	}
}

func TestSendHTTPClientTimeout(t *testing.T) {
	done := make(chan struct{})
	f := newFakeTwilio(t, hang(done))
	t.Cleanup(func() { close(done) })
	p := newProvider(t, twilio.Config{BaseURL: f.URL, HTTPClient: &http.Client{Timeout: 100 * time.Millisecond}})

	start := time.Now()
	_, err := p.Send(context.Background(), msg)
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("Send took %v; the client timeout was not honoured", d)
	}
	de := asDeliveryError(t, err)
	if !de.Temporary || de.Code != "timeout" {
		t.Errorf("error = %+v", de)
	}
}

func TestSendCanceledContext(t *testing.T) {
	f := newFakeTwilio(t, nil)
	p := newProvider(t, twilio.Config{BaseURL: f.URL})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := p.Send(ctx, msg)
	if de := asDeliveryError(t, err); !de.Temporary || de.Code != "request_canceled" {
		t.Errorf("error = %+v", de)
	}
	if n := len(f.recorded()); n != 0 {
		t.Errorf("%d requests sent with a canceled context", n)
	}
}

func TestSendCustomTransport(t *testing.T) {
	f := newFakeTwilio(t, nil)
	var calls int
	var mu sync.Mutex
	rt := roundTripFunc(func(r *http.Request) (*http.Response, error) {
		mu.Lock()
		calls++
		mu.Unlock()
		return http.DefaultTransport.RoundTrip(r)
	})
	p := newProvider(t, twilio.Config{BaseURL: f.URL, HTTPClient: &http.Client{Transport: rt}})
	if _, err := p.Send(context.Background(), msg); err != nil {
		t.Fatalf("Send: %v", err)
	}
	if calls != 1 {
		t.Errorf("custom transport called %d times", calls)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestSendConcurrent(t *testing.T) {
	var mu sync.Mutex
	n := 0
	f := newFakeTwilio(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		n++
		sid := fmt.Sprintf("SM%032d", n)
		mu.Unlock()
		accept(sid)(w, r)
	})
	p := newProvider(t, twilio.Config{BaseURL: f.URL})

	var wg sync.WaitGroup
	sids := make([]string, 20)
	for i := range sids {
		wg.Go(func() {
			m := msg
			m.To = fmt.Sprintf("+1415555%04d", i)
			rc, err := p.Send(context.Background(), m)
			if err != nil {
				t.Errorf("Send %d: %v", i, err)
			}
			sids[i] = rc.ProviderID
		})
	}
	wg.Wait()
	slices.Sort(sids)
	if len(slices.Compact(sids)) != 20 {
		t.Errorf("receipts not distinct: %v", sids)
	}
}

func TestNewValidates(t *testing.T) {
	for _, cfg := range []twilio.Config{
		{AuthToken: authToken, PublicURL: publicURL},
		{AccountSID: accountSID, PublicURL: publicURL},
		{AccountSID: accountSID, AuthToken: authToken},
		{AccountSID: accountSID, AuthToken: authToken, PublicURL: "parley.example.com"},
		{AccountSID: accountSID, AuthToken: authToken, PublicURL: "ftp://parley.example.com"},
		{AccountSID: accountSID, AuthToken: authToken, PublicURL: "https://parley.example.com/?a=b"},
		{AccountSID: accountSID, AuthToken: authToken, PublicURL: publicURL, BaseURL: "localhost:1234"},
	} {
		if _, err := twilio.New(cfg); err == nil {
			t.Errorf("New(%+v) accepted", cfg)
		}
	}
}

func asDeliveryError(t *testing.T, err error) *delivery.Error {
	t.Helper()
	var de *delivery.Error
	if !errors.As(err, &de) {
		t.Fatalf("error = %v (%T), want *delivery.Error", err, err)
	}
	return de
}

func equalForm(got, want url.Values) bool {
	if len(got) != len(want) {
		return false
	}
	for k, v := range want {
		if !slices.Equal(got[k], v) {
			return false
		}
	}
	return true
}
