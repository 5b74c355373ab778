package supervisor_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/supervisor"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// A probe's outcome is the plugin's ProbeResult, scrubbed; every way the
// probe can learn nothing about the model is an error with a fixed text,
// and a crash relaunches the plugin, as for any call.
func TestProbe(t *testing.T) {
	t.Parallel()
	provider := startProvider(t, testSpec(t, nil))
	ctx := context.Background()
	tests := []struct {
		endpoint string
		want     pluginapi.ProbeResult
		wantErr  string
	}{
		{endpoint: "http://model/v1", want: pluginapi.ProbeResult{Answered: true, Status: 200}},
		{endpoint: "http://model/loading", want: pluginapi.ProbeResult{Status: 502, Message: "HTTP 502 from [redacted]"}},
		{endpoint: "http://model/broken", wantErr: "provider plugin failed"},
		{endpoint: "http://model/crash", wantErr: "provider plugin crashed"},
		// The relaunch is due: the call waits for it.
		{endpoint: "http://model/v1", want: pluginapi.ProbeResult{Answered: true, Status: 200}},
	}
	for _, tt := range tests {
		got, err := provider.Probe(ctx, tt.endpoint)
		if gotErr := errText(err); gotErr != tt.wantErr {
			t.Errorf("Probe(%s): error %q, want %q", tt.endpoint, gotErr, tt.wantErr)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Probe(%s) (-want +got):\n%s", tt.endpoint, diff)
		}
	}

	if err := provider.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := provider.Probe(ctx, "http://model/v1"); errText(err) != "provider plugin closed" || !errors.Is(err, supervisor.ErrClosed) {
		t.Errorf("Probe after Close: %v, want provider plugin closed", err)
	}
}

// A plugin that never answers a probe, whatever its ctx says, holds the
// probe no longer than the caller's deadline, and is not taken for a crash.
func TestProbeHangHonoursDeadline(t *testing.T) {
	t.Parallel()
	logs := newRecorder()
	provider := startProvider(t, testSpec(t, logs))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()

	began := time.Now()
	_, err := provider.Probe(ctx, "http://model/hang")

	if !errors.Is(err, context.DeadlineExceeded) || errText(err) != "provider plugin probe: context deadline exceeded" {
		t.Errorf("Probe(hang): %v, want provider plugin probe: context deadline exceeded", err)
	}
	if took := time.Since(began); took > 2*time.Second {
		t.Errorf("Probe(hang) took %v", took)
	}
	if r, err := provider.Probe(context.Background(), "http://model/v1"); err != nil || !r.Answered {
		t.Errorf("Probe after the hang: %+v, %v; want answered", r, err)
	}
	if got := logs.find("plugin crashed during a call"); len(got) != 0 {
		t.Errorf("a hang was taken for a crash: %+v", got)
	}
}

// The real OpenAI-compatible plugin probes GET {endpoint}/models with the
// key, and only the model list answers.
func TestEndToEndProbe(t *testing.T) {
	t.Parallel()
	var loaded atomic.Bool
	srv := newFakeServer(t, "Authorization", func(w http.ResponseWriter, r *http.Request, _ string) {
		if !loaded.Load() {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusBadGateway)
			_, _ = io.WriteString(w, "<html>502 "+modelKey+"</html>")
			return
		}
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"qwen","object":"model"}]}`)
	})
	provider := startProvider(t, supervisor.Spec{
		Name:    "openai",
		Path:    openaiBin,
		Env:     []string{pluginapi.EnvAPIKeyEnv + "=MODEL_API_KEY", "MODEL_API_KEY=" + modelKey},
		Secrets: []string{modelKey},
	})
	ctx := context.Background()

	got, err := provider.Probe(ctx, srv.URL+"/v1")
	if err != nil {
		t.Fatalf("Probe while loading: %v", err)
	}
	if diff := cmp.Diff(pluginapi.ProbeResult{Status: 502, Message: "HTTP 502 Bad Gateway"}, got); diff != "" {
		t.Errorf("Probe while loading (-want +got):\n%s", diff)
	}
	loaded.Store(true)
	got, err = provider.Probe(ctx, srv.URL+"/v1")
	if err != nil {
		t.Fatalf("Probe once loaded: %v", err)
	}
	if diff := cmp.Diff(pluginapi.ProbeResult{Answered: true, Status: 200}, got); diff != "" {
		t.Errorf("Probe once loaded (-want +got):\n%s", diff)
	}
	want := []seenRequest{
		{Method: "GET", Path: "/v1/models", Header: "Bearer " + modelKey},
		{Method: "GET", Path: "/v1/models", Header: "Bearer " + modelKey},
	}
	if diff := cmp.Diff(want, srv.requests()); diff != "" {
		t.Errorf("model requests (-want +got):\n%s", diff)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
