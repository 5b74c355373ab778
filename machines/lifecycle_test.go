package machines

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
)

// witness builds a record in state from and an event on trigger on whose
// facts make guard hold: the smallest case that takes a row.
func witness(from engine.State, on engine.Trigger, guard string, now time.Time) (Record, Event) {
	r := Record{Pod: "qwen", State: from}
	ev := Event{Trigger: on, At: now, Status: "EXITED", Lookup: LookupFound}
	switch guard {
	case "inWindowOnTime", "loadingOnWake", "wakeOnClock":
		r.WakeRequestedAt = now.Add(-5 * time.Minute)
	case "inWindowLate":
		r.WakeRequestedAt, ev.Estimate = now.Add(-5*time.Minute), Estimate{Wake: 4 * time.Minute, Wakes: 3}
	case "beyondWindow":
		r.WakeRequestedAt = now.Add(-16 * time.Minute)
	case "wakeOffClock":
		r.WakeRequestedAt = now.Add(-40 * time.Minute)
	case "loadingStuck":
		r.ModelLoadingSince = now.Add(-25 * time.Minute)
	case "bootOfWake":
		r.WakeRequestedAt, ev.ReadySince = now.Add(-5*time.Minute), now.Add(-time.Minute)
	case "earlierBoot":
		r.WakeRequestedAt, ev.ReadySince = now.Add(-5*time.Minute), now.Add(-10*time.Minute)
	case "laterBoot":
		r.ReadyAt, ev.ReadySince = now.Add(-5*time.Minute), now.Add(-time.Minute)
	case "sameBoot":
		r.ReadyAt, ev.ReadySince = now.Add(-5*time.Minute), now.Add(-5*time.Minute)
	}
	if outcome(on) {
		if r.WakeRequestedAt.IsZero() {
			r.WakeRequestedAt = now.Add(-5 * time.Minute)
		}
		ev.Wake, ev.HTTPStatus = r.WakeRequestedAt, 409
	}
	return r, ev
}

// TestEveryRowTaken: for every row of the table (each source state of a
// list on its own), a record and event that satisfy its guard take exactly
// that row. No row is dead, and no guard shadows another.
func TestEveryRowTaken(t *testing.T) {
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	now := at(10 * time.Hour)
	for i, row := range pod.Table().Rows {
		froms := []engine.State{row.From}
		if row.From == engine.Any {
			froms = pod.Table().States
		}
		for _, from := range froms {
			t.Run(fmt.Sprintf("%d/%s/%s/%s", i+1, from, row.On, row.Guard), func(t *testing.T) {
				r, ev := witness(from, row.On, row.Guard, now)
				d, next, err := pod.Decide(r, ev)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(row, d.Row); diff != "" {
					t.Errorf("row taken (-want +got):\n%s", diff)
				}
				want := row.To
				if want == engine.Stay {
					want = from
				}
				if next.State != want {
					t.Errorf("state %s, want %s", next.State, want)
				}
			})
		}
	}
}

// TestEveryEventHandled: the machine is total. Every trigger from every
// state, with the facts of every guard, is either a row or an ignore.
func TestEveryEventHandled(t *testing.T) {
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	everyEventHandled(t, pod)
}

// everyEventHandled checks that pod's table handles every trigger in every
// state (a row or an ignore) whatever the guards' facts.
func everyEventHandled(t *testing.T, pod *Pod) {
	t.Helper()
	table := pod.Table()
	now := at(10 * time.Hour)
	guards := append([]string{""}, table.Guards...)
	for _, s := range table.States {
		for _, on := range table.Triggers {
			for _, g := range guards {
				r, ev := witness(s, on, g, now)
				d, next, err := pod.Decide(r, ev)
				if err != nil {
					t.Errorf("%s on %s with %q's facts: %v", s, on, g, err)
					continue
				}
				if d.Ignored && !next.Equal(r) {
					t.Errorf("%s on %s: an ignored event changed the record: %+v", s, on, next)
				}
			}
		}
	}
}

// TestLifeOfAPod walks the happy path and then every way out of it, as
// named transitions: each step is what happened, the event, and the state
// it leads to.
func TestLifeOfAPod(t *testing.T) {
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	type step struct {
		what string
		ev   Event
		want engine.State
	}
	down := func(d time.Duration) Event {
		return Event{Trigger: PodDown, At: at(d), Status: "EXITED", Lookup: LookupFound}
	}
	up := func(d time.Duration) Event {
		return Event{Trigger: PodUp, At: at(d), Status: "RUNNING", Lookup: LookupFound}
	}
	readySince := func(d, since time.Duration) Event {
		return Event{Trigger: ReadySinceSeen, At: at(d), Status: "RUNNING", ReadySince: at(since)}
	}
	answered := func(d time.Duration) Event { return Event{Trigger: Answered, At: at(d)} }
	wakeOutcome := func(tr engine.Trigger, d, wake time.Duration) Event {
		return Event{Trigger: tr, At: at(d), Wake: at(wake), HTTPStatus: 409}
	}
	walks := map[string][]step{
		"happy path": {
			{"a turn finds the pod asleep", notReady(at(0), "EXITED"), Waking},
			{"the conductor says RUNNING", up(6 * min), Loading},
			{"the conductor says ready since", readySince(9*min, 9*min), Ready},
			{"a turn answers", answered(10 * min), Ready},
		},
		"idle stop, seen by a view, then an ask": {
			{"a turn finds the pod asleep", notReady(at(0), "EXITED"), Waking},
			{"a turn answers", answered(9 * min), Ready},
			{"a view sees EXITED", down(30 * min), Stopped},
			{"a turn finds it down: ready_then_stopped", notReady(at(31*min), "EXITED"), Waking},
		},
		"crash, then a new boot": {
			{"a turn finds the pod asleep", notReady(at(0), "EXITED"), Waking},
			{"a turn answers", answered(9 * min), Ready},
			{"RUNNING, the model stops answering", loading(at(20 * min)), Crashed},
			{"the same boot's readySince", readySince(21*min, 9*min), Crashed},
			{"a later boot is ready", readySince(30*min, 29*min), Ready},
		},
		"crash, then the pod stops": {
			{"a turn finds the pod asleep", notReady(at(0), "EXITED"), Waking},
			{"a turn answers", answered(9 * min), Ready},
			{"RUNNING, the model stops answering", loading(at(20 * min)), Crashed},
			{"the conductor says EXITED", down(25 * min), Asleep},
		},
		"stuck": {
			{"a turn finds the pod asleep", notReady(at(0), "EXITED"), Waking},
			{"RUNNING, the model loads", loading(at(6 * min)), Loading},
			{"still loading at the ceiling", loading(at(20 * min)), Stuck},
			{"the watch gives up", wakeOutcome(NeverReadySeen, 35*min, 0), NeverReady},
			{"a turn finds the pod down", notReady(at(40*min), "EXITED"), Waking},
		},
		"refused": {
			{"a turn finds the pod asleep", notReady(at(0), "EXITED"), Waking},
			{"the start is refused", wakeOutcome(StartRefused, 3*time.Second, 0), Refused},
			{"the next ask wakes again", notReady(at(min), "EXITED"), Waking},
		},
		"start never sent": {
			{"a turn finds the pod asleep", notReady(at(0), "EXITED"), Waking},
			{"the start never left", wakeOutcome(StartNotSent, time.Second, 0), StartFailed},
			{"the next ask wakes again", notReady(at(2*time.Second), "EXITED"), Waking},
		},
		"never ready": {
			{"a turn finds the pod asleep", notReady(at(0), "EXITED"), Waking},
			{"the watch gives up", wakeOutcome(NeverReadySeen, 35*min, 0), NeverReady},
			{"the pod is up, its model still silent: the failed wake is kept", up(50 * min), NeverReady},
			{"a turn still finds it loading", loading(at(52 * min)), NeverReady},
			{"and then it answers", answered(55 * min), Ready},
		},
		"the pod goes down while loading": {
			{"a turn finds the pod asleep", notReady(at(0), "EXITED"), Waking},
			{"the conductor says RUNNING", up(6 * min), Loading},
			{"then EXITED", down(7 * min), Waking},
			{"asked again in the window: no second wake", notReady(at(8*min), "EXITED"), Waking},
		},
	}
	for name, steps := range walks {
		t.Run(name, func(t *testing.T) {
			r := NewRecord("qwen")
			wakes := 0
			for i, st := range steps {
				d, next, err := pod.Decide(r, st.ev)
				if err != nil {
					t.Fatalf("step %d (%s): %v", i+1, st.what, err)
				}
				if next.State != st.want {
					t.Fatalf("step %d (%s): %s --%s--> %s, want %s", i+1, st.what, r.State, st.ev.Trigger, next.State, st.want)
				}
				if d.Action == ActionWake {
					wakes++
				}
				r = next
			}
			if name == "the pod goes down while loading" && wakes != 1 {
				t.Errorf("%d wakes, want 1", wakes)
			}
		})
	}
}
