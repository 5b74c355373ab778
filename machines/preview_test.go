package machines

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPreview: the reply a turn asking now would get, for each state, and
// the record handed in is unchanged.
func TestPreview(t *testing.T) {
	down := View{Status: "EXITED", Lookup: LookupFound}
	running := View{Status: "RUNNING", Lookup: LookupFound}
	loadingOn := func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(0) }
	readyAt := func(r *Record) { r.WakeRequestedAt, r.ReadyAt = at(0), at(9*min) }
	tests := []struct {
		name string
		rec  Record
		view View
		est  Estimate
		now  time.Time
		want Preview
	}{
		{"nothing known", Record{Pod: "qwen"}, View{Lookup: LookupUnreadable}, Estimate{}, at(0),
			Preview{Reply: ReplyWaking, Wakes: true, Text: say(ReplyWaking)}},
		{"asleep, a measured estimate", rec(Asleep, nil), down, Estimate{Wake: 7 * min, Wakes: 3}, at(0),
			Preview{Reply: ReplyWaking, Wakes: true, Text: say(ReplyWaking, eta(7))}},
		{"waking in the window", rec(Waking, wokeAt(0)), down, Estimate{}, at(4 * min),
			Preview{Reply: ReplyStillWaking, Text: say(ReplyStillWaking, elapsed(4))}},
		{"waking past the window", rec(Waking, wokeAt(0)), down, Estimate{}, at(16 * min),
			Preview{Reply: ReplyRewake, Wakes: true, Text: say(ReplyRewake)}},
		{"loading on the wake", rec(Loading, loadingOn), running, Estimate{}, at(7 * min),
			Preview{Reply: ReplyLoadingWaking, Text: say(ReplyLoadingWaking, elapsed(7))}},
		{"stuck", rec(Stuck, loadingOn), running, Estimate{}, at(21 * min),
			Preview{Reply: ReplyStuck, Text: say(ReplyStuck, loadingFor(21))}},
		{"ready", rec(Ready, readyAt), running, Estimate{}, at(10 * min), Preview{Answered: true}},
		{"ready, not seen since the host started", rec(Ready, readyAt), View{Lookup: LookupUnreadable}, Estimate{}, at(10 * min), Preview{Answered: true}},
		{"crashed", rec(Crashed, readyAt), running, Estimate{}, at(30 * min),
			Preview{Reply: ReplyCrashed, Text: say(ReplyCrashed, wasReadyAt("12:09 UTC"))}},
		{"stopped", rec(Stopped, readyAt), down, Estimate{}, at(40 * min),
			Preview{Reply: ReplyReadyThenStopped, Wakes: true, Text: say(ReplyReadyThenStopped, wasReadyAt("12:09 UTC"))}},
		{"refused", rec(Refused, func(r *Record) { r.WakeRequestedAt, r.RefusedStatus = at(0), 409 }), down, Estimate{}, at(1 * min),
			Preview{Reply: ReplyRefused, Wakes: true, Text: say(ReplyRefused, httpStatus(409))}},
		{"start-failed", rec(StartFailed, wokeAt(0)), down, Estimate{}, at(1 * min),
			Preview{Reply: ReplyWakeFailed, Wakes: true, Text: say(ReplyWakeFailed)}},
		{"never-ready, the pod down", rec(NeverReady, wokeAt(0)), down, Estimate{}, at(36 * min),
			Preview{Reply: ReplyNeverReady, Wakes: true, Text: say(ReplyNeverReady, requestedAt("12:00 UTC"))}},
		{"never-ready, the pod up", rec(NeverReady, loadingOn), running, Estimate{}, at(36 * min),
			Preview{Reply: ReplyStuck, Text: say(ReplyStuck, loadingFor(36))}},
	}
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.rec
			got, err := pod.Preview(tt.rec, tt.view, tt.est, tt.now)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.rec); diff != "" {
				t.Errorf("record changed (-before +after):\n%s", diff)
			}
		})
	}
}
