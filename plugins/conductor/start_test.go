package conductor_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/plugins/conductor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi/plugintest"
)

// The start and stop requests: URL, method, headers, body, and the token
// only on start and only when configured.
func TestStartStopRequest(t *testing.T) {
	tests := []struct {
		name   string
		token  conductor.Token
		prefix string
		call   func(*conductor.Client, context.Context, string) (pluginapi.StartResult, error)
		want   request
	}{
		{
			name: "start without token",
			call: (*conductor.Client).StartPod,
			want: request{Method: "POST", Path: "/api/pods/qwen/start", Accept: "application/json", ContentType: "application/json", Body: "{}"},
		},
		{
			name:  "start with token",
			token: testToken,
			call:  (*conductor.Client).StartPod,
			want:  request{Method: "POST", Path: "/api/pods/qwen/start", Accept: "application/json", ContentType: "application/json", Token: []string{testToken}, Body: "{}"},
		},
		{
			name:  "stop never sends the token",
			token: testToken,
			call:  (*conductor.Client).StopPod,
			want:  request{Method: "POST", Path: "/api/pods/qwen/stop", Accept: "application/json", ContentType: "application/json", Body: "{}"},
		},
		{
			name:   "base url with a path prefix and a trailing slash",
			prefix: "/rig/conductor/",
			call:   (*conductor.Client).StartPod,
			want:   request{Method: "POST", Path: "/rig/conductor/api/pods/qwen/start", Accept: "application/json", ContentType: "application/json", Body: "{}"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newFakeConductor(t, answer(http.StatusAccepted, `{"ok":true}`))
			c, logs := newClient(t, conductor.Config{URL: srv.URL + tt.prefix, Token: tt.token})

			got, err := tt.call(c, context.Background(), "qwen")
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if diff := cmp.Diff(pluginapi.StartResult{Requested: true, Status: 202}, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]request{tt.want}, srv.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
			if strings.Contains(logs.String(), testToken) {
				t.Errorf("the token reached the log: %s", logs)
			}
		})
	}
}

// Any HTTP answer is a StartResult with its status; only 200 and 202 are
// requested. Each outcome logs exactly one line.
func TestStartPodStatus(t *testing.T) {
	tests := []struct {
		status  int
		token   conductor.Token
		want    pluginapi.StartResult
		wantLog string
	}{
		{status: 200, want: pluginapi.StartResult{Requested: true, Status: 200}, wantLog: "info start accepted"},
		{status: 202, want: pluginapi.StartResult{Requested: true, Status: 202}, wantLog: "info start accepted"},
		{status: 201, want: pluginapi.StartResult{Status: 201}, wantLog: "warn start refused"},
		{status: 302, want: pluginapi.StartResult{Status: 302}, wantLog: "warn start refused"},
		{status: 404, want: pluginapi.StartResult{Status: 404}, wantLog: "warn start refused"},
		{status: 409, want: pluginapi.StartResult{Status: 409}, wantLog: "warn start refused"},
		{status: 503, want: pluginapi.StartResult{Status: 503}, wantLog: "warn start refused"},
		{status: 401, want: pluginapi.StartResult{Status: 401}, wantLog: "warn start refused: the conductor wants RIG_WAKE_TOKEN, which is not set"},
		{status: 403, token: testToken, want: pluginapi.StartResult{Status: 403}, wantLog: "warn start refused: the conductor rejected RIG_WAKE_TOKEN"},
	}
	for _, tt := range tests {
		t.Run(http.StatusText(tt.status), func(t *testing.T) {
			srv := newFakeConductor(t, func(w http.ResponseWriter, r *http.Request) {
				if tt.status == http.StatusFound {
					w.Header().Set("Location", "/elsewhere")
				}
				w.WriteHeader(tt.status)
			})
			c, logs := newClient(t, conductor.Config{URL: srv.URL, Token: tt.token})

			got, err := c.StartPod(context.Background(), "qwen")
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if n := len(srv.requests()); n != 1 {
				t.Errorf("%d requests, want 1 (no redirect followed, no retry)", n)
			}
			if diff := cmp.Diff([]string{tt.wantLog}, logs.Lines(t)); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		})
	}
}

// #684: the conductor's start blocks until the pod runs, so a real wake
// outlives the cap. The request was sent: it is in flight.
func TestStartPodInFlight(t *testing.T) {
	t.Run("the cap fires", func(t *testing.T) {
		srv := newFakeConductor(t, plugintest.Hang)
		c, logs := newClient(t, conductor.Config{URL: srv.URL, StartTimeout: 50 * time.Millisecond})

		var got pluginapi.StartResult
		plugintest.Within(t, 2*time.Second, func() { got, _ = c.StartPod(context.Background(), "qwen") })

		want := pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 50}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
		if n := len(srv.requests()); n != 1 {
			t.Errorf("%d requests, want 1", n)
		}
		want2 := []string{"info start requested: in flight (client timed out; the conductor continues)"}
		if diff := cmp.Diff(want2, logs.Lines(t)); diff != "" {
			t.Errorf("log (-want +got):\n%s", diff)
		}
	})
	t.Run("the caller's sooner deadline", func(t *testing.T) {
		srv := newFakeConductor(t, plugintest.Hang)
		c, _ := newClient(t, conductor.Config{URL: srv.URL, StartTimeout: time.Minute})
		ctx, cancel := context.WithTimeout(context.Background(), 80*time.Millisecond)
		defer cancel()

		got, _ := c.StartPod(ctx, "qwen")

		if !got.Requested || !got.TimedOut || got.Status != 0 || got.Error != "" {
			t.Errorf("result %+v, want requested and timed out", got)
		}
		if got.TimeoutMs <= 0 || got.TimeoutMs > 80 {
			t.Errorf("TimeoutMs %d, want the caller's deadline (0, 80]", got.TimeoutMs)
		}
	})
	t.Run("the caller cancels", func(t *testing.T) {
		entered := make(chan struct{})
		srv := newFakeConductor(t, func(w http.ResponseWriter, r *http.Request) {
			close(entered)
			plugintest.Hang(w, r)
		})
		c, _ := newClient(t, conductor.Config{URL: srv.URL, StartTimeout: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			<-entered
			cancel()
		}()

		var got pluginapi.StartResult
		plugintest.Within(t, 5*time.Second, func() { got, _ = c.StartPod(ctx, "qwen") })

		if !got.Requested || !got.TimedOut || got.Status != 0 || got.Error != "" {
			t.Errorf("result %+v, want requested and timed out", got)
		}
		if got.TimeoutMs < 0 || got.TimeoutMs > 5000 {
			t.Errorf("TimeoutMs %d, want the time waited", got.TimeoutMs)
		}
	})
}

// A request that never got an HTTP answer and is not in flight is
// Requested false with a short class; never an error.
func TestStartPodNotSent(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	tests := []struct {
		name   string
		url    func(testing.TB) string
		client *http.Client
		ctx    context.Context
		want   pluginapi.StartResult
	}{
		{
			name: "connection refused",
			url:  plugintest.ClosedURL,
			want: pluginapi.StartResult{Error: "ECONNREFUSED"},
		},
		{
			name: "dns",
			client: plugintest.Dialing(func(context.Context) (net.Conn, error) {
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "conductor", IsNotFound: true}}
			}),
			want: pluginapi.StartResult{Error: "DNS"},
		},
		{
			name: "host unreachable",
			client: plugintest.Dialing(func(context.Context) (net.Conn, error) {
				return nil, &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.EHOSTUNREACH)}
			}),
			want: pluginapi.StartResult{Error: "EHOSTUNREACH"},
		},
		{
			name: "connect timeout",
			client: plugintest.Dialing(func(ctx context.Context) (net.Conn, error) {
				<-ctx.Done()
				return nil, ctx.Err()
			}),
			want: pluginapi.StartResult{Error: "ETIMEDOUT"},
		},
		{
			name: "unclassified",
			client: plugintest.Dialing(func(context.Context) (net.Conn, error) {
				return nil, errors.New("weird failure at http://conductor.internal:8080/")
			}),
			want: pluginapi.StartResult{Error: "transport error"},
		},
		{
			name: "canceled before sending",
			ctx:  canceled,
			want: pluginapi.StartResult{Error: "canceled"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := "http://conductor.internal:8080"
			if tt.url != nil {
				url = tt.url(t)
			}
			ctx := tt.ctx
			if ctx == nil {
				ctx = context.Background()
			}
			c, logs := newClient(t, conductor.Config{URL: url, HTTPClient: tt.client, StartTimeout: 50 * time.Millisecond})

			got, err := c.StartPod(ctx, "qwen")
			if err != nil {
				t.Fatalf("error: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("result (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"warn start failed"}, logs.Lines(t)); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
			if strings.Contains(logs.String(), "conductor.internal") || strings.Contains(logs.String(), "127.0.0.1") {
				t.Errorf("the log names the conductor: %s", logs)
			}
		})
	}
}

func TestStartStopInvalidName(t *testing.T) {
	srv := newFakeConductor(t, answer(http.StatusAccepted, ""))
	c, _ := newClient(t, conductor.Config{URL: srv.URL, Token: testToken})
	for _, name := range []string{"", "Qwen", "../start", "qwen/../../x", "-qwen", "qwen-", "q_w", strings.Repeat("a", 64)} {
		for op, call := range map[string]func(context.Context, string) (pluginapi.StartResult, error){
			"start": c.StartPod,
			"stop":  c.StopPod,
		} {
			got, err := call(context.Background(), name)
			if err != nil {
				t.Fatalf("%s %q: error %v", op, name, err)
			}
			if diff := cmp.Diff(pluginapi.StartResult{Error: "invalid pod name"}, got); diff != "" {
				t.Errorf("%s %q (-want +got):\n%s", op, name, diff)
			}
		}
	}
	if n := len(srv.requests()); n != 0 {
		t.Errorf("%d requests sent for invalid names, want 0", n)
	}
}
