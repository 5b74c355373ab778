package jsonhttp_test

import (
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/internal/jsonhttp"
)

type answer struct {
	Status      int
	ContentType string
	Length      string
	NoSniff     string
	Body        string
}

func record(h http.Handler, method, target string) answer {
	r := httptest.NewRequest(method, "http://host/", nil)
	r.URL.Path = target // httptest.NewRequest would reject "*"
	r.RequestURI = target
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return answer{w.Code, w.Header().Get("Content-Type"), w.Header().Get("Content-Length"),
		w.Header().Get("X-Content-Type-Options"), w.Body.String()}
}

func TestWrite(t *testing.T) {
	tests := []struct {
		name   string
		write  func(http.ResponseWriter)
		status int
		body   string
	}{
		{"a value", func(w http.ResponseWriter) { jsonhttp.Write(w, 200, map[string]int{"n": 1}) }, 200, `{"n":1}` + "\n"},
		{"an error", func(w http.ResponseWriter) { jsonhttp.Error(w, 409, `busy "s"`) }, 409, `{"error":"busy \"s\""}` + "\n"},
		{"a value that does not marshal", func(w http.ResponseWriter) { jsonhttp.Write(w, 200, math.Inf(1)) }, 500, `{"error":"internal error"}` + "\n"},
		{"raw", func(w http.ResponseWriter) { jsonhttp.WriteRaw(w, 502, []byte(`{"error":"x"}`)) }, 502, `{"error":"x"}`},
	}
	text := httptest.NewRecorder()
	jsonhttp.WriteBytes(text, 200, "text/plain", []byte("ok"))
	if got := text.Header().Get("Content-Type") + " " + text.Header().Get("Content-Length") + " " + text.Body.String(); got != "text/plain 2 ok" {
		t.Errorf("WriteBytes as text/plain: %q", got)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			tt.write(w)
			got := answer{w.Code, w.Header().Get("Content-Type"), w.Header().Get("Content-Length"),
				w.Header().Get("X-Content-Type-Options"), w.Body.String()}
			want := answer{tt.status, "application/json", strconv.Itoa(len(tt.body)), "nosniff", tt.body}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlainPath(t *testing.T) {
	tests := map[string]bool{
		"/":                            true,
		"/api/pods/qwen-2.5_b":         true,
		"/" + strings.Repeat("a", 127): true,
		"/" + strings.Repeat("a", 128): false,
		"":                             false,
		"api":                          false,
		"*":                            false,
		"/a b":                         false,
		"/<script>":                    false,
		"/http:":                       false,
		"/é":                           false,
		"/a?b":                         false,
	}
	for p, want := range tests {
		if got := jsonhttp.PlainPath(p); got != want {
			t.Errorf("PlainPath(%q) = %v, want %v", p, got, want)
		}
	}
}

// The guard answers every path the mux would answer itself, and every path
// it routes nowhere, with notFound; the routed paths reach their handler.
func TestGuard(t *testing.T) {
	const serves = "this serves GET /a"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /a", func(w http.ResponseWriter, r *http.Request) { jsonhttp.Write(w, 200, "a") })
	h := jsonhttp.Guard(mux, func(w http.ResponseWriter, r *http.Request) {
		jsonhttp.Error(w, http.StatusNotFound, jsonhttp.NoEndpoint(r, serves))
	})
	notFound := func(msg string) answer {
		body := `{"error":"` + msg + `"}` + "\n"
		return answer{404, "application/json", strconv.Itoa(len(body)), "nosniff", body}
	}
	tests := []struct {
		method, path string
		want         answer
	}{
		{"GET", "/a", answer{200, "application/json", "4", "nosniff", `"a"` + "\n"}},
		{"GET", "/b", notFound("no such endpoint: GET /b; " + serves)},
		{"GET", "//a", notFound("no such endpoint: GET //a; " + serves)},
		{"GET", "/b/../a", notFound("no such endpoint: GET /b/../a; " + serves)},
		{"GET", "/a/", notFound("no such endpoint: GET /a/; " + serves)},
		{"OPTIONS", "*", notFound("no such endpoint; " + serves)},
		{"GET", "/<b>", notFound("no such endpoint; " + serves)},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, record(h, tt.method, tt.path)); diff != "" {
			t.Errorf("%s %s (-want +got):\n%s", tt.method, tt.path, diff)
		}
	}
}

// Allow lets the method through (HEAD with GET) and answers any other with
// 405, naming both and setting Allow.
func TestAllow(t *testing.T) {
	tests := []struct {
		allowed, method string
		ok              bool
		allow, body     string
	}{
		{"GET", "GET", true, "", ""},
		{"GET", "HEAD", true, "", ""},
		{"POST", "POST", true, "", ""},
		{"POST", "GET", false, "POST", `{"error":"method GET not allowed; use POST"}` + "\n"},
		{"GET", "DELETE", false, "GET", `{"error":"method DELETE not allowed; use GET"}` + "\n"},
	}
	for _, tt := range tests {
		w := httptest.NewRecorder()
		ok := jsonhttp.Allow(w, httptest.NewRequest(tt.method, "/x", nil), tt.allowed)
		if ok != tt.ok || w.Header().Get("Allow") != tt.allow || w.Body.String() != tt.body || !ok && w.Code != 405 {
			t.Errorf("Allow(%s) for %s: %v, %d, Allow %q, %q; want %v, Allow %q, %q",
				tt.allowed, tt.method, ok, w.Code, w.Header().Get("Allow"), w.Body.String(), tt.ok, tt.allow, tt.body)
		}
	}
}

// IsJSON takes application/json with any parameters, and nothing else.
func TestIsJSON(t *testing.T) {
	tests := map[string]bool{
		"application/json":                  true,
		"application/json; charset=utf-8":   true,
		"Application/JSON;charset=UTF-8":    true,
		"":                                  false,
		"text/plain":                        false,
		"text/plain; charset=utf-8":         false,
		"application/x-www-form-urlencoded": false,
		"multipart/form-data; boundary=x":   false,
		"application/vnd.api+json":          false,
		"application/jsonl":                 false,
		"application/json, text/plain":      false,
		"application/json; charset":         false,
		"application/json text/plain":       false,
		"text/plain; x=application/json":    false,
		"application/x-json; charset=utf-8": false,
	}
	for ct, want := range tests {
		if got := jsonhttp.IsJSON(ct); got != want {
			t.Errorf("IsJSON(%q) = %v, want %v", ct, got, want)
		}
	}
}
