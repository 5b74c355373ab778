package metrics_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/metrics"
	"github.com/wakeonchat/wakeonchat/machines"
)

var t0 = time.Date(2026, 9, 9, 12, 26, 25, 0, time.UTC)

// allStates are the pod lifecycle's states, as the host passes them.
func allStates(t *testing.T) []engine.State {
	t.Helper()
	pod, err := machines.NewPod(machines.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	return pod.Table().States
}

func newMetrics(t *testing.T, pods ...string) *metrics.Metrics {
	t.Helper()
	return metrics.New(metrics.Options{Pods: pods, States: allStates(t)})
}

// rec is a record of pod qwen.
func rec(state engine.State, wake time.Time) machines.Record {
	return machines.Record{Pod: "qwen", State: state, WakeRequestedAt: wake}
}

// change is one stored change, as wake.Config.Changed gives it.
type change struct {
	before, after machines.Record
	at            time.Time
}

// phaseSample is what a histogram series holds.
type phaseSample struct {
	Count uint64
	Sum   float64
}

// phases reads wakeonchat_wake_phase_seconds by "pod/phase".
func phases(t *testing.T, m *metrics.Metrics) map[string]phaseSample {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]phaseSample{}
	for _, mf := range mfs {
		if mf.GetName() != "wakeonchat_wake_phase_seconds" {
			continue
		}
		for _, s := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range s.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			h := s.GetHistogram()
			got[labels["pod"]+"/"+labels["phase"]] = phaseSample{Count: h.GetSampleCount(), Sum: h.GetSampleSum()}
		}
	}
	return got
}

// stateLines is wakeonchat_pod_state of qwen in the exposition format,
// with current as its 1.
func stateLines(t *testing.T, current engine.State) string {
	var b strings.Builder
	b.WriteString("# HELP wakeonchat_pod_state The pod lifecycle state of each pod: 1 for its current state, 0 for the others.\n")
	b.WriteString("# TYPE wakeonchat_pod_state gauge\n")
	for _, s := range allStates(t) {
		v := 0
		if s == current {
			v = 1
		}
		fmt.Fprintf(&b, "wakeonchat_pod_state{pod=%q,state=%q} %d\n", "qwen", s, v)
	}
	return b.String()
}

func wakeLines(ready, refused, startFailed, neverReady int) string {
	return fmt.Sprintf(`# HELP wakeonchat_wakes_total Wakes whose outcome became known, by pod and outcome (ready, refused, start-failed, never-ready).
# TYPE wakeonchat_wakes_total counter
wakeonchat_wakes_total{outcome="never-ready",pod="qwen"} %d
wakeonchat_wakes_total{outcome="ready",pod="qwen"} %d
wakeonchat_wakes_total{outcome="refused",pod="qwen"} %d
wakeonchat_wakes_total{outcome="start-failed",pod="qwen"} %d
`, neverReady, ready, refused, startFailed)
}

// TestRecordChanged feeds sequences of stored changes, as the coordinator
// makes them, and checks the state, the outcomes counted and the phases
// timed after each sequence.
func TestRecordChanged(t *testing.T) {
	w1, w2 := t0, t0.Add(2*time.Hour)
	tests := []struct {
		name    string
		seed    *machines.Record // a stored record at start-up
		changes []change
		state   engine.State
		wakes   [4]int // ready, refused, start-failed, never-ready
		phases  map[string]phaseSample
	}{
		{
			name:   "nothing happened: asleep, every outcome at zero",
			state:  machines.Asleep,
			phases: map[string]phaseSample{},
		},
		{
			name: "the first live wake: waking, loading at 6m40s, ready at 9m10s",
			changes: []change{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1), w1},
				{rec(machines.Waking, w1), rec(machines.Loading, w1), w1.Add(6*time.Minute + 40*time.Second)},
				{rec(machines.Loading, w1), rec(machines.Loading, w1), w1.Add(7 * time.Minute)}, // another fact changed
				{rec(machines.Loading, w1), rec(machines.Ready, w1), w1.Add(9*time.Minute + 10*time.Second)},
			},
			state: machines.Ready,
			wakes: [4]int{1, 0, 0, 0},
			phases: map[string]phaseSample{
				"qwen/requested_to_running": {Count: 1, Sum: 400},
				"qwen/running_to_answering": {Count: 1, Sum: 150},
			},
		},
		{
			name: "one read saw the pod up and answering: running_to_answering is 0",
			changes: []change{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1), w1},
				{rec(machines.Waking, w1), rec(machines.Ready, w1), w1.Add(9 * time.Minute)},
			},
			state: machines.Ready,
			wakes: [4]int{1, 0, 0, 0},
			phases: map[string]phaseSample{
				"qwen/requested_to_running": {Count: 1, Sum: 540},
				"qwen/running_to_answering": {Count: 1, Sum: 0},
			},
		},
		{
			name: "stuck, then ready: the wake counts once, as ready",
			changes: []change{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1), w1},
				{rec(machines.Waking, w1), rec(machines.Loading, w1), w1.Add(5 * time.Minute)},
				{rec(machines.Loading, w1), rec(machines.Stuck, w1), w1.Add(20 * time.Minute)},
				{rec(machines.Stuck, w1), rec(machines.Ready, w1), w1.Add(25 * time.Minute)},
			},
			state: machines.Ready,
			wakes: [4]int{1, 0, 0, 0},
			phases: map[string]phaseSample{
				"qwen/requested_to_running": {Count: 1, Sum: 300},
				"qwen/running_to_answering": {Count: 1, Sum: 1200},
			},
		},
		{
			name: "ready, stopped, crashed on a later boot: still one ready wake",
			changes: []change{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1), w1},
				{rec(machines.Waking, w1), rec(machines.Ready, w1), w1.Add(9 * time.Minute)},
				{rec(machines.Ready, w1), rec(machines.Crashed, w1), w1.Add(20 * time.Minute)},
				{rec(machines.Crashed, w1), rec(machines.Ready, w1), w1.Add(30 * time.Minute)},
				{rec(machines.Ready, w1), rec(machines.Stopped, w1), w1.Add(50 * time.Minute)},
			},
			state: machines.Stopped,
			wakes: [4]int{1, 0, 0, 0},
			phases: map[string]phaseSample{
				"qwen/requested_to_running": {Count: 1, Sum: 540},
				"qwen/running_to_answering": {Count: 1, Sum: 0},
			},
		},
		{
			name: "a second wake after the stop is refused: one of each",
			changes: []change{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1), w1},
				{rec(machines.Waking, w1), rec(machines.Ready, w1), w1.Add(9 * time.Minute)},
				{rec(machines.Ready, w1), rec(machines.Stopped, w1), w1.Add(30 * time.Minute)},
				{rec(machines.Stopped, w1), rec(machines.Waking, w2), w2},
				{rec(machines.Waking, w2), rec(machines.Refused, w2), w2.Add(time.Second)},
			},
			state: machines.Refused,
			wakes: [4]int{1, 1, 0, 0},
			phases: map[string]phaseSample{
				"qwen/requested_to_running": {Count: 1, Sum: 540},
				"qwen/running_to_answering": {Count: 1, Sum: 0},
			},
		},
		{
			name: "a start that never got through, then a wake that was never ready",
			changes: []change{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1), w1},
				{rec(machines.Waking, w1), rec(machines.StartFailed, w1), w1},
				{rec(machines.StartFailed, w1), rec(machines.Waking, w2), w2},
				{rec(machines.Waking, w2), rec(machines.Loading, w2), w2.Add(7 * time.Minute)},
				{rec(machines.Loading, w2), rec(machines.NeverReady, w2), w2.Add(35 * time.Minute)},
			},
			state: machines.NeverReady,
			wakes: [4]int{0, 0, 1, 1},
			phases: map[string]phaseSample{
				"qwen/requested_to_running": {Count: 1, Sum: 420},
			},
		},
		{
			name: "rewoken beyond the window while loading: the old wake's running moment is not the new one's",
			changes: []change{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1), w1},
				{rec(machines.Waking, w1), rec(machines.Loading, w1), w1.Add(6 * time.Minute)},
				{rec(machines.Loading, w1), rec(machines.Asleep, w1), w1.Add(10 * time.Minute)}, // seen down
				{rec(machines.Asleep, w1), rec(machines.Waking, w2), w2},
				{rec(machines.Waking, w2), rec(machines.Ready, w2), w2.Add(8 * time.Minute)},
			},
			state: machines.Ready,
			wakes: [4]int{1, 0, 0, 0},
			phases: map[string]phaseSample{
				"qwen/requested_to_running": {Count: 2, Sum: 360 + 480},
				"qwen/running_to_answering": {Count: 1, Sum: 0},
			},
		},
		{
			name: "a host started with the wake ready on record counts no second ready when it stops",
			seed: &machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: w1},
			changes: []change{
				{rec(machines.Ready, w1), rec(machines.Stopped, w1), w1.Add(time.Hour)},
			},
			state:  machines.Stopped,
			phases: map[string]phaseSample{},
		},
		{
			name: "a host started mid-wake times only what it saw: no running_to_answering",
			seed: &machines.Record{Pod: "qwen", State: machines.Loading, WakeRequestedAt: w1},
			changes: []change{
				{rec(machines.Loading, w1), rec(machines.Ready, w1), w1.Add(9 * time.Minute)},
			},
			state:  machines.Ready,
			wakes:  [4]int{1, 0, 0, 0},
			phases: map[string]phaseSample{},
		},
		{
			name: "a pod found answering without a wake of ours: ready, no wake counted",
			changes: []change{
				{rec(machines.Asleep, time.Time{}), rec(machines.Ready, time.Time{}), w1},
			},
			state:  machines.Ready,
			phases: map[string]phaseSample{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMetrics(t, "qwen")
			if tt.seed != nil {
				m.PodRecord(*tt.seed)
			}
			for _, c := range tt.changes {
				m.RecordChanged(c.before, c.after, c.at)
			}
			if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(stateLines(t, tt.state)), "wakeonchat_pod_state"); err != nil {
				t.Error(err)
			}
			w := tt.wakes
			if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(wakeLines(w[0], w[1], w[2], w[3])), "wakeonchat_wakes_total"); err != nil {
				t.Error(err)
			}
			if diff := cmp.Diff(tt.phases, phases(t, m)); diff != "" {
				t.Errorf("wakeonchat_wake_phase_seconds (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTurns(t *testing.T) {
	m := newMetrics(t)
	m.Turn(metrics.DoorAPIChat, metrics.ResultAnswered, 20*time.Millisecond)
	m.Turn(metrics.DoorAPIChat, "waking", time.Millisecond)
	m.Turn(metrics.DoorAPIChat, "waking", time.Millisecond)
	m.Turn(metrics.DoorOpenAI, metrics.ResultProviderFailed, 3*time.Second)
	want := `# HELP wakeonchat_turns_total Turns answered, by door (api_chat, openai) and result (answered, a reply key, or an error class).
# TYPE wakeonchat_turns_total counter
wakeonchat_turns_total{door="api_chat",result="answered"} 1
wakeonchat_turns_total{door="api_chat",result="waking"} 2
wakeonchat_turns_total{door="openai",result="provider_failed"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "wakeonchat_turns_total"); err != nil {
		t.Error(err)
	}
	if n, err := testutil.GatherAndCount(m.Registry(), "wakeonchat_turn_seconds"); err != nil || n != 2 {
		t.Errorf("wakeonchat_turn_seconds has %d series (err %v), want 2 (one per door)", n, err)
	}
}

func TestConductorRequests(t *testing.T) {
	m := newMetrics(t)
	m.ConductorRequest(metrics.KindGet, metrics.ConductorFound)
	m.ConductorRequest(metrics.KindGet, metrics.ConductorFound)
	m.ConductorRequest(metrics.KindStart, metrics.ConductorInFlight)
	want := `# HELP wakeonchat_conductor_requests_total Requests to the conductor through the GPU plugin, by kind (get, start) and result.
# TYPE wakeonchat_conductor_requests_total counter
wakeonchat_conductor_requests_total{kind="get",result="found"} 2
wakeonchat_conductor_requests_total{kind="start",result="in_flight"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "wakeonchat_conductor_requests_total"); err != nil {
		t.Error(err)
	}
}

func TestHold(t *testing.T) {
	m := newMetrics(t)
	held := func() float64 { return gaugeValue(t, m, "wakeonchat_held_requests") }
	a := m.Hold()
	b := m.Hold()
	if got := held(); got != 2 {
		t.Errorf("two holds in: %v, want 2", got)
	}
	a()
	a() // a second call counts nothing out
	if got := held(); got != 1 {
		t.Errorf("one hold out (its done called twice): %v, want 1", got)
	}
	b()
	if got := held(); got != 0 {
		t.Errorf("both out: %v, want 0", got)
	}
}

func TestPlugins(t *testing.T) {
	m := newMetrics(t)
	conductorUp, providerUp, otherUp := true, true, true
	m.WatchPlugin("wake-plugin-conductor", func() bool { return conductorUp })
	m.WatchPlugin("wake-plugin-provider-openai", func() bool { return providerUp })
	m.WatchPlugin("wake-plugin-provider-openai", func() bool { return otherUp }) // a second provider on the same binary
	m.PluginRelaunchFailed("wake-plugin-conductor")
	m.PluginRelaunched("wake-plugin-conductor")
	providerUp = false
	want := `# HELP wakeonchat_plugin_restarts_total Plugin processes relaunched after they exited.
# TYPE wakeonchat_plugin_restarts_total counter
wakeonchat_plugin_restarts_total{plugin="wake-plugin-conductor"} 1
wakeonchat_plugin_restarts_total{plugin="wake-plugin-provider-openai"} 0
# HELP wakeonchat_plugin_relaunch_failures_total Relaunches of an exited plugin that failed; the next one waits twice as long, up to 30 s.
# TYPE wakeonchat_plugin_relaunch_failures_total counter
wakeonchat_plugin_relaunch_failures_total{plugin="wake-plugin-conductor"} 1
wakeonchat_plugin_relaunch_failures_total{plugin="wake-plugin-provider-openai"} 0
# HELP wakeonchat_plugin_up Whether each plugin's processes are running and handshaken (1) or not (0).
# TYPE wakeonchat_plugin_up gauge
wakeonchat_plugin_up{plugin="wake-plugin-conductor"} 1
wakeonchat_plugin_up{plugin="wake-plugin-provider-openai"} 0
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want),
		"wakeonchat_plugin_restarts_total", "wakeonchat_plugin_relaunch_failures_total", "wakeonchat_plugin_up"); err != nil {
		t.Error(err)
	}
	providerUp = true
	if got := gaugeValue(t, m, "wakeonchat_plugin_up", "wake-plugin-provider-openai"); got != 1 {
		t.Errorf("both provider processes up again: plugin_up %v, want 1", got)
	}
}

func TestEventSubscribers(t *testing.T) {
	m := newMetrics(t)
	if n, err := testutil.GatherAndCount(m.Registry(), "wakeonchat_event_subscribers"); err != nil || n != 0 {
		t.Fatalf("before the event stream gives its count: %d series (err %v), want none", n, err)
	}
	n := 3
	m.EventSubscribers(func() int { return n })
	if got := gaugeValue(t, m, "wakeonchat_event_subscribers"); got != 3 {
		t.Errorf("event_subscribers %v, want 3", got)
	}
	n = 1
	if got := gaugeValue(t, m, "wakeonchat_event_subscribers"); got != 1 {
		t.Errorf("event_subscribers %v, want 1 (read at each scrape)", got)
	}
	m.EventSubscribers(func() int { return 7 }) // a second hub replaces the first
	if got := gaugeValue(t, m, "wakeonchat_event_subscribers"); got != 7 {
		t.Errorf("event_subscribers %v after a second call, want 7", got)
	}
}

// TestNil is the promise that lets packages run without metrics.
func TestNil(t *testing.T) {
	var m *metrics.Metrics
	m.Turn(metrics.DoorAPIChat, metrics.ResultAnswered, time.Second)
	m.ConductorRequest(metrics.KindGet, metrics.ConductorFound)
	m.Hold()()
	m.WatchPlugin("p", func() bool { return true })
	m.PluginRelaunched("p")
	m.PluginRelaunchFailed("p")
	m.EventSubscribers(func() int { return 1 })
	m.PodRecord(rec(machines.Ready, t0))
	m.RecordChanged(rec(machines.Waking, t0), rec(machines.Ready, t0), t0)
	if m.Registry() != nil {
		t.Error("a nil Metrics has a registry")
	}
}

// TestLint runs Prometheus's own linter over everything the host exposes,
// with every series present.
func TestLint(t *testing.T) {
	m := newMetrics(t, "qwen")
	m.Turn(metrics.DoorAPIChat, metrics.ResultAnswered, time.Second)
	m.ConductorRequest(metrics.KindGet, metrics.ConductorFound)
	m.WatchPlugin("p", func() bool { return true })
	m.EventSubscribers(func() int { return 0 })
	m.RecordChanged(rec(machines.Waking, t0), rec(machines.Ready, t0), t0.Add(time.Minute))
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("%s: %s", p.Metric, p.Text)
	}
}

func TestHandler(t *testing.T) {
	m := newMetrics(t, "qwen")
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("GET /metrics: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	for _, want := range []string{
		`wakeonchat_pod_state{pod="qwen",state="asleep"} 1`,
		`wakeonchat_wakes_total{outcome="ready",pod="qwen"} 0`,
		"go_goroutines ",
		"process_resident_memory_bytes ",
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("GET /metrics lacks %q", want)
		}
	}
}

// gaugeValue reads one gauge series (by its label values in order, none
// for a gauge without labels).
func gaugeValue(t *testing.T, m *metrics.Metrics, name string, labelValues ...string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	series:
		for _, s := range mf.GetMetric() {
			for i, l := range s.GetLabel() {
				if i >= len(labelValues) || l.GetValue() != labelValues[i] {
					continue series
				}
			}
			return s.GetGauge().GetValue()
		}
	}
	t.Fatalf("no series %s%v", name, labelValues)
	return 0
}
