package openai_test

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/openai"
)

var created = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

// do serves one request and returns the recorder.
func do(h http.Handler, r *http.Request) *httptest.ResponseRecorder {
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

// GET /v1/models lists the providers from config, in config order, and
// asks nobody: its models have no calls at all.
func TestModels(t *testing.T) {
	s := openai.New(openai.Config{
		Providers: []openai.Provider{{Name: "qwen", Pod: "qwen"}, {Name: "backup"}},
		Created:   created,
	})
	tests := []struct {
		name, method, path string
		status             int
		body               string
	}{
		{"list", "GET", "/v1/models", 200,
			`{"object":"list","data":[{"id":"qwen","object":"model","created":1796115600,"owned_by":"wake-on-chat"},{"id":"backup","object":"model","created":1796115600,"owned_by":"wake-on-chat"}]}` + "\n"},
		{"one", "GET", "/v1/models/backup", 200, `{"id":"backup","object":"model","created":1796115600,"owned_by":"wake-on-chat"}` + "\n"},
		{"unknown", "GET", "/v1/models/gpt-4o", 404,
			`{"error":{"message":"the model gpt-4o does not exist; GET /v1/models lists the models","type":"invalid_request_error","param":"model","code":"model_not_found"}}` + "\n"},
		{"wrong method", "POST", "/v1/models", 405,
			`{"error":{"message":"method POST not allowed; use GET","type":"invalid_request_error","param":null,"code":"method_not_allowed"}}` + "\n"},
		{"no such endpoint", "GET", "/v1/embeddings", 404,
			`{"error":{"message":"no such endpoint: GET /v1/embeddings; the door serves GET /v1/models and POST /v1/chat/completions","type":"invalid_request_error","param":null,"code":"unknown_url"}}` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := do(s.Handler(), httptest.NewRequest(tt.method, tt.path, nil))
			if w.Code != tt.status {
				t.Errorf("status %d, want %d", w.Code, tt.status)
			}
			if diff := cmp.Diff(tt.body, w.Body.String()); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
			if ct := w.Header().Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type %q", ct)
			}
		})
	}
}

// An unclean path is a JSON 404, not ServeMux's HTML redirect.
func TestUncleanPath(t *testing.T) {
	s := openai.New(openai.Config{Providers: []openai.Provider{{Name: "qwen"}}})
	w := do(s.Handler(), httptest.NewRequest("GET", "/v1//models", nil))
	if w.Code != 404 || w.Header().Get("Content-Type") != "application/json" {
		t.Errorf("GET /v1//models: %d %s %s", w.Code, w.Header().Get("Content-Type"), w.Body)
	}
}
