package supervisor

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// A plugin that exits is counted when a relaunch fails and when one works,
// and not for the launch that started it.
func TestRelaunchesCounted(t *testing.T) {
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
	tests := []struct {
		name string
		r    pluginapi.StartResult
		err  error
		want string
	}{
		{"202", pluginapi.StartResult{Requested: true, Status: 202}, nil, metrics.ConductorAccepted},
		{"the client's cap fired", pluginapi.StartResult{Requested: true, TimedOut: true, TimeoutMs: 3000}, nil, metrics.ConductorInFlight},
		{"409", pluginapi.StartResult{Status: 409}, nil, metrics.ConductorRefused},
		{"401", pluginapi.StartResult{Status: 401}, nil, metrics.ConductorRefused},
		{"not sent", pluginapi.StartResult{Error: "ECONNREFUSED"}, nil, metrics.ConductorNotSent},
		{"cut before it was written whole", pluginapi.StartResult{Error: "ECONNRESET"}, nil, metrics.ConductorNotSent},
		{"cut after it was written whole", pluginapi.StartResult{Requested: true, Lost: true, Error: "ECONNRESET"}, nil, metrics.ConductorLost},
		{"plugin unavailable", pluginapi.StartResult{Error: errPluginUnavailable}, nil, metrics.ConductorPluginError},
		{"plugin error", pluginapi.StartResult{Error: errPluginError}, nil, metrics.ConductorPluginError},
		{"plugin closed", pluginapi.StartResult{Error: errPluginClosed}, nil, metrics.ConductorPluginError},
		{"crashed during the call", pluginapi.StartResult{}, ErrCrashedDuringCall, metrics.ConductorLost},
		{"the host stopped waiting", pluginapi.StartResult{}, context.DeadlineExceeded, metrics.ConductorLost},
	}
	for _, tt := range tests {
		if got := startResult(tt.r, tt.err); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
}

func cancelled() context.Context {
	ctx, cancel := context.WithCancelCause(context.Background())
	cancel(errors.New("gone"))
	return ctx
}
