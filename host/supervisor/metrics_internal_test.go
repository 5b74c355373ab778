package supervisor

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// A plugin that exits is counted when a relaunch fails and when one works,
// and not for the launch that started it.
func TestRelaunchesCounted(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{})
	m.WatchPlugin("conductor", func() bool { return true })
	synctest.Test(t, func(t *testing.T) {
		// Launch 1 runs, relaunch 1 (launch 2) fails, relaunch 2 runs.
		f := newFakeLauncher(func(n int) (bool, time.Duration) { return n == 2, forever })
		p := newSupervised(Spec{Name: "conductor", Metrics: m}, "gpu", f.launch)
		defer p.close()
		if err := p.start(context.Background()); err != nil {
			t.Fatal(err)
		}
		f.kill()
		time.Sleep(firstRelaunchDelay + 2*firstRelaunchDelay)
		synctest.Wait()
		if !p.ready() || f.count() != 3 {
			t.Fatalf("ready %v after %d launches, want ready after 3", p.ready(), f.count())
		}
	})
	want := `# HELP wakeonchat_plugin_restarts_total Plugin processes relaunched after they exited.
# TYPE wakeonchat_plugin_restarts_total counter
wakeonchat_plugin_restarts_total{plugin="conductor"} 1
# HELP wakeonchat_plugin_relaunch_failures_total Relaunches of an exited plugin that failed; the next one waits twice as long, up to 30 s.
# TYPE wakeonchat_plugin_relaunch_failures_total counter
wakeonchat_plugin_relaunch_failures_total{plugin="conductor"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"wakeonchat_plugin_restarts_total", "wakeonchat_plugin_relaunch_failures_total"); err != nil {
		t.Error(err)
	}
}

func TestGetResult(t *testing.T) {
	t.Parallel()
	live, gone := context.Background(), cancelled()
	tests := []struct {
		name string
		ctx  context.Context
		pod  pluginapi.Pod
		err  error
		want string
	}{
		{"found", live, pluginapi.Pod{Status: "EXITED", Lookup: pluginapi.LookupFound}, nil, metrics.ConductorFound},
		{"found, lookup left empty", live, pluginapi.Pod{Status: "RUNNING"}, nil, metrics.ConductorFound},
		{"not found", live, pluginapi.Pod{Lookup: pluginapi.LookupNotFound}, nil, metrics.ConductorNotFound},
		{"unreadable", live, pluginapi.Pod{Lookup: pluginapi.LookupUnreadable}, nil, metrics.ConductorUnreadable},
		{"the conductor failed", live, pluginapi.Pod{}, &pluginapi.LookupError{Status: 500}, metrics.ConductorLookupFailed},
		{"the caller gave up", gone, pluginapi.Pod{}, context.Canceled, metrics.ConductorCanceled},
		{"the plugin is down", live, pluginapi.Pod{}, ErrNotRunning, metrics.ConductorPluginError},
		{"closed", live, pluginapi.Pod{}, ErrClosed, metrics.ConductorPluginError},
	}
	for _, tt := range tests {
		if got := getResult(tt.ctx, tt.pod, tt.err); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestStartResult(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		r    pluginapi.StartResult
		// pluginFailed is lifecycleCall's word: the supervisor built r.
		pluginFailed bool
		err          error
		want         string
	}{
		{"202", pluginapi.StartResult{Requested: true, Status: 202}, false, nil, metrics.ConductorAccepted},
		{"the client's cap fired", pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 3000}, false, nil, metrics.ConductorInFlight},
		{"409", pluginapi.StartResult{Status: 409}, false, nil, metrics.ConductorRefused},
		{"401", pluginapi.StartResult{Status: 401}, false, nil, metrics.ConductorRefused},
		{"not sent", pluginapi.StartResult{Error: "ECONNREFUSED"}, false, nil, metrics.ConductorNotSent},
		{"cut before it was written whole", pluginapi.StartResult{Error: "ECONNRESET"}, false, nil, metrics.ConductorNotSent},
		{"cut after it was written whole", pluginapi.StartResult{Requested: true, Lost: true, Error: "ECONNRESET"}, false, nil, metrics.ConductorLost},
		{"plugin unavailable", pluginapi.StartResult{Error: errPluginUnavailable}, true, nil, metrics.ConductorPluginError},
		{"plugin error", pluginapi.StartResult{Error: errPluginError}, true, nil, metrics.ConductorPluginError},
		{"plugin closed", pluginapi.StartResult{Error: errPluginClosed}, true, nil, metrics.ConductorPluginError},
		{"crashed during the call", pluginapi.StartResult{}, false, ErrCrashedDuringCall, metrics.ConductorLost},
		{"the host stopped waiting", pluginapi.StartResult{}, false, context.DeadlineExceeded, metrics.ConductorLost},
		// A plugin's own words are its own, even when they are the
		// supervisor's.
		{"the plugin's own plugin error", pluginapi.StartResult{Error: errPluginError}, false, nil, metrics.ConductorNotSent},
		{"the plugin's own plugin closed, refused", pluginapi.StartResult{Status: 503, Error: errPluginClosed}, false, nil, metrics.ConductorRefused},
	}
	for _, tt := range tests {
		if got := startResult(tt.r, tt.pluginFailed, tt.err); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

// wordyGPU is a GPU plugin whose every start and stop answers result.
type wordyGPU struct {
	pluginapi.GPU // nil: only StartPod and StopPod are called
	result        pluginapi.StartResult
}

func (g wordyGPU) StartPod(context.Context, string) (pluginapi.StartResult, error) {
	return g.result, nil
}

func (g wordyGPU) StopPod(context.Context, string) (pluginapi.StartResult, error) {
	return g.result, nil
}

// A plugin that answers a start in the supervisor's own words is counted
// by what it answered: not sent, not a plugin error.
func TestStartInThePluginsOwnWordsCounted(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{})
	r := pluginapi.StartResult{Error: errPluginError}
	launch := func(context.Context) (*instance, error) {
		exited := make(chan struct{})
		return &instance{impl: wordyGPU{result: r}, exited: exited, kill: sync.OnceFunc(func() { close(exited) })}, nil
	}
	gpu := &GPU{launcher{newSupervised(Spec{Name: "conductor", Metrics: m}, pluginapi.KindGPU, launch)}}
	defer gpu.p.close()

	for _, call := range []func(context.Context, string) (pluginapi.StartResult, error){gpu.StartPod, gpu.StopPod} {
		got, err := call(context.Background(), "qwen")
		if err != nil {
			t.Fatalf("call: %v", err)
		}
		if diff := cmp.Diff(r, got); diff != "" {
			t.Errorf("result (-want +got):\n%s", diff)
		}
	}
	want := `# HELP wakeonchat_conductor_requests_total Requests to the conductor through the GPU plugin, by kind (get, start, stop) and result.
# TYPE wakeonchat_conductor_requests_total counter
wakeonchat_conductor_requests_total{kind="start",result="not_sent"} 1
wakeonchat_conductor_requests_total{kind="stop",result="not_sent"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "wakeonchat_conductor_requests_total"); err != nil {
		t.Error(err)
	}
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("gone"))
	return ctx
}
