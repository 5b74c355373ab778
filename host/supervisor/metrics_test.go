package supervisor_test

import (
	"context"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wakeonchat/wakeonchat/host/metrics"
)

// Every call the host makes to the conductor through the GPU plugin is
// counted once, with its result, whatever the plugin did.
func TestConductorRequestsCounted(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{})
	spec := testSpec(t, nil)
	spec.Metrics = m
	gpu := startGPU(t, spec)
	ctx := context.Background()

	gpu.GetPod(ctx, "qwen")     // found
	gpu.GetPod(ctx, "fail")     // the conductor answered 500
	gpu.GetPod(ctx, "crash")    // crashed twice: one request, not two
	gpu.StartPod(ctx, "qwen")   // 202
	gpu.StartPod(ctx, "broken") // the plugin broke its contract
	gpu.StartPod(ctx, "crash")  // its answer was lost with the plugin
	gpu.StopPod(ctx, "qwen")    // 202
	gpu.Close()
	gpu.StartPod(ctx, "qwen") // closed

	want := `# HELP wakeonchat_conductor_requests_total Requests to the conductor through the GPU plugin, by kind (get, start, stop) and result.
# TYPE wakeonchat_conductor_requests_total counter
wakeonchat_conductor_requests_total{kind="get",result="found"} 1
wakeonchat_conductor_requests_total{kind="get",result="lookup_failed"} 1
wakeonchat_conductor_requests_total{kind="get",result="plugin_error"} 1
wakeonchat_conductor_requests_total{kind="start",result="accepted"} 1
wakeonchat_conductor_requests_total{kind="start",result="lost"} 1
wakeonchat_conductor_requests_total{kind="start",result="plugin_error"} 2
wakeonchat_conductor_requests_total{kind="stop",result="accepted"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "wakeonchat_conductor_requests_total"); err != nil {
		t.Error(err)
	}
}
