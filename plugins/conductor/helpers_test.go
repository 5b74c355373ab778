package conductor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/conductor"
)

const testToken = "wake-token-3c9a1f"

// request is what a fake conductor saw.
type request struct {
	Method      string
	Path        string
	Accept      string
	ContentType string
	Token       []string // X-Rig-Operator-Token values; nil when absent
	Body        string
}

// fakeConductor is an httptest server that records every request and
// answers with its handler.
type fakeConductor struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []request
}

func newFakeConductor(t *testing.T, handler http.HandlerFunc) *fakeConductor {
	t.Helper()
	f := &fakeConductor{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.reqs = append(f.reqs, request{
			Method:      r.Method,
			Path:        r.URL.EscapedPath(),
			Accept:      r.Header.Get("Accept"),
			ContentType: r.Header.Get("Content-Type"),
			Token:       r.Header.Values(conductor.TokenHeader),
			Body:        string(body),
		})
		f.mu.Unlock()
		handler(w, r)
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeConductor) requests() []request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]request(nil), f.reqs...)
}

// answer returns a handler that writes status and body.
func answer(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

// hang returns a handler that answers only when the client goes away.
func hang(w http.ResponseWriter, r *http.Request) {
	<-r.Context().Done()
}

// closedPort returns a 127.0.0.1 address nothing listens on.
func closedPort(t *testing.T) string {
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

// dialing returns an HTTP client whose every connection attempt runs dial.
func dialing(dial func(ctx context.Context) (net.Conn, error)) *http.Client {
	return &http.Client{Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) { return dial(ctx) },
	}}
}

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newClient(t *testing.T, cfg conductor.Config) (*conductor.Client, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace, JSONFormat: true})
	c, err := conductor.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, logs
}

// logLines returns "level message" for every JSON log line.
func logLines(t *testing.T, logs string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if line == "" {
			continue
		}
		var entry struct {
			Level   string `json:"@level"`
			Message string `json:"@message"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, entry.Level+" "+entry.Message)
	}
	return out
}

// within fails the test when fn takes longer than limit.
func within(t *testing.T, limit time.Duration, fn func()) {
	t.Helper()
	began := time.Now()
	fn()
	if took := time.Since(began); took > limit {
		t.Errorf("took %v, want at most %v", took, limit)
	}
}
