package runpod_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/go-plugin"

	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
	"github.com/wakeonchat/wakeonchat/plugins/runpod"
	"github.com/wakeonchat/wakeonchat/plugins/runpod/runpodfake"
)

// The plugin served over real gRPC, as the host dispenses it, against the
// fake: a wake from EXITED to RUNNING, a lookup error and a stop cross the
// boundary as the same values.
func TestGRPCRoundTrip(t *testing.T) {
	t.Parallel()
	fake := runpodfake.New(testKey)
	fake.BootTime = time.Hour
	fake.AddPod(podID, runpodfake.Exited)
	c, _ := newClient(t, runpod.Config{URL: serve(t, fake, nil), Pods: map[string]string{"qwen": podID}})
	client, _ := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{pluginapi.KindGPU: &pluginapi.GPUPlugin{Impl: c}})
	t.Cleanup(func() { _ = client.Close() })
	raw, err := client.Dispense(pluginapi.KindGPU)
	if err != nil {
		t.Fatal(err)
	}
	gpu := raw.(pluginapi.GPU)
	ctx := context.Background()

	type step struct {
		Pod    pluginapi.Pod
		Result pluginapi.StartResult
		Err    string
	}
	var got []step
	read := func() {
		pod, err := gpu.GetPod(ctx, "qwen")
		s := step{Pod: pod}
		var le *pluginapi.LookupError
		if errors.As(err, &le) {
			s.Err = le.Message
		} else if err != nil {
			s.Err = "not a LookupError: " + err.Error()
		}
		got = append(got, s)
	}
	act := func(f func(context.Context, string) (pluginapi.StartResult, error)) {
		r, err := f(ctx, "qwen")
		s := step{Result: r}
		if err != nil {
			s.Err = err.Error()
		}
		got = append(got, s)
	}

	read()
	act(gpu.StartPod)
	read()
	fake.AddPod(podID, runpodfake.Running)
	read()
	act(gpu.StartPod) // a second wake joins
	fake.Fail(runpodfake.Get, podID, runpodfake.RateLimited(3))
	read()
	act(gpu.StopPod)
	read()

	found := func(status string) pluginapi.Pod {
		return pluginapi.Pod{Name: "qwen", Status: status, PodID: podID, Lookup: pluginapi.LookupFound}
	}
	running := found("RUNNING")
	running.IsRunning, running.ProxyURL = true, "https://"+podID+"-8000.proxy.runpod.net"
	want := []step{
		{Pod: found("EXITED")},
		{Result: pluginapi.StartResult{Requested: true, Status: 200}},
		{Pod: found("STARTING")},
		{Pod: running},
		{Result: pluginapi.StartResult{Requested: true, Status: 409}},
		{Err: "runpod answered status 429 (rate limited)"},
		{Result: pluginapi.StartResult{Requested: true, Status: 200}},
		{Pod: found("EXITED")},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("steps (-want +got):\n%s", diff)
	}
}
