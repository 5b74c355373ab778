package sim_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/sim"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	openai "github.com/wakeonchat/wakeonchat/plugins/provider-openai"
)

// TestProbe: the provider plugin's probe (GET {endpoint}/models) gets no
// answer from the simulated pod until its model is loaded: the proxy's 404
// before the pod runs and once it has stopped, its 502 page while the model
// loads; and probing does not keep the pod up.
func TestProbe(t *testing.T) {
	clk := sim.NewManualClock(t0)
	s := startSim(t, sim.Config{Clock: clk, NoStartHold: true})
	do(t, http.MethodPost, s.URL()+"/api/pods/qwen/start", "{}")
	endpoint := s.URL() + "/proxy/pod-1/v1" // the proxy URL the conductor reports once RUNNING, and the provider's path
	client, err := openai.New(openai.Config{APIKey: "any"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		after time.Duration
		want  pluginapi.ProbeResult
	}{
		{time.Minute, pluginapi.ProbeResult{Status: 404, Message: "HTTP 404 Not Found"}},       // CREATED
		{7 * time.Minute, pluginapi.ProbeResult{Status: 502, Message: "HTTP 502 Bad Gateway"}}, // RUNNING, loading
		{9*time.Minute - time.Millisecond, pluginapi.ProbeResult{Status: 502, Message: "HTTP 502 Bad Gateway"}},
		{9 * time.Minute, pluginapi.ProbeResult{Answered: true, Status: 200}},                   // ready
		{24*time.Minute - time.Millisecond, pluginapi.ProbeResult{Answered: true, Status: 200}}, // probes are no activity
		{24 * time.Minute, pluginapi.ProbeResult{Status: 404, Message: "HTTP 404 Not Found"}},   // the idle stop
	}
	for _, tt := range tests {
		clk.Set(t0.Add(tt.after))
		got, err := client.Probe(context.Background(), endpoint)
		if err != nil {
			t.Fatalf("Probe at +%v: %v", tt.after, err)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("Probe at +%v (-want +got):\n%s", tt.after, diff)
		}
	}
}
