package runpod_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
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

func newClient(t *testing.T, cfg runpod.Config) (*runpod.Client, *plugintest.Log) {
	t.Helper()
	var logs *plugintest.Log
	cfg.Logger, logs = plugintest.Logger()
	if cfg.Key == "" {
		cfg.Key = testKey
	}
	c, err := runpod.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, logs
}

// leaks fails the test when s names the key or the API's address.
func leaks(t *testing.T, what, s, base string) {
	t.Helper()
	host := strings.TrimPrefix(strings.TrimSuffix(base, "/v2"), "http://")
	if strings.Contains(s, testKey) || strings.Contains(s, host) || strings.Contains(s, "://") {
		t.Errorf("%s names the key or a URL: %s", what, s)
	}
}

func sprint(format string, a ...any) string { return fmt.Sprintf(format, a...) }
