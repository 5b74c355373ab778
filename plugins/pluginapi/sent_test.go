package pluginapi_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
)

// Send: every outcome of a start is a StartResult (design D2): an answer
// is accepted or refused by its status, a request written whole and then
// left unanswered is in flight, and one that was not is not sent. The
// request goes out once.
func TestSend(t *testing.T) {
	t.Parallel()
	const limit = 5 * time.Second
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	lost := func(class string) pluginapi.StartResult {
		return pluginapi.StartResult{Requested: true, Lost: true, Error: class}
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc                              // the backend, an httptest server
		url     func(t *testing.T, reqs *atomic.Int32) string // instead of handler
		base    *http.Client                                  // SendClient's base; nil: NewHTTPClient
		ctx     context.Context                               // nil: Background
		limit   time.Duration                                 // 0: limit
		want    pluginapi.StartResult
		// whole: the backend got the whole request, and so exactly one
		// request; otherwise it got at most one (a head that arrived before
		// the cut may reach its handler).
		whole bool
	}{
		{name: "200", handler: answer(200, `{"ok":true}`), want: pluginapi.StartResult{Requested: true, Status: 200}, whole: true},
		{name: "202", handler: answer(202, ""), want: pluginapi.StartResult{Requested: true, Status: 202}, whole: true},
		{name: "201 is refused", handler: answer(201, ""), want: pluginapi.StartResult{Status: 201}, whole: true},
		{name: "a redirect is refused, not followed", handler: func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/elsewhere", http.StatusFound)
		}, want: pluginapi.StartResult{Status: 302}, whole: true},
		{name: "401", handler: answer(401, ""), want: pluginapi.StartResult{Status: 401}, whole: true},
		{name: "409", handler: answer(409, `{"error":"busy"}`), want: pluginapi.StartResult{Status: 409}, whole: true},
		{name: "500", handler: answer(500, "<html>oops</html>"), want: pluginapi.StartResult{Status: 500}, whole: true},
		{name: "503", handler: answer(503, ""), want: pluginapi.StartResult{Status: 503}, whole: true},
		{
			name:    "no answer within the cap: in flight",
			handler: plugintest.Hang,
			limit:   50 * time.Millisecond,
			want:    pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 50},
			whole:   true,
		},
		{
			name:    "canceled before sending",
			handler: answer(202, ""),
			ctx:     canceled,
			want:    pluginapi.StartResult{Error: "canceled"},
		},
		{
			name: "connection refused",
			url:  func(t *testing.T, _ *atomic.Int32) string { return plugintest.ClosedURL(t) },
			want: pluginapi.StartResult{Error: "ECONNREFUSED"},
		},
		{
			name: "the cap fires during the connect",
			base: plugintest.Dialing(func(ctx context.Context) (net.Conn, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}),
			handler: answer(202, ""),
			limit:   50 * time.Millisecond,
			want:    pluginapi.StartResult{Error: "ETIMEDOUT"},
		},
		{
			name:    "cut before the request's first byte: not sent",
			base:    plugintest.CutWrites(func([]byte) int { return 0 }, nil),
			handler: answer(202, ""),
			want:    pluginapi.StartResult{Error: "ECONNRESET"},
		},
		{
			name:    "cut after the head, before the body: not sent",
			base:    plugintest.CutWrites(plugintest.EndOfHead, nil),
			handler: answer(202, ""),
			want:    pluginapi.StartResult{Error: "ECONNRESET"},
		},
		{
			name:    "cut one byte short of the whole request: not sent",
			base:    plugintest.CutWrites(func(request []byte) int { return len(request) - 1 }, nil),
			handler: answer(202, ""),
			want:    pluginapi.StartResult{Error: "ECONNRESET"},
		},
		{
			name: "closed after the whole request: in flight, its answer lost",
			url: func(t *testing.T, reqs *atomic.Int32) string {
				return plugintest.RawServer(t, reqs, func(conn *net.TCPConn) { plugintest.ReadRequest(t, conn) })
			},
			want:  lost("EOF"),
			whole: true,
		},
		{
			name: "reset after the whole request: in flight, its answer lost",
			url: func(t *testing.T, reqs *atomic.Int32) string {
				return plugintest.RawServer(t, reqs, func(conn *net.TCPConn) { plugintest.ReadRequest(t, conn); plugintest.Reset(conn) })
			},
			want:  lost("ECONNRESET"),
			whole: true,
		},
		{
			name: "closed in the answer's status line: in flight, its answer lost",
			url: func(t *testing.T, reqs *atomic.Int32) string {
				return plugintest.RawServer(t, reqs, func(conn *net.TCPConn) {
					plugintest.ReadRequest(t, conn)
					_, _ = io.WriteString(conn, "HTTP/1.1 202 Acc")
				})
			},
			want:  lost("EOF"),
			whole: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, reqs := prepare(t, tt.url, tt.handler, tt.ctx, http.MethodPost, strings.NewReader("{}"))
			base := tt.base
			if base == nil {
				base = pluginapi.NewHTTPClient()
			}
			lim := tt.limit
			if lim == 0 {
				lim = limit
			}

			began := time.Now()
			got := pluginapi.Send(pluginapi.SendClient(base), req, lim, nil)
			if took := time.Since(began); took > lim+2*time.Second {
				t.Errorf("Send took %v with a cap of %v", took, lim)
			}

			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if n := reqs.Load(); n > 1 || tt.whole && n != 1 {
				t.Errorf("the backend got %d requests, want one (whole: %v)", n, tt.whole)
			}
		})
	}
}

// An answered classifies an answer in Send's place: it gets the answer,
// its body still to read, and the call's context, capped, for whatever it
// does next; Send closes the body after it.
func TestSendAnswered(t *testing.T) {
	t.Parallel()
	var reqs atomic.Int32
	url := backend(t, &reqs, answer(http.StatusConflict, `{"status":"STARTING"}`))
	req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, url, nil)

	var (
		body        string
		hasDeadline bool
		closed      = make(chan error, 1)
	)
	got := pluginapi.Send(pluginapi.SendClient(pluginapi.NewHTTPClient()), req, time.Minute,
		func(ctx context.Context, resp *http.Response) pluginapi.StartResult {
			b, _ := io.ReadAll(resp.Body)
			body = string(b)
			d, ok := ctx.Deadline()
			hasDeadline = ok && time.Until(d) <= time.Minute
			resp.Body = closeNotifier{ReadCloser: resp.Body, closed: closed}
			return pluginapi.StartResult{Requested: true, Status: resp.StatusCode}
		})

	if diff := cmp.Diff(pluginapi.StartResult{Requested: true, Status: 409}, got); diff != "" {
		t.Errorf("result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(`{"status":"STARTING"}`, body); diff != "" {
		t.Errorf("the body answered read (-want +got):\n%s", diff)
	}
	if !hasDeadline {
		t.Error("answered's context has no deadline within the cap")
	}
	select {
	case <-closed:
	default:
		t.Error("Send did not close the body")
	}
}

// closeNotifier reports its Close on closed.
type closeNotifier struct {
	io.ReadCloser
	closed chan error
}

func (c closeNotifier) Close() error {
	err := c.ReadCloser.Close()
	c.closed <- err
	return err
}

// A caller who gives up after the request was sent leaves it in flight:
// TimedOut, with the time waited; one whose deadline comes before the
// limit is capped by it.
func TestSendCallerContext(t *testing.T) {
	t.Parallel()
	t.Run("the caller cancels", func(t *testing.T) {
		t.Parallel()
		req := canceledOnArrival(t, http.MethodPost, strings.NewReader("{}"))

		began := time.Now()
		got := pluginapi.Send(pluginapi.SendClient(pluginapi.NewHTTPClient()), req, time.Minute, nil)
		took := time.Since(began)

		if !got.Requested || !got.TimedOut || got.Status != 0 || got.Error != "" || got.Lost {
			t.Errorf("result %+v, want in flight", got)
		}
		if got.TimeoutMs < 0 || got.TimeoutMs > took.Milliseconds() {
			t.Errorf("TimeoutMs %d, want the time waited (at most %d)", got.TimeoutMs, took.Milliseconds())
		}
	})
	t.Run("a sooner deadline", func(t *testing.T) {
		t.Parallel()
		var reqs atomic.Int32
		url := backend(t, &reqs, plugintest.Hang)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader([]byte("{}")))

		got := pluginapi.Send(pluginapi.SendClient(pluginapi.NewHTTPClient()), req, time.Minute, nil)

		if !got.Requested || !got.TimedOut || got.Error != "" {
			t.Errorf("result %+v, want in flight", got)
		}
		if got.TimeoutMs <= 0 || got.TimeoutMs > 50 {
			t.Errorf("TimeoutMs %d, want the deadline's (0, 50]", got.TimeoutMs)
		}
	})
}
