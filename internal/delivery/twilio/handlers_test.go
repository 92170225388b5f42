package twilio_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twilio/twilio-go/client"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/delivery"
	"github.com/parleyhq/parley/internal/delivery/twilio"
)

// sign computes X-Twilio-Signature as Twilio documents it: base64 of
// HMAC-SHA1(auth token, URL + each POST parameter as name+value, sorted by
// name). twilio-go's RequestValidator has no signing function.
func sign(token, fullURL string, form url.Values) string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(fullURL)
	for _, k := range keys {
		b.WriteString(k)
		b.WriteString(form.Get(k))
	}
	mac := hmac.New(sha1.New, []byte(token))
	mac.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

func firstValues(form url.Values) map[string]string {
	m := make(map[string]string, len(form))
	for k, v := range form {
		m[k] = v[0]
	}
	return m
}

func TestSignMatchesTwilioValidator(t *testing.T) {
	form := url.Values{"MessageSid": {"SM1"}, "MessageStatus": {"delivered"}, "To": {"+14155552671"}, "Body": {"a b&c=d"}}
	u := publicURL + "/providers/twilio/status?x=1"
	sig := sign(authToken, u, form)
	v := client.NewRequestValidator(authToken)
	if !v.Validate(u, firstValues(form), sig) {
		t.Fatal("twilio-go rejects the test's signature")
	}
	if v.Validate(u+"2", firstValues(form), sig) {
		t.Fatal("twilio-go accepts the signature for another URL")
	}
	// twilio-go's own test vector (request_validator_test.go).
	vec := url.Values{
		"Digits": {"1234"}, "CallSid": {"CA1234567890ABCDE"}, "To": {"+18005551212"},
		"Caller": {"+14158675309"}, "From": {"+14158675309"},
		"ReasonConferenceEnded": {"test"}, "Reason": {"Participant"},
	}
	if got := sign("12345", "https://mycompany.com/myapp.php?foo=1&bar=2", vec); got != "vOEb5UThFn24KEfnOFLQY2AE5FY=" {
		t.Fatalf("twilio-go's test vector signs as %q", got)
	}
}

// fakeSink records what the handlers hand over.
type fakeSink struct {
	mu       sync.Mutex
	updates  []delivery.StatusUpdate
	inbounds []delivery.Inbound
	reply    string
	err      error
}

func (s *fakeSink) ApplyStatus(_ context.Context, u delivery.StatusUpdate) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates = append(s.updates, u)
	return s.err
}

func (s *fakeSink) ReceiveInbound(_ context.Context, in delivery.Inbound) (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inbounds = append(s.inbounds, in)
	return s.reply, s.err
}

func (s *fakeSink) calls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates) + len(s.inbounds)
}

// callback builds a form POST to path, signed for publicURL + path.
func callback(path string, form url.Values, sig string) *http.Request {
	r := httptest.NewRequest(http.MethodPost, path, strings.NewReader(form.Encode()))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if sig != "" {
		r.Header.Set("X-Twilio-Signature", sig)
	}
	return r
}

func signed(path string, form url.Values) *http.Request {
	return callback(path, form, sign(authToken, publicURL+path, form))
}

func statusForm(sid, status string, extra ...string) url.Values {
	f := url.Values{
		"AccountSid":    {accountSID},
		"ApiVersion":    {"2010-04-01"},
		"From":          {"+15005550006"},
		"To":            {"+14155552671"},
		"MessageSid":    {sid},
		"SmsSid":        {sid},
		"MessageStatus": {status},
		"SmsStatus":     {status},
	}
	for i := 0; i+1 < len(extra); i += 2 {
		f.Set(extra[i], extra[i+1])
	}
	return f
}

func serve(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func TestStatusCallback(t *testing.T) {
	tests := []struct {
		name string
		form url.Values
		want delivery.StatusUpdate
	}{
		{
			name: "sent",
			form: statusForm("SM1", "sent"),
			want: delivery.StatusUpdate{ProviderID: "SM1", Status: parley.StatusSent},
		},
		{
			name: "delivered",
			form: statusForm("SM2", "delivered"),
			want: delivery.StatusUpdate{ProviderID: "SM2", Status: parley.StatusDelivered},
		},
		{
			name: "undelivered with a known code",
			form: statusForm("SM3", "undelivered", "ErrorCode", "30003"),
			want: delivery.StatusUpdate{ProviderID: "SM3", Status: parley.StatusUndelivered, ErrorCode: "30003", ErrorMessage: "Unreachable destination handset"},
		},
		{
			name: "failed with Twilio's message",
			form: statusForm("SM4", "failed", "ErrorCode", "30007", "ErrorMessage", "Carrier violation"),
			want: delivery.StatusUpdate{ProviderID: "SM4", Status: parley.StatusFailed, ErrorCode: "30007", ErrorMessage: "Carrier violation"},
		},
		{
			name: "failed 21610 unsubscribed",
			form: statusForm("SM5", "failed", "ErrorCode", "21610"),
			want: delivery.StatusUpdate{ProviderID: "SM5", Status: parley.StatusFailed, ErrorCode: "21610", ErrorMessage: "Attempt to send to unsubscribed recipient", Unsubscribed: true},
		},
		{
			name: "undelivered with an unknown code",
			form: statusForm("SM6", "undelivered", "ErrorCode", "39999"),
			want: delivery.StatusUpdate{ProviderID: "SM6", Status: parley.StatusUndelivered, ErrorCode: "39999"},
		},
		{
			name: "delivered carries no error",
			form: statusForm("SM7", "delivered", "ErrorCode", "0"),
			want: delivery.StatusUpdate{ProviderID: "SM7", Status: parley.StatusDelivered},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sink := &fakeSink{}
			h := newProvider(t, twilio.Config{}).StatusHandler(sink)
			before := time.Now()
			w := serve(h, signed("/providers/twilio/status", tt.form))
			if w.Code != http.StatusNoContent {
				t.Fatalf("status %d, body %q", w.Code, w.Body)
			}
			if len(sink.updates) != 1 {
				t.Fatalf("%d updates, want 1", len(sink.updates))
			}
			got := sink.updates[0]
			if got.At.Before(before.Add(-time.Second)) || got.At.After(time.Now().Add(time.Second)) || got.At.Location() != time.UTC {
				t.Errorf("At = %v", got.At)
			}
			got.At = time.Time{}
			if got != tt.want {
				t.Errorf("update = %+v\nwant     %+v", got, tt.want)
			}
		})
	}
}

func TestStatusCallbackIgnoresIntermediateStatuses(t *testing.T) {
	for _, st := range []string{"queued", "accepted", "scheduled", "sending", "read", "receiving", "received", "canceled"} {
		sink := &fakeSink{}
		h := newProvider(t, twilio.Config{}).StatusHandler(sink)
		w := serve(h, signed("/providers/twilio/status", statusForm("SM1", st)))
		if w.Code != http.StatusNoContent {
			t.Errorf("%s: status %d", st, w.Code)
		}
		if sink.calls() != 0 {
			t.Errorf("%s: sink called: %+v", st, sink.updates)
		}
	}
}

func TestStatusCallbackWithQueryAndPort(t *testing.T) {
	sink := &fakeSink{}
	h := newProvider(t, twilio.Config{}).StatusHandler(sink)
	form := statusForm("SM1", "delivered")
	path := "/providers/twilio/status?brand=7"
	// Twilio sometimes signs with the default port spelled out.
	w := serve(h, callback(path, form, sign(authToken, "https://parley.example.com:443"+path, form)))
	if w.Code != http.StatusNoContent || len(sink.updates) != 1 {
		t.Fatalf("status %d, %d updates", w.Code, len(sink.updates))
	}
}

func TestCallbacksRejectBadSignatures(t *testing.T) {
	path := "/providers/twilio/status"
	form := statusForm("SM1", "delivered")
	tampered := statusForm("SM1", "delivered")
	tampered.Set("MessageStatus", "failed")
	tests := []struct {
		name string
		form url.Values
		sig  string
	}{
		{"missing", form, ""},
		{"garbage", form, "bm90IGEgc2lnbmF0dXJl"},
		{"wrong token", form, sign("fedcba9876543210fedcba9876543210", publicURL+path, form)},
		{"other host", form, sign(authToken, "https://evil.example.com"+path, form)},
		{"other path", form, sign(authToken, publicURL+"/providers/twilio/inbound", form)},
		{"tampered body", tampered, sign(authToken, publicURL+path, form)},
		{"added parameter", statusForm("SM1", "delivered", "ErrorCode", "21610"), sign(authToken, publicURL+path, form)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, kind := range []string{"status", "inbound"} {
				sink := &fakeSink{reply: "hi"}
				p := newProvider(t, twilio.Config{})
				h := p.StatusHandler(sink)
				if kind == "inbound" {
					h = p.InboundHandler(sink)
				}
				w := serve(h, callback(path, tt.form, tt.sig))
				if w.Code != http.StatusForbidden {
					t.Errorf("%s: status %d, want 403", kind, w.Code)
				}
				var env struct {
					Detail struct{ Type, Msg string }
				}
				if err := json.Unmarshal(w.Body.Bytes(), &env); err != nil || env.Detail.Type != "not_authenticated" || env.Detail.Msg == "" {
					t.Errorf("%s: body %q is not the error envelope", kind, w.Body)
				}
				if sink.calls() != 0 {
					t.Errorf("%s: sink called for a forged request", kind)
				}
			}
		})
	}
}

func TestStatusCallbackSinkError(t *testing.T) {
	sink := &fakeSink{err: errors.New("database is down")}
	h := newProvider(t, twilio.Config{}).StatusHandler(sink)
	w := serve(h, signed("/providers/twilio/status", statusForm("SM1", "delivered")))
	if w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", w.Code)
	}
	if strings.Contains(w.Body.String(), "database") {
		t.Errorf("body leaks the error: %q", w.Body)
	}
}

func TestStatusCallbackMalformed(t *testing.T) {
	sink := &fakeSink{}
	h := newProvider(t, twilio.Config{}).StatusHandler(sink)
	form := url.Values{"AccountSid": {accountSID}, "MessageStatus": {"delivered"}}
	if w := serve(h, signed("/providers/twilio/status", form)); w.Code != http.StatusBadRequest {
		t.Errorf("without MessageSid: status %d, want 400", w.Code)
	}
	r := httptest.NewRequest(http.MethodPut, "/providers/twilio/status", nil)
	if w := serve(h, r); w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") == "" {
		t.Errorf("PUT: status %d, Allow %q", w.Code, w.Header().Get("Allow"))
	}
	if sink.calls() != 0 {
		t.Errorf("sink called")
	}
}

func inboundForm(body string, media ...string) url.Values {
	f := url.Values{
		"AccountSid":    {accountSID},
		"ApiVersion":    {"2010-04-01"},
		"MessageSid":    {"SM99"},
		"SmsMessageSid": {"SM99"},
		"SmsSid":        {"SM99"},
		"SmsStatus":     {"received"},
		"From":          {"+14155552671"},
		"To":            {"+15005550006"},
		"Body":          {body},
		"NumSegments":   {"1"},
		"NumMedia":      {"0"},
		"FromCity":      {"SAN FRANCISCO"},
		"FromState":     {"CA"},
		"FromZip":       {"94105"},
		"FromCountry":   {"US"},
	}
	f.Set("NumMedia", string(rune('0'+len(media))))
	for i, m := range media {
		f.Set("MediaUrl"+string(rune('0'+i)), m)
		f.Set("MediaContentType"+string(rune('0'+i)), "image/jpeg")
	}
	return f
}

func TestInbound(t *testing.T) {
	media := []string{
		"https://api.twilio.com/2010-04-01/Accounts/" + accountSID + "/Messages/SM99/Media/ME1",
		"https://api.twilio.com/2010-04-01/Accounts/" + accountSID + "/Messages/SM99/Media/ME2",
	}
	sink := &fakeSink{}
	h := newProvider(t, twilio.Config{}).InboundHandler(sink)
	w := serve(h, signed("/providers/twilio/inbound", inboundForm("look at these", media...)))
	if w.Code != http.StatusOK {
		t.Fatalf("status %d, body %q", w.Code, w.Body)
	}
	if len(sink.inbounds) != 1 {
		t.Fatalf("%d inbounds", len(sink.inbounds))
	}
	in := sink.inbounds[0]
	if in.At.IsZero() {
		t.Errorf("At not set")
	}
	in.At = time.Time{}
	want := delivery.Inbound{ProviderID: "SM99", From: "+14155552671", To: "+15005550006", Body: "look at these", MediaURLs: media}
	if in.ProviderID != want.ProviderID || in.From != want.From || in.To != want.To || in.Body != want.Body || !slices.Equal(in.MediaURLs, want.MediaURLs) {
		t.Errorf("inbound = %+v\nwant      %+v", in, want)
	}
	if ct := w.Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/xml") {
		t.Errorf("Content-Type = %q", ct)
	}
	if got := w.Body.String(); got != `<?xml version="1.0" encoding="UTF-8"?><Response/>` {
		t.Errorf("TwiML = %q", got)
	}
}

// TestInboundAnyText: a carrier's text is never refused at the door (#31
// item 8): a Body with NUL, invalid UTF-8 or thousands of characters
// reaches the sink as sent, which stores it cleaned and cut
// (parley.CarrierText; TestTwilioInboundCarrierText in internal/httpapi).
func TestInboundAnyText(t *testing.T) {
	for _, body := range []string{"a\x00b", "\x1b[31m\x07", "caf\xe9", strings.Repeat("x", 5000)} {
		sink := &fakeSink{}
		h := newProvider(t, twilio.Config{}).InboundHandler(sink)
		if w := serve(h, signed("/providers/twilio/inbound", inboundForm(body))); w.Code != http.StatusOK {
			t.Errorf("Body %.20q: status %d %q, want 200", body, w.Code, w.Body)
			continue
		}
		if len(sink.inbounds) != 1 || sink.inbounds[0].Body != body {
			t.Errorf("Body %.20q: the sink got %+v", body, sink.inbounds)
		}
	}
}

func TestInboundMediaWithoutNumMedia(t *testing.T) {
	form := inboundForm("", "https://m/1", "https://m/2")
	form.Del("NumMedia")
	sink := &fakeSink{}
	h := newProvider(t, twilio.Config{}).InboundHandler(sink)
	if w := serve(h, signed("/providers/twilio/inbound", form)); w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	if got := sink.inbounds[0].MediaURLs; !slices.Equal(got, []string{"https://m/1", "https://m/2"}) {
		t.Errorf("MediaURLs = %q", got)
	}
}

func TestInboundReplyIsEscapedTwiML(t *testing.T) {
	sink := &fakeSink{reply: `Reply <STOP> & "unsubscribe" > 'now'`}
	h := newProvider(t, twilio.Config{}).InboundHandler(sink)
	w := serve(h, signed("/providers/twilio/inbound", inboundForm("HELP")))
	if w.Code != http.StatusOK {
		t.Fatalf("status %d", w.Code)
	}
	body := w.Body.String()
	wantPrefix := `<?xml version="1.0" encoding="UTF-8"?><Response><Message>Reply &lt;STOP&gt; &amp; `
	if !strings.HasPrefix(body, wantPrefix) || !strings.HasSuffix(body, "</Message></Response>") {
		t.Errorf("TwiML = %q", body)
	}
	var doc struct {
		XMLName struct{} `xml:"Response"`
		Message string   `xml:"Message"`
	}
	if err := xml.Unmarshal([]byte(body), &doc); err != nil || doc.Message != sink.reply {
		t.Errorf("TwiML parses to %q (%v), want %q", doc.Message, err, sink.reply)
	}
	if got := string(twilio.TwiML("<&>")); got != `<?xml version="1.0" encoding="UTF-8"?><Response><Message>&lt;&amp;&gt;</Message></Response>` {
		t.Errorf("TwiML(<&>) = %q", got)
	}
}

func TestInboundSinkError(t *testing.T) {
	sink := &fakeSink{err: errors.New("boom")}
	h := newProvider(t, twilio.Config{}).InboundHandler(sink)
	if w := serve(h, signed("/providers/twilio/inbound", inboundForm("hi"))); w.Code != http.StatusInternalServerError {
		t.Fatalf("status %d, want 500", w.Code)
	}
}

// TestInboundOverHTTP runs the handler behind a real server, the way Twilio
// reaches it: the public URL differs from the local address.
func TestInboundOverHTTP(t *testing.T) {
	sink := &fakeSink{reply: "Thanks!"}
	p := newProvider(t, twilio.Config{})
	mux := http.NewServeMux()
	mux.Handle("POST /providers/twilio/inbound", p.InboundHandler(sink))
	mux.Handle("POST /providers/twilio/status", p.StatusHandler(sink))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	form := inboundForm("START")
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/providers/twilio/inbound", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("X-Twilio-Signature", sign(authToken, publicURL+"/providers/twilio/inbound", form))
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), "<Message>Thanks!</Message>") {
		t.Fatalf("status %d, body %q", resp.StatusCode, b)
	}
	sink.mu.Lock()
	defer sink.mu.Unlock()
	if len(sink.inbounds) != 1 || sink.inbounds[0].Body != "START" {
		t.Errorf("inbounds = %+v", sink.inbounds)
	}
}

// TestInboundGET covers a number whose webhook is configured for GET: the
// parameters are in the query string, which the signature covers as part of
// the URL.
func TestInboundGET(t *testing.T) {
	sink := &fakeSink{}
	h := newProvider(t, twilio.Config{}).InboundHandler(sink)
	path := "/providers/twilio/inbound?" + inboundForm("hello").Encode()
	r := httptest.NewRequest(http.MethodGet, path, nil)
	r.Header.Set("X-Twilio-Signature", sign(authToken, publicURL+path, nil))
	if w := serve(h, r); w.Code != http.StatusOK {
		t.Fatalf("status %d, body %q", w.Code, w.Body)
	}
	if len(sink.inbounds) != 1 || sink.inbounds[0].Body != "hello" || sink.inbounds[0].ProviderID != "SM99" {
		t.Errorf("inbounds = %+v", sink.inbounds)
	}

	r = httptest.NewRequest(http.MethodGet, path+"&Body=forged", nil)
	r.Header.Set("X-Twilio-Signature", sign(authToken, publicURL+path, nil))
	if w := serve(h, r); w.Code != http.StatusForbidden {
		t.Errorf("changed query: status %d, want 403", w.Code)
	}
}
