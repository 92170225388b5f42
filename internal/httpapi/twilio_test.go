package httpapi_test

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha1"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"sync"
	"testing"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

const (
	twSID   = "AC0123456789abcdef0123456789abcdef"
	twToken = "0123456789abcdef0123456789abcdef"
)

// twSign signs a callback the way Twilio does: HMAC-SHA1 over the URL and
// the sorted form fields, base64.
func twSign(fullURL string, form url.Values) string {
	keys := make([]string, 0, len(form))
	for k := range form {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(fullURL)
	for _, k := range keys {
		b.WriteString(k + form.Get(k))
	}
	m := hmac.New(sha1.New, []byte(twToken))
	m.Write([]byte(b.String()))
	return base64.StdEncoding.EncodeToString(m.Sum(nil))
}

// twEnv runs Parley with the twilio provider against a fake Twilio API.
func twEnv(t *testing.T) (*apitest.Env, *sync.Mutex, *[]url.Values) {
	t.Helper()
	var mu sync.Mutex
	var sent []url.Values
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		sent = append(sent, r.PostForm)
		n := len(sent)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(201)
		// The first send's SID is the one the tests report on; each later
		// send gets its own, as Twilio gives.
		sid := "SM0123456789abcdef0123456789abcdef"
		if n > 1 {
			sid = fmt.Sprintf("SM%032d", n)
		}
		io.WriteString(w, `{"sid":"`+sid+`","status":"queued"}`)
	}))
	t.Cleanup(fake.Close)
	e := apitest.New(t, func(c *app.Config) {
		c.Provider = "twilio"
		c.Twilio = app.TwilioConfig{AccountSID: twSID, AuthToken: twToken, BaseURL: fake.URL}
	})
	if err := e.App.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	return e, &mu, &sent
}

func twPost(t *testing.T, e *apitest.Env, path string, form url.Values, sig string) *http.Response {
	t.Helper()
	req, _ := http.NewRequest("POST", e.Server.URL+path, strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if sig != "" {
		req.Header.Set("X-Twilio-Signature", sig)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	return resp
}

func TestTwilioEndToEnd(t *testing.T) {
	t.Parallel()
	e, mu, sent := twEnv(t)
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})
	png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 64)...)
	f, err := e.A.UploadFile(e.Ctx, "dot.png", bytes.NewReader(png))
	if err != nil {
		t.Fatal(err)
	}
	m, err := e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some("Hi"),
		MediaItemUUIDs: parley.Some([]string{f.ID})})
	if err != nil {
		t.Fatal(err)
	}
	dlvWait(t, e, m.ID, parley.StatusSent)

	mu.Lock()
	form := (*sent)[0]
	mu.Unlock()
	if form.Get("To") != "+14155552671" || form.Get("From") != e.BrandA.PhoneNumber || form.Get("Body") != "Hi" ||
		form.Get("StatusCallback") != e.Server.URL+"/providers/twilio/status?message_id="+itoa(m.ID) {
		t.Errorf("twilio-go sent %v", form)
	}
	// The media link is signed, expiring, and works without request signing (D9).
	media := form.Get("MediaUrl")
	if !strings.HasPrefix(media, e.Server.URL+"/media/"+f.ID+"?") {
		t.Fatalf("MediaUrl = %q", media)
	}
	resp, err := http.Get(media)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Equal(body, png) {
		t.Errorf("GET MediaUrl: %d, %d bytes", resp.StatusCode, len(body))
	}

	status := url.Values{"MessageSid": {"SM0123456789abcdef0123456789abcdef"}, "MessageStatus": {"delivered"}, "AccountSid": {twSID}}
	if r := twPost(t, e, "/providers/twilio/status", status, "forged"); r.StatusCode != 403 {
		t.Errorf("forged status callback: %d, want 403", r.StatusCode)
	}
	if got, _ := e.A.GetMessage(e.Ctx, m.ID); got.Status != parley.StatusSent {
		t.Errorf("a forged callback changed the message to %s", got.Status)
	}
	sig := twSign(e.Server.URL+"/providers/twilio/status", status)
	for range 2 { // duplicates are harmless
		if r := twPost(t, e, "/providers/twilio/status", status, sig); r.StatusCode/100 != 2 {
			t.Fatalf("signed status callback: %d", r.StatusCode)
		}
	}
	if got, _ := e.A.GetMessage(e.Ctx, m.ID); got.Status != parley.StatusDelivered || got.DateDelivered == nil {
		t.Errorf("after the delivered callback: %+v", got)
	}

	inbound := url.Values{"MessageSid": {"SMin1"}, "From": {"+14155552671"}, "To": {e.BrandA.PhoneNumber}, "Body": {"STOP"}, "NumMedia": {"0"}}
	if r := twPost(t, e, "/providers/twilio/inbound", inbound, "forged"); r.StatusCode != 403 {
		t.Errorf("forged inbound: %d, want 403", r.StatusCode)
	}
	// The answer to STOP is a stored message sent through Twilio's API, not
	// TwiML (issue #32): once, though Twilio delivers the callback twice.
	for range 2 {
		r := twPost(t, e, "/providers/twilio/inbound", inbound, twSign(e.Server.URL+"/providers/twilio/inbound", inbound))
		twiml, _ := io.ReadAll(r.Body)
		if r.StatusCode != 200 || strings.Contains(string(twiml), "<Message>") {
			t.Errorf("inbound STOP answer: %d %s, want an empty TwiML response", r.StatusCode, twiml)
		}
	}
	msgs, _, _ := e.A.ListMessages(e.Ctx, parley.MessageFilter{UserID: u.ID, Limit: 1})
	if len(msgs) != 1 || msgs[0].Direction != parley.DirectionOutbound || !strings.Contains(msgs[0].Body, "unsubscribed") {
		t.Fatalf("the newest message after STOP = %+v, want STOP's answer", msgs)
	}
	dlvWait(t, e, msgs[0].ID, parley.StatusSent)
	if got, _ := e.A.GetUser(e.Ctx, u.ID); got.MessagingConsent == nil || *got.MessagingConsent {
		t.Errorf("consent after STOP via Twilio = %v", got.MessagingConsent)
	}
	// Opted out: the next message fails without reaching Twilio (D8).
	m2, _ := e.A.SendMessage(e.Ctx, parley.MessageCreate{UserID: parley.Some(u.ID), Body: parley.Some("again")})
	dlvWait(t, e, m2.ID, parley.StatusFailed)
	mu.Lock()
	n := len(*sent)
	mu.Unlock()
	if n != 2 {
		t.Errorf("Twilio received %d sends, want 2 (the message and STOP's answer, once)", n)
	}
}
