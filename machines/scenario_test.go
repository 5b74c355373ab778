package machines

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/specs"
)

// stepEvents turns a scenario step into the events the host feeds the
// machine for it. A turn is replayed as the host serves it: the conductor's
// read of the pod first (Observe), then the turn's own event. An outcome
// step without an explicit wake belongs to the wake on record.
func stepEvents(st specs.Step, rec Record) []Event {
	ev := Event{
		Trigger:    engine.Trigger(st.Event),
		At:         st.At,
		Status:     st.Status,
		Lookup:     st.Lookup,
		ReadySince: st.ReadySince,
		HTTPStatus: st.HTTPStatus,
		StopReason: st.StopReason,
		Wake:       st.Wake,
	}
	if ev.Lookup == "" {
		ev.Lookup = LookupFound
	}
	var read View
	switch ev.Trigger {
	case NotReady:
		if ev.Status == "" {
			ev.Status = "EXITED"
		}
		read = View{Status: ev.Status, IsRunning: ev.Status == "RUNNING", Lookup: ev.Lookup}
	case ModelLoading:
		ev.Status = "RUNNING"
		read = View{Status: ev.Status, IsRunning: true, Lookup: ev.Lookup, ReadySince: ev.ReadySince}
	case Unreadable:
		read = View{Status: ev.Status, Lookup: LookupUnreadable}
	}
	if ev.Wake.IsZero() {
		ev.Wake = rec.WakeRequestedAt
	}
	if obs, ok := Observe(read, st.At); ok && read.Status != "" {
		return []Event{obs, ev}
	}
	return []Event{ev}
}

type stepResult struct {
	Action  string
	Reply   string
	Text    string
	State   string
	Stuck   bool
	Crashed bool
}

// TestScenarios replays every timeline in specs/scenarios with the default
// policy: each step's action, reply and state must be as written.
func TestScenarios(t *testing.T) {
	scenarios, err := specs.Scenarios()
	if err != nil {
		t.Fatal(err)
	}
	if len(scenarios) < 6 {
		t.Fatalf("found %d scenarios, want at least 6", len(scenarios))
	}
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range scenarios {
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			replay(t, pod, sc)
		})
	}
}

// replay runs sc's steps through pod: each step's action, reply and state
// must be as written, and the scenario must wake at least once.
func replay(t *testing.T, pod *Pod, sc specs.Scenario) {
	t.Helper()
	rec := NewRecord(sc.Pod)
	wakes := 0
	for i, st := range sc.Steps {
		var d Decision
		next := rec
		for _, ev := range stepEvents(st, rec) {
			var err error
			if d, next, err = pod.Decide(next, ev); err != nil {
				t.Fatalf("step %d (%s %s): %v", i+1, st.At.Format("15:04:05.000"), ev.Trigger, err)
			}
		}
		want := stepResult{Action: st.Action, Reply: st.Reply, Text: st.Text, State: st.State, Stuck: st.Stuck, Crashed: st.Crashed}
		got := stepResult{Action: string(d.Action), Reply: string(d.Reply), Text: d.Text, State: string(next.State), Stuck: d.Stuck, Crashed: d.Crashed}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("step %d (%s %s, %s) (-want +got):\n%s", i+1, st.At.Format("15:04:05.000"), st.Event, st.Note, diff)
		}
		if d.Action == ActionWake {
			wakes++
			if !next.WakeRequestedAt.Equal(st.At) {
				t.Errorf("step %d: a wake must reset wakeRequestedAt to %v, got %v", i+1, st.At, next.WakeRequestedAt)
			}
		}
		rec = next
	}
	if wakes == 0 {
		t.Error("scenario never wakes")
	}
}
