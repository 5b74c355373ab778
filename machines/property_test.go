package machines

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/specs"
)

// randomEvent draws an event at now: turns, what the conductor says, and
// outcomes for the current wake, a superseded one, or none.
func randomEvent(r *rand.Rand, rec Record, now time.Time) Event {
	wakeOf := func() time.Time {
		switch r.IntN(3) {
		case 0:
			return rec.WakeRequestedAt
		case 1:
			return rec.WakeRequestedAt.Add(-time.Duration(r.IntN(60)+1) * time.Minute)
		default:
			return time.Time{}
		}
	}
	since := func() time.Time { return now.Add(-time.Duration(r.IntN(40*60)) * time.Second) }
	// A turn carries the pod's estimate: none measured, or the median of
	// 1 to 10 wakes.
	estimate := func() Estimate {
		if r.IntN(3) == 0 {
			return Estimate{}
		}
		return Estimate{Wake: time.Duration(r.IntN(20*60)+1) * time.Second, Wakes: r.IntN(10) + 1}
	}
	switch r.IntN(13) {
	case 0, 1:
		status := []string{"EXITED", "CREATED", "RUNNING", ""}[r.IntN(4)]
		lookup := []string{LookupFound, LookupFound, LookupNotFound, ""}[r.IntN(4)]
		return Event{Trigger: NotReady, At: now, Status: status, Lookup: lookup, Estimate: estimate()}
	case 2:
		return Event{Trigger: Unreadable, At: now, Lookup: LookupUnreadable, Estimate: estimate()}
	case 3:
		return Event{Trigger: ModelLoading, At: now, Status: "RUNNING", Estimate: estimate()}
	case 4:
		return Event{Trigger: Answered, At: now, Probe: r.IntN(3) == 0}
	case 5:
		return Event{Trigger: PodDown, At: now, Status: "EXITED"}
	case 6:
		return Event{Trigger: PodUp, At: now, Status: "RUNNING"}
	case 7:
		return Event{Trigger: ReadySinceSeen, At: now, Status: "RUNNING", ReadySince: since()}
	case 8:
		return Event{Trigger: NeverReadySeen, At: now, Wake: wakeOf()}
	case 9:
		return Event{Trigger: StartRefused, At: now, Wake: wakeOf(), HTTPStatus: []int{401, 403, 404, 409, 500, 503}[r.IntN(6)]}
	case 10:
		return Event{Trigger: HostStopped, At: now, StopReason: []string{StopIdle, StopUnserved}[r.IntN(2)]}
	default:
		return Event{Trigger: StartNotSent, At: now, Wake: wakeOf()}
	}
}

// randomStep is a clock jump: mostly seconds and minutes, sometimes days,
// sometimes exactly on an edge.
func randomStep(r *rand.Rand, p Timings) time.Duration {
	switch r.IntN(8) {
	case 0:
		return 0
	case 1:
		return p.WakeWindow
	case 2:
		return p.LoadingCeiling
	case 3:
		return time.Duration(r.IntN(72)) * time.Hour
	case 4:
		return time.Millisecond
	default:
		return time.Duration(r.IntN(20*60)) * time.Second
	}
}

// TestProperties replays random event sequences with clock jumps through
// the machine and checks what must hold whatever happens:
//   - no error: every event is handled from every state;
//   - every reply is plain text with no URL or markdown, and names no pod
//     but the record's own;
//   - never a second wake inside the window while the current wake's
//     outcome is unknown (waking, loading, stuck);
//   - only notReady wakes; observations and outcomes never reply;
//   - after the conductor says the pod is up (down), the state is one of
//     the up (down) states, or never-ready (a failed wake, either way):
//     what GET /api/pods reports always agrees;
//   - the record handed in is never changed;
//   - the reply's estimate is never negative: no remaining time below
//     zero, a measured figure of at least a minute, and the late reply only
//     past a measured estimate;
//   - a wake starts with no RUNNING time and no turn served; only an
//     answered turn serves, never the watch's probe;
//   - the wake log gets one entry per wake, each with an outcome and
//     ready times only for a ready one;
//   - the answer's stamp (AnsweredAt) is the host's: no event changes it.
func TestProperties(t *testing.T) {
	policy := DefaultPolicy()
	pod, err := NewPod(policy)
	if err != nil {
		t.Fatal(err)
	}
	const sequences, steps = 300, 120
	for seed := uint64(1); seed <= sequences; seed++ {
		r := rand.New(rand.NewPCG(seed, seed*7919))
		now := time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)
		rec := NewRecord("qwen")
		// A host's stamp from before the sequence, which it must keep.
		rec.AnsweredAt = now.Add(-time.Hour)
		var log []Wake // the wake log, as a store keeps it: one entry per wake
		for i := 0; i < steps; i++ {
			now = now.Add(randomStep(r, policy.Timings))
			ev := randomEvent(r, rec, now)
			before := rec
			d, next, err := pod.Decide(rec, ev)
			if err != nil {
				t.Fatalf("seed %d step %d: %+v from %s: %v", seed, i, ev, rec.State, err)
			}
			if diff := cmp.Diff(before, rec); diff != "" {
				t.Fatalf("seed %d step %d: record handed in changed:\n%s", seed, i, diff)
			}
			if err := CheckPlain(d.Text); err != nil {
				t.Fatalf("seed %d step %d: reply %q: %v", seed, i, d.Text, err)
			}
			if strings.Contains(d.Text, "http") || strings.Contains(d.Text, "error") {
				t.Fatalf("seed %d step %d: reply %q carries more than the pod name", seed, i, d.Text)
			}
			switch ev.Trigger {
			case NotReady, ModelLoading, Unreadable:
				if d.Reply == "" || d.Text == "" || d.Action == ActionNone {
					t.Fatalf("seed %d step %d: a turn got no reply", seed, i)
				}
			case Asked:
				if d.Reply == "" || d.Action != ActionNone || next.State != rec.State {
					t.Fatalf("seed %d step %d: asked decided %s/%q and went %s → %s", seed, i, d.Action, d.Reply, rec.State, next.State)
				}
			default:
				if d.Reply != "" || d.Action != ActionNone {
					t.Fatalf("seed %d step %d: %s decided %s/%s", seed, i, ev.Trigger, d.Action, d.Reply)
				}
			}
			switch ev.Trigger {
			case PodDown:
				if g := Facts(next.State).Group; g != specs.Down && g != specs.Either {
					t.Fatalf("seed %d step %d: the pod is down and the state is %s", seed, i, next.State)
				}
			case PodUp, ReadySinceSeen, ModelLoading:
				if g := Facts(next.State).Group; g != specs.Up && g != specs.Either {
					t.Fatalf("seed %d step %d: the pod is up and the state is %s", seed, i, next.State)
				}
			case Answered:
				if next.State != Ready {
					t.Fatalf("seed %d step %d: answered, and the state is %s", seed, i, next.State)
				}
			case HostStopped:
				// Only a ready pod (or one seen stopped since) is the
				// host's to stop; it remembers when and why.
				wantIdled := rec.State == Ready || rec.State == Stopped
				if (next.State == Idled) != (wantIdled || rec.State == Idled) || (!wantIdled && !next.Equal(rec)) || (wantIdled && (!next.StoppedAt.Equal(now) || next.StopReason != ev.StopReason)) {
					t.Fatalf("seed %d step %d: host stop from %s went to %s: %+v", seed, i, rec.State, next.State, next)
				}
			}
			if !next.AnsweredAt.Equal(rec.AnsweredAt) {
				t.Fatalf("seed %d step %d: %s changed the answer's stamp to %s", seed, i, ev.Trigger, next.AnsweredAt)
			}
			if next.State == Idled && rec.State != Idled && ev.Trigger != HostStopped {
				t.Fatalf("seed %d step %d: %s made the pod idled", seed, i, ev.Trigger)
			}
			data := pod.replyData(rec, next, ev.Estimate, now)
			if data.RemainingMinutes < 0 || data.EtaMinutes < 0 || (ev.Estimate.Wakes > 0 && data.EtaMinutes < 1) {
				t.Fatalf("seed %d step %d: estimate in the reply %+v for %+v", seed, i, data, ev.Estimate)
			}
			if d.Reply == ReplyStillWakingLate && (ev.Estimate.Wakes == 0 || now.Sub(rec.WakeRequestedAt) < ev.Estimate.Wake) {
				t.Fatalf("seed %d step %d: late with %+v, %s after the request", seed, i, ev.Estimate, now.Sub(rec.WakeRequestedAt))
			}
			if next.Served && !rec.Served && (ev.Trigger != Answered || ev.Probe) {
				t.Fatalf("seed %d step %d: %s (probe %v) served a turn", seed, i, ev.Trigger, ev.Probe)
			}
			if w, ok := LogWake(log, rec, next); ok {
				if !w.RequestedAt.Equal(rec.WakeRequestedAt) || w.Outcome == "" || (!w.ReadyAt.IsZero() && w.Outcome != string(Ready)) {
					t.Fatalf("seed %d step %d: logged %+v for %+v → %+v", seed, i, w, rec, next)
				}
				if j := slices.IndexFunc(log, func(l Wake) bool { return l.RequestedAt.Equal(w.RequestedAt) }); j >= 0 {
					log[j] = w
				} else {
					log = append(log, w)
				}
			}
			if d.Action == ActionWake {
				if !next.RunningAt.IsZero() || next.Served || !next.StoppedAt.IsZero() || next.StopReason != "" {
					t.Fatalf("seed %d step %d: a wake must start with no phase of its own: %+v", seed, i, next)
				}
				if ev.Trigger != NotReady {
					t.Fatalf("seed %d step %d: %s woke the pod", seed, i, ev.Trigger)
				}
				inWindow := !rec.WakeRequestedAt.IsZero() && now.Sub(rec.WakeRequestedAt) <= policy.Timings.WakeWindow
				if inWindow && slices.Contains([]engine.State{Waking, Loading, Stuck}, rec.State) {
					t.Fatalf("seed %d step %d: a second wake inside the window from %s: %+v", seed, i, rec.State, rec)
				}
				if !next.WakeRequestedAt.Equal(now) || next.State != Waking || !next.ModelLoadingSince.IsZero() {
					t.Fatalf("seed %d step %d: a wake must start a fresh clock: %+v", seed, i, next)
				}
			}
			rec = next
		}
	}
}
