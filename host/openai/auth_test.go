package openai_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/openai"
	"github.com/wakeonchat/wakeonchat/host/turn"
)

func TestParseKeys(t *testing.T) {
	if diff := cmp.Diff([]string{"sk-a", "sk-b"}, openai.ParseKeys(" sk-a, ,sk-b ,")); diff != "" {
		t.Errorf("ParseKeys (-want +got):\n%s", diff)
	}
	if got := openai.ParseKeys(""); got != nil {
		t.Errorf("ParseKeys(\"\") = %q, want none", got)
	}
}

// With keys, every route wants one of them as the bearer key; without,
// none. A 401 never echoes what was sent.
func TestAuth(t *testing.T) {
	tests := []struct {
		name    string
		keys    []string
		require bool // Config.RequireKey
		header  string
		want    int
	}{
		{"no keys configured", nil, false, "", 200},
		{"no keys configured, any header", nil, false, "Bearer whatever", 200},
		{"a key required and none configured", nil, true, "", 401},
		{"a key required and none configured, any header", nil, true, "Bearer whatever", 401},
		{"a key required and none configured, an empty key", nil, true, "Bearer ", 401},
		{"a key required and configured", []string{"sk-one"}, true, "Bearer sk-one", 200},
		{"missing", []string{"sk-one", "sk-two"}, false, "", 401},
		{"wrong", []string{"sk-one", "sk-two"}, false, "Bearer sk-three", 401},
		{"a prefix of a key", []string{"sk-one"}, false, "Bearer sk-on", 401},
		{"not bearer", []string{"sk-one"}, false, "Basic sk-one", 401},
		{"first key", []string{"sk-one", "sk-two"}, false, "Bearer sk-one", 200},
		{"second key, scheme in another case", []string{"sk-one", "sk-two"}, false, "bearer sk-two", 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDoor(t, func(c *openai.Config, _ *turn.Config) { c.Keys, c.RequireKey = tt.keys, tt.require })
			for _, path := range []string{"/v1/models", "/v1/chat/completions"} {
				body := `{"model":"qwen","messages":[{"role":"user","content":"hi"}]}`
				method := http.MethodPost
				if path == "/v1/models" {
					method, body = http.MethodGet, ""
				}
				r := httptest.NewRequest(method, path, strings.NewReader(body))
				r.Header.Set("Content-Type", "application/json")
				if tt.header != "" {
					r.Header.Set("Authorization", tt.header)
				}
				w := do(d.Handler(), r)
				if w.Code != tt.want {
					t.Errorf("%s: status %d, want %d: %s", path, w.Code, tt.want, w.Body)
				}
				if tt.want == 401 {
					want := `{"error":{"message":"missing or wrong API key: send Authorization: Bearer <key>","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}` + "\n"
					if diff := cmp.Diff(want, w.Body.String()); diff != "" {
						t.Errorf("%s: body (-want +got):\n%s", path, diff)
					}
				}
			}
		})
	}
}

func TestCORS(t *testing.T) {
	tests := []struct {
		name        string
		origins     []string
		method      string
		origin      string
		wantStatus  int
		wantAllowed string // Access-Control-Allow-Origin
	}{
		{"preflight from an allowed origin", []string{"https://chat.example.com"}, http.MethodOptions, "https://chat.example.com", 204, "https://chat.example.com"},
		{"preflight from another origin", []string{"https://chat.example.com"}, http.MethodOptions, "https://evil.example", 403, ""},
		{"preflight with no origins configured", nil, http.MethodOptions, "https://chat.example.com", 403, ""},
		{"any origin", []string{"*"}, http.MethodOptions, "https://x.example", 204, "*"},
		{"a request from an allowed origin", []string{"https://chat.example.com"}, http.MethodGet, "https://chat.example.com", 200, "https://chat.example.com"},
		{"a request from another origin: no CORS headers", []string{"https://chat.example.com"}, http.MethodGet, "https://evil.example", 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Keys on: a preflight carries none and must still pass.
			d := newDoor(t, func(c *openai.Config, _ *turn.Config) { c.CORSOrigins, c.Keys = tt.origins, []string{"sk-one"} })
			r := httptest.NewRequest(tt.method, "/v1/models", nil)
			r.Header.Set("Origin", tt.origin)
			if tt.method == http.MethodOptions {
				r.Header.Set("Access-Control-Request-Method", "POST")
				r.Header.Set("Access-Control-Request-Headers", "authorization, content-type, x-stainless-os")
			} else {
				r.Header.Set("Authorization", "Bearer sk-one")
			}
			w := do(d.Handler(), r)
			if w.Code != tt.wantStatus {
				t.Errorf("status %d, want %d", w.Code, tt.wantStatus)
			}
			if tt.wantStatus == 403 {
				want := `{"error":{"message":"this origin may not call the door; see [openai] cors_origins","type":"invalid_request_error","param":null,"code":"origin_not_allowed"}}` + "\n"
				if diff := cmp.Diff(want, w.Body.String()); diff != "" {
					t.Errorf("403 body (-want +got):\n%s", diff)
				}
			}
			if got := w.Header().Get("Access-Control-Allow-Origin"); got != tt.wantAllowed {
				t.Errorf("Access-Control-Allow-Origin %q, want %q", got, tt.wantAllowed)
			}
			if tt.wantStatus == 204 {
				if got := w.Header().Get("Access-Control-Allow-Headers"); got != "authorization, content-type, x-stainless-os" {
					t.Errorf("Access-Control-Allow-Headers %q", got)
				}
			}
			if tt.wantAllowed != "" && w.Header().Get("Access-Control-Expose-Headers") != "X-Wake-State, X-Should-Retry" {
				t.Errorf("X-Wake-State is not exposed")
			}
		})
	}
}
