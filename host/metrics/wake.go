package metrics

import (
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/machines"
)

// runningMark is when the wake requested at wake was seen up.
type runningMark struct {
	wake, at time.Time
}

// PodRecord sets rec's pod's state from a stored record, as at start-up,
// before the coordinator changes anything.
func (m *Metrics) PodRecord(rec machines.Record) {
	if m == nil {
		return
	}
	state, _ := machines.Reports(rec, machines.View{})
	m.podState.set(rec.Pod, state)
}

// RecordChanged takes one stored change of a pod's record: before and after
// it, and at, when it was decided (wake.Change's Event.At, on the host's
// clock). It is wake.Config.Changed's work for the metrics: it runs under
// the pod's lock, so the changes of one pod come in order.
//
// It sets the pod's state. It counts the wake's outcome once, on the change
// that makes it known: after names an outcome (machines.Record.Outcome) that
// before did not name for the same wake. It times the phases of a wake from
// the changes alone: the change that takes the wake on record from waking to
// an up state (loading, stuck or ready) is when it was seen running, and
// requested_to_running is that change's at minus WakeRequestedAt; the change
// that takes it from waking, loading or stuck to ready is when it was seen
// answering, and running_to_answering is that at minus the running one (0
// when one read saw both). Each is when the host learned it, up to one
// watch_poll late. The running moment lives in memory: a wake that was
// already up when the host started gets no running_to_answering.
func (m *Metrics) RecordChanged(before, after machines.Record, at time.Time) {
	if m == nil {
		return
	}
	state, _ := machines.Reports(after, machines.View{})
	m.podState.set(after.Pod, state)
	m.timePhases(before, after, at)
	sameWake := before.WakeRequestedAt.Equal(after.WakeRequestedAt)
	if o := after.Outcome(); o != "" && (before.Outcome() == "" || !sameWake) {
		m.wakes.WithLabelValues(after.Pod, o).Inc()
	}
}

// timePhases observes the phase a change ends, if any; see RecordChanged.
func (m *Metrics) timePhases(before, after machines.Record, at time.Time) {
	pod, wake := after.Pod, after.WakeRequestedAt
	m.mu.Lock()
	defer m.mu.Unlock()
	mark, marked := m.running[pod]
	if marked && !mark.wake.Equal(wake) {
		delete(m.running, pod) // another wake: its running moment is no use
		marked = false
	}
	if wake.IsZero() || !before.WakeRequestedAt.Equal(wake) {
		return
	}
	if before.State == machines.Waking && slices.Contains(seenUp, after.State) {
		m.observe(pod, PhaseRequestedToRunning, at.Sub(wake))
		mark, marked = runningMark{wake: wake, at: at}, true
		m.running[pod] = mark
	}
	if after.State == machines.Ready && slices.Contains(inProgress, before.State) {
		if marked {
			m.observe(pod, PhaseRunningToAnswering, at.Sub(mark.at))
		}
		delete(m.running, pod)
	}
}

func (m *Metrics) observe(pod, phase string, d time.Duration) {
	if d >= 0 {
		m.phases.WithLabelValues(pod, phase).Observe(d.Seconds())
	}
}

// The states a wake is seen up in when it leaves waking, and the states of
// a wake in progress (what the coordinator's watch follows).
var (
	seenUp     = []engine.State{machines.Loading, machines.Stuck, machines.Ready}
	inProgress = []engine.State{machines.Waking, machines.Loading, machines.Stuck}
)

// podState is wakeonchat_pod_state: one series per pod and state, set
// together, so that a scrape sees exactly one 1 per pod.
type podState struct {
	desc   *prometheus.Desc
	states []engine.State

	mu   sync.Mutex
	pods []string
	cur  map[string]engine.State
}

func newPodState(name, help string, states []engine.State) *podState {
	return &podState{
		desc:   prometheus.NewDesc(name, help, []string{"pod", "state"}, nil),
		states: states,
		cur:    make(map[string]engine.State),
	}
}

func (p *podState) set(pod string, s engine.State) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if _, ok := p.cur[pod]; !ok {
		p.pods = append(p.pods, pod)
	}
	p.cur[pod] = s
}

func (p *podState) Describe(ch chan<- *prometheus.Desc) { ch <- p.desc }

func (p *podState) Collect(ch chan<- prometheus.Metric) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, pod := range p.pods {
		cur := p.cur[pod]
		states := p.states
		if !slices.Contains(states, cur) {
			states = append(slices.Clip(states), cur) // a state the table does not list still shows
		}
		for _, s := range states {
			v := 0.0
			if s == cur {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(p.desc, prometheus.GaugeValue, v, pod, string(s))
		}
	}
}
