package openai_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
	openai "github.com/wakeonchat/wakeonchat/plugins/provider-openai"
)

const testKey = "sk-test-5f1e2d3c4b5a"

// seen is what a fake model server saw.
type seen struct {
	Method        string
	Path          string
	Authorization []string
	ContentType   string
	Body          string
}

type fakeModel struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []seen
}

func newFakeModel(t *testing.T, handler http.HandlerFunc) *fakeModel {
	t.Helper()
	f := &fakeModel{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, seen{
			Method:        r.Method,
			Path:          r.URL.Path,
			Authorization: r.Header.Values("Authorization"),
			ContentType:   r.Header.Get("Content-Type"),
			Body:          string(body),
		})
		f.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeModel) requests() []seen {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seen(nil), f.reqs...)
}

func reply(status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if contentType != "" {
			w.Header().Set("Content-Type", contentType)
		}
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// raw hijacks the connection and writes s (or nothing) before closing it;
// reset makes the close a TCP RST.
func raw(t *testing.T, s string, reset bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		conn, buf, err := w.(http.Hijacker).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_, _ = buf.WriteString(s)
		_ = buf.Flush()
		if tcp, ok := conn.(*net.TCPConn); ok && reset {
			plugintest.Reset(tcp)
			return
		}
		_ = conn.Close()
	}
}

var request = pluginapi.CompletionRequest{
	Model: "qwen2.5-72b-instruct",
	Messages: []pluginapi.Message{
		{Role: "system", Content: "You are Rig-E."},
		{Role: "user", Content: "Is the GPU \"up\"? ✓"},
	},
}

const requestJSON = `{"model":"qwen2.5-72b-instruct","messages":[{"role":"system","content":"You are Rig-E."},{"role":"user","content":"Is the GPU \"up\"? ✓"}]}`

const okJSON = `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Yes, it is."},"finish_reason":"stop"}],"usage":{"total_tokens":9}}`

func newClient(t *testing.T, cfg openai.Config) *openai.Client {
	t.Helper()
	c, err := openai.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// The one request: method, path, headers, body; the key only when set.
func TestCompleteRequest(t *testing.T) {
	tests := []struct {
		name     string
		key      openai.APIKey
		endpoint string // appended to the server URL
		want     seen
	}{
		{
			name:     "with key",
			key:      testKey,
			endpoint: "/v1",
			want:     seen{Method: "POST", Path: "/v1/chat/completions", Authorization: []string{"Bearer " + testKey}, ContentType: "application/json", Body: requestJSON},
		},
		{
			name:     "without key, trailing slash",
			endpoint: "/v1/",
			want:     seen{Method: "POST", Path: "/v1/chat/completions", ContentType: "application/json", Body: requestJSON},
		},
		{
			name:     "bare host",
			key:      testKey,
			endpoint: "",
			want:     seen{Method: "POST", Path: "/chat/completions", Authorization: []string{"Bearer " + testKey}, ContentType: "application/json", Body: requestJSON},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeModel(t, reply(200, "application/json", okJSON))
			c := newClient(t, openai.Config{APIKey: tt.key})

			got, err := c.Complete(context.Background(), srv.URL+tt.endpoint, request)
			if err != nil {
				t.Fatalf("Complete: %v", err)
			}
			if diff := cmp.Diff("Yes, it is.", got); diff != "" {
				t.Errorf("content (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]seen{tt.want}, srv.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCompleteNoMessagesSendsAnEmptyArray(t *testing.T) {
	srv := newFakeModel(t, reply(200, "", okJSON))
	c := newClient(t, openai.Config{})
	if _, err := c.Complete(context.Background(), srv.URL, pluginapi.CompletionRequest{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(`{"model":"m","messages":[]}`, srv.requests()[0].Body); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
}

func TestCompleteFailures(t *testing.T) {
	longMessage := strings.Repeat("é", 150)
	tests := []struct {
		name    string
		handler func(t *testing.T) http.HandlerFunc
		timeout time.Duration
		want    *pluginapi.CompletionError
	}{
		{
			name: "400 openai error",
			handler: func(*testing.T) http.HandlerFunc {
				return reply(400, "application/json", `{"error":{"message":"context too long","type":"invalid_request_error"}}`)
			},
			want: &pluginapi.CompletionError{Status: 400, Message: "HTTP 400: context too long", Body: []byte(`{"error":{"message":"context too long","type":"invalid_request_error"}}`)},
		},
		{
			name: "401 echoing the key",
			handler: func(*testing.T) http.HandlerFunc {
				return reply(401, "application/json", `{"error":{"message":"Incorrect API key provided: `+testKey+`."}}`)
			},
			want: &pluginapi.CompletionError{Status: 401, Message: "HTTP 401: Incorrect API key provided: [redacted].", Body: []byte(`{"error":{"message":"Incorrect API key provided: [redacted]."}}`)},
		},
		{
			name: "429 vllm error",
			handler: func(*testing.T) http.HandlerFunc {
				return reply(429, "application/json", `{"object":"error","message":"too many\nrequests","code":429}`)
			},
			want: &pluginapi.CompletionError{Status: 429, Message: "HTTP 429: too many requests", Body: []byte(`{"object":"error","message":"too many\nrequests","code":429}`)},
		},
		{
			name: "500 long message",
			handler: func(*testing.T) http.HandlerFunc {
				return reply(500, "application/json", `{"error":"`+longMessage+`"}`)
			},
			want: &pluginapi.CompletionError{Status: 500, Message: "HTTP 500: " + strings.Repeat("é", 100) + "…", Body: []byte(`{"error":"` + longMessage + `"}`)},
		},
		{
			name: "502 html",
			handler: func(*testing.T) http.HandlerFunc {
				return reply(502, "text/html", `<!DOCTYPE html><html><head><title>502</title></head><body>Bad gateway https://x-8000.proxy.runpod.net</body></html>`)
			},
			want: &pluginapi.CompletionError{Status: 502, Message: "HTTP 502 Bad Gateway"},
		},
		{
			name:    "503 empty",
			handler: func(*testing.T) http.HandlerFunc { return reply(503, "", "") },
			want:    &pluginapi.CompletionError{Status: 503, Message: "HTTP 503 Service Unavailable"},
		},
		{
			name: "504 json message with markup",
			handler: func(*testing.T) http.HandlerFunc {
				return reply(504, "application/json", `{"message":"<b>upstream</b> timed out"}`)
			},
			want: &pluginapi.CompletionError{Status: 504, Message: "HTTP 504 Gateway Timeout", Body: []byte(`{"message":"<b>upstream</b> timed out"}`)},
		},
		{
			name:    "524 unknown status",
			handler: func(*testing.T) http.HandlerFunc { return reply(524, "text/plain", "A timeout occurred") },
			want:    &pluginapi.CompletionError{Status: 524, Message: "HTTP 524"},
		},
		{
			name:    "redirect not followed",
			handler: func(*testing.T) http.HandlerFunc { return reply(307, "", "") },
			want:    &pluginapi.CompletionError{Status: 307, Message: "HTTP 307 Temporary Redirect"},
		},
		{
			name:    "connection closed without a response",
			handler: func(t *testing.T) http.HandlerFunc { return raw(t, "", false) },
			want:    &pluginapi.CompletionError{TransportFailure: true, Message: "no response: EOF"},
		},
		{
			name:    "connection reset",
			handler: func(t *testing.T) http.HandlerFunc { return raw(t, "", true) },
			want:    &pluginapi.CompletionError{TransportFailure: true, Message: "no response: ECONNRESET"},
		},
		{
			name:    "hanging is aborted, not a transport failure",
			handler: func(*testing.T) http.HandlerFunc { return plugintest.Hang },
			timeout: 50 * time.Millisecond,
			want:    &pluginapi.CompletionError{Aborted: true, Message: "timed out after 50ms"},
		},
		{
			name: "200 that stalls mid-body is aborted with its status",
			handler: func(*testing.T) http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.WriteHeader(200)
					_, _ = io.WriteString(w, `{"choices":[`)
					w.(http.Flusher).Flush()
					<-r.Context().Done()
				}
			},
			timeout: 50 * time.Millisecond,
			want:    &pluginapi.CompletionError{Status: 200, Aborted: true, Message: "timed out after 50ms"},
		},
		{
			name: "200 body that stops halfway",
			handler: func(t *testing.T) http.HandlerFunc {
				return raw(t, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"+okJSON[:40], false)
			},
			want: &pluginapi.CompletionError{Status: 200, Message: "response body failed: EOF"},
		},
		{
			name:    "200 malformed json",
			handler: func(*testing.T) http.HandlerFunc { return reply(200, "application/json", `{"choices":[{"message":`) },
			want:    &pluginapi.CompletionError{Status: 200, Message: "malformed response: syntax error at offset 23"},
		},
		{
			name:    "200 html",
			handler: func(*testing.T) http.HandlerFunc { return reply(200, "text/html", `<html>hello</html>`) },
			want:    &pluginapi.CompletionError{Status: 200, Message: "malformed response: syntax error at offset 1"},
		},
		{
			name:    "200 wrong type",
			handler: func(*testing.T) http.HandlerFunc { return reply(200, "application/json", `{"choices":{}}`) },
			want:    &pluginapi.CompletionError{Status: 200, Message: "malformed response: field choices is a JSON object"},
		},
		{
			name:    "200 no choices",
			handler: func(*testing.T) http.HandlerFunc { return reply(200, "application/json", `{"choices":[]}`) },
			want:    &pluginapi.CompletionError{Status: 200, Message: "response has no choices"},
		},
		{
			name: "200 choices absent",
			handler: func(*testing.T) http.HandlerFunc {
				return reply(200, "application/json", `{"object":"error","message":"oops"}`)
			},
			want: &pluginapi.CompletionError{Status: 200, Message: "response has no choices"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeModel(t, tt.handler(t))
			c := newClient(t, openai.Config{APIKey: testKey, Timeout: tt.timeout})

			began := time.Now()
			got, err := c.Complete(context.Background(), srv.URL+"/v1", request)
			if took := time.Since(began); took > 5*time.Second {
				t.Errorf("took %v", took)
			}

			if got != "" {
				t.Errorf("content %q, want none", got)
			}
			var ce *pluginapi.CompletionError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v (%T) is not a *CompletionError", err, err)
			}
			if diff := cmp.Diff(tt.want, ce); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests, want exactly 1 (never retried)", n)
			}
			if msg := err.Error(); strings.Contains(msg, testKey) || strings.Contains(msg, "127.0.0.1") || strings.Contains(msg, "<") {
				t.Errorf("error %q carries the key, the URL or markup", msg)
			}
		})
	}
}

func TestCompleteNoServer(t *testing.T) {
	endpoint := plugintest.ClosedURL(t) + "/v1"
	c := newClient(t, openai.Config{})

	_, err := c.Complete(context.Background(), endpoint, request)

	want := &pluginapi.CompletionError{TransportFailure: true, Message: "no response: ECONNREFUSED"}
	var ce *pluginapi.CompletionError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *CompletionError", err, err)
	}
	if diff := cmp.Diff(want, ce); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestCompleteCallerCancels(t *testing.T) {
	entered := make(chan struct{})
	srv := newFakeModel(t, func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		plugintest.Hang(w, r)
	})
	c := newClient(t, openai.Config{})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-entered
		cancel()
	}()

	_, err := c.Complete(ctx, srv.URL, request)

	want := &pluginapi.CompletionError{Aborted: true, Message: "canceled"}
	var ce *pluginapi.CompletionError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *CompletionError", err, err)
	}
	if diff := cmp.Diff(want, ce); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestCompleteInvalidEndpoint(t *testing.T) {
	c := newClient(t, openai.Config{})
	for _, endpoint := range []string{"", "localhost:8000/v1", "ftp://model/v1", "http://", "http://model/v1?key=secret"} {
		_, err := c.Complete(context.Background(), endpoint, request)
		var ce *pluginapi.CompletionError
		if !errors.As(err, &ce) {
			t.Fatalf("%q: error %v (%T) is not a *CompletionError", endpoint, err, err)
		}
		want := &pluginapi.CompletionError{Message: "invalid endpoint: want an absolute http or https base url"}
		if diff := cmp.Diff(want, ce); diff != "" {
			t.Errorf("%q (-want +got):\n%s", endpoint, diff)
		}
	}
}

func TestAPIKeyNeverFormats(t *testing.T) {
	cfg := openai.Config{APIKey: testKey}
	if s := fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg.APIKey); strings.Contains(s, testKey) {
		t.Errorf("the key leaked: %s", s)
	}
}

// Concurrent completions keep their connections: a second burst as large
// as the first opens none.
func TestConnectionsKeptAcrossBursts(t *testing.T) {
	const burst = 8
	var (
		mu      sync.Mutex
		opened  int
		arrived = make(chan struct{}, burst)
		release chan struct{}
	)
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gate := release
		mu.Unlock()
		arrived <- struct{}{}
		<-gate // every request of the burst is in flight at once
		_, _ = io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"ok"}}]}`)
	}))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			mu.Lock()
			opened++
			mu.Unlock()
		}
	}
	srv.Start()
	defer srv.Close()
	c, err := openai.New(openai.Config{})
	if err != nil {
		t.Fatal(err)
	}
	round := func() int {
		mu.Lock()
		before := opened
		release = make(chan struct{})
		mu.Unlock()
		var wg sync.WaitGroup
		errs := make(chan error, burst)
		for range burst {
			wg.Go(func() {
				_, err := c.Complete(context.Background(), srv.URL+"/v1", pluginapi.CompletionRequest{Model: "m"})
				errs <- err
			})
		}
		for range burst {
			<-arrived
		}
		close(release)
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatal(err)
			}
		}
		mu.Lock()
		defer mu.Unlock()
		return opened - before
	}
	if n := round(); n != burst {
		t.Fatalf("the first burst opened %d connections, want %d", n, burst)
	}
	if n := round(); n != 0 {
		t.Errorf("the second burst opened %d connections, want 0: the first's were kept", n)
	}
}
