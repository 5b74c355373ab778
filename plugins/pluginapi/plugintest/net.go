package plugintest

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"os"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// ClosedURL returns the http URL of a 127.0.0.1 port nothing listens on:
// a request to it is refused (ECONNREFUSED).
func ClosedURL(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// RawServer is a TCP server on 127.0.0.1 that hands each connection it
// accepts to serve, one at a time, and then closes it; conns, when not
// nil, counts them. It returns the server's http URL and stops when the
// test ends.
func RawServer(t testing.TB, conns *atomic.Int32, serve func(conn *net.TCPConn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			if conns != nil {
				conns.Add(1)
			}
			serve(conn.(*net.TCPConn))
			_ = conn.Close()
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
	})
	return "http://" + l.Addr().String()
}

// ReadRequest reads one request from conn, body included, and returns the
// body. A request it cannot read fails the test (with t.Errorf: it runs on
// RawServer's goroutine).
func ReadRequest(t testing.TB, conn net.Conn) string {
	t.Helper()
	req, err := http.ReadRequest(bufio.NewReader(conn))
	if err != nil {
		t.Errorf("the server read no request: %v", err)
		return ""
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		t.Errorf("the server read no body: %v", err)
	}
	return string(body)
}

// Reset closes conn with a TCP reset instead of a FIN.
func Reset(conn *net.TCPConn) {
	_ = conn.SetLinger(0)
	_ = conn.Close()
}

// Hang is a handler that answers nothing until the client goes away.
func Hang(_ http.ResponseWriter, r *http.Request) { <-r.Context().Done() }

// Within runs fn and fails the test when it took longer than limit.
func Within(t testing.TB, limit time.Duration, fn func()) {
	t.Helper()
	began := time.Now()
	fn()
	if took := time.Since(began); took > limit {
		t.Errorf("took %v, want at most %v", took, limit)
	}
}

// Dialing returns an HTTP client whose every connection attempt is dial.
func Dialing(dial func(ctx context.Context) (net.Conn, error)) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
	}}
}

// CutWrites returns an HTTP client whose connections are cut while a
// request is written on them: of the request's bytes only keep(request)
// leave, the connection is reset (the server sees the cut), and the write
// and every later read fail with ECONNRESET. Go's transport writes a small
// request in one write, so keep sees it whole. conns, when not nil, counts
// the connections the client dials.
func CutWrites(keep func(request []byte) int, conns *atomic.Int32) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			if conns != nil {
				conns.Add(1)
			}
			conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
			if err != nil {
				return nil, err
			}
			return &cutConn{Conn: conn, keep: keep}, nil
		},
	}}
}

// EndOfHead is where request's head ends and its body begins: a keep for
// CutWrites that cuts a request after its head.
func EndOfHead(request []byte) int { return bytes.Index(request, []byte("\r\n\r\n")) + 4 }

type cutConn struct {
	net.Conn
	keep func([]byte) int
	cut  atomic.Bool
}

func (c *cutConn) Write(p []byte) (int, error) {
	n := min(c.keep(p), len(p))
	if n == len(p) && !c.cut.Load() {
		return c.Conn.Write(p)
	}
	w, _ := c.Conn.Write(p[:n])
	c.cut.Store(true)
	Reset(c.Conn.(*net.TCPConn)) // a server blocked reading returns
	return w, connReset("write")
}

func (c *cutConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if err != nil && c.cut.Load() {
		return n, connReset("read")
	}
	return n, err
}

func connReset(op string) error {
	return &net.OpError{Op: op, Net: "tcp", Err: os.NewSyscallError(op, syscall.ECONNRESET)}
}
