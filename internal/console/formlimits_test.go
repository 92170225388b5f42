package console_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
	"github.com/parleyhq/parley/internal/console"
)

// TestFormBodyNeverArrives: a console form whose body does not arrive
// within the body timeout gets the API's answer (#15), 400 with a page
// saying so, at once and on a closed connection, and no ERROR log; it
// was a 500 and an ERROR after 30 s (#31 item 11). Signed in or not.
func TestFormBodyNeverArrives(t *testing.T) {
	t.Parallel()
	logs := new(apitest.LogBuffer)
	e := newEnv(t, func(c *app.Config) {
		c.BodyTimeout = 200 * time.Millisecond
		c.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	})
	w := e.signedIn(t, "admin@a.example")
	u, _ := url.Parse(e.URL)
	var cookies []string
	for _, c := range w.c.Jar.Cookies(u) {
		cookies = append(cookies, c.String())
	}
	before := e.adminState(t)
	for _, tc := range []struct{ name, path, cookie string }{
		{"SignIn", "/console/signin", ""},
		{"Page", "/console/segments/new", strings.Join(cookies, "; ")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			addr := strings.TrimPrefix(e.Server.URL, "http://")
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			var head bytes.Buffer
			fmt.Fprintf(&head, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 1000\r\n", tc.path, addr)
			if tc.cookie != "" {
				fmt.Fprintf(&head, "Cookie: %s\r\n", tc.cookie)
			}
			head.WriteString("\r\nname=") // a start, then nothing more
			if _, err := conn.Write(head.Bytes()); err != nil {
				t.Fatal(err)
			}
			conn.SetReadDeadline(time.Now().Add(10 * time.Second)) // far below the 30 s it took
			resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
			if err != nil {
				t.Fatalf("no answer: %v", err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(body), "did not arrive in time") {
				t.Errorf("status %d, want 400 saying the form did not arrive in time\n%s", resp.StatusCode, body)
			}
			if !resp.Close {
				t.Errorf("Connection = %q, want close: the rest of the body is not awaited", resp.Header.Get("Connection"))
			}
		})
	}
	t.Cleanup(func() {
		if strings.Contains(logs.String(), `"level":"ERROR"`) {
			t.Errorf("a form that did not arrive was logged as an ERROR:\n%s", logs)
		}
		if after := e.adminState(t); after != before {
			t.Errorf("a form that did not arrive changed the database")
		}
	})
}

// TestFormTooLarge: a console form over 1 MiB is 413 with a page saying
// the form is too large, not a validation error about what was cut off,
// and changes nothing; a form of exactly 1 MiB is read (#31 item 11).
func TestFormTooLarge(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.signedIn(t, "admin@a.example")
	before := e.adminState(t)
	// form is a segment form whose encoded body is size bytes.
	form := func(size int) url.Values {
		f := url.Values{"type": {"standard"}, "action": {"save"}, "name": {""}}
		f.Set("name", strings.Repeat("n", size-len(f.Encode())))
		if n := len(f.Encode()); n != size {
			t.Fatalf("form of %d bytes, want %d", n, size)
		}
		return f
	}
	for _, path := range []string{"/console/segments/new", "/console/signin"} {
		p := w.post(path, form(console.MaxForm+1))
		if p.Status != http.StatusRequestEntityTooLarge || p.h1() != "Too large" || !strings.Contains(p.Body, "The form is too large: at most 1 MiB") {
			t.Errorf("POST %s of 1 MiB + 1: %d %q, want 413 saying the form is too large\n%.500s", path, p.Status, p.h1(), p.Body)
		}
	}
	if p := w.post("/console/segments/new", form(console.MaxForm)); p.Status != http.StatusUnprocessableEntity ||
		!strings.Contains(p.Body, `<span id="name-error" class="field-error">Use at most `+itoa(parley.MaxSegmentName)+" characters") {
		t.Errorf("POST of exactly 1 MiB: %d, want the form read (its name refused as too long)\n%.500s", p.Status, p.Body)
	}
	if after := e.adminState(t); after != before {
		t.Errorf("a refused form changed the database")
	}
}

// TestConversationShowsTruncation: an inbound text cut at 1,600
// characters says so in the contact's conversation, where an agent reads
// it (#31 item 8); a whole one does not.
func TestConversationShowsTruncation(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, body := range []string{"short and whole", strings.Repeat("x", 1700)} {
		if _, _, err := e.App.Service.SimulateInbound(e.Ctx, parley.Origin{Source: "test"}, e.BrandA.ID,
			parley.SimulatedInbound{From: parley.Some("+14155550177"), Body: parley.Some(body)}); err != nil {
			t.Fatal(err)
		}
	}
	u, err := e.App.Service.FindUserByPhone(e.Ctx, e.BrandA.ID, "+14155550177")
	if err != nil {
		t.Fatal(err)
	}
	p := e.signedIn(t, "agent@a.example").get("/console/contacts/" + itoa(u.ID) + "/conversation")
	if n := strings.Count(p.Body, "only its beginning was kept"); p.Status != http.StatusOK || n != 1 {
		t.Errorf("conversation: %d, %d notes of a cut text, want 1\n%s", p.Status, n, p.Body)
	}
}
