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

// up is r once the pod was first seen up at running during its wake.
func up(r machines.Record, running time.Time) machines.Record {
	r.RunningAt = running
	return r
}

// ready is r, seen up at running, ready at readyAt.
func ready(r machines.Record, running, readyAt time.Time) machines.Record {
	r.RunningAt, r.ReadyAt = running, readyAt
	return r
}

// TestRecordChanged feeds sequences of stored changes, as the coordinator
// makes them, and checks the state, the outcomes counted and the phases
// timed after each sequence. The phases come from the records' times, not
// from when a change was decided: every change's at is a day late.
func TestRecordChanged(t *testing.T) {
	w1, w2 := t0, t0.Add(2*time.Hour)
	m1 := func(d time.Duration) time.Time { return w1.Add(d) } // d into the first wake
	m2 := func(d time.Duration) time.Time { return w2.Add(d) }
	tests := []struct {
		name    string
		seed    *machines.Record // a stored record at start-up
		changes [][2]machines.Record
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
			name: "the first live wake: waking, seen up at 6m40s, ready since 9m, answered at 9m10s",
			changes: [][2]machines.Record{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1)},
				{rec(machines.Waking, w1), up(rec(machines.Loading, w1), m1(6*time.Minute+40*time.Second))},
				{up(rec(machines.Loading, w1), m1(6*time.Minute+40*time.Second)), up(rec(machines.Loading, w1), m1(6*time.Minute+40*time.Second))}, // another fact changed
				{up(rec(machines.Loading, w1), m1(6*time.Minute+40*time.Second)), ready(rec(machines.Ready, w1), m1(6*time.Minute+40*time.Second), m1(9*time.Minute))},
			},
			state: machines.Ready,
			wakes: [4]int{1, 0, 0, 0},
			phases: map[string]phaseSample{
				"qwen/requested_to_running": {Count: 1, Sum: 400},
				"qwen/running_to_answering": {Count: 1, Sum: 140},
			},
		},
		{
			name: "one read saw the pod up with this boot's readySince: RUNNING by then, running_to_answering is 0",
			changes: [][2]machines.Record{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1)},
				{rec(machines.Waking, w1), ready(rec(machines.Ready, w1), m1(8*time.Minute+50*time.Second), m1(8*time.Minute+50*time.Second))},
			},
			state: machines.Ready,
			wakes: [4]int{1, 0, 0, 0},
			phases: map[string]phaseSample{
				"qwen/requested_to_running": {Count: 1, Sum: 530},
				"qwen/running_to_answering": {Count: 1, Sum: 0},
			},
		},
		{
			name: "stuck, then ready: the wake counts once, as ready",
			changes: [][2]machines.Record{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1)},
				{rec(machines.Waking, w1), up(rec(machines.Loading, w1), m1(5*time.Minute))},
				{up(rec(machines.Loading, w1), m1(5*time.Minute)), up(rec(machines.Stuck, w1), m1(5*time.Minute))},
				{up(rec(machines.Stuck, w1), m1(5*time.Minute)), ready(rec(machines.Ready, w1), m1(5*time.Minute), m1(25*time.Minute))},
			},
			state: machines.Ready,
			wakes: [4]int{1, 0, 0, 0},
			phases: map[string]phaseSample{
				"qwen/requested_to_running": {Count: 1, Sum: 300},
				"qwen/running_to_answering": {Count: 1, Sum: 1200},
			},
		},
		{
			name: "ready, crashed, ready on a later boot, stopped: one ready wake, each phase once",
			changes: [][2]machines.Record{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1)},
				{rec(machines.Waking, w1), ready(rec(machines.Ready, w1), m1(9*time.Minute), m1(9*time.Minute))},
				{ready(rec(machines.Ready, w1), m1(9*time.Minute), m1(9*time.Minute)), ready(rec(machines.Crashed, w1), m1(9*time.Minute), m1(9*time.Minute))},
				{ready(rec(machines.Crashed, w1), m1(9*time.Minute), m1(9*time.Minute)), ready(rec(machines.Ready, w1), m1(9*time.Minute), m1(30*time.Minute))},
				{ready(rec(machines.Ready, w1), m1(9*time.Minute), m1(30*time.Minute)), ready(rec(machines.Stopped, w1), m1(9*time.Minute), m1(30*time.Minute))},
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
			changes: [][2]machines.Record{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1)},
				{rec(machines.Waking, w1), ready(rec(machines.Ready, w1), m1(9*time.Minute), m1(9*time.Minute))},
				{ready(rec(machines.Ready, w1), m1(9*time.Minute), m1(9*time.Minute)), ready(rec(machines.Stopped, w1), m1(9*time.Minute), m1(9*time.Minute))},
				{ready(rec(machines.Stopped, w1), m1(9*time.Minute), m1(9*time.Minute)), ready(rec(machines.Waking, w2), time.Time{}, m1(9*time.Minute))}, // the wake clears RunningAt
				{ready(rec(machines.Waking, w2), time.Time{}, m1(9*time.Minute)), ready(rec(machines.Refused, w2), time.Time{}, m1(9*time.Minute))},
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
			changes: [][2]machines.Record{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1)},
				{rec(machines.Waking, w1), rec(machines.StartFailed, w1)},
				{rec(machines.StartFailed, w1), rec(machines.Waking, w2)},
				{rec(machines.Waking, w2), up(rec(machines.Loading, w2), m2(7*time.Minute))},
				{up(rec(machines.Loading, w2), m2(7*time.Minute)), up(rec(machines.NeverReady, w2), m2(7*time.Minute))},
			},
			state: machines.NeverReady,
			wakes: [4]int{0, 0, 1, 1},
			phases: map[string]phaseSample{
				"qwen/requested_to_running": {Count: 1, Sum: 420},
			},
		},
		{
			name: "rewoken beyond the window after the pod went down: the old wake's running time is not the new one's",
			changes: [][2]machines.Record{
				{rec(machines.Asleep, time.Time{}), rec(machines.Waking, w1)},
				{rec(machines.Waking, w1), up(rec(machines.Loading, w1), m1(6*time.Minute))},
				{up(rec(machines.Loading, w1), m1(6*time.Minute)), up(rec(machines.Asleep, w1), m1(6*time.Minute))}, // seen down
				{up(rec(machines.Asleep, w1), m1(6*time.Minute)), rec(machines.Waking, w2)},
				{rec(machines.Waking, w2), ready(rec(machines.Ready, w2), m2(8*time.Minute), m2(8*time.Minute))},
			},
			state: machines.Ready,
			wakes: [4]int{1, 0, 0, 0},
			phases: map[string]phaseSample{
				"qwen/requested_to_running": {Count: 2, Sum: 360 + 480},
				"qwen/running_to_answering": {Count: 1, Sum: 0},
			},
		},
		{
			name: "a host started with the wake ready on record observes nothing when it stops",
			seed: &machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: w1, RunningAt: m1(6 * time.Minute), ReadyAt: m1(9 * time.Minute)},
			changes: [][2]machines.Record{
				{ready(rec(machines.Ready, w1), m1(6*time.Minute), m1(9*time.Minute)), ready(rec(machines.Stopped, w1), m1(6*time.Minute), m1(9*time.Minute))},
			},
			state:  machines.Stopped,
			phases: map[string]phaseSample{},
		},
		{
			name: "a host restarted mid-wake times running_to_answering from the stored running time, and requested_to_running not again",
			seed: &machines.Record{Pod: "qwen", State: machines.Loading, WakeRequestedAt: w1, RunningAt: m1(6 * time.Minute)},
			changes: [][2]machines.Record{
				{up(rec(machines.Loading, w1), m1(6*time.Minute)), ready(rec(machines.Ready, w1), m1(6*time.Minute), m1(9*time.Minute))},
			},
			state: machines.Ready,
			wakes: [4]int{1, 0, 0, 0},
			phases: map[string]phaseSample{
				"qwen/running_to_answering": {Count: 1, Sum: 180},
			},
		},
		{
			name: "a record stored before RunningAt was kept: no running time, no phase",
			seed: &machines.Record{Pod: "qwen", State: machines.Loading, WakeRequestedAt: w1},
			changes: [][2]machines.Record{
				{rec(machines.Loading, w1), ready(rec(machines.Ready, w1), time.Time{}, m1(9*time.Minute))},
			},
			state:  machines.Ready,
			wakes:  [4]int{1, 0, 0, 0},
			phases: map[string]phaseSample{},
		},
		{
			name: "a pod found answering without a wake of ours: ready, no wake counted",
			changes: [][2]machines.Record{
				{rec(machines.Asleep, time.Time{}), ready(rec(machines.Ready, time.Time{}), w1, w1)},
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
				m.RecordChanged(c[0], c[1])
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

// TestPhasesAcrossARestart runs a wake through the pod lifecycle machine
// and stops the host after each stored change: the host before the restart
// and the one after it (started from the stored record) together observe
// each phase exactly once, with the same values as a host that ran
// throughout.
func TestPhasesAcrossARestart(t *testing.T) {
	pod, err := machines.NewPod(machines.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	// The wake of TestTimeline20260909: asked at 0, the watch sees the pod
	// up at 6m35s, a turn finds the model loading at 7m, the watch reads
	// this boot's readySince (9m) at 9m05s, a turn is answered at 9m10s.
	events := []machines.Event{
		{Trigger: machines.NotReady, At: t0, Status: "EXITED", Lookup: machines.LookupFound},
		{Trigger: machines.PodUp, At: t0.Add(6*time.Minute + 35*time.Second), Status: "RUNNING", Lookup: machines.LookupFound},
		{Trigger: machines.ModelLoading, At: t0.Add(7 * time.Minute), Status: "RUNNING", Lookup: machines.LookupFound},
		{Trigger: machines.ReadySinceSeen, At: t0.Add(9*time.Minute + 5*time.Second), Status: "RUNNING", Lookup: machines.LookupFound, ReadySince: t0.Add(9 * time.Minute)},
		{Trigger: machines.Answered, At: t0.Add(9*time.Minute + 10*time.Second), ReadySince: t0.Add(9 * time.Minute)},
	}
	var records []machines.Record // records[i] is the stored record after i changes
	r := machines.NewRecord("qwen")
	records = append(records, r)
	for _, ev := range events {
		_, next, err := pod.Decide(r, ev)
		if err != nil {
			t.Fatal(err)
		}
		if !next.Equal(r) {
			records = append(records, next)
		}
		r = next
	}
	if got := r.State; got != machines.Ready {
		t.Fatalf("the wake ends %s, want ready", got)
	}
	want := map[string]phaseSample{
		"qwen/requested_to_running": {Count: 1, Sum: 395},
		"qwen/running_to_answering": {Count: 1, Sum: 145},
	}
	for restart := 0; restart < len(records); restart++ {
		t.Run(fmt.Sprintf("restarted after %d changes", restart), func(t *testing.T) {
			first, second := newMetrics(t, "qwen"), newMetrics(t, "qwen")
			for i := 1; i <= restart; i++ {
				first.RecordChanged(records[i-1], records[i])
			}
			second.PodRecord(records[restart])
			for i := restart + 1; i < len(records); i++ {
				second.RecordChanged(records[i-1], records[i])
			}
			got := phases(t, first)
			for k, v := range phases(t, second) {
				g := got[k]
				got[k] = phaseSample{Count: g.Count + v.Count, Sum: g.Sum + v.Sum}
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("phases observed by both hosts (-want +got):\n%s", diff)
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
	want := `# HELP wakeonchat_conductor_requests_total Requests to the conductor through the GPU plugin, by kind (get, start, stop) and result.
# TYPE wakeonchat_conductor_requests_total counter
wakeonchat_conductor_requests_total{kind="get",result="found"} 2
wakeonchat_conductor_requests_total{kind="start",result="in_flight"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "wakeonchat_conductor_requests_total"); err != nil {
		t.Error(err)
	}
}

// TestStorePruned: each pass of the store's pruning adds its counts; the
// series exist, at zero, before the first.
func TestStorePruned(t *testing.T) {
	m := newMetrics(t)
	head := `# HELP wakeonchat_store_pruned_total What the store's background pruning did, by what: sessions and pending (expired pending wakes) deleted, stamped (sessions of an older host given a last turn).
# TYPE wakeonchat_store_pruned_total counter
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(head+`wakeonchat_store_pruned_total{what="pending"} 0
wakeonchat_store_pruned_total{what="sessions"} 0
wakeonchat_store_pruned_total{what="stamped"} 0
`), "wakeonchat_store_pruned_total"); err != nil {
		t.Errorf("before any pass: %v", err)
	}
	m.StorePruned(1, 0, 3)
	m.StorePruned(200, 2, 0)
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(head+`wakeonchat_store_pruned_total{what="pending"} 2
wakeonchat_store_pruned_total{what="sessions"} 201
wakeonchat_store_pruned_total{what="stamped"} 3
`), "wakeonchat_store_pruned_total"); err != nil {
		t.Errorf("after two passes: %v", err)
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
	m.StorePruned(1, 1, 1)
	m.PodRecord(rec(machines.Ready, t0))
	m.RecordChanged(rec(machines.Waking, t0), rec(machines.Ready, t0))
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
	m.RecordChanged(rec(machines.Waking, t0), rec(machines.Ready, t0))
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

// TestPodStops: a stop by the host counts once, on the change that records
// it, by its reason; a view that then finds the pod down, or any other
// change of the stopped record, counts nothing more.
func TestPodStops(t *testing.T) {
	t.Parallel()
	m := metrics.New(metrics.Options{Pods: []string{"qwen"}})
	ready := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: t0, ReadyAt: t0.Add(9 * time.Minute)}
	idled := ready
	idled.State, idled.StoppedAt, idled.StopReason = machines.Idled, t0.Add(30*time.Minute), machines.StopIdle
	m.RecordChanged(ready, idled)
	m.RecordChanged(idled, idled)
	unserved := ready
	unserved.State, unserved.StoppedAt, unserved.StopReason = machines.Idled, t0.Add(20*time.Minute), machines.StopUnserved
	m.RecordChanged(ready, unserved)
	want := `# HELP wakeonchat_pod_stops_total Pods the host stopped itself, by pod and reason (idle: stop_after_idle; unserved: stop_unserved_after).
# TYPE wakeonchat_pod_stops_total counter
wakeonchat_pod_stops_total{pod="qwen",reason="idle"} 1
wakeonchat_pod_stops_total{pod="qwen",reason="unserved"} 1
`
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(want), "wakeonchat_pod_stops_total"); err != nil {
		t.Error(err)
	}
}
