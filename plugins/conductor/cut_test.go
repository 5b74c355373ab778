package conductor_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/conductor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// cutter is a conductor that cuts every connection at one point: cut runs
// on the accepted connection and decides what the client gets. Each
// connection it accepts is counted in conns.
func cutter(t *testing.T, conns *atomic.Int32, cut func(conn *net.TCPConn)) string {
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
			conns.Add(1)
			cut(conn.(*net.TCPConn))
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	return "http://" + l.Addr().String()
}

// readRequest reads one start request whole: its head and its body, {}.
func readRequest(t *testing.T, conn net.Conn) {
	t.Helper()
	r := bufio.NewReader(conn)
	req, err := http.ReadRequest(r)
	if err != nil {
		t.Errorf("the conductor read no request: %v", err)
		return
	}
	if body, err := io.ReadAll(req.Body); err != nil || string(body) != "{}" {
		t.Errorf("the conductor read the body %q, %v; want {}", body, err)
	}
}

// reset closes conn with a TCP reset instead of a FIN.
func reset(conn *net.TCPConn) {
	_ = conn.SetLinger(0)
	_ = conn.Close()
}

// cutWrites makes an HTTP client whose connections to the conductor at url
// are cut while the request is being written: of the request's bytes,
// only keep(request) reach the conductor, and the write fails with a
// reset. The transport writes a small request in one flush, so the first
// write is the whole request. Each connection the client dials is counted
// in conns.
func cutWrites(keep func(request []byte) int) func(conns *atomic.Int32) *http.Client {
	return func(conns *atomic.Int32) *http.Client {
		return &http.Client{Transport: &http.Transport{
			DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
				conns.Add(1)
				conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return &cutConn{Conn: conn, keep: keep}, nil
			},
		}}
	}
}

// cutConn is a connection the network cuts while a request is written on
// it: from then on its writes and reads fail as after a reset.
type cutConn struct {
	net.Conn
	keep func([]byte) int
	cut  atomic.Bool
}

func (c *cutConn) Write(p []byte) (int, error) {
	n := c.keep(p)
	if n >= len(p) && !c.cut.Load() {
		return c.Conn.Write(p)
	}
	w, _ := c.Conn.Write(p[:min(n, len(p))])
	c.cut.Store(true)
	reset(c.Conn.(*net.TCPConn)) // the conductor sees the cut; a read blocked on it returns
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

// endOfHead is where the request's head ends and its body begins.
func endOfHead(request []byte) int { return bytes.Index(request, []byte("\r\n\r\n")) + 4 }

// TestStartPodConnectionCut: a start whose connection is cut, without a
// timeout, before any answer. Cut after the request was written whole, the
// conductor may have it and a start it has goes on: in flight, its answer
// lost (D2), logged as such. Cut before, it was not sent. Each point is
// cut once, and the start is never sent twice: one connection carries it.
func TestStartPodConnectionCut(t *testing.T) {
	lost := func(class string) pluginapi.StartResult {
		return pluginapi.StartResult{Requested: true, Lost: true, Error: class}
	}
	const (
		lostLine    = "warn start requested: in flight (the connection was cut after the request was sent; its answer is lost)"
		notSentLine = "warn start failed"
	)
	tests := []struct {
		name string
		// url is the conductor; client, when set, makes the requests. One
		// of them counts in conns each connection that carries a start.
		url    func(t *testing.T, conns *atomic.Int32) string
		client func(conns *atomic.Int32) *http.Client
		// want is the result; with anyClass, any Error but none is as good
		// as want's.
		want     pluginapi.StartResult
		anyClass bool
		wantLog  string
	}{
		{
			name: "reset as it accepts, before the request is written",
			url: func(t *testing.T, conns *atomic.Int32) string {
				return cutter(t, conns, reset)
			},
			// The client writes only once the reset has arrived.
			client: func(*atomic.Int32) *http.Client {
				return &http.Client{Transport: &http.Transport{
					DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
						conn, err := (&net.Dialer{}).DialContext(ctx, network, addr)
						if err != nil {
							return nil, err
						}
						if _, err := conn.Read(make([]byte, 1)); err == nil {
							return nil, errors.New("the conductor wrote before the request")
						}
						return conn, nil
					},
				}}
			},
			// The reset may come as the connect ends, or on the write or
			// the read after it: ECONNRESET, EPIPE or EOF.
			want:     pluginapi.StartResult{Error: "ECONNRESET"},
			anyClass: true,
			wantLog:  notSentLine,
		},
		{
			name:    "cut before the request's first byte",
			client:  cutWrites(func([]byte) int { return 0 }),
			want:    pluginapi.StartResult{Error: "ECONNRESET"},
			wantLog: notSentLine,
		},
		{
			name:    "cut in the request's head",
			client:  cutWrites(func([]byte) int { return 10 }),
			want:    pluginapi.StartResult{Error: "ECONNRESET"},
			wantLog: notSentLine,
		},
		{
			name:    "cut after the head, before the body",
			client:  cutWrites(endOfHead),
			want:    pluginapi.StartResult{Error: "ECONNRESET"},
			wantLog: notSentLine,
		},
		{
			name:    "cut one byte short of the whole request",
			client:  cutWrites(func(request []byte) int { return len(request) - 1 }),
			want:    pluginapi.StartResult{Error: "ECONNRESET"},
			wantLog: notSentLine,
		},
		{
			name: "closed after the whole request",
			url: func(t *testing.T, conns *atomic.Int32) string {
				return cutter(t, conns, func(conn *net.TCPConn) { readRequest(t, conn); conn.Close() })
			},
			want:    lost("EOF"),
			wantLog: lostLine,
		},
		{
			name: "reset after the whole request",
			url: func(t *testing.T, conns *atomic.Int32) string {
				return cutter(t, conns, func(conn *net.TCPConn) { readRequest(t, conn); reset(conn) })
			},
			want:    lost("ECONNRESET"),
			wantLog: lostLine,
		},
		{
			name: "closed in the answer's status line",
			url: func(t *testing.T, conns *atomic.Int32) string {
				return cutter(t, conns, func(conn *net.TCPConn) {
					readRequest(t, conn)
					_, _ = io.WriteString(conn, "HTTP/1.1 202 Acc")
					conn.Close()
				})
			},
			want:    lost("EOF"),
			wantLog: lostLine,
		},
		{
			// No answer either: the status is no use without the head.
			name: "closed after the answer's status line, in its head",
			url: func(t *testing.T, conns *atomic.Int32) string {
				return cutter(t, conns, func(conn *net.TCPConn) {
					readRequest(t, conn)
					_, _ = io.WriteString(conn, "HTTP/1.1 202 Accepted\r\nContent-Ty")
					conn.Close()
				})
			},
			want:    lost("transport error"), // a malformed head
			wantLog: lostLine,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				conns  atomic.Int32
				url    string
				client *http.Client
			)
			if tt.url != nil {
				url = tt.url(t, &conns)
			} else {
				srv := newFakeConductor(t, answer(http.StatusAccepted, ""))
				url = srv.URL
			}
			if tt.client != nil {
				client = tt.client(&conns)
			}
			c, logs := newClient(t, conductor.Config{URL: url, HTTPClient: client, StartTimeout: 5 * time.Second})

			var got pluginapi.StartResult
			within(t, 2*time.Second, func() { got, _ = c.StartPod(context.Background(), "qwen") })
			if tt.anyClass && got.Error != "" {
				got.Error = tt.want.Error
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{tt.wantLog}, logLines(t, logs.String())); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
			if strings.Contains(logs.String(), "127.0.0.1") {
				t.Errorf("the log names the conductor: %s", logs)
			}
			// The start went out on one connection: a second would be the
			// start sent twice.
			if diff := cmp.Diff(int32(1), conns.Load()); diff != "" {
				t.Errorf("connections that carried the start (-want +got):\n%s", diff)
			}
		})
	}
}
