package pluginapi_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
)

// backend is an httptest server answering with handler once it has read
// the request's body (the server notices a client that has gone only
// after that); every request it gets is counted in reqs.
func backend(t *testing.T, reqs *atomic.Int32, handler http.HandlerFunc) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reqs.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// answer writes status and body.
func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("X-Backend", "fake")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// stall writes the head and the start of a body, then waits for the client
// to go.
func stall(w http.ResponseWriter, r *http.Request) {
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, `{"name":`)
	w.(http.Flusher).Flush()
	<-r.Context().Done()
}

// prepare starts a test row's backend, url's or else an httptest server
// of handler, and builds a request to it with ctx (nil: Background). The
// requests the backend gets are counted in reqs.
func prepare(t *testing.T, url func(*testing.T, *atomic.Int32) string, handler http.HandlerFunc,
	ctx context.Context, method string, body io.Reader) (req *http.Request, reqs *atomic.Int32) {
	t.Helper()
	reqs = &atomic.Int32{}
	var base string
	if url != nil {
		base = url(t, reqs)
	} else {
		base = backend(t, reqs, handler)
	}
	if ctx == nil {
		ctx = context.Background()
	}
	req, err := http.NewRequestWithContext(ctx, method, base+"/api/pods/qwen", body)
	if err != nil {
		t.Fatal(err)
	}
	return req, reqs
}

// canceledOnArrival is a request to a backend that hangs, whose context
// is canceled once the backend has it.
func canceledOnArrival(t *testing.T, method string, body io.Reader) *http.Request {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, _ := prepare(t, nil, func(w http.ResponseWriter, r *http.Request) {
		cancel()
		plugintest.Hang(w, r)
	}, ctx, method, body)
	return req
}

// body is an Answer's status and body, compared as text.
type body struct {
	Status int
	Body   string
}

// Fetch: any answer is an Answer whatever its status; everything else is a
// *FetchError whose words, as a failure and as a lookup's, name the class
// and never the URL.
func TestFetch(t *testing.T) {
	t.Parallel()
	const limit = 5 * time.Second
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name    string
		handler http.HandlerFunc                              // the backend, an httptest server
		url     func(t *testing.T, reqs *atomic.Int32) string // instead of handler
		client  *http.Client                                  // nil: NewHTTPClient
		ctx     context.Context                               // nil: Background
		limit   time.Duration                                 // 0: limit
		max     int64                                         // the body's cap
		want    body                                          // the Answer's status and body
		wantErr *pluginapi.FetchError                         // Timeout is the limit
		words   [2]string                                     // wantErr's Error and LookupError("backend") messages
		header  string                                        // the answer's X-Backend
		reqs    int32                                         // requests the backend got
	}{
		{
			name:    "200",
			handler: answer(http.StatusOK, `{"name":"qwen"}`),
			max:     1 << 20,
			want:    body{Status: 200, Body: `{"name":"qwen"}`},
			header:  "fake",
			reqs:    1,
		},
		{
			name:    "404 is an answer",
			handler: answer(http.StatusNotFound, `{"lookup":"NOT_FOUND"}`),
			max:     1 << 20,
			want:    body{Status: 404, Body: `{"lookup":"NOT_FOUND"}`},
			header:  "fake",
			reqs:    1,
		},
		{
			name:    "503 is an answer",
			handler: answer(http.StatusServiceUnavailable, ""),
			max:     1 << 20,
			want:    body{Status: 503, Body: ""},
			header:  "fake",
			reqs:    1,
		},
		{
			name:    "a body as long as the cap",
			handler: answer(http.StatusOK, "12345678"),
			max:     8,
			want:    body{Status: 200, Body: "12345678"},
			header:  "fake",
			reqs:    1,
		},
		{
			name:    "a body past the cap",
			handler: answer(http.StatusOK, "123456789"),
			max:     8,
			want:    body{Status: 200, Body: "12345678"},
			wantErr: &pluginapi.FetchError{Status: 200, TooLarge: true, Max: 8},
			words:   [2]string{"answer larger than 8 bytes", "backend answered more than 8 bytes"},
			header:  "fake",
			reqs:    1,
		},
		{
			name:    "a 500 past a cap of 1 MiB",
			handler: answer(http.StatusInternalServerError, strings.Repeat("x", 1<<20+1)),
			max:     1 << 20,
			want:    body{Status: 500, Body: strings.Repeat("x", 1<<20)},
			wantErr: &pluginapi.FetchError{Status: 500, TooLarge: true, Max: 1 << 20},
			words:   [2]string{"answer larger than 1 MiB", "backend answered more than 1 MiB"},
			header:  "fake",
			reqs:    1,
		},
		{
			name:    "no answer within the cap",
			handler: plugintest.Hang,
			limit:   50 * time.Millisecond,
			max:     1 << 10,
			wantErr: &pluginapi.FetchError{TimedOut: true, Max: 1 << 10},
			words:   [2]string{"timed out after 50ms", "backend timed out after 50ms"},
			reqs:    1,
		},
		{
			name:    "a body that stalls past the cap",
			handler: stall,
			limit:   50 * time.Millisecond,
			max:     1 << 10,
			want:    body{Status: 200, Body: `{"name":`},
			wantErr: &pluginapi.FetchError{Status: 200, TimedOut: true, Max: 1 << 10},
			words:   [2]string{"timed out after 50ms", "backend timed out after 50ms"},
			reqs:    1,
		},
		{
			name:    "canceled before sending",
			handler: answer(http.StatusOK, "{}"),
			ctx:     canceled,
			max:     1 << 10,
			wantErr: &pluginapi.FetchError{Canceled: true, Max: 1 << 10},
			words:   [2]string{"canceled", "backend lookup canceled"},
		},
		{
			name:    "connection refused",
			url:     func(t *testing.T, _ *atomic.Int32) string { return plugintest.ClosedURL(t) },
			max:     1 << 10,
			wantErr: &pluginapi.FetchError{Class: "ECONNREFUSED", Max: 1 << 10},
			words:   [2]string{"no response: ECONNREFUSED", "backend unreachable: ECONNREFUSED"},
		},
		{
			name: "dns",
			client: plugintest.Dialing(func(context.Context) (net.Conn, error) {
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "backend", IsNotFound: true}}
			}),
			handler: answer(http.StatusOK, "{}"),
			max:     1 << 10,
			wantErr: &pluginapi.FetchError{Class: "DNS", Max: 1 << 10},
			words:   [2]string{"no response: DNS", "backend unreachable: DNS"},
		},
		{
			name:    "cut before the request was written whole",
			client:  plugintest.CutWrites(func(request []byte) int { return len(request) / 2 }, nil),
			handler: answer(http.StatusOK, "{}"),
			max:     1 << 10,
			wantErr: &pluginapi.FetchError{Class: "ECONNRESET", Max: 1 << 10},
			words:   [2]string{"no response: ECONNRESET", "backend unreachable: ECONNRESET"},
		},
		{
			name: "cut after the request was written whole",
			url: func(t *testing.T, reqs *atomic.Int32) string {
				return plugintest.RawServer(t, reqs, func(conn *net.TCPConn) { plugintest.ReadRequest(t, conn) })
			},
			max:     1 << 10,
			wantErr: &pluginapi.FetchError{Class: "EOF", Max: 1 << 10},
			words:   [2]string{"no response: EOF", "backend unreachable: EOF"},
			reqs:    1,
		},
		{
			name: "reset after the request was written whole",
			url: func(t *testing.T, reqs *atomic.Int32) string {
				return plugintest.RawServer(t, reqs, func(conn *net.TCPConn) { plugintest.ReadRequest(t, conn); plugintest.Reset(conn) })
			},
			max:     1 << 10,
			wantErr: &pluginapi.FetchError{Class: "ECONNRESET", Max: 1 << 10},
			words:   [2]string{"no response: ECONNRESET", "backend unreachable: ECONNRESET"},
			reqs:    1,
		},
		{
			name: "cut in the body",
			url: func(t *testing.T, reqs *atomic.Int32) string {
				return plugintest.RawServer(t, reqs, func(conn *net.TCPConn) {
					plugintest.ReadRequest(t, conn)
					_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nX-Backend: raw\r\nContent-Length: 10\r\n\r\nabc")
				})
			},
			max:     1 << 10,
			want:    body{Status: 200, Body: "abc"},
			wantErr: &pluginapi.FetchError{Status: 200, Class: "EOF", Max: 1 << 10},
			words:   [2]string{"response body failed: EOF", "backend answer unreadable: EOF"},
			header:  "raw",
			reqs:    1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			req, reqs := prepare(t, tt.url, tt.handler, tt.ctx, http.MethodGet, nil)
			client := tt.client
			if client == nil {
				client = pluginapi.NewHTTPClient()
			}
			lim := tt.limit
			if lim == 0 {
				lim = limit
			}

			began := time.Now()
			a, err := pluginapi.Fetch(client, req, lim, tt.max)
			if took := time.Since(began); took > lim+2*time.Second {
				t.Errorf("Fetch took %v with a cap of %v", took, lim)
			}

			if diff := cmp.Diff(tt.want, body{Status: a.Status, Body: string(a.Body)}); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if got := a.Header.Get("X-Backend"); got != tt.header {
				t.Errorf("header X-Backend %q, want %q", got, tt.header)
			}
			var fe *pluginapi.FetchError
			if err != nil && !errors.As(err, &fe) {
				t.Fatalf("error %v (%T) is not a *FetchError", err, err)
			}
			var want *pluginapi.FetchError
			if tt.wantErr != nil {
				w := *tt.wantErr
				w.Timeout = lim
				want = &w
			}
			if diff := cmp.Diff(want, fe); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if fe != nil {
				got := [2]string{fe.Error(), fe.LookupError("backend").Message}
				if diff := cmp.Diff(tt.words, got); diff != "" {
					t.Errorf("words (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(fe.Status, fe.LookupError("backend").Status); diff != "" {
					t.Errorf("the lookup error's status (-want +got):\n%s", diff)
				}
				if strings.Contains(fe.Error()+fe.LookupError("backend").Message, "127.0.0.1") {
					t.Errorf("the words name the backend's address: %q", got)
				}
			}
			if diff := cmp.Diff(tt.reqs, reqs.Load()); diff != "" {
				t.Errorf("requests the backend got (-want +got):\n%s", diff)
			}
		})
	}
}

// The caller's deadline caps a Fetch below its limit, and a caller who
// cancels mid-call is told so rather than that the call timed out.
func TestFetchCallerContext(t *testing.T) {
	t.Parallel()
	t.Run("a sooner deadline", func(t *testing.T) {
		t.Parallel()
		var reqs atomic.Int32
		url := backend(t, &reqs, plugintest.Hang)
		ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)

		_, err := pluginapi.Fetch(pluginapi.NewHTTPClient(), req, time.Minute, 1<<10)

		var fe *pluginapi.FetchError
		if !errors.As(err, &fe) || !fe.TimedOut || fe.Canceled {
			t.Fatalf("error %v, want a timeout", err)
		}
		if fe.Timeout <= 0 || fe.Timeout > 50*time.Millisecond {
			t.Errorf("Timeout %v, want the deadline's (0, 50ms]", fe.Timeout)
		}
	})
	t.Run("the caller cancels", func(t *testing.T) {
		t.Parallel()
		req := canceledOnArrival(t, http.MethodGet, nil)

		_, err := pluginapi.Fetch(pluginapi.NewHTTPClient(), req, time.Minute, 1<<10)

		want := &pluginapi.FetchError{Canceled: true, Timeout: time.Minute, Max: 1 << 10}
		var fe *pluginapi.FetchError
		errors.As(err, &fe)
		if diff := cmp.Diff(want, fe); diff != "" {
			t.Errorf("error (-want +got):\n%s", diff)
		}
	})
}
