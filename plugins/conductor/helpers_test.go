package conductor_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/wakeonchat/wakeonchat/plugins/conductor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
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

func newClient(t *testing.T, cfg conductor.Config) (*conductor.Client, *plugintest.Log) {
	t.Helper()
	var logs *plugintest.Log
	cfg.Logger, logs = plugintest.Logger()
	c, err := conductor.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, logs
}
