package conductor_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/conductor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
)

func TestGetPod(t *testing.T) {
	tests := []struct {
		name    string
		handler http.HandlerFunc
		url     func(testing.TB) string // instead of the fake conductor
		timeout time.Duration
		want    pluginapi.Pod
		wantErr *pluginapi.LookupError
	}{
		{
			name: "running",
			handler: answer(200, `{"name":"qwen","status":"RUNNING","isRunning":true,"proxyUrl":"https://kcbbg9igl0xdaz-8000.proxy.runpod.net",
				"podId":"kcbbg9igl0xdaz","readySince":"2026-09-09T12:33:56Z","lookup":"FOUND","gpu":"A100","extra":{"x":1}}`),
			want: pluginapi.Pod{Name: "qwen", Status: "RUNNING", IsRunning: true, ProxyURL: "https://kcbbg9igl0xdaz-8000.proxy.runpod.net",
				PodID: "kcbbg9igl0xdaz", ReadySince: time.Date(2026, 9, 9, 12, 33, 56, 0, time.UTC), Lookup: pluginapi.LookupFound},
		},
		{
			name:    "absent lookup means found; absent name is the one asked",
			handler: answer(200, `{"status":"EXITED","isRunning":false}`),
			want:    pluginapi.Pod{Name: "qwen", Status: "EXITED", Lookup: pluginapi.LookupFound},
		},
		{
			name:    "empty and null fields",
			handler: answer(200, `{"name":"qwen","status":"EXITED","proxyUrl":null,"readySince":"","lookup":""}`),
			want:    pluginapi.Pod{Name: "qwen", Status: "EXITED", Lookup: pluginapi.LookupFound},
		},
		{
			name:    "a readySince that does not parse counts as none",
			handler: answer(200, `{"name":"qwen","status":"RUNNING","readySince":"not a time"}`),
			want:    pluginapi.Pod{Name: "qwen", Status: "RUNNING", Lookup: pluginapi.LookupFound},
		},
		{
			name:    "unreadable",
			handler: answer(200, `{"name":"qwen","status":"UNKNOWN","isRunning":false,"lookup":"UNREADABLE"}`),
			want:    pluginapi.Pod{Name: "qwen", Status: "UNKNOWN", Lookup: pluginapi.LookupUnreadable},
		},
		{
			name:    "not found answered 200",
			handler: answer(200, `{"name":"qwen","lookup":"NOT_FOUND"}`),
			want:    pluginapi.Pod{Name: "qwen", Lookup: pluginapi.LookupNotFound},
		},
		{
			name:    "not found answered 404 with a body that says so",
			handler: answer(404, `{"name":"qwen","isRunning":false,"lookup":"NOT_FOUND"}`),
			want:    pluginapi.Pod{Name: "qwen", Lookup: pluginapi.LookupNotFound},
		},
		{
			name:    "404 without a lookup",
			handler: answer(404, `{"error":"no route"}`),
			wantErr: &pluginapi.LookupError{Status: 404, Message: "conductor answered status 404"},
		},
		{
			name:    "404 html",
			handler: answer(404, `<html>not found</html>`),
			wantErr: &pluginapi.LookupError{Status: 404, Message: "conductor answered status 404"},
		},
		{
			name:    "500",
			handler: answer(500, `{"name":"qwen","lookup":"NOT_FOUND"}`),
			wantErr: &pluginapi.LookupError{Status: 500, Message: "conductor answered status 500"},
		},
		{
			name:    "503",
			handler: answer(503, ``),
			wantErr: &pluginapi.LookupError{Status: 503, Message: "conductor answered status 503"},
		},
		{
			name:    "truncated json",
			handler: answer(200, `{"name":"qwen"`),
			wantErr: &pluginapi.LookupError{Status: 200, Message: "conductor answered malformed JSON: syntax error at offset 14"},
		},
		{
			name:    "html",
			handler: answer(200, `<!DOCTYPE html><html>502</html>`),
			wantErr: &pluginapi.LookupError{Status: 200, Message: "conductor answered malformed JSON: not an object"},
		},
		{
			name:    "null",
			handler: answer(200, `null`),
			wantErr: &pluginapi.LookupError{Status: 200, Message: "conductor answered malformed JSON: not an object"},
		},
		{
			name:    "wrong type",
			handler: answer(200, `{"name":"qwen","isRunning":"yes"}`),
			wantErr: &pluginapi.LookupError{Status: 200, Message: "conductor answered malformed JSON: field isRunning is a JSON string"},
		},
		{
			name:    "trailing garbage",
			handler: answer(200, `{"name":"qwen"} {}`),
			wantErr: &pluginapi.LookupError{Status: 200, Message: "conductor answered malformed JSON: syntax error at offset 17"},
		},
		{
			name:    "unknown lookup",
			handler: answer(200, `{"name":"qwen","lookup":"MAYBE"}`),
			wantErr: &pluginapi.LookupError{Status: 200, Message: `conductor answered an unknown lookup "MAYBE"`},
		},
		{
			name:    "unreachable",
			url:     plugintest.ClosedURL,
			wantErr: &pluginapi.LookupError{Message: "conductor unreachable: ECONNREFUSED"},
		},
		{
			name:    "timeout",
			handler: plugintest.Hang,
			timeout: 50 * time.Millisecond,
			wantErr: &pluginapi.LookupError{Message: "conductor timed out after 50ms"},
		},
		{
			name: "body stalls",
			handler: func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(200)
				_, _ = w.Write([]byte(`{"name":`))
				w.(http.Flusher).Flush()
				<-r.Context().Done()
			},
			timeout: 50 * time.Millisecond,
			wantErr: &pluginapi.LookupError{Status: 200, Message: "conductor timed out after 50ms"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var srv *fakeConductor
			var url string
			if tt.url != nil {
				url = tt.url(t)
			} else {
				srv = newFakeConductor(t, tt.handler)
				url = srv.URL
			}
			c, _ := newClient(t, conductor.Config{URL: url, Token: testToken, LookupTimeout: tt.timeout})

			var pod pluginapi.Pod
			var err error
			plugintest.Within(t, 2*time.Second, func() { pod, err = c.GetPod(context.Background(), "qwen") })

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
			if err != nil && (strings.Contains(err.Error(), url[len("http://"):]) || strings.Contains(err.Error(), testToken)) {
				t.Errorf("error %q names the conductor or the token", err)
			}
			if srv != nil {
				want := []request{{Method: "GET", Path: "/api/pods/qwen", Accept: "application/json"}}
				if diff := cmp.Diff(want, srv.requests()); diff != "" {
					t.Errorf("requests (-want +got) (no token on lookups):\n%s", diff)
				}
			}
		})
	}
}

func TestGetPodCallerCancels(t *testing.T) {
	srv := newFakeConductor(t, plugintest.Hang)
	c, _ := newClient(t, conductor.Config{URL: srv.URL})
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(20*time.Millisecond, cancel)

	_, err := c.GetPod(ctx, "qwen")

	want := &pluginapi.LookupError{Message: "conductor lookup canceled"}
	var got *pluginapi.LookupError
	if !errors.As(err, &got) {
		t.Fatalf("error %v (%T) is not a *LookupError", err, err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error (-want +got):\n%s", diff)
	}
}

func TestGetPodInvalidName(t *testing.T) {
	srv := newFakeConductor(t, answer(200, `{}`))
	c, _ := newClient(t, conductor.Config{URL: srv.URL})
	for _, name := range []string{"", "Qwen", "../x", "qwen/stop", "qwen-"} {
		_, err := c.GetPod(context.Background(), name)
		want := &pluginapi.LookupError{Message: "invalid pod name"}
		var got *pluginapi.LookupError
		if !errors.As(err, &got) {
			t.Fatalf("GetPod(%q): error %v is not a *LookupError", name, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GetPod(%q) (-want +got):\n%s", name, diff)
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent for invalid names, want 0", n)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  conductor.Config
	}{
		{"empty url", conductor.Config{}},
		{"relative url", conductor.Config{URL: "conductor:8080"}},
		{"no host", conductor.Config{URL: "http://"}},
		{"other scheme", conductor.Config{URL: "ftp://conductor"}},
		{"query", conductor.Config{URL: "http://conductor/?x=1"}},
		{"negative timeout", conductor.Config{URL: "http://conductor", StartTimeout: -time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := conductor.New(tt.cfg); err == nil {
				t.Error("New accepted the config")
			}
		})
	}
}

func TestTokenNeverFormats(t *testing.T) {
	cfg := conductor.Config{URL: "http://conductor", Token: testToken}
	var logged strings.Builder
	slog.New(slog.NewTextHandler(&logged, nil)).Info("config", "token", cfg.Token)
	for _, s := range []string{
		fmt.Sprint(cfg.Token), fmt.Sprintf("%v %+v %#v %s", cfg, cfg, cfg, cfg.Token), logged.String(),
	} {
		if strings.Contains(s, testToken) {
			t.Errorf("the token leaked: %s", s)
		}
	}
}
