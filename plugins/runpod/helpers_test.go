package runpod_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/wakeonchat/wakeonchat/plugins/runpod"
	"github.com/wakeonchat/wakeonchat/plugins/runpod/runpodfake"
)

const (
	testKey = "rpa_TESTKEY3c9a1f7e"
	podID   = "xedezhzb9la3ye"
)

// serve starts the fake (or, when handler is set, handler instead) and
// returns the API base URL to configure.
func serve(t *testing.T, fake *runpodfake.Server, handler http.HandlerFunc) string {
	t.Helper()
	var h http.Handler = fake
	if handler != nil {
		h = handler
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL + "/v2"
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

func newClient(t *testing.T, cfg runpod.Config) (*runpod.Client, *syncBuffer) {
	t.Helper()
	logs := &syncBuffer{}
	cfg.Logger = hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Trace, JSONFormat: true})
	if cfg.Key == "" {
		cfg.Key = testKey
	}
	c, err := runpod.New(cfg)
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

// closedPort returns a base URL on 127.0.0.1 nothing listens on.
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
	return "http://" + addr + "/v2"
}

// leaks fails the test when s names the key or the API's address.
func leaks(t *testing.T, what, s, base string) {
	t.Helper()
	host := strings.TrimPrefix(strings.TrimSuffix(base, "/v2"), "http://")
	if strings.Contains(s, testKey) || strings.Contains(s, host) || strings.Contains(s, "://") {
		t.Errorf("%s names the key or a URL: %s", what, s)
	}
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

func sprint(format string, a ...any) string { return fmt.Sprintf(format, a...) }
