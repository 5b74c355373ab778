package conductor_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/conductor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
)

// readRequest reads one start request whole: its head and its body, {}.
func readRequest(t *testing.T, conn net.Conn) {
	t.Helper()
	if body := plugintest.ReadRequest(t, conn); body != "{}" {
		t.Errorf("the conductor read the body %q; want {}", body)
	}
}

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
		// keep, when set, cuts the client's connections while it writes
		// the start: only keep(request) of its bytes leave.
		keep func(request []byte) int
		// want is the result; with anyClass, any Error but none is as good
		// as want's.
		want     pluginapi.StartResult
		anyClass bool
		wantLog  string
	}{
		{
			name: "reset as it accepts, before the request is written",
			url: func(t *testing.T, conns *atomic.Int32) string {
				return plugintest.RawServer(t, conns, plugintest.Reset)
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
			keep:    func([]byte) int { return 0 },
			want:    pluginapi.StartResult{Error: "ECONNRESET"},
			wantLog: notSentLine,
		},
		{
			name:    "cut in the request's head",
			keep:    func([]byte) int { return 10 },
			want:    pluginapi.StartResult{Error: "ECONNRESET"},
			wantLog: notSentLine,
		},
		{
			name:    "cut after the head, before the body",
			keep:    plugintest.EndOfHead,
			want:    pluginapi.StartResult{Error: "ECONNRESET"},
			wantLog: notSentLine,
		},
		{
			name:    "cut one byte short of the whole request",
			keep:    func(request []byte) int { return len(request) - 1 },
			want:    pluginapi.StartResult{Error: "ECONNRESET"},
			wantLog: notSentLine,
		},
		{
			name: "closed after the whole request",
			url: func(t *testing.T, conns *atomic.Int32) string {
				return plugintest.RawServer(t, conns, func(conn *net.TCPConn) { readRequest(t, conn) })
			},
			want:    lost("EOF"),
			wantLog: lostLine,
		},
		{
			name: "reset after the whole request",
			url: func(t *testing.T, conns *atomic.Int32) string {
				return plugintest.RawServer(t, conns, func(conn *net.TCPConn) { readRequest(t, conn); plugintest.Reset(conn) })
			},
			want:    lost("ECONNRESET"),
			wantLog: lostLine,
		},
		{
			name: "closed in the answer's status line",
			url: func(t *testing.T, conns *atomic.Int32) string {
				return plugintest.RawServer(t, conns, func(conn *net.TCPConn) {
					readRequest(t, conn)
					_, _ = io.WriteString(conn, "HTTP/1.1 202 Acc")
				})
			},
			want:    lost("EOF"),
			wantLog: lostLine,
		},
		{
			// No answer either: the status is no use without the head.
			name: "closed after the answer's status line, in its head",
			url: func(t *testing.T, conns *atomic.Int32) string {
				return plugintest.RawServer(t, conns, func(conn *net.TCPConn) {
					readRequest(t, conn)
					_, _ = io.WriteString(conn, "HTTP/1.1 202 Accepted\r\nContent-Ty")
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
			switch {
			case tt.client != nil:
				client = tt.client(&conns)
			case tt.keep != nil:
				client = plugintest.CutWrites(tt.keep, &conns)
			}
			c, logs := newClient(t, conductor.Config{URL: url, HTTPClient: client, StartTimeout: 5 * time.Second})

			var got pluginapi.StartResult
			plugintest.Within(t, 2*time.Second, func() { got, _ = c.StartPod(context.Background(), "qwen") })
			if tt.anyClass && got.Error != "" {
				got.Error = tt.want.Error
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{tt.wantLog}, logs.Lines(t)); diff != "" {
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
