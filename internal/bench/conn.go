package bench

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"syscall"
	"time"

	"github.com/parleyhq/parley/signing"
)

// worker is one connection's request loop. It speaks HTTP/1.1 on a
// keep-alive connection of its own: the request is built in one reused
// buffer and written in one call, and the answer is parsed with
// http.ReadResponse. net/http's Transport would hand every request to two
// more goroutines per connection and back, which cost about twice the CPU
// per request: CPU taken from the server when both share two cores.
type worker struct {
	r    *runner
	ctx  context.Context
	rng  *mrand.Rand
	dial func(context.Context) (net.Conn, error)

	conn     net.Conn
	br       *bufio.Reader
	stopWake func() bool // unregisters the wake-up of conn when ctx ends

	method, target string       // set by prepare; target is path and query, as signed
	body           []byte       // the prepared request's body
	wbuf           []byte       // the request as written
	resp           bytes.Buffer // the last answer's body

	mac        hash.Hash // HMAC-SHA256 keyed with the secret, reset for each request
	sum        []byte
	dateSec    int64
	date       string // x-date, formatted once a second
	retryAfter string // of the last answer, when it was a 429
}

func (r *runner) newWorker(ctx context.Context, i uint64, dial func(context.Context) (net.Conn, error)) *worker {
	return &worker{r: r, ctx: ctx, rng: mrand.New(mrand.NewPCG(r.rngSeed, i)), dial: dial,
		br: bufio.NewReaderSize(nil, 16<<10), mac: hmac.New(sha256.New, []byte(r.o.Secret))}
}

// signature is signing.Signature with the worker's HMAC reused: keying a
// new one costs more than the rest of the signature.
func (w *worker) signature(digest string) []byte {
	w.mac.Reset()
	io.WriteString(w.mac, signing.StringToSign(w.date, w.method, w.target, digest))
	w.sum = w.mac.Sum(w.sum[:0])
	return w.sum
}

// appendKey appends a fresh Idempotency-Key: a random UUID (version 4),
// as most clients make them, or with OrderedKeys a time-ordered one
// (version 7). The kind matters to SQLite: random keys put each one's
// index entry on a page of its own, which the commit writes whole, where
// time-ordered ones share the pages at the index's end (docs/performance.md).
// The worker's generator makes them: crypto/rand would cost the client
// CPU that the server shares.
func (w *worker) appendKey(b []byte, now time.Time) []byte {
	var u [16]byte
	binary.LittleEndian.PutUint64(u[:8], w.rng.Uint64())
	binary.LittleEndian.PutUint64(u[8:], w.rng.Uint64())
	version := byte(0x40)
	if w.r.o.OrderedKeys {
		ms := uint64(now.UnixMilli())
		u[0], u[1], u[2], u[3], u[4], u[5] = byte(ms>>40), byte(ms>>32), byte(ms>>24), byte(ms>>16), byte(ms>>8), byte(ms)
		version = 0x70
	}
	u[6] = version | u[6]&0x0f
	u[8] = 0x80 | u[8]&0x3f // the RFC 9562 variant
	for i, part := range [...][2]int{{0, 4}, {4, 6}, {6, 8}, {8, 10}, {10, 16}} {
		if i > 0 {
			b = append(b, '-')
		}
		b = hex.AppendEncode(b, u[part[0]:part[1]])
	}
	return b
}

// set points the prepared request at method and target.
func (w *worker) set(method, target string) {
	w.method, w.target = method, target
}

// send signs and sends the prepared request and reads the whole answer
// into w.resp. It returns the status, or an error when there is none.
func (w *worker) send() (int, error) {
	now := time.Now()
	if s := now.Unix(); s != w.dateSec {
		w.dateSec, w.date = s, signing.FormatDate(now)
	}
	post := w.method == "POST"
	digest := ""
	if post {
		digest = signing.Digest(w.body)
	}
	o := &w.r.o
	b := append(w.wbuf[:0], w.method...)
	b = append(b, ' ')
	b = append(b, w.target...)
	b = append(b, " HTTP/1.1\r\nHost: "...)
	b = append(b, w.r.base.Host...)
	b = append(b, "\r\nUser-Agent: parley-bench\r\nX-Service-Hmac-Username: "...)
	b = append(b, o.Username...)
	b = append(b, "\r\nX-Date: "...)
	b = append(b, w.date...)
	b = append(b, "\r\nX-Service-Hmac-Sha256: "...)
	b = base64.StdEncoding.AppendEncode(b, w.signature(digest))
	if post {
		b = append(b, "\r\nContent-Type: application/json\r\nX-Digest: "...)
		b = append(b, digest...)
		b = append(b, "\r\nContent-Length: "...)
		b = strconv.AppendInt(b, int64(len(w.body)), 10)
		if o.Hardening && !o.NoKeys {
			b = append(b, "\r\nIdempotency-Key: "...)
			b = w.appendKey(b, now)
		}
	}
	b = append(b, "\r\n\r\n"...)
	if post {
		b = append(b, w.body...)
	}
	w.wbuf = b

	resp, err := w.roundTrip()
	if err != nil {
		return 0, err
	}
	w.resp.Reset()
	_, err = w.resp.ReadFrom(resp.Body)
	resp.Body.Close()
	if err != nil || resp.Close {
		w.closeConn()
	}
	if err != nil {
		return 0, err
	}
	if resp.Header["Ratelimit-Limit"] != nil && !w.r.rateSeen.Load() {
		w.r.rateSeen.Store(true)
	}
	w.retryAfter = ""
	if resp.StatusCode == http.StatusTooManyRequests {
		w.retryAfter = resp.Header.Get("Retry-After")
	}
	return resp.StatusCode, nil
}

// roundTrip writes w.wbuf and reads the answer's head. A kept-alive
// connection that the server closed meanwhile fails at once; the request
// is then sent again, once, on a new connection.
func (w *worker) roundTrip() (*http.Response, error) {
	for attempt := 0; ; attempt++ {
		reused := w.conn != nil
		if !reused {
			if err := w.connect(); err != nil {
				return nil, err
			}
		}
		w.conn.SetDeadline(time.Now().Add(w.r.o.Timeout))
		if err := w.ctx.Err(); err != nil {
			return nil, err // the wake-up may have run before this deadline replaced its own
		}
		_, err := w.conn.Write(w.wbuf)
		var resp *http.Response
		if err == nil {
			resp, err = http.ReadResponse(w.br, nil)
		}
		if err == nil {
			return resp, nil
		}
		w.closeConn()
		if !reused || attempt > 0 || !stale(err) || w.ctx.Err() != nil {
			return nil, err
		}
	}
}

func stale(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

func (w *worker) connect() error {
	c, err := w.dial(w.ctx)
	if err != nil {
		return err
	}
	w.conn = c
	w.br.Reset(c)
	// A run cut short must not wait for answers: a past deadline wakes
	// a blocked read or write.
	w.stopWake = context.AfterFunc(w.ctx, func() { c.SetDeadline(time.Unix(1, 0)) })
	return nil
}

func (w *worker) closeConn() {
	if w.conn != nil {
		w.stopWake()
		w.conn.Close()
		w.conn = nil
	}
}

// dialer connects to base, with TLS for https.
func dialer(base *url.URL) func(context.Context) (net.Conn, error) {
	d := &net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}
	addr := base.Host
	if base.Port() == "" {
		port := "80"
		if base.Scheme == "https" {
			port = "443"
		}
		addr = net.JoinHostPort(base.Hostname(), port)
	}
	return func(ctx context.Context) (net.Conn, error) {
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil || base.Scheme != "https" {
			return c, err
		}
		tc := tls.Client(c, &tls.Config{ServerName: base.Hostname()})
		if err := tc.HandshakeContext(ctx); err != nil {
			c.Close()
			return nil, err
		}
		return tc, nil
	}
}
