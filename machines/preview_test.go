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
			Preview{Reply: ReplyWaking, Wakes: true, Text: "Waking the GPU brain — that takes about 9 minutes. Ask me again in a few minutes."}},
		{"asleep, a measured estimate", rec(Asleep, nil), down, Estimate{Wake: 7 * min, Wakes: 3}, at(0),
			Preview{Reply: ReplyWaking, Wakes: true, Text: "Waking the GPU brain — that takes about 7 minutes. Ask me again in a few minutes."}},
		{"waking in the window", rec(Waking, wokeAt(0)), down, Estimate{}, at(4 * min),
			Preview{Reply: ReplyStillWaking, Text: "Still waking — 4 min elapsed, usually ready by ~9. Ask again shortly."}},
		{"waking past the window", rec(Waking, wokeAt(0)), down, Estimate{}, at(16 * min),
			Preview{Reply: ReplyRewake, Wakes: true, Text: "The GPU brain is not ready. I'll try to wake it again. Ask again in a few minutes."}},
		{"loading on the wake", rec(Loading, loadingOn), running, Estimate{}, at(7 * min),
			Preview{Reply: ReplyLoadingWaking, Text: "Still waking — 7 min elapsed; the GPU is up and the model is loading. Ask again shortly."}},
		{"stuck", rec(Stuck, loadingOn), running, Estimate{}, at(21 * min),
			Preview{Reply: ReplyStuck, Text: "The model server has been up for 21 minutes and still is not answering — it may be stuck. Someone needs to look at the pod."}},
		{"ready", rec(Ready, readyAt), running, Estimate{}, at(10 * min), Preview{Answered: true}},
		{"ready, not seen since the host started", rec(Ready, readyAt), View{Lookup: LookupUnreadable}, Estimate{}, at(10 * min), Preview{Answered: true}},
		{"crashed", rec(Crashed, readyAt), running, Estimate{}, at(30 * min),
			Preview{Reply: ReplyCrashed, Text: "The model server answered at 12:09 UTC but has stopped answering — it may have crashed. Someone needs to look at the pod."}},
		{"stopped", rec(Stopped, readyAt), down, Estimate{}, at(40 * min),
			Preview{Reply: ReplyReadyThenStopped, Wakes: true, Text: "The GPU woke and was ready at 12:09 UTC, then stopped — it shuts down after 15 idle minutes. Waking it again — about 9 minutes."}},
		{"refused", rec(Refused, func(r *Record) { r.WakeRequestedAt, r.RefusedStatus = at(0), 409 }), down, Estimate{}, at(1 * min),
			Preview{Reply: ReplyRefused, Wakes: true, Text: "The last wake request was refused by the conductor (HTTP 409). Waking it again — about 9 minutes."}},
		{"start-failed", rec(StartFailed, wokeAt(0)), down, Estimate{}, at(1 * min),
			Preview{Reply: ReplyWakeFailed, Wakes: true, Text: "The last wake request may not have reached the conductor. Trying again — about 9 minutes."}},
		{"never-ready, the pod down", rec(NeverReady, wokeAt(0)), down, Estimate{}, at(36 * min),
			Preview{Reply: ReplyNeverReady, Wakes: true, Text: "The wake requested at 12:00 UTC did not complete — the GPU never became ready. Waking it again — about 9 minutes."}},
		{"never-ready, the pod up", rec(NeverReady, loadingOn), running, Estimate{}, at(36 * min),
			Preview{Reply: ReplyStuck, Text: "The model server has been up for 36 minutes and still is not answering — it may be stuck. Someone needs to look at the pod."}},
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
