package machines

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/specs"
)

// stepEvent turns a scenario step into the machine's event. An outcome step
// without an explicit wake belongs to the wake on record.
func stepEvent(st specs.Step, rec Record) Event {
	ev := Event{
		Trigger:    engine.Trigger(st.Event),
		At:         st.At,
		Status:     st.Status,
		Lookup:     st.Lookup,
		ReadySince: st.ReadySince,
		HTTPStatus: st.HTTPStatus,
		Wake:       st.Wake,
	}
	if ev.Trigger == NotReady || ev.Trigger == PodDown {
		if ev.Status == "" {
			ev.Status = "EXITED"
		}
		if ev.Lookup == "" {
			ev.Lookup = LookupFound
		}
	}
	if ev.Wake.IsZero() {
		ev.Wake = rec.WakeRequestedAt
	}
	return ev
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
			rec := NewRecord(sc.Pod)
			wakes := 0
			for i, st := range sc.Steps {
				d, next, err := pod.Decide(rec, stepEvent(st, rec))
				if err != nil {
					t.Fatalf("step %d (%s %s): %v", i+1, st.At.Format("15:04:05.000"), st.Event, err)
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
		})
	}
}
