package apitest

import (
	"bytes"
	"io"
	"net"
	neturl "net/url"
	"sync/atomic"
	"testing"
	"time"
)

// CommitCutter is a TCP proxy to PostgreSQL that, once armed, passes a
// COMMIT on to the server and then cuts the client's connection before the
// answer: the server commits, the client cannot know. With a marker, only
// a COMMIT on a connection that sent the marker (a value the statement
// under test binds) since its previous COMMIT is cut: a whole app commits
// other work (River, its sweeps) through the proxy too.
type CommitCutter struct {
	// URL reaches the database through the proxy.
	URL string
	// Armed cuts the next COMMIT sent through the proxy.
	Armed atomic.Bool
}

// NewCommitCutter starts a CommitCutter to the PostgreSQL of dbURL that
// cuts after marker ("": after any statement).
func NewCommitCutter(t testing.TB, dbURL, marker string) *CommitCutter {
	u, err := neturl.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	u.Host = ln.Addr().String()
	p := &CommitCutter{URL: u.String()}
	mark := bytes.ToLower([]byte(marker))
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			up, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			go func() { io.Copy(c, up); c.Close() }()
			go func() {
				defer up.Close()
				defer c.Close()
				buf := make([]byte, 64<<10)
				marked := marker == ""
				for {
					n, err := c.Read(buf)
					if n > 0 {
						if _, werr := up.Write(buf[:n]); werr != nil {
							return
						}
						msg := bytes.ToLower(buf[:n])
						marked = marked || bytes.Contains(msg, mark)
						if bytes.Contains(msg, []byte("commit")) {
							if marked && p.Armed.CompareAndSwap(true, false) {
								c.Close()                          // the client hears nothing more
								time.Sleep(200 * time.Millisecond) // while the server commits
								return
							}
							marked = marker == ""
						}
					}
					if err != nil {
						return
					}
				}
			}()
		}
	}()
	return p
}
