package httpapi_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/client"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

// slowConn is a client on a raw TCP connection: it sends a request's head,
// then as much of the body as a test wants, as slowly as it wants (#15).
type slowConn struct {
	t    *testing.T
	conn net.Conn
	br   *bufio.Reader
}

// slowSend dials e's server and sends the request line, hdr and a declared
// Content-Length of length, but no body.
func slowSend(t *testing.T, e *apitest.Env, method, target string, hdr http.Header, length int) *slowConn {
	t.Helper()
	addr := strings.TrimPrefix(e.Server.URL, "http://")
	conn, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	var head bytes.Buffer
	fmt.Fprintf(&head, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Length: %d\r\n", method, target, addr, length)
	hdr.Write(&head)
	head.WriteString("\r\n")
	if _, err := conn.Write(head.Bytes()); err != nil {
		t.Fatal(err)
	}
	return &slowConn{t: t, conn: conn, br: bufio.NewReader(conn)}
}

// dribble sends body one byte per every in the background, until it is
// all sent or the server stops taking it.
func (s *slowConn) dribble(body []byte, every time.Duration) {
	go func() {
		for _, b := range body {
			time.Sleep(every)
			if _, err := s.conn.Write([]byte{b}); err != nil {
				return
			}
		}
	}()
}

// send writes body in n chunks, pausing between them.
func (s *slowConn) send(body []byte, n int, pause time.Duration) {
	s.t.Helper()
	size := (len(body) + n - 1) / n
	for len(body) > 0 {
		k := min(size, len(body))
		if _, err := s.conn.Write(body[:k]); err != nil {
			s.t.Fatalf("writing the body: %v", err)
		}
		body = body[k:]
		if len(body) > 0 {
			time.Sleep(pause)
		}
	}
}

// answer reads the response, failing if none comes within d.
func (s *slowConn) answer(d time.Duration) (*http.Response, []byte) {
	s.t.Helper()
	s.conn.SetReadDeadline(time.Now().Add(d))
	resp, err := http.ReadResponse(s.br, nil)
	if err != nil {
		s.t.Fatalf("no answer within %v: %v", d, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatalf("reading the answer's body: %v", err)
	}
	return resp, body
}

// wantClosed fails unless the server closes the connection within d.
func (s *slowConn) wantClosed(d time.Duration) {
	s.t.Helper()
	s.conn.SetReadDeadline(time.Now().Add(d))
	_, err := io.Copy(io.Discard, s.br)
	if errors.Is(err, os.ErrDeadlineExceeded) {
		s.t.Fatalf("the server kept the connection open for %v after answering", d)
	}
}

// slowGrace bounds every wait in these tests: generous for a loaded
// machine, far below the default body timeout, so an answer that came only
// because a body deadline passed cannot be mistaken for one at once.
const slowGrace = 5 * time.Second

// A request that fails before its body is needed (its signature, its
// Content-Type, its route) is answered at once with Connection: close,
// without waiting for or draining a body the client declared but never
// sends (#15, D2, D3).
func TestSlowBodyRefusedAtOnce(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, func(c *app.Config) { c.AdminToken = admTok })
	body := []byte(`{"phone_number":"+14155552671"}`)
	const users = "/api/v1/users"
	jsonOnly := http.Header{"Content-Type": {"application/json"}}
	wrongSecret := authHeaders(e.CredA.Username, "not-the-secret", "POST", users, body, e.ClientNow())
	unknownUser := authHeaders("pk_nobody", e.CredA.Secret, "POST", users, body, e.ClientNow())
	wrongType := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", users, body, e.ClientNow())
	wrongType.Set("Content-Type", "text/plain")
	upload := authHeaders(e.CredA.Username, "not-the-secret", "POST", "/api/v1/files", body, e.ClientNow())
	upload.Set("Content-Type", "multipart/form-data; boundary=x")
	for _, tc := range []struct {
		name, method, target string
		hdr                  http.Header
		status               int
		typ                  string
	}{
		{"UnsignedIs401", "POST", users, jsonOnly, 401, parley.ENotAuthenticated},
		{"WrongSignatureIs401", "POST", users, wrongSecret, 401, parley.ENotAuthenticated},
		{"UnknownUsernameIs401", "POST", users, unknownUser, 401, parley.ENotAuthenticated},
		{"UploadWrongSignatureIs401", "POST", "/api/v1/files", upload, 401, parley.ENotAuthenticated},
		{"AdminWrongTokenIs401", "POST", "/admin/v1/brands", http.Header{"Authorization": {"Bearer nope"}}, 401, parley.ENotAuthenticated},
		{"SignedWrongContentTypeIs400", "POST", users, wrongType, 400, parley.EInvalidRequest},
		{"UnknownRouteIs404", "POST", "/api/v1/nowhere", jsonOnly, 404, parley.ENotFound},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			// 64 KiB: under the 256 KiB net/http would otherwise drain
			// before answering.
			c := slowSend(t, e, tc.method, tc.target, tc.hdr, 64<<10)
			resp, b := c.answer(slowGrace)
			authWantError(t, authResp{status: resp.StatusCode, header: resp.Header, body: b}, tc.status, tc.typ)
			if !resp.Close {
				t.Errorf("Connection = %q, want close: the unread body must not be awaited", resp.Header.Get("Connection"))
			}
			c.wantClosed(slowGrace)
		})
	}
}

// A signed request whose body trickles in is cut off once the body
// timeout passes: 400 invalid_request, and the connection is closed (#15).
// JSON bodies get BodyTimeout, uploads UploadTimeout.
func TestSlowBodySignedCutOff(t *testing.T) {
	t.Parallel()
	const short, long = 200 * time.Millisecond, time.Hour
	jsonBody := []byte(`{"phone_number":"+14155552671","first_name":"` + strings.Repeat("a", 40) + `"}` + strings.Repeat(" ", 200))
	upload, uploadType, err := client.MultipartFile("pic.png", bytes.NewReader(filePNG))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name                string
		bodyT, uploadT      time.Duration
		target, contentType string
		body                []byte
	}{
		{"JSONAfterBodyTimeout", short, long, "/api/v1/users", "application/json", jsonBody},
		{"UploadAfterUploadTimeout", long, short, "/api/v1/files", uploadType, upload},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := apitest.New(t, func(c *app.Config) { c.BodyTimeout, c.UploadTimeout = tc.bodyT, tc.uploadT })
			hdr := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", tc.target, tc.body, e.ClientNow())
			hdr.Set("Content-Type", tc.contentType)
			c := slowSend(t, e, "POST", tc.target, hdr, len(tc.body))
			c.dribble(tc.body, 50*time.Millisecond) // takes far longer than slowGrace
			resp, b := c.answer(slowGrace)
			msg := authWantError(t, authResp{status: resp.StatusCode, header: resp.Header, body: b}, 400, parley.EInvalidRequest)
			if want := "not received within 200ms"; !strings.Contains(msg, want) {
				t.Errorf("msg = %q, want it to say %q", msg, want)
			}
			if !resp.Close {
				t.Errorf("Connection = %q, want close", resp.Header.Get("Connection"))
			}
			c.wantClosed(slowGrace)
		})
	}
}

// An upload may take longer than BodyTimeout to arrive: once signed, it
// is read under UploadTimeout; and longer than RequestTimeout, which
// bounds the work once the body is in (#15, D9).
func TestSlowBodyUploadOutlastsBodyTimeout(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, func(c *app.Config) {
		c.BodyTimeout, c.UploadTimeout, c.RequestTimeout = 100*time.Millisecond, time.Minute, time.Second
	})
	body, ct, err := client.MultipartFile("doc.pdf", bytes.NewReader(filePDFOfSize(3<<20)))
	if err != nil {
		t.Fatal(err)
	}
	hdr := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/files", body, e.ClientNow())
	hdr.Set("Content-Type", ct)
	c := slowSend(t, e, "POST", "/api/v1/files", hdr, len(body))
	c.send(body, 8, 200*time.Millisecond) // about 1.4 s in all
	resp, b := c.answer(slowGrace)
	if resp.StatusCode != 201 {
		t.Fatalf("status = %d (%s), want 201", resp.StatusCode, b)
	}
	if resp.Close {
		t.Errorf("Connection: close on a success; the connection should stay open")
	}
}

// A connection whose request went well stays open for the next one, even
// after BodyTimeout has passed (#15).
func TestSlowBodyKeepAlive(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, func(c *app.Config) { c.BodyTimeout = 100 * time.Millisecond })
	body := []byte(`{"phone_number":"+14155552671"}`)
	hdr := authHeaders(e.CredA.Username, e.CredA.Secret, "POST", "/api/v1/users", body, e.ClientNow())
	c := slowSend(t, e, "POST", "/api/v1/users", hdr, len(body))
	c.send(body, 1, 0)
	if resp, b := c.answer(slowGrace); resp.StatusCode != 201 || resp.Close {
		t.Fatalf("status = %d, close = %v (%s); want 201 on a connection kept open", resp.StatusCode, resp.Close, b)
	}
	time.Sleep(300 * time.Millisecond)
	target := "/api/v1/brand"
	get := authHeaders(e.CredA.Username, e.CredA.Secret, "GET", target, nil, e.ClientNow())
	var head bytes.Buffer
	fmt.Fprintf(&head, "GET %s HTTP/1.1\r\nHost: x\r\n", target)
	get.Write(&head)
	head.WriteString("\r\n")
	if _, err := c.conn.Write(head.Bytes()); err != nil {
		t.Fatal(err)
	}
	if resp, b := c.answer(slowGrace); resp.StatusCode != 200 {
		t.Fatalf("second request: status = %d (%s), want 200", resp.StatusCode, b)
	}
}

// The body deadline ends with the body: a request whose work outlasts
// BodyTimeout (here, waiting 0.5 s for a locked users table) is not
// cancelled by it (#15).
func TestSlowBodyDeadlineEndsWithBody(t *testing.T) {
	t.Parallel()
	e := apitest.New(t, func(c *app.Config) { c.BodyTimeout = 100 * time.Millisecond })
	tx, err := e.App.DB.Writer().BeginTx(e.Ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	// SQLite has one writer connection, which tx now holds; PostgreSQL
	// needs the table locked against inserts.
	if apitest.Engine() == "postgres" {
		if _, err := tx.Exec("LOCK TABLE users IN SHARE MODE"); err != nil {
			t.Fatal(err)
		}
	}
	time.AfterFunc(500*time.Millisecond, func() { tx.Rollback() })
	if _, err := e.A.CreateUser(e.Ctx, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")}); err != nil {
		t.Fatalf("CreateUser behind a lock held past BodyTimeout: %v", err)
	}
}
