package runpod_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
	"github.com/wakeonchat/wakeonchat/plugins/runpod"
	"github.com/wakeonchat/wakeonchat/plugins/runpod/runpodfake"
)

// raw answers every request with status and body.
func raw(status int, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

func TestGetPod(t *testing.T) {
	t.Parallel()
	proxy := "https://" + podID + "-8000.proxy.runpod.net"
	tests := []struct {
		name    string
		status  string                  // the pod's status in the fake; empty: no such pod
		fail    *runpodfake.Answer      // the fake's next answer to the GET
		handler http.HandlerFunc        // instead of the fake
		url     func(testing.TB) string // instead of a server
		cfg     runpod.Config           // URL and Key are filled in
		key     runpod.Key              // instead of the fake's key
		timeout time.Duration
		want    pluginapi.Pod
		wantErr *pluginapi.LookupError
	}{
		{
			name:   "running: the proxy URL of the model's port",
			status: runpodfake.Running,
			want:   pluginapi.Pod{Name: podID, Status: "RUNNING", IsRunning: true, ProxyURL: proxy, PodID: podID, Lookup: pluginapi.LookupFound},
		},
		{
			name:   "a configured port and proxy URL",
			status: runpodfake.Running,
			cfg:    runpod.Config{Port: 11434, ProxyURL: "http://127.0.0.1:9/{id}/{port}"},
			want: pluginapi.Pod{Name: podID, Status: "RUNNING", IsRunning: true, ProxyURL: "http://127.0.0.1:9/" + podID + "/11434",
				PodID: podID, Lookup: pluginapi.LookupFound},
		},
		{
			name:   "starting is not running yet",
			status: runpodfake.Starting,
			want:   pluginapi.Pod{Name: podID, Status: "STARTING", PodID: podID, Lookup: pluginapi.LookupFound},
		},
		{
			name:   "provisioning",
			status: runpodfake.Provisioning,
			want:   pluginapi.Pod{Name: podID, Status: "PROVISIONING", PodID: podID, Lookup: pluginapi.LookupFound},
		},
		{
			name:   "exited",
			status: runpodfake.Exited,
			want:   pluginapi.Pod{Name: podID, Status: "EXITED", PodID: podID, Lookup: pluginapi.LookupFound},
		},
		{
			name:   "error",
			status: runpodfake.Error,
			want:   pluginapi.Pod{Name: podID, Status: "ERROR", PodID: podID, Lookup: pluginapi.LookupFound},
		},
		{
			name:   "terminated is gone",
			status: runpodfake.Terminated,
			want:   pluginapi.Pod{Name: podID, Status: "TERMINATED", PodID: podID, Lookup: pluginapi.LookupNotFound},
		},
		{
			name: "404: no such pod",
			want: pluginapi.Pod{Name: podID, PodID: podID, Lookup: pluginapi.LookupNotFound},
		},
		{
			name:    "401: a wrong key",
			status:  runpodfake.Running,
			key:     "rpa_WRONG",
			wantErr: &pluginapi.LookupError{Status: 401, Message: "runpod answered status 401 (API key rejected)"},
		},
		{
			name:    "403: a key without access",
			status:  runpodfake.Running,
			fail:    ptr(runpodfake.Problem(403, "access denied")),
			wantErr: &pluginapi.LookupError{Status: 403, Message: "runpod answered status 403 (API key rejected)"},
		},
		{
			name:    "429: rate limited",
			status:  runpodfake.Running,
			fail:    ptr(runpodfake.RateLimited(12)),
			wantErr: &pluginapi.LookupError{Status: 429, Message: "runpod answered status 429 (rate limited)"},
		},
		{
			name:    "500",
			status:  runpodfake.Running,
			fail:    ptr(runpodfake.Problem(500, "internal error")),
			wantErr: &pluginapi.LookupError{Status: 500, Message: "runpod answered status 500"},
		},
		{
			name:    "503 html from a gateway",
			status:  runpodfake.Running,
			fail:    &runpodfake.Answer{Status: 503, Body: "<html>503 Service Unavailable</html>"},
			wantErr: &pluginapi.LookupError{Status: 503, Message: "runpod answered status 503"},
		},
		{
			name:    "html answered 200",
			handler: raw(200, `<!DOCTYPE html><html>hello</html>`),
			wantErr: &pluginapi.LookupError{Status: 200, Message: "runpod answered malformed JSON: not an object"},
		},
		{
			name:    "truncated json",
			handler: raw(200, `{"id":"`+podID+`"`),
			wantErr: &pluginapi.LookupError{Status: 200, Message: "runpod answered malformed JSON: syntax error at offset 22"},
		},
		{
			name:    "a status of the wrong type",
			handler: raw(200, `{"id":"`+podID+`","status":1}`),
			wantErr: &pluginapi.LookupError{Status: 200, Message: "runpod answered malformed JSON: field status is a JSON number"},
		},
		{
			name:    "an unknown status",
			handler: raw(200, `{"id":"`+podID+`","status":"PAUSED"}`),
			wantErr: &pluginapi.LookupError{Status: 200, Message: `runpod answered an unknown status "PAUSED"`},
		},
		{
			name:    "no status",
			handler: raw(200, `{"id":"`+podID+`"}`),
			wantErr: &pluginapi.LookupError{Status: 200, Message: "runpod answered no status"},
		},
		{
			name:    "another pod",
			handler: raw(200, `{"id":"other","status":"RUNNING"}`),
			wantErr: &pluginapi.LookupError{Status: 200, Message: "runpod answered about another pod"},
		},
		{
			name:    "timeout",
			status:  runpodfake.Running,
			fail:    &runpodfake.Answer{Hang: true},
			timeout: 50 * time.Millisecond,
			wantErr: &pluginapi.LookupError{Message: "runpod timed out after 50ms"},
		},
		{
			name:    "connection cut",
			status:  runpodfake.Running,
			fail:    &runpodfake.Answer{Cut: true},
			wantErr: &pluginapi.LookupError{Message: "runpod unreachable: EOF"},
		},
		{
			name:    "unreachable",
			url:     plugintest.ClosedURL,
			wantErr: &pluginapi.LookupError{Message: "runpod unreachable: ECONNREFUSED"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			fake := runpodfake.New(testKey)
			fake.BootTime = time.Hour // a STARTING pod stays STARTING
			if tt.status != "" {
				fake.AddPod(podID, tt.status)
			}
			if tt.fail != nil {
				fake.Fail(runpodfake.Get, podID, *tt.fail)
			}
			cfg := tt.cfg
			if tt.url != nil {
				cfg.URL = tt.url(t)
			} else {
				cfg.URL = serve(t, fake, tt.handler)
			}
			cfg.Key, cfg.LookupTimeout = tt.key, tt.timeout
			c, _ := newClient(t, cfg)

			var pod pluginapi.Pod
			var err error
			plugintest.Within(t, 2*time.Second, func() { pod, err = c.GetPod(context.Background(), podID) })

			if diff := cmp.Diff(tt.want, pod); diff != "" {
				t.Errorf("pod (-want +got):\n%s", diff)
			}
			var lookupErr *pluginapi.LookupError
			if err != nil && !errors.As(err, &lookupErr) {
				t.Fatalf("error %v (%T) is not a *LookupError", err, err)
			}
			if diff := cmp.Diff(tt.wantErr, lookupErr); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
			if err != nil {
				leaks(t, "the error", err.Error(), cfg.URL)
			}
			if tt.handler == nil && tt.url == nil {
				want := []runpodfake.Request{{Method: "GET", Path: "/v2/pods/" + podID, Authorization: "Bearer " + string(cmpOrKey(tt.key))}}
				if diff := cmp.Diff(want, fake.Requests()); diff != "" {
					t.Errorf("requests (-want +got):\n%s", diff)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func cmpOrKey(k runpod.Key) runpod.Key {
	if k == "" {
		return testKey
	}
	return k
}

// The host's pod names map onto RunPod ids; a name that is no id is
// refused before anything is sent.
func TestGetPodNames(t *testing.T) {
	t.Parallel()
	fake := runpodfake.New(testKey)
	fake.AddPod("pod_abc123", runpodfake.Exited)
	fake.AddPod(podID, runpodfake.Running)
	c, _ := newClient(t, runpod.Config{URL: serve(t, fake, nil), Pods: map[string]string{"qwen": "pod_abc123"}})

	got, err := c.GetPod(context.Background(), "qwen")
	if err != nil {
		t.Fatal(err)
	}
	want := pluginapi.Pod{Name: "qwen", Status: "EXITED", PodID: "pod_abc123", Lookup: pluginapi.LookupFound}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mapped name (-want +got):\n%s", diff)
	}
	if got, err = c.GetPod(context.Background(), podID); err != nil || got.PodID != podID || !got.IsRunning {
		t.Errorf("unmapped name: %+v, %v; want the pod of that id, running", got, err)
	}
	for _, name := range []string{"", "../x", "a/b", "x?y", "q%2e", string(make([]byte, 65))} {
		_, err := c.GetPod(context.Background(), name)
		var le *pluginapi.LookupError
		if !errors.As(err, &le) || le.Message != "invalid pod name" {
			t.Errorf("GetPod(%q): %v, want invalid pod name", name, err)
		}
		if r, _ := c.StartPod(context.Background(), name); r != (pluginapi.StartResult{Error: "invalid pod name"}) {
			t.Errorf("StartPod(%q) = %+v, want invalid pod name", name, r)
		}
	}
	if n := len(fake.Requests()); n != 2 {
		t.Errorf("%d requests, want 2 (none for invalid names)", n)
	}
}
