package httpapi_test

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/parleyhq/parley"
	"github.com/parleyhq/parley/internal/apitest"
	"github.com/parleyhq/parley/internal/app"
)

// outageProxy forwards TCP to PostgreSQL and can cut every connection, to
// simulate the database going away and coming back.
type outageProxy struct {
	target string
	mu     sync.Mutex
	ln     net.Listener
	addr   string
	conns  []net.Conn
}

func newOutageProxy(t *testing.T, target string) *outageProxy {
	p := &outageProxy{target: target}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.cut)
	return p
}

func (p *outageProxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, up)
			p.mu.Unlock()
			go func() { io.Copy(up, c); up.Close() }()
			go func() { io.Copy(c, up); c.Close() }()
		}
	}()
}

// cut closes the listener and every connection: the database is gone.
func (p *outageProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		c.Close()
	}
	p.conns = nil
}

// restore listens again on the same address: the database is back.
func (p *outageProxy) restore(t *testing.T) {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		t.Fatal(err)
	}
	p.serve(ln)
}

// TestDatabaseOutage: when the database goes away the API answers 503
// service_unavailable, not 500 and not a hang, and recovers by itself when
// it returns (issue #3).
func TestDatabaseOutage(t *testing.T) {
	if apitest.Engine() != "postgres" {
		t.Skip("needs PostgreSQL (PARLEY_TEST_POSTGRES_URL)")
	}
	t.Parallel()
	var proxy *outageProxy
	e := apitest.New(t, func(c *app.Config) {
		u, err := url.Parse(c.DB)
		if err != nil {
			t.Fatal(err)
		}
		proxy = newOutageProxy(t, u.Host)
		u.Host = proxy.addr
		c.DB = u.String()
	})
	u := e.MustCreateUser(t, e.A, parley.UserCreate{PhoneNumber: parley.Some("+14155552671")})

	proxy.cut()
	start := time.Now()
	_, err := e.A.GetUser(e.Ctx, u.ID)
	wantAPIError(t, err, 503, parley.EUnavailable)
	_, err = e.A.CreateUser(e.Ctx, parley.UserCreate{PhoneNumber: parley.Some("+14155552672")})
	wantAPIError(t, err, 503, parley.EUnavailable)
	if elapsed := time.Since(start); elapsed > 12*time.Second {
		t.Errorf("outage answers took %v; they must not hang", elapsed)
	}
	resp := mustDo(t, e.A, "GET", "/users/"+itoa(u.ID), nil)
	if resp.StatusCode != 503 {
		t.Errorf("status %d during outage", resp.StatusCode)
	}

	ready, err := http.Get(e.Server.URL + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	ready.Body.Close()
	if ready.StatusCode != 503 {
		t.Errorf("/readyz during the outage = %d, want 503", ready.StatusCode)
	}

	proxy.restore(t)
	// Reads and writes run on pools of their own: each recovers once its
	// connections are found dead and replaced.
	recovered(t, "read", func() error { _, err := e.A.GetUser(e.Ctx, u.ID); return err })
	recovered(t, "write", func() error {
		_, err := e.A.CreateUser(e.Ctx, parley.UserCreate{PhoneNumber: parley.Some("+14155552672")})
		return err
	})
}

// recovered retries call until it succeeds, for at most 20 s.
func recovered(t *testing.T, what string, call func() error) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		err := call()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s did not recover after the database returned: %v", what, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
