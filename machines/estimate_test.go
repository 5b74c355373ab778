package machines

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
)

// took is a ready wake requested at request that took d.
func took(request, d time.Duration) Wake {
	return Wake{Pod: "qwen", RequestedAt: at(request), ReadyAt: at(request + d), Outcome: string(Ready)}
}

// wakesTaking is one ready wake an hour apart per duration, oldest first.
func wakesTaking(ds ...time.Duration) []Wake {
	out := make([]Wake, len(ds))
	for i, d := range ds {
		out[i] = took(time.Duration(i)*time.Hour, d)
	}
	return out
}

// TestEstimateWake is the estimate's table: the median of the last 10
// completed wakes, expected_wake until there is one.
func TestEstimateWake(t *testing.T) {
	const expected = 9 * min
	eleven := wakesTaking(30*min, 4*min, 4*min, 4*min, 5*min, 5*min, 5*min, 6*min, 6*min, 6*min, 7*min)
	reversed := make([]Wake, len(eleven))
	for i, w := range eleven {
		reversed[len(eleven)-1-i] = w
	}
	tests := []struct {
		name  string
		wakes []Wake
		want  Estimate
	}{
		{"none: expected_wake", nil, Estimate{Wake: expected}},
		{"one", wakesTaking(4 * min), Estimate{Wake: 4 * min, Wakes: 1}},
		{"odd count: the middle one", wakesTaking(5*min, 3*min, 4*min), Estimate{Wake: 4 * min, Wakes: 3}},
		{"even count: the mean of the middle two", wakesTaking(3*min, 6*min, 4*min, 5*min), Estimate{Wake: 4*min + 30*time.Second, Wakes: 4}},
		{"fewer than 10: all of them", wakesTaking(4*min, 4*min, 5*min, 8*min, 9*min), Estimate{Wake: 5 * min, Wakes: 5}},
		{"outliers do not move it", wakesTaking(4*min, 4*min, 4*min, 4*min, 34*min, 30*time.Second), Estimate{Wake: 4 * min, Wakes: 6}},
		// The first, 30-minute wake is the eleventh from the end: out. The
		// last ten are 4,4,4,5,5,5,6,6,6,7: the middle two are 5 and 5.
		{"more than 10: the last 10 by request time", eleven, Estimate{Wake: 5 * min, Wakes: 10}},
		{"the log's order does not matter", reversed, Estimate{Wake: 5 * min, Wakes: 10}},
		{"only ready wakes count", []Wake{
			took(0, 4*min),
			{Pod: "qwen", RequestedAt: at(time.Hour), Outcome: string(NeverReady)},
			{Pod: "qwen", RequestedAt: at(2 * time.Hour), Outcome: string(Refused)},
			{Pod: "qwen", RequestedAt: at(3 * time.Hour), RunningAt: at(3*time.Hour + 6*min), Outcome: WakeSuperseded},
			{Pod: "qwen", RequestedAt: at(4 * time.Hour), Outcome: string(StartFailed)},
		}, Estimate{Wake: 4 * min, Wakes: 1}},
		{"a wake ready before its request measured no boot", []Wake{
			took(0, 6*min),
			{Pod: "qwen", RequestedAt: at(time.Hour), ReadyAt: at(time.Hour - 30*time.Second), Outcome: string(Ready)},
			{Pod: "qwen", RequestedAt: at(2 * time.Hour), ReadyAt: at(2 * time.Hour), Outcome: string(Ready)},
		}, Estimate{Wake: 6 * min, Wakes: 1}},
		{"nothing completed: expected_wake", []Wake{
			{Pod: "qwen", RequestedAt: at(0), Outcome: string(NeverReady)},
		}, Estimate{Wake: expected}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, EstimateWake(tt.wakes, expected)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestWakePhases(t *testing.T) {
	type phases struct {
		Booting, Loading, Took       time.Duration
		BootingOK, LoadingOK, TookOK bool
	}
	of := func(w Wake) phases {
		var p phases
		p.Booting, p.BootingOK = w.Booting()
		p.Loading, p.LoadingOK = w.Loading()
		p.Took, p.TookOK = w.Took()
		return p
	}
	tests := []struct {
		name string
		w    Wake
		want phases
	}{
		{"every phase", Wake{RequestedAt: at(0), RunningAt: at(6 * min), ReadyAt: at(9 * min)},
			phases{6 * min, 3 * min, 9 * min, true, true, true}},
		{"never up", Wake{RequestedAt: at(0)}, phases{}},
		{"up, never ready", Wake{RequestedAt: at(0), RunningAt: at(6 * min)}, phases{Booting: 6 * min, BootingOK: true}},
		{"ready, never seen up (a record from before RUNNING was kept)", Wake{RequestedAt: at(0), ReadyAt: at(9 * min)},
			phases{Took: 9 * min, TookOK: true}},
		{"ready within ready_slack before the request: never negative", Wake{RequestedAt: at(0), RunningAt: at(-min), ReadyAt: at(-min)},
			phases{0, 0, 0, true, true, true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, of(tt.w)); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestLogWake: what the wake log records for each change of a record.
func TestLogWake(t *testing.T) {
	phased := func(state engine.State, f func(*Record)) Record {
		return rec(state, func(r *Record) {
			r.WakeRequestedAt, r.RunningAt = at(0), at(6*min)
			if f != nil {
				f(r)
			}
		})
	}
	readyAt9 := func(r *Record) { r.ReadyAt = at(9 * min) }
	served := func(r *Record) { r.ReadyAt, r.Served = at(9*min), true }
	logged := []Wake{
		{Pod: "qwen", RequestedAt: at(-time.Hour), ReadyAt: at(-51 * min), Outcome: string(Ready)},
		{Pod: "qwen", RequestedAt: at(0), RunningAt: at(6 * min), ReadyAt: at(9 * min), Outcome: string(Ready)},
	}
	tests := []struct {
		name          string
		logged        []Wake
		before, after Record
		want          Wake
		wantOK        bool
	}{
		{"a wake decided: in the record, not the log", nil, NewRecord("qwen"), rec(Waking, wokeAt(0)), Wake{}, false},
		{"first seen up: still in progress", nil, rec(Waking, wokeAt(0)), phased(Loading, nil), Wake{}, false},
		{"ready: logged with its phases", nil, phased(Loading, nil), phased(Ready, readyAt9),
			Wake{Pod: "qwen", RequestedAt: at(0), RunningAt: at(6 * min), ReadyAt: at(9 * min), Outcome: "ready"}, true},
		{"ready on an answered turn: logged served", nil, phased(Loading, nil), phased(Ready, served),
			Wake{Pod: "qwen", RequestedAt: at(0), RunningAt: at(6 * min), ReadyAt: at(9 * min), Outcome: "ready", Served: true}, true},
		{"the first answer after ready: the entry again, served", logged, phased(Ready, readyAt9), phased(Ready, served),
			Wake{Pod: "qwen", RequestedAt: at(0), RunningAt: at(6 * min), ReadyAt: at(9 * min), Outcome: "ready", Served: true}, true},
		{"served, not in the log (a wake from before the log): nothing", logged[:1], phased(Ready, readyAt9), phased(Ready, served), Wake{}, false},
		{"already served: nothing", []Wake{{RequestedAt: at(0), Outcome: "ready", Served: true}}, phased(Stopped, served), phased(Ready, served), Wake{}, false},
		{"stopped after ready: the entry stands", logged, phased(Ready, readyAt9), phased(Stopped, readyAt9), Wake{}, false},
		{"stopped by the host: the entry again, with the stop", logged, phased(Ready, served),
			phased(Idled, func(r *Record) { served(r); r.StoppedAt, r.StopReason = at(30*min), StopIdle }),
			Wake{Pod: "qwen", RequestedAt: at(0), RunningAt: at(6 * min), ReadyAt: at(9 * min), Outcome: "ready", Served: true,
				StoppedAt: at(30 * min), Stop: "idle"}, true},
		{"stopped by the host, not in the log: the entry from the record", nil, phased(Ready, readyAt9),
			phased(Idled, func(r *Record) { readyAt9(r); r.StoppedAt, r.StopReason = at(20*min), StopUnserved }),
			Wake{Pod: "qwen", RequestedAt: at(0), RunningAt: at(6 * min), ReadyAt: at(9 * min), Outcome: "ready",
				StoppedAt: at(20 * min), Stop: "unserved"}, true},
		{"idled, seen down: nothing", logged, phased(Idled, func(r *Record) { r.StoppedAt = at(30 * min) }),
			phased(Idled, func(r *Record) { r.StoppedAt = at(30 * min) }), Wake{}, false},
		{"refused", nil, rec(Waking, wokeAt(0)), rec(Refused, func(r *Record) { r.WakeRequestedAt, r.RefusedStatus = at(0), 409 }),
			Wake{Pod: "qwen", RequestedAt: at(0), Outcome: "refused"}, true},
		{"start never sent", nil, rec(Waking, wokeAt(0)), rec(StartFailed, wokeAt(0)),
			Wake{Pod: "qwen", RequestedAt: at(0), Outcome: "start-failed"}, true},
		{"never ready, up but silent", nil, phased(Stuck, nil), phased(NeverReady, nil),
			Wake{Pod: "qwen", RequestedAt: at(0), RunningAt: at(6 * min), Outcome: "never-ready"}, true},
		{"a previous boot's ready time is not this wake's", nil, phased(Loading, func(r *Record) { r.ReadyAt = at(-51 * min) }),
			phased(NeverReady, func(r *Record) { r.ReadyAt = at(-51 * min) }),
			Wake{Pod: "qwen", RequestedAt: at(0), RunningAt: at(6 * min), Outcome: "never-ready"}, true},
		{"seen down past wake_watch: never ready", nil, phased(Loading, nil), phased(Asleep, nil),
			Wake{Pod: "qwen", RequestedAt: at(0), RunningAt: at(6 * min), Outcome: "never-ready"}, true},
		{"woken again beyond the window: superseded", nil, phased(Loading, nil), rec(Waking, wokeAt(16*min)),
			Wake{Pod: "qwen", RequestedAt: at(0), RunningAt: at(6 * min), Outcome: "superseded"}, true},
		{"woken again after an outcome: logged already", logged, phased(Stopped, readyAt9), rec(Waking, wokeAt(40*min)), Wake{}, false},
		{"an ask that changes the loading clock only", nil, phased(Loading, nil), phased(Waking, nil), Wake{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := LogWake(tt.logged, tt.before, tt.after)
			if ok != tt.wantOK {
				t.Fatalf("ok = %v, want %v (entry %+v)", ok, tt.wantOK, got)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestReplyDataEta: RemainingMinutes and EtaAt for a wake in progress, never
// negative, and EtaMinutes as the replies quote it.
func TestReplyDataEta(t *testing.T) {
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	measured := Estimate{Wake: 4*min + 20*time.Second, Wakes: 3}
	type etaData struct {
		EtaMinutes, RemainingMinutes int
		EtaAt                        string
	}
	tests := []struct {
		name string
		rec  Record
		est  Estimate
		now  time.Time
		want etaData
	}{
		{"no wake", NewRecord("qwen"), Estimate{}, at(0), etaData{EtaMinutes: 9}},
		{"expected_wake at the request", rec(Waking, wokeAt(0)), Estimate{}, at(0), etaData{9, 9, "12:09 UTC"}},
		{"measured at the request", rec(Waking, wokeAt(0)), measured, at(0), etaData{4, 4, "12:04 UTC"}},
		{"measured, halfway", rec(Loading, wokeAt(0)), measured, at(2 * min), etaData{4, 2, "12:04 UTC"}},
		{"seconds left: still one minute", rec(Stuck, wokeAt(0)), measured, at(4*min + 10*time.Second), etaData{4, 1, "12:04 UTC"}},
		{"run out: zero, never negative", rec(Waking, wokeAt(0)), measured, at(12 * min), etaData{4, 0, "12:04 UTC"}},
		{"expected_wake run out", rec(Waking, wokeAt(0)), Estimate{}, at(12 * min), etaData{9, 0, "12:09 UTC"}},
		{"ready: no wake in progress", rec(Ready, func(r *Record) { r.WakeRequestedAt, r.ReadyAt = at(0), at(4*min) }), measured, at(5 * min),
			etaData{EtaMinutes: 4}},
		{"off the clock (wake_watch passed): no wake in progress", rec(Waking, wokeAt(0)), measured, at(36 * min), etaData{EtaMinutes: 4}},
		{"the estimate's time on another day carries its date", rec(Waking, wokeAt(12*time.Hour-2*min)), measured, at(12*time.Hour - 2*min),
			etaData{4, 4, "2026-09-10 00:02 UTC"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := pod.replyData(tt.rec, tt.rec, tt.est, tt.now)
			if diff := cmp.Diff(tt.want, etaData{d.EtaMinutes, d.RemainingMinutes, d.EtaAt}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestDescribeLate: a resume that finds the wake past its measured
// estimate hears so, as a turn would.
func TestDescribeLate(t *testing.T) {
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	created := View{Status: "CREATED", Lookup: LookupFound}
	measured := Estimate{Wake: 4 * min, Wakes: 3}
	tests := []struct {
		now  time.Time
		est  Estimate
		key  ReplyKey
		text string
	}{
		{at(3 * min), measured, ReplyStillWaking, say(ReplyStillWaking, elapsed(3), eta(4))},
		{at(6 * min), measured, ReplyStillWakingLate, say(ReplyStillWakingLate, elapsed(6), eta(4))},
		{at(12 * min), Estimate{}, ReplyStillWaking, say(ReplyStillWaking, elapsed(12))},
	}
	for _, tt := range tests {
		key, text, err := pod.Describe(rec(Waking, wokeAt(0)), created, tt.now, tt.est)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{string(tt.key), tt.text}, []string{string(key), text}); diff != "" {
			t.Errorf("at %s (-want +got):\n%s", tt.now.Format("15:04"), diff)
		}
	}
}
