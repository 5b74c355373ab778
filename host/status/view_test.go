package status

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/specs"
)

// podSummary is what TestPodView checks of a pod's view.
type podSummary struct {
	State, Words, Tone string
	Unconfirmed        bool
	Reply              machines.ReplyKey
	Answered, Wakes    bool
	Steps              []step // nil: no wake in progress
}

// TestPodView: the view of a pod in each kind of state, from the machine's
// record and view: its words, the reply a turn would get, and the wake in
// progress.
func TestPodView(t *testing.T) {
	now := t0.Add(3 * time.Hour)
	down := machines.View{Status: "EXITED", Lookup: machines.LookupFound}
	unseen := machines.View{Lookup: machines.LookupUnreadable}
	woke := now.Add(-4 * time.Minute)
	tests := []struct {
		name string
		u    events.Update
		want podSummary
	}{
		{"nothing known", events.Update{Record: machines.NewRecord("qwen"), View: unseen},
			podSummary{State: "asleep", Words: machines.Facts(machines.Asleep).Means, Tone: "idle", Reply: machines.ReplyWaking, Wakes: true}},
		{"waking", events.Update{Record: machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: woke}, View: down},
			podSummary{State: "waking", Words: machines.Facts(machines.Waking).Means, Tone: "busy", Reply: machines.ReplyStillWaking, Steps: []step{
				{Name: "requested", At: "15:22:25 UTC", Done: true},
				{Name: "running", Note: "not yet"},
				{Name: "answering", At: "~15:31:25 UTC", Note: "expected in 5 min"},
			}}},
		{"waking past a measured estimate", events.Update{Record: machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: now.Add(-12 * time.Minute)}, View: down},
			podSummary{State: "waking", Words: machines.Facts(machines.Waking).Means, Tone: "busy", Reply: machines.ReplyStillWakingLate, Steps: []step{
				{Name: "requested", At: "15:14:25 UTC", Done: true},
				{Name: "running", Note: "not yet"},
				{Name: "answering", Note: "not yet; past the estimate"},
			}}},
		{"ready", events.Update{Record: machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: woke, ReadyAt: now}, View: running},
			podSummary{State: "ready", Words: machines.Facts(machines.Ready).Means, Tone: "ok", Answered: true}},
		{"ready as stored before the host started", events.Update{Record: machines.Record{Pod: "qwen", State: machines.Ready, ReadyAt: now}, View: unseen},
			podSummary{State: "ready", Words: machines.Facts(machines.Ready).Means, Tone: "ok", Unconfirmed: true, Answered: true}},
		{"refused", events.Update{Record: machines.Record{Pod: "qwen", State: machines.Refused, WakeRequestedAt: woke, RefusedStatus: 403}, View: down},
			podSummary{State: "refused", Words: "The conductor refused the last wake request (HTTP 403).", Tone: "bad", Reply: machines.ReplyRefused, Wakes: true}},
		{"crashed", events.Update{Record: machines.Record{Pod: "qwen", State: machines.Crashed, WakeRequestedAt: woke, ReadyAt: woke.Add(time.Minute)}, View: running},
			podSummary{State: "crashed", Words: machines.Facts(machines.Crashed).Means, Tone: "bad", Reply: machines.ReplyCrashed}},
	}
	pod, err := machines.NewPod(machines.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Config{
				Names: []string{"qwen"}, Pods: fakePods{"qwen": tt.u}, Policy: pod,
				Estimate: func(string) machines.Estimate { return machines.Estimate{Wake: 9 * time.Minute, Wakes: 4} },
			})
			v := s.pod(t.Context(), "qwen", now)
			got := podSummary{State: v.State, Words: v.Words, Tone: v.Tone, Unconfirmed: v.Unconfirmed,
				Reply: v.Preview.Reply, Answered: v.Preview.Answered, Wakes: v.Preview.Wakes}
			if v.Wake != nil {
				got.Steps = v.Wake.Steps
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// The state and the reply are the machine's: the view's state is
// machines.Reports of the update, and its reply is what Decide gives the
// turn Preview names, for every state.
func TestPodViewIsTheMachines(t *testing.T) {
	pod, err := machines.NewPod(machines.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	now := t0.Add(time.Hour)
	table, _ := specs.PodLifecycle()
	for _, st := range table.States {
		u := events.Update{Record: machines.Record{Pod: "qwen", State: st, WakeRequestedAt: now.Add(-3 * time.Minute)}, View: running}
		v := New(Config{Names: []string{"qwen"}, Pods: fakePods{"qwen": u}, Policy: pod}).pod(t.Context(), "qwen", now)
		state, _ := u.Report()
		want, err := pod.Preview(u.Record, u.View, machines.Estimate{Wake: 9 * time.Minute}, now)
		if err != nil {
			t.Fatal(err)
		}
		if engine.State(v.State) != state || v.Preview != want {
			t.Errorf("%s: state %q, preview %+v; want %q, %+v", st, v.State, v.Preview, state, want)
		}
	}
}

func TestDuration(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0 s", 999 * time.Millisecond: "0 s", 45 * time.Second: "45 s", 6 * time.Minute: "6 min",
		6*time.Minute + 30*time.Second: "6 min 30 s", 65 * time.Minute: "1 h 5 min", -time.Second: "0 s",
	} {
		if got := duration(d); got != want {
			t.Errorf("duration(%v) = %q, want %q", d, got, want)
		}
	}
}
