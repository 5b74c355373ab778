package supervisor_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/supervisor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

const (
	wakeToken = "rig-wake-token-71d0c2"
	modelKey  = "sk-model-key-9e8d7c"
)

// seenRequest is what a fake server saw.
type seenRequest struct {
	Method string
	Path   string
	Header string // the header under test
	Body   string
}

type fakeServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []seenRequest
}

// newFakeServer records header on every request and answers with handler.
func newFakeServer(t *testing.T, header string, handler func(w http.ResponseWriter, r *http.Request, body string)) *fakeServer {
	t.Helper()
	f := &fakeServer{}
	f.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.seen = append(f.seen, seenRequest{Method: r.Method, Path: r.URL.Path, Header: r.Header.Get(header), Body: string(b)})
		f.mu.Unlock()
		handler(w, r, string(b))
	}))
	t.Cleanup(f.Close)
	return f
}

func (f *fakeServer) requests() []seenRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]seenRequest(nil), f.seen...)
}

func startGPU(t *testing.T, spec supervisor.Spec) *supervisor.GPU {
	t.Helper()
	g := supervisor.NewGPU(spec)
	t.Cleanup(func() { _ = g.Close() })
	if err := g.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return g
}

func startProvider(t *testing.T, spec supervisor.Spec) *supervisor.Provider {
	t.Helper()
	p := supervisor.NewProvider(spec)
	t.Cleanup(func() { _ = p.Close() })
	if err := p.Start(context.Background()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	return p
}

// Both real plugin binaries against fake conductor and model servers.
func TestEndToEndConductor(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, "X-Rig-Operator-Token", func(w http.ResponseWriter, r *http.Request, _ string) {
		switch r.Method + " " + r.URL.Path {
		case "GET /api/pods/qwen":
			_, _ = io.WriteString(w, `{"name":"qwen","status":"RUNNING","isRunning":true,"proxyUrl":"https://p-8000.proxy","podId":"p","readySince":"2026-09-09T12:33:56Z"}`)
		case "POST /api/pods/qwen/start":
			w.WriteHeader(http.StatusAccepted)
		case "POST /api/pods/qwen/stop":
			w.WriteHeader(http.StatusOK)
		default:
			w.WriteHeader(http.StatusInternalServerError)
		}
	})
	logs := newRecorder()
	gpu := startGPU(t, supervisor.Spec{
		Name: "conductor",
		Path: conductorBin,
		Env: []string{
			pluginapi.EnvConductorURL + "=" + srv.URL,
			pluginapi.EnvLookupTimeout + "=2s",
			pluginapi.EnvStartTimeout + "=2s",
			pluginapi.EnvWakeToken + "=" + wakeToken,
		},
		Secrets: []string{wakeToken},
		Logger:  slog.New(logs),
	})
	ctx := context.Background()

	pod, err := gpu.GetPod(ctx, "qwen")
	if err != nil {
		t.Fatalf("GetPod: %v", err)
	}
	want := pluginapi.Pod{Name: "qwen", Status: "RUNNING", IsRunning: true, ProxyURL: "https://p-8000.proxy", PodID: "p",
		ReadySince: time.Date(2026, 9, 9, 12, 33, 56, 0, time.UTC), Lookup: pluginapi.LookupFound}
	if diff := cmp.Diff(want, pod); diff != "" {
		t.Errorf("GetPod (-want +got):\n%s", diff)
	}

	_, err = gpu.GetPod(ctx, "broken")
	var le *pluginapi.LookupError
	if !errors.As(err, &le) {
		t.Fatalf("GetPod(broken): error %v (%T) is not a *LookupError", err, err)
	}
	if diff := cmp.Diff(&pluginapi.LookupError{Status: 500, Message: "conductor answered status 500"}, le); diff != "" {
		t.Errorf("GetPod(broken) (-want +got):\n%s", diff)
	}

	start, err := gpu.StartPod(ctx, "qwen")
	if err != nil {
		t.Fatalf("StartPod: %v", err)
	}
	if diff := cmp.Diff(pluginapi.StartResult{Requested: true, Status: 202}, start); diff != "" {
		t.Errorf("StartPod (-want +got):\n%s", diff)
	}
	stop, err := gpu.StopPod(ctx, "qwen")
	if err != nil {
		t.Fatalf("StopPod: %v", err)
	}
	if diff := cmp.Diff(pluginapi.StartResult{Requested: true, Status: 200}, stop); diff != "" {
		t.Errorf("StopPod (-want +got):\n%s", diff)
	}

	// The token arrives on start, and only there.
	wantReqs := []seenRequest{
		{Method: "GET", Path: "/api/pods/qwen"},
		{Method: "GET", Path: "/api/pods/broken"},
		{Method: "POST", Path: "/api/pods/qwen/start", Header: wakeToken, Body: "{}"},
		{Method: "POST", Path: "/api/pods/qwen/stop", Body: "{}"},
	}
	if diff := cmp.Diff(wantReqs, srv.requests()); diff != "" {
		t.Errorf("conductor requests (-want +got):\n%s", diff)
	}

	// The plugin's outcome line reaches the host's logger at its level.
	accepted := logs.await(t, "start accepted")
	if len(accepted) != 1 {
		t.Fatalf("%d \"start accepted\" records, want 1; all: %v", len(accepted), logs.all())
	}
	if got := accepted[0]; got.Level != slog.LevelInfo || got.Attrs["pod"] != "qwen" || got.Attrs["plugin"] != "conductor" {
		t.Errorf("start accepted record %+v, want info with pod=qwen plugin=conductor", got)
	}
	if s := fmt.Sprint(logs.all()); strings.Contains(s, wakeToken) {
		t.Errorf("the wake token reached the host's log: %s", s)
	}
}

func TestEndToEndProvider(t *testing.T) {
	t.Parallel()
	srv := newFakeServer(t, "Authorization", func(w http.ResponseWriter, r *http.Request, body string) {
		if strings.Contains(body, `"model":"bad"`) {
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html>502</html>")
			return
		}
		_, _ = io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":"The GPU is up."}}]}`)
	})
	provider := startProvider(t, supervisor.Spec{
		Name: "openai",
		Path: openaiBin,
		Env: []string{
			pluginapi.EnvAPIKeyEnv + "=MODEL_API_KEY",
			"MODEL_API_KEY=" + modelKey,
			pluginapi.EnvCompletionTimeout + "=5s",
		},
		Secrets: []string{modelKey},
	})
	ctx := context.Background()
	req := pluginapi.CompletionRequest{Model: "qwen", Messages: []pluginapi.Message{{Role: "user", Content: "Is it up?"}}}

	got, err := provider.Complete(ctx, srv.URL+"/v1", req)
	if err != nil {
		t.Fatalf("Complete: %v", err)
	}
	if diff := cmp.Diff("The GPU is up.", got); diff != "" {
		t.Errorf("Complete (-want +got):\n%s", diff)
	}

	_, err = provider.Complete(ctx, srv.URL+"/v1", pluginapi.CompletionRequest{Model: "bad"})
	var ce *pluginapi.CompletionError
	if !errors.As(err, &ce) {
		t.Fatalf("error %v (%T) is not a *CompletionError", err, err)
	}
	if diff := cmp.Diff(&pluginapi.CompletionError{Status: 502, Message: "HTTP 502 Bad Gateway"}, ce); diff != "" {
		t.Errorf("Complete(bad) (-want +got):\n%s", diff)
	}

	wantReqs := []seenRequest{
		{Method: "POST", Path: "/v1/chat/completions", Header: "Bearer " + modelKey,
			Body: `{"model":"qwen","messages":[{"role":"user","content":"Is it up?"}]}`},
		{Method: "POST", Path: "/v1/chat/completions", Header: "Bearer " + modelKey,
			Body: `{"model":"bad","messages":[]}`},
	}
	if diff := cmp.Diff(wantReqs, srv.requests()); diff != "" {
		t.Errorf("model requests (-want +got):\n%s", diff)
	}
}

// A 200's body says how many bytes came with the head, through the
// supervisor as from the plugin: the door sends its head with them.
func TestEndToEndProviderBodyBuffered(t *testing.T) {
	t.Parallel()
	const answer = `{"choices":[{"message":{"role":"assistant","content":"up"}}]}`
	srv := newFakeServer(t, "Authorization", func(w http.ResponseWriter, _ *http.Request, _ string) {
		_, _ = io.WriteString(w, answer)
	})
	provider := startProvider(t, supervisor.Spec{Name: "openai", Path: openaiBin})
	resp, err := provider.Stream(context.Background(), pluginapi.StreamRequest{Endpoint: srv.URL + "/v1", Body: []byte(`{"model":"qwen"}`)})
	if err != nil {
		t.Fatalf("Stream: %v", err)
	}
	defer resp.Body.Close()
	b, ok := resp.Body.(interface{ Buffered() int })
	if !ok {
		t.Fatalf("the body (%T) does not say what it holds", resp.Body)
	}
	n := b.Buffered()
	buf := make([]byte, 1024)
	got, err := resp.Body.Read(buf)
	if err != nil || string(buf[:got]) != answer {
		t.Fatalf("read %q, %v", buf[:got], err)
	}
	if n != 0 && n != got {
		t.Errorf("Buffered() = %d, but the read that followed took %d bytes", n, got)
	}
}
