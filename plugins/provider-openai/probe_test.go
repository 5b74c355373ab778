package openai_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
	openai "github.com/wakeonchat/wakeonchat/plugins/provider-openai"
)

// vllmModels is vLLM's answer to GET /v1/models.
const vllmModels = `{"object":"list","data":[{"id":"qwen","object":"model","created":1757419200,"owned_by":"vllm","root":"qwen"}]}`

// The one request: GET {endpoint}/models, the key when set, no body.
func TestProbeRequest(t *testing.T) {
	tests := []struct {
		name     string
		key      openai.APIKey
		endpoint string
		want     seen
	}{
		{"with a key", testKey, "/v1", seen{Method: "GET", Path: "/v1/models", Authorization: []string{"Bearer " + testKey}}},
		{"without a key", "", "/v1/", seen{Method: "GET", Path: "/v1/models"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeModel(t, reply(200, "application/json", vllmModels))
			c := newClient(t, openai.Config{APIKey: tt.key})

			got, err := c.Probe(context.Background(), srv.URL+tt.endpoint)

			if err != nil {
				t.Fatalf("Probe: %v", err)
			}
			if diff := cmp.Diff(pluginapi.ProbeResult{Answered: true, Status: 200}, got); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]seen{tt.want}, srv.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

// Only a model list answers the probe; everything else says why not, in
// the classes of a completion's failure and without the key or a page.
func TestProbeNotAnswered(t *testing.T) {
	tests := []struct {
		name    string
		handler func(t *testing.T) http.HandlerFunc
		timeout time.Duration // the caller's deadline; 0 for none
		want    pluginapi.ProbeResult
	}{
		{
			name: "the proxy's gateway page while vLLM loads",
			handler: func(*testing.T) http.HandlerFunc {
				return reply(502, "text/html", "<!DOCTYPE html><h1>502 Bad Gateway</h1>")
			},
			want: pluginapi.ProbeResult{Status: 502, Message: "HTTP 502 Bad Gateway"},
		},
		{
			name:    "a stopped pod's proxy",
			handler: func(*testing.T) http.HandlerFunc { return reply(404, "text/plain", "404 pod pod-1 not found") },
			want:    pluginapi.ProbeResult{Status: 404, Message: "HTTP 404 Not Found"},
		},
		{
			name: "a wrong key, echoed",
			handler: func(*testing.T) http.HandlerFunc {
				return reply(401, "application/json", `{"error":"Unauthorized: `+testKey+`"}`)
			},
			want: pluginapi.ProbeResult{Status: 401, Message: "HTTP 401: Unauthorized: [redacted]"},
		},
		{
			name:    "a 200 page that is no model list",
			handler: func(*testing.T) http.HandlerFunc { return reply(200, "text/html", "<html>starting</html>") },
			want:    pluginapi.ProbeResult{Status: 200, Message: "HTTP 200 without a model list"},
		},
		{
			name:    "a 200 object without data",
			handler: func(*testing.T) http.HandlerFunc { return reply(200, "application/json", `{"object":"list"}`) },
			want:    pluginapi.ProbeResult{Status: 200, Message: "HTTP 200 without a model list"},
		},
		{
			name: "a model list too large to be one",
			handler: func(*testing.T) http.HandlerFunc {
				return reply(200, "application/json", `{"data":["`+strings.Repeat("x", 1<<20)+`"]}`)
			},
			want: pluginapi.ProbeResult{Status: 200, Message: "HTTP 200 without a model list"},
		},
		{
			name:    "connection reset",
			handler: func(t *testing.T) http.HandlerFunc { return raw(t, "", true) },
			want:    pluginapi.ProbeResult{TransportFailure: true, Message: "no response: ECONNRESET"},
		},
		{
			name:    "no answer before the host's deadline",
			handler: func(*testing.T) http.HandlerFunc { return plugintest.Hang },
			timeout: 50 * time.Millisecond,
			want:    pluginapi.ProbeResult{Aborted: true, Message: "timed out after …"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeModel(t, tt.handler(t))
			c := newClient(t, openai.Config{APIKey: testKey})
			ctx := context.Background()
			if tt.timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.timeout)
				defer cancel()
			}

			got, err := c.Probe(ctx, srv.URL+"/v1")

			if err != nil {
				t.Fatalf("Probe: %v", err)
			}
			if tt.want.Aborted {
				// The cap is the deadline's remaining time, read a hair
				// after it was set: "timed out after 50ms" or "49ms".
				if !strings.HasPrefix(got.Message, "timed out after ") {
					t.Errorf("message %q, want it to say it timed out", got.Message)
				}
				got.Message, tt.want.Message = "", ""
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Probe (-want +got):\n%s", diff)
			}
		})
	}
}

func TestProbeNoServer(t *testing.T) {
	endpoint := plugintest.ClosedURL(t) + "/v1"

	got, _ := newClient(t, openai.Config{}).Probe(context.Background(), endpoint)

	if diff := cmp.Diff(pluginapi.ProbeResult{TransportFailure: true, Message: "no response: ECONNREFUSED"}, got); diff != "" {
		t.Errorf("Probe (-want +got):\n%s", diff)
	}
}

func TestProbeCallerCancels(t *testing.T) {
	entered := make(chan struct{})
	srv := newFakeModel(t, func(w http.ResponseWriter, r *http.Request) {
		close(entered)
		plugintest.Hang(w, r)
	})
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-entered
		cancel()
	}()

	got, _ := newClient(t, openai.Config{}).Probe(ctx, srv.URL+"/v1")

	if diff := cmp.Diff(pluginapi.ProbeResult{Aborted: true, Message: "canceled"}, got); diff != "" {
		t.Errorf("Probe (-want +got):\n%s", diff)
	}
}

func TestProbeInvalidEndpoint(t *testing.T) {
	c := newClient(t, openai.Config{})
	for _, endpoint := range []string{"", "localhost:8000/v1", "http://model/v1?key=secret"} {
		got, _ := c.Probe(context.Background(), endpoint)
		want := pluginapi.ProbeResult{Message: "invalid endpoint: want an absolute http or https base url"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q (-want +got):\n%s", endpoint, diff)
		}
	}
}
