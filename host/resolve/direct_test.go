package resolve

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// routedPlugin records what the host asked of the plugin.
type routedPlugin struct {
	mu    sync.Mutex
	calls []string
	route func(endpoint string) (pluginapi.Route, error)
}

func (p *routedPlugin) record(call string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, call)
}

func (p *routedPlugin) Route(_ context.Context, endpoint string) (pluginapi.Route, error) {
	p.record("Route")
	return p.route(endpoint)
}

func (p *routedPlugin) Stream(context.Context, pluginapi.StreamRequest) (*pluginapi.StreamResponse, error) {
	p.record("Stream")
	return &pluginapi.StreamResponse{Status: 200, Body: io.NopCloser(strings.NewReader("through the plugin"))}, nil
}

func (p *routedPlugin) assertCalls(t *testing.T, want ...string) {
	t.Helper()
	p.mu.Lock()
	defer p.mu.Unlock()
	if diff := cmp.Diff(want, p.calls); diff != "" {
		t.Errorf("calls to the plugin (-want +got):\n%s", diff)
	}
}

const directKey = "sk-direct-secret"

// model is an OpenAI-compatible model that answers with what it was sent,
// or 401 quoting the key when the key is wrong.
func model(t *testing.T) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		if r.Header.Get("Authorization") != "Bearer "+directKey {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = io.WriteString(w, `{"error":{"message":"bad key `+strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")+`"}}`)
			return
		}
		b, _ := io.ReadAll(r.Body)
		_, _ = w.Write(append([]byte("model got "), b...))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// read streams req through d and returns the whole answer.
func read(t *testing.T, d *Direct, req pluginapi.StreamRequest) string {
	t.Helper()
	resp, err := d.Stream(context.Background(), req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestDirectSendsToTheModelOnADirectRoute(t *testing.T) {
	t.Parallel()
	m := model(t)
	p := &routedPlugin{route: func(endpoint string) (pluginapi.Route, error) {
		return pluginapi.Route{Direct: true, BaseURL: endpoint, Header: http.Header{"Authorization": {"Bearer " + directKey}}}, nil
	}}
	d := NewDirect(p)
	req := pluginapi.StreamRequest{Endpoint: m.URL + "/v1", Body: []byte(`{"x":1}`)}
	for range 2 {
		if got := read(t, d, req); got != `model got {"x":1}` {
			t.Errorf("answer %q, want the model's", got)
		}
	}
	// One Route for both: the route is cached, and no completion crossed
	// the plugin.
	p.assertCalls(t, "Route")
}

func TestDirectFallsBackToThePluginsStream(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		route func(string) (pluginapi.Route, error)
		want  []string // calls for two completions
	}{
		{"no route (protocol 3)", func(string) (pluginapi.Route, error) { return pluginapi.Route{}, pluginapi.ErrNoRoute },
			[]string{"Route", "Stream", "Stream"}},
		{"a route that must translate", func(e string) (pluginapi.Route, error) { return pluginapi.Route{BaseURL: e}, nil },
			[]string{"Route", "Stream", "Stream"}},
		{"Route failed: asked again next time", func(string) (pluginapi.Route, error) { return pluginapi.Route{}, errors.New("crashed") },
			[]string{"Route", "Stream", "Route", "Stream"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &routedPlugin{route: tt.route}
			d := NewDirect(p)
			for range 2 {
				if got := read(t, d, pluginapi.StreamRequest{Endpoint: "http://127.0.0.1:9/v1"}); got != "through the plugin" {
					t.Errorf("answer %q, want the plugin's", got)
				}
			}
			p.assertCalls(t, tt.want...)
		})
	}
}

// The route is asked again once routeTTL has passed (a relaunched plugin
// may hold another key).
func TestDirectRouteExpires(t *testing.T) {
	t.Parallel()
	m := model(t)
	p := &routedPlugin{route: func(endpoint string) (pluginapi.Route, error) {
		return pluginapi.Route{Direct: true, BaseURL: endpoint, Header: http.Header{"Authorization": {"Bearer " + directKey}}}, nil
	}}
	d := NewDirect(p)
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	d.now = func() time.Time { return now }
	req := pluginapi.StreamRequest{Endpoint: m.URL + "/v1", Body: []byte(`{}`)}
	read(t, d, req)
	now = now.Add(routeTTL - time.Second)
	read(t, d, req)
	now = now.Add(time.Second)
	read(t, d, req)
	p.assertCalls(t, "Route", "Route")
}

// A model's error on the direct path is classified as the plugin
// classifies it, with the route's secrets redacted from what is reported.
func TestDirectClassifiesAndRedacts(t *testing.T) {
	t.Parallel()
	m := model(t)
	const wrong = "sk-wrong-but-secret"
	p := &routedPlugin{route: func(endpoint string) (pluginapi.Route, error) {
		return pluginapi.Route{Direct: true, BaseURL: endpoint, Header: http.Header{"Authorization": {"Bearer " + wrong}}}, nil
	}}
	_, err := NewDirect(p).Stream(context.Background(), pluginapi.StreamRequest{Endpoint: m.URL + "/v1", Body: []byte(`{}`)})
	var ce *pluginapi.CompletionError
	if !errors.As(err, &ce) {
		t.Fatalf("err = %v, want a *CompletionError", err)
	}
	want := &pluginapi.CompletionError{Status: 401, Message: "HTTP 401: bad key [redacted]",
		Body: []byte(`{"error":{"message":"bad key [redacted]"}}`)}
	if diff := cmp.Diff(want, ce); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}
