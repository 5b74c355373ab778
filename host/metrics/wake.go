package metrics

import (
	"slices"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/machines"
)

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
// it. It is wake.Config.Changed's work for the metrics: it runs under the
// pod's lock, so the changes of one pod come in order. The third argument,
// when the change was decided, is not used: everything is read from the
// records, so a change tells the same whenever it is reported.
//
// It sets the pod's state. It counts the wake's outcome once, on the change
// that makes it known: after names an outcome (machines.Record.Outcome) that
// before did not name for the same wake. It times the phases of a wake from
// the times the record stores, as the wake log keeps them (machines.Wake):
// requested_to_running (Wake.Booting) on the change that stamps the wake's
// RunningAt, running_to_answering (Wake.Loading) on the change that takes
// the wake from waking, loading or stuck to ready, whose ReadyAt is this
// boot's. It counts a stop by the host (wakeonchat_pod_stops_total) on the
// change that records it (Record.StopReason set). Each change happens once per wake and is stored with what it
// reads, so a host restarted mid-wake still observes each phase once.
func (m *Metrics) RecordChanged(before, after machines.Record) {
	if m == nil {
		return
	}
	state, _ := machines.Reports(after, machines.View{})
	m.podState.set(after.Pod, state)
	sameWake := before.WakeRequestedAt.Equal(after.WakeRequestedAt)
	m.timePhases(before, after, sameWake)
	if o := after.Outcome(); o != "" && (before.Outcome() == "" || !sameWake) {
		m.wakes.WithLabelValues(after.Pod, o).Inc()
	}
	if after.StopReason != "" && (before.StopReason == "" || !sameWake) {
		m.stops.WithLabelValues(after.Pod, after.StopReason).Inc()
	}
}

// timePhases observes the phases a change ends, if any; see RecordChanged.
// sameWake: before and after are the same wake's.
func (m *Metrics) timePhases(before, after machines.Record, sameWake bool) {
	if after.WakeRequestedAt.IsZero() || after.RunningAt.IsZero() {
		return // no wake on record, or not seen up yet
	}
	w := machines.Wake{RequestedAt: after.WakeRequestedAt, RunningAt: after.RunningAt, ReadyAt: after.ReadyAt}
	if !sameWake || before.RunningAt.IsZero() {
		if d, ok := w.Booting(); ok {
			m.phases.WithLabelValues(after.Pod, PhaseRequestedToRunning).Observe(d.Seconds())
		}
	}
	if sameWake && machines.InProgress(before.State) && after.State == machines.Ready {
		if d, ok := w.Loading(); ok {
			m.phases.WithLabelValues(after.Pod, PhaseRunningToAnswering).Observe(d.Seconds())
		}
	}
}

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
