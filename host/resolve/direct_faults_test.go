package resolve

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

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// faultModel serves every completion with answer and counts them.
func faultModel(t *testing.T, answer func(w http.ResponseWriter, r *http.Request)) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var n atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		answer(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// streamHead writes a stream's head and its first event, flushed.
func streamHead(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	_, _ = io.WriteString(w, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"echo\"}}]}\n\n")
	w.(http.Flusher).Flush()
}

// directModel is a literal-URL model whose plugin gives a direct route with
// timeout to srv.
func directModel(srv *httptest.Server, timeout time.Duration) *Model {
	p := &routedPlugin{route: func(endpoint string) (pluginapi.Route, error) {
		return pluginapi.Route{Direct: true, BaseURL: endpoint, Timeout: timeout}, nil
	}}
	return &Model{Name: "qwen", Provider: NewDirect(p), BaseURL: srv.URL + "/v1", ModelName: "qwen"}
}

// A model's answer that fails after its head, on the direct path, fails
// the read of the body with Status 200 (the model answered: never sent
// again, D10), whatever the send mode; one that is long arrives whole.
func TestDirectPathFaults(t *testing.T) {
	t.Parallel()
	const big = 50 << 20
	tests := []struct {
		name    string
		answer  func(w http.ResponseWriter, r *http.Request)
		timeout time.Duration
		// want is the body's failure (nil: read to its end) and bytes how
		// many bytes it must carry when it ends.
		want  *pluginapi.CompletionError
		bytes int
	}{
		{
			name: "resets mid-stream",
			answer: func(w http.ResponseWriter, r *http.Request) {
				streamHead(w)
				conn, _, err := http.NewResponseController(w).Hijack()
				if err != nil {
					panic(err)
				}
				_ = conn.(*net.TCPConn).SetLinger(0) // RST, not FIN
				_ = conn.Close()
			},
			timeout: time.Minute,
			want:    &pluginapi.CompletionError{Status: 200},
		},
		{
			name: "hangs after its head",
			answer: func(w http.ResponseWriter, r *http.Request) {
				streamHead(w)
				<-r.Context().Done()
			},
			timeout: 100 * time.Millisecond,
			want:    &pluginapi.CompletionError{Status: 200, Aborted: true, Message: "timed out after 100ms"},
		},
		{
			name: "sends 50 MB",
			answer: func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "text/event-stream")
				chunk := []byte(strings.Repeat("x", 1<<20))
				for range big >> 20 {
					if _, err := w.Write(chunk); err != nil {
						return
					}
					w.(http.Flusher).Flush()
				}
			},
			timeout: time.Minute,
			bytes:   big,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			srv, requests := faultModel(t, tt.answer)
			m := directModel(srv, tt.timeout)
			for _, send := range []Send{Retry, NoResend, Once} {
				before := requests.Load()
				resp, err := m.Stream(context.Background(), []byte(`{"stream":true}`), send)
				if err != nil {
					t.Fatalf("send %d: the head: %v", send, err)
				}
				n, err := io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				var ce *pluginapi.CompletionError
				switch {
				case tt.want == nil && err != nil:
					t.Errorf("send %d: the body failed after %d bytes: %v", send, n, err)
				case tt.want == nil && n != int64(tt.bytes):
					t.Errorf("send %d: %d bytes, want %d", send, n, tt.bytes)
				case tt.want != nil && !errors.As(err, &ce):
					t.Errorf("send %d: the body ended with %v, want a *CompletionError", send, err)
				case tt.want != nil && (ce.Status != tt.want.Status || ce.Aborted != tt.want.Aborted ||
					(tt.want.Message != "" && ce.Message != tt.want.Message) || ce.TransportFailure):
					t.Errorf("send %d: the body ended with %+v, want %+v", send, ce, tt.want)
				}
				if got := requests.Load() - before; got != 1 {
					t.Errorf("send %d: the model got %d requests, want 1: an answer that came is never sent again (D10)", send, got)
				}
			}
		})
	}
}
