package machines

import (
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
)

var t0 = time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)

// at is t0 plus d.
func at(d time.Duration) time.Time { return t0.Add(d) }

const min = time.Minute

func notReady(now time.Time, status string) Event {
	return Event{Trigger: NotReady, At: now, Status: status, Lookup: LookupFound}
}

func loading(now time.Time) Event { return Event{Trigger: ModelLoading, At: now} }

// withEstimate is ev carrying a measured estimate of wakes wakes.
func withEstimate(ev Event, d time.Duration, wakes int) Event {
	ev.Estimate = Estimate{Wake: d, Wakes: wakes}
	return ev
}

// rec builds a record of pod qwen.
func rec(state engine.State, f func(*Record)) Record {
	r := Record{Pod: "qwen", State: state}
	if f != nil {
		f(&r)
	}
	return r
}

func wokeAt(d time.Duration) func(*Record) {
	return func(r *Record) { r.WakeRequestedAt = at(d) }
}

type policyWant struct {
	Action Action
	Reply  ReplyKey
	Text   string
	Stuck  bool
	Record Record
}

// TestDecide is the wake policy's table: D1, D7, D9, D12, #684's feedback,
// #712 and the crashed state, with the default wording. Every row also
// checks that the record handed in is unchanged.
func TestDecide(t *testing.T) {
	readyAt := func(wake, ready time.Time) func(*Record) {
		return func(r *Record) { r.WakeRequestedAt, r.ReadyAt = wake, ready }
	}
	tests := []struct {
		name string
		rec  Record
		ev   Event
		want policyWant
	}{
		// D1
		{
			name: "first not-ready wakes",
			rec:  NewRecord("qwen"),
			ev:   notReady(at(0), "EXITED"),
			want: policyWant{ActionWake, ReplyWaking,
				say(ReplyWaking), false,
				rec(Waking, wokeAt(0))},
		},
		{
			name: "an empty state is asleep",
			rec:  Record{Pod: "qwen"},
			ev:   notReady(at(0), "EXITED"),
			want: policyWant{ActionWake, ReplyWaking,
				say(ReplyWaking), false,
				rec(Waking, wokeAt(0))},
		},
		{
			name: "second within the window waits with whole minutes",
			rec:  rec(Waking, wokeAt(0)),
			ev:   notReady(at(3*min+59*time.Second), "CREATED"),
			want: policyWant{ActionWait, ReplyStillWaking,
				say(ReplyStillWaking, elapsed(3)), false,
				rec(Waking, wokeAt(0))},
		},
		{
			name: "the window edge is inclusive",
			rec:  rec(Waking, wokeAt(0)),
			ev:   notReady(at(15*min), "EXITED"),
			want: policyWant{ActionWait, ReplyStillWaking,
				say(ReplyStillWaking, elapsed(15)), false,
				rec(Waking, wokeAt(0))},
		},
		{
			name: "15 min + 1 ms wakes again with a fresh clock (#712)",
			rec:  rec(Waking, wokeAt(0)),
			ev:   notReady(at(15*min+time.Millisecond), "EXITED"),
			want: policyWant{ActionWake, ReplyRewake,
				say(ReplyRewake), false,
				rec(Waking, wokeAt(15*min+time.Millisecond))},
		},
		{
			name: "2796 minutes later: the same neutral reply (#712)",
			rec:  rec(Waking, wokeAt(0)),
			ev:   notReady(at(2796*min), "EXITED"),
			want: policyWant{ActionWake, ReplyRewake,
				say(ReplyRewake), false,
				rec(Waking, wokeAt(2796*min))},
		},
		{
			name: "a re-wake clears the loading clock (#712)",
			rec:  rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(5*min) }),
			ev:   notReady(at(22*min), "EXITED"),
			want: policyWant{ActionWake, ReplyRewake,
				say(ReplyRewake), false,
				rec(Waking, wokeAt(22*min))},
		},
		{
			name: "UNREADABLE waits, wakes nothing, clears the loading clock, keeps the state",
			rec: rec(Loading, func(r *Record) {
				r.WakeRequestedAt, r.ModelLoadingSince, r.ReadyAt = at(0), at(0), at(9*min)
			}),
			ev: Event{Trigger: Unreadable, At: at(40 * min), Status: "UNKNOWN", Lookup: LookupUnreadable},
			want: policyWant{ActionWait, ReplyUnreadable,
				say(ReplyUnreadable), false,
				rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ReadyAt = at(0), at(9*min) })},
		},
		{
			name: "UNREADABLE on a pod never woken wakes nothing",
			rec:  NewRecord("qwen"),
			ev:   Event{Trigger: Unreadable, At: at(0), Lookup: LookupUnreadable},
			want: policyWant{ActionWait, ReplyUnreadable,
				say(ReplyUnreadable), false,
				NewRecord("qwen")},
		},
		// D7, D9
		{
			name: "model loading with a wake on the clock: seeded from the wake",
			rec:  rec(Waking, wokeAt(0)),
			ev:   loading(at(6*min + 43*time.Second)),
			want: policyWant{ActionWait, ReplyLoadingWaking,
				say(ReplyLoadingWaking, elapsed(6)), false,
				rec(Loading, func(r *Record) {
					r.WakeRequestedAt, r.ModelLoadingSince, r.RunningAt = at(0), at(0), at(6*min+43*time.Second)
				})},
		},
		{
			name: "model loading without a wake: the clock starts now",
			rec:  NewRecord("qwen"),
			ev:   loading(at(0)),
			want: policyWant{ActionWait, ReplyLoading,
				say(ReplyLoading), false,
				rec(Loading, func(r *Record) { r.ModelLoadingSince = at(0) })},
		},
		{
			name: "a wake older than wake_watch is off the clock: loading starts now, never wakes",
			rec:  rec(Waking, wokeAt(0)),
			ev:   loading(at(35*min + time.Second)),
			want: policyWant{ActionWait, ReplyLoading,
				say(ReplyLoading), false,
				rec(Loading, func(r *Record) {
					r.WakeRequestedAt, r.ModelLoadingSince, r.RunningAt = at(0), at(35*min+time.Second), at(35*min+time.Second)
				})},
		},
		{
			name: "loading past the window never wakes",
			rec:  rec(Waking, wokeAt(0)),
			ev:   loading(at(16 * min)),
			want: policyWant{ActionWait, ReplyLoadingWaking,
				say(ReplyLoadingWaking, elapsed(16)), false,
				rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince, r.RunningAt = at(0), at(0), at(16*min) })},
		},
		{
			name: "the running loading clock is kept",
			rec:  rec(Loading, func(r *Record) { r.ModelLoadingSince = at(0) }),
			ev:   loading(at(19*min + 59*time.Second)),
			want: policyWant{ActionWait, ReplyLoading,
				say(ReplyLoading), false,
				rec(Loading, func(r *Record) { r.ModelLoadingSince = at(0) })},
		},
		{
			name: "the ceiling edge is inclusive: stuck at exactly 20 min",
			rec:  rec(Loading, func(r *Record) { r.ModelLoadingSince = at(0) }),
			ev:   loading(at(20 * min)),
			want: policyWant{ActionWait, ReplyStuck,
				say(ReplyStuck, loadingFor(20)), true,
				rec(Stuck, func(r *Record) { r.ModelLoadingSince = at(0) })},
		},
		{
			name: "loading 25 minutes after the wake: stuck, no wake",
			rec:  rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(0) }),
			ev:   loading(at(25 * min)),
			want: policyWant{ActionWait, ReplyStuck,
				say(ReplyStuck, loadingFor(25)), true,
				rec(Stuck, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(0) })},
		},
		{
			name: "stuck stays stuck and keeps its clock",
			rec:  rec(Stuck, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(0) }),
			ev:   loading(at(31 * min)),
			want: policyWant{ActionWait, ReplyStuck,
				say(ReplyStuck, loadingFor(31)), true,
				rec(Stuck, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(0) })},
		},
		{
			name: "a non-loading not-ready clears the clock",
			rec:  rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(0) }),
			ev:   notReady(at(7*min), "EXITED"),
			want: policyWant{ActionWait, ReplyStillWaking,
				say(ReplyStillWaking, elapsed(7)), false,
				rec(Waking, wokeAt(0))},
		},
		// D12
		{
			name: "ready then stopped, inside the window, same day",
			rec:  rec(Stopped, readyAt(at(0), at(9*min))),
			ev:   notReady(at(14*min), "EXITED"),
			want: policyWant{ActionWake, ReplyReadyThenStopped,
				say(ReplyReadyThenStopped, wasReadyAt("12:09 UTC")), false,
				rec(Waking, func(r *Record) { r.WakeRequestedAt, r.ReadyAt = at(14*min), at(9*min) })},
		},
		{
			name: "ready then stopped, beyond the window, the next day: date-prefixed",
			rec:  rec(Stopped, readyAt(at(0), at(9*min))),
			ev:   notReady(at(13*time.Hour), "EXITED"),
			want: policyWant{ActionWake, ReplyReadyThenStopped,
				say(ReplyReadyThenStopped, wasReadyAt("2026-09-09 12:09 UTC")), false,
				rec(Waking, func(r *Record) { r.WakeRequestedAt, r.ReadyAt = at(13*time.Hour), at(9*min) })},
		},
		{
			name: "never-ready wakes again regardless of the window",
			rec:  rec(NeverReady, wokeAt(0)),
			ev:   notReady(at(36*min), "EXITED"),
			want: policyWant{ActionWake, ReplyNeverReady,
				say(ReplyNeverReady, requestedAt("12:00 UTC")), false,
				rec(Waking, wokeAt(36*min))},
		},
		{
			name: "refused wakes again inside the window, naming the status",
			rec:  rec(Refused, func(r *Record) { r.WakeRequestedAt, r.RefusedStatus = at(0), 409 }),
			ev:   notReady(at(min), "EXITED"),
			want: policyWant{ActionWake, ReplyRefused,
				say(ReplyRefused, httpStatus(409)), false,
				rec(Waking, wokeAt(min))},
		},
		{
			name: "a start that never reached the conductor wakes again at once",
			rec:  rec(StartFailed, wokeAt(0)),
			ev:   notReady(at(time.Second), "EXITED"),
			want: policyWant{ActionWake, ReplyWakeFailed,
				say(ReplyWakeFailed), false,
				rec(Waking, wokeAt(time.Second))},
		},
		{
			name: "readySince of the wake's boot: ready, the loading clock stops",
			rec:  rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(0) }),
			ev:   Event{Trigger: ReadySinceSeen, At: at(10 * min), ReadySince: at(9 * min)},
			want: policyWant{ActionNone, "", "", false, rec(Ready, readyAt(at(0), at(9*min)))},
		},
		{
			name: "readySince exactly ready_slack before the wake still counts",
			rec:  rec(Waking, wokeAt(0)),
			ev:   Event{Trigger: ReadySinceSeen, At: at(min), ReadySince: at(-time.Minute)},
			want: policyWant{ActionNone, "", "", false, rec(Ready, func(r *Record) {
				// Seen up first when already ready: RUNNING no later than ready.
				r.WakeRequestedAt, r.ReadyAt, r.RunningAt = at(0), at(-time.Minute), at(-time.Minute)
			})},
		},
		{
			name: "readySince of an earlier boot: the pod is up, not ready",
			rec:  rec(Waking, wokeAt(0)),
			ev:   Event{Trigger: ReadySinceSeen, At: at(min), ReadySince: at(-time.Minute - time.Millisecond)},
			want: policyWant{ActionNone, "", "", false,
				rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince, r.RunningAt = at(0), at(0), at(min) })},
		},
		{
			name: "an answered turn is ready since the answer when the conductor gives no readySince",
			rec:  rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(0) }),
			ev:   Event{Trigger: Answered, At: at(9 * min)},
			want: policyWant{ActionNone, "", "", false, rec(Ready, func(r *Record) { r.WakeRequestedAt, r.ReadyAt, r.Served = at(0), at(9*min), true })},
		},
		{
			name: "a superseded watch is inert",
			rec:  rec(Waking, wokeAt(20*min)),
			ev:   Event{Trigger: NeverReadySeen, At: at(35 * min), Wake: at(0)},
			want: policyWant{ActionNone, "", "", false, rec(Waking, wokeAt(20*min))},
		},
		{
			name: "never-ready of the wake on record",
			rec:  rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(3*min) }),
			ev:   Event{Trigger: NeverReadySeen, At: at(35 * min), Wake: at(0)},
			want: policyWant{ActionNone, "", "", false,
				rec(NeverReady, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(3*min) })},
		},
		{
			name: "a refusal with no wake on record is inert",
			rec:  NewRecord("qwen"),
			ev:   Event{Trigger: StartRefused, At: at(0), HTTPStatus: 409},
			want: policyWant{ActionNone, "", "", false, NewRecord("qwen")},
		},
		{
			// The read before this turn said RUNNING (a pod seen down would
			// be stopped): up, with no way to the model.
			name: "ready, and a turn finds no way to the model: loading, no wake",
			rec:  rec(Ready, readyAt(at(0), at(9*min))),
			ev:   notReady(at(12*min), "RUNNING"),
			want: policyWant{ActionWait, ReplyLoadingWaking,
				say(ReplyLoadingWaking, elapsed(12)), false,
				rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ReadyAt, r.ModelLoadingSince = at(0), at(9*min), at(0) })},
		},
		// Crashed
		{
			name: "ready, then not answering while RUNNING: crashed, no wake",
			rec:  rec(Ready, readyAt(at(0), at(9*min))),
			ev:   loading(at(40 * min)),
			want: policyWant{ActionWait, ReplyCrashed,
				say(ReplyCrashed, wasReadyAt("12:09 UTC")), false,
				rec(Crashed, readyAt(at(0), at(9*min)))},
		},
		{
			name: "crashed stays crashed without waiting out the ceiling",
			rec:  rec(Crashed, readyAt(at(0), at(9*min))),
			ev:   loading(at(41 * min)),
			want: policyWant{ActionWait, ReplyCrashed,
				say(ReplyCrashed, wasReadyAt("12:09 UTC")), false,
				rec(Crashed, readyAt(at(0), at(9*min)))},
		},
		{
			name: "the crashed boot's own readySince leaves it crashed",
			rec:  rec(Crashed, readyAt(at(0), at(9*min))),
			ev:   Event{Trigger: ReadySinceSeen, At: at(42 * min), ReadySince: at(9 * min)},
			want: policyWant{ActionNone, "", "", false, rec(Crashed, readyAt(at(0), at(9*min)))},
		},
		{
			name: "a later readySince is a new boot: ready",
			rec:  rec(Crashed, readyAt(at(0), at(9*min))),
			ev:   Event{Trigger: ReadySinceSeen, At: at(50 * min), ReadySince: at(48 * min)},
			want: policyWant{ActionNone, "", "", false, rec(Ready, readyAt(at(0), at(48*min)))},
		},
		{
			name: "an answer leaves crashed",
			rec:  rec(Crashed, readyAt(at(0), at(9*min))),
			ev:   Event{Trigger: Answered, At: at(50 * min)},
			want: policyWant{ActionNone, "", "", false, rec(Ready, func(r *Record) { r.WakeRequestedAt, r.ReadyAt, r.Served = at(0), at(50*min), true })},
		},
		// What the conductor says
		{
			name: "a view that sees the stop keeps what the next reply quotes",
			rec:  rec(Ready, readyAt(at(0), at(9*min))),
			ev:   Event{Trigger: PodDown, At: at(30 * min), Status: "EXITED", Lookup: LookupFound},
			want: policyWant{ActionNone, "", "", false, rec(Stopped, readyAt(at(0), at(9*min)))},
		},
		{
			name: "RUNNING without readySince while waking: loading, seeded from the wake",
			rec:  rec(Waking, wokeAt(0)),
			ev:   Event{Trigger: PodUp, At: at(6 * min), Status: "RUNNING", Lookup: LookupFound},
			want: policyWant{ActionNone, "", "", false,
				rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince, r.RunningAt = at(0), at(0), at(6*min) })},
		},
		{
			name: "down while loading on a wake: waking",
			rec:  rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(0) }),
			ev:   Event{Trigger: PodDown, At: at(6 * min), Status: "EXITED", Lookup: LookupFound},
			want: policyWant{ActionNone, "", "", false, rec(Waking, wokeAt(0))},
		},
		{
			name: "down while loading with no wake on the clock: asleep",
			rec:  rec(Loading, func(r *Record) { r.ModelLoadingSince = at(0) }),
			ev:   Event{Trigger: PodDown, At: at(6 * min), Status: "EXITED", Lookup: LookupFound},
			want: policyWant{ActionNone, "", "", false, NewRecord("qwen")},
		},
		// The wake's phases: first seen up, and served
		{
			name: "seen up again after a stop mid-wake: the first RUNNING time is kept",
			rec:  rec(Waking, func(r *Record) { r.WakeRequestedAt, r.RunningAt = at(0), at(3*min) }),
			ev:   Event{Trigger: PodUp, At: at(6 * min), Status: "RUNNING", Lookup: LookupFound},
			want: policyWant{ActionNone, "", "", false, rec(Loading, func(r *Record) {
				r.WakeRequestedAt, r.ModelLoadingSince, r.RunningAt = at(0), at(0), at(3*min)
			})},
		},
		{
			name: "first seen up with this boot's readySince: RUNNING at the ready time",
			rec:  rec(Waking, wokeAt(0)),
			ev:   Event{Trigger: ReadySinceSeen, At: at(10 * min), Status: "RUNNING", ReadySince: at(9 * min)},
			want: policyWant{ActionNone, "", "", false, rec(Ready, func(r *Record) {
				r.WakeRequestedAt, r.ReadyAt, r.RunningAt = at(0), at(9*min), at(9*min)
			})},
		},
		{
			name: "a turn answered while waking: up, ready and served at once",
			rec:  rec(Waking, wokeAt(0)),
			ev:   Event{Trigger: Answered, At: at(9 * min)},
			want: policyWant{ActionNone, "", "", false, rec(Ready, func(r *Record) {
				r.WakeRequestedAt, r.ReadyAt, r.RunningAt, r.Served = at(0), at(9*min), at(9*min), true
			})},
		},
		{
			name: "the watch's probe answering makes the wake ready, and serves nobody",
			rec:  rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince, r.RunningAt = at(0), at(0), at(6*min) }),
			ev:   Event{Trigger: Answered, At: at(9 * min), Probe: true},
			want: policyWant{ActionNone, "", "", false, rec(Ready, func(r *Record) {
				r.WakeRequestedAt, r.RunningAt, r.ReadyAt = at(0), at(6*min), at(9*min)
			})},
		},
		{
			name: "the first turn answered on a ready wake serves it",
			rec:  rec(Ready, func(r *Record) { r.WakeRequestedAt, r.RunningAt, r.ReadyAt = at(0), at(6*min), at(9*min) }),
			ev:   Event{Trigger: Answered, At: at(10 * min)},
			want: policyWant{ActionNone, "", "", false, rec(Ready, func(r *Record) {
				r.WakeRequestedAt, r.RunningAt, r.ReadyAt, r.Served = at(0), at(6*min), at(9*min), true
			})},
		},
		{
			name: "stopped, then woken again: the new wake has no RUNNING time and served nobody yet",
			rec: rec(Stopped, func(r *Record) {
				r.WakeRequestedAt, r.RunningAt, r.ReadyAt, r.Served = at(0), at(6*min), at(9*min), true
			}),
			ev: notReady(at(40*min), "EXITED"),
			want: policyWant{ActionWake, ReplyReadyThenStopped,
				say(ReplyReadyThenStopped, wasReadyAt("12:09 UTC")), false,
				rec(Waking, func(r *Record) { r.WakeRequestedAt, r.ReadyAt = at(40*min), at(9*min) })},
		},
		// The estimate measured from past wakes
		{
			name: "a measured estimate is the figure the waking reply quotes",
			rec:  NewRecord("qwen"),
			ev:   withEstimate(notReady(at(0), "EXITED"), 4*min, 3),
			want: policyWant{ActionWake, ReplyWaking,
				say(ReplyWaking, eta(4)), false,
				rec(Waking, wokeAt(0))},
		},
		{
			name: "a measured estimate is rounded to the nearest minute",
			rec:  NewRecord("qwen"),
			ev:   withEstimate(notReady(at(0), "EXITED"), 6*min+30*time.Second, 5),
			want: policyWant{ActionWake, ReplyWaking,
				say(ReplyWaking, eta(7)), false,
				rec(Waking, wokeAt(0))},
		},
		{
			name: "still waking inside the measured estimate: usually ready by it",
			rec:  rec(Waking, wokeAt(0)),
			ev:   withEstimate(notReady(at(3*min+59*time.Second), "CREATED"), 4*min, 3),
			want: policyWant{ActionWait, ReplyStillWaking,
				say(ReplyStillWaking, elapsed(3), eta(4)), false,
				rec(Waking, wokeAt(0))},
		},
		{
			name: "the measured estimate run out, edge inclusive: the reply says the wake is late",
			rec:  rec(Waking, wokeAt(0)),
			ev:   withEstimate(notReady(at(4*min), "CREATED"), 4*min, 3),
			want: policyWant{ActionWait, ReplyStillWakingLate,
				say(ReplyStillWakingLate, elapsed(4), eta(4)), false,
				rec(Waking, wokeAt(0))},
		},
		{
			name: "late up to the window's edge; beyond it the same re-wake as ever (#712)",
			rec:  rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(0) }),
			ev:   withEstimate(notReady(at(15*min), "EXITED"), 4*min, 3),
			want: policyWant{ActionWait, ReplyStillWakingLate,
				say(ReplyStillWakingLate, elapsed(15), eta(4)), false,
				rec(Waking, wokeAt(0))},
		},
		{
			name: "with no measured wake, past expected_wake keeps the design's wording",
			rec:  rec(Waking, wokeAt(0)),
			ev:   notReady(at(12*min), "EXITED"),
			want: policyWant{ActionWait, ReplyStillWaking,
				say(ReplyStillWaking, elapsed(12)), false,
				rec(Waking, wokeAt(0))},
		},
		{
			name: "a wake again after an outcome announces the measured figure",
			rec:  rec(NeverReady, wokeAt(0)),
			ev:   withEstimate(notReady(at(36*min), "EXITED"), 5*min, 10),
			want: policyWant{ActionWake, ReplyNeverReady,
				say(ReplyNeverReady, requestedAt("12:00 UTC"), eta(5)), false,
				rec(Waking, wokeAt(36*min))},
		},
	}
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.rec
			d, next, err := pod.Decide(tt.rec, tt.ev)
			if err != nil {
				t.Fatal(err)
			}
			got := policyWant{d.Action, d.Reply, d.Text, d.Stuck, next}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.rec); diff != "" {
				t.Errorf("record handed in was changed (-before +after):\n%s", diff)
			}
			if err := CheckPlain(d.Text); err != nil {
				t.Errorf("reply is not plain text: %v", err)
			}
			if want := tt.want.Reply == ReplyCrashed; d.Crashed != want {
				t.Errorf("Crashed = %v, want %v", d.Crashed, want)
			}
		})
	}
}

// TestDecideShortTimings shows that the timings come from the policy, not
// from constants: an operator can shorten every one.
func TestDecideShortTimings(t *testing.T) {
	p := DefaultPolicy()
	p.Timings.WakeWindow = 2 * time.Minute
	p.Timings.ExpectedWake = 4 * time.Minute
	pod, err := NewPod(p)
	if err != nil {
		t.Fatal(err)
	}
	d, r, err := pod.Decide(NewRecord("qwen"), notReady(at(0), "EXITED"))
	if err != nil {
		t.Fatal(err)
	}
	if want := say(ReplyWaking, eta(4)); d.Text != want {
		t.Errorf("text = %q, want %q", d.Text, want)
	}
	d, _, err = pod.Decide(r, notReady(at(2*min+time.Millisecond), "EXITED"))
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != ActionWake || d.Reply != ReplyRewake {
		t.Errorf("got %s/%s, want wake/rewake past a 2-minute window", d.Action, d.Reply)
	}
}

// TestDecideUnknownTrigger: an event the table does not know is an error,
// never a panic, and leaves the record as it was.
func TestDecideUnknownTrigger(t *testing.T) {
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	in := NewRecord("qwen")
	_, out, err := pod.Decide(in, Event{Trigger: "bogus", At: at(0)})
	if err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Fatalf("err = %v, want an error naming the trigger", err)
	}
	if diff := cmp.Diff(in, out); diff != "" {
		t.Errorf("record changed on error (-want +got):\n%s", diff)
	}
}

func TestDescribeDecision(t *testing.T) {
	tests := []struct {
		name         string
		status       string
		modelLoading bool
		d            Decision
		wantLevel    slog.Level
		wantLine     string
	}{
		{"asleep wakes", "EXITED", false, Decision{Action: ActionWake},
			slog.LevelInfo, "provider not ready for pod qwen (status EXITED) → wake"},
		{"loading waits", "RUNNING", true, Decision{Action: ActionWait},
			slog.LevelInfo, "provider not ready for pod qwen (status RUNNING, model loading) → wait"},
		{"stuck is an error", "RUNNING", true, Decision{Action: ActionWait, Stuck: true},
			slog.LevelError, "provider not ready for pod qwen (status RUNNING, model loading) → wait — STUCK: up but not answering"},
		{"crashed is an error", "RUNNING", true, Decision{Action: ActionWait, Crashed: true},
			slog.LevelError, "provider not ready for pod qwen (status RUNNING, model loading) → wait — CRASHED: was answering, stopped while RUNNING"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lvl, line := DescribeDecision("qwen", tt.status, tt.modelLoading, tt.d)
			if lvl != tt.wantLevel || line != tt.wantLine {
				t.Errorf("got (%v, %q), want (%v, %q)", lvl, line, tt.wantLevel, tt.wantLine)
			}
		})
	}
}

// TestDescribe is the reply a resume gets when the model is not freshly
// ready: the state's reply, never a wake.
func TestDescribe(t *testing.T) {
	found := View{Status: "EXITED", Lookup: LookupFound}
	running := View{Status: "RUNNING", IsRunning: true, Lookup: LookupFound}
	loadingOn := func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(0) }
	tests := []struct {
		name string
		rec  Record
		view View
		now  time.Time
		want ReplyKey
		text string
	}{
		{"cache only", rec(Waking, wokeAt(0)), View{Status: "RUNNING", IsRunning: true, Lookup: LookupFound, FromCache: true}, at(5 * min),
			ReplyUnreadable, say(ReplyUnreadable)},
		{"unreadable", rec(Waking, wokeAt(0)), View{Lookup: LookupUnreadable}, at(5 * min),
			ReplyUnreadable, say(ReplyUnreadable)},
		{"loading on the wake", rec(Loading, loadingOn), running, at(7 * min),
			ReplyLoadingWaking, say(ReplyLoadingWaking, elapsed(7))},
		{"loading past the ceiling", rec(Loading, loadingOn), running, at(21 * min),
			ReplyStuck, say(ReplyStuck, loadingFor(21))},
		{"crashed", rec(Crashed, func(r *Record) { r.WakeRequestedAt, r.ReadyAt = at(0), at(9*min) }), running, at(30 * min),
			ReplyCrashed, say(ReplyCrashed, wasReadyAt("12:09 UTC"))},
		{"waking in the window", rec(Waking, wokeAt(0)), View{Status: "CREATED", Lookup: LookupFound}, at(4 * min),
			ReplyStillWaking, say(ReplyStillWaking, elapsed(4))},
		{"stopped again after ready", rec(Stopped, func(r *Record) { r.WakeRequestedAt, r.ReadyAt = at(0), at(9*min) }), found, at(12 * min),
			ReplyResumeWaiting, say(ReplyResumeWaiting)},
		{"window over", rec(Waking, wokeAt(0)), found, at(16 * min),
			ReplyResumeWaiting, say(ReplyResumeWaiting)},
	}
	pod, err := NewPod(DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.rec
			key, text, err := pod.Describe(tt.rec, tt.view, tt.now, Estimate{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]string{string(tt.want), tt.text}, []string{string(key), text}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tt.rec); diff != "" {
				t.Errorf("record changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestRecordEqual(t *testing.T) {
	a := rec(Loading, func(r *Record) { r.WakeRequestedAt, r.ModelLoadingSince = at(0), at(min) })
	b := a
	b.WakeRequestedAt = a.WakeRequestedAt.In(time.FixedZone("X", 3600))
	if !a.Equal(b) {
		t.Error("the same instants in another zone must be equal")
	}
	for name, change := range map[string]func(*Record){
		"state":    func(r *Record) { r.State = Stuck },
		"wake":     func(r *Record) { r.WakeRequestedAt = at(time.Second) },
		"loading":  func(r *Record) { r.ModelLoadingSince = time.Time{} },
		"ready at": func(r *Record) { r.ReadyAt = at(0) },
		"status":   func(r *Record) { r.RefusedStatus = 409 },
		"pod":      func(r *Record) { r.Pod = "other" },
		"running":  func(r *Record) { r.RunningAt = at(2 * min) },
		"served":   func(r *Record) { r.Served = true },
		"stopped":  func(r *Record) { r.StoppedAt, r.StopReason = at(20*min), StopIdle },
		"answered": func(r *Record) { r.AnsweredAt = at(5 * min) },
	} {
		c := a
		change(&c)
		if a.Equal(c) {
			t.Errorf("a change of %s must not be equal", name)
		}
	}
}

// TestRecordFromBeforeStates: a record stored when the wake's outcome was a
// field beside the state reads as the state that outcome now is.
func TestRecordFromBeforeStates(t *testing.T) {
	tests := []struct {
		name, json string
		want       Record
	}{
		{"a start never sent was refused + start-failed",
			`{"pod":"qwen","state":"refused","wakeRequestedAt":"2026-09-09T12:00:00Z","outcome":"start-failed"}`,
			rec(StartFailed, wokeAt(0))},
		{"a refusal stays refused",
			`{"pod":"qwen","state":"refused","wakeRequestedAt":"2026-09-09T12:00:00Z","outcome":"refused","refusedStatus":409}`,
			rec(Refused, func(r *Record) { r.WakeRequestedAt, r.RefusedStatus = at(0), 409 })},
		{"ready keeps its time",
			`{"pod":"qwen","state":"ready","wakeRequestedAt":"2026-09-09T12:00:00Z","outcome":"ready","readyAt":"2026-09-09T12:09:00Z"}`,
			rec(Ready, func(r *Record) { r.WakeRequestedAt, r.ReadyAt = at(0), at(9*min) })},
		{"today's record", `{"pod":"qwen","state":"stopped","readyAt":"2026-09-09T12:09:00Z"}`,
			rec(Stopped, func(r *Record) { r.ReadyAt = at(9 * min) })},
		{"a record with an answer's stamp", `{"pod":"qwen","state":"ready","readyAt":"2026-09-09T12:09:00Z","answeredAt":"2026-09-09T12:14:00Z"}`,
			rec(Ready, func(r *Record) { r.ReadyAt, r.AnsweredAt = at(9*min), at(14*min) })},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Record
			if err := json.Unmarshal([]byte(tt.json), &got); err != nil {
				t.Fatal(err)
			}
			if !tt.want.Equal(got) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestRepliesNameThePodsBackend: a refused or unsent start's reply names
// the backend Policy.Backends gives the pod, and the conductor for a pod
// it does not name.
func TestRepliesNameThePodsBackend(t *testing.T) {
	t.Parallel()
	p, err := NewPod(Policy{Timings: DefaultTimings(), Replies: MustDefaultReplies(), Backends: map[string]string{"gpu": "RunPod"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pod   string
		state engine.State
		want  string
	}{
		{"gpu", Refused, say(ReplyRefused, httpStatus(409), backend("RunPod"))},
		{"gpu", StartFailed, say(ReplyWakeFailed, backend("RunPod"))},
		{"qwen", Refused, say(ReplyRefused, httpStatus(409))},
		{"qwen", StartFailed, say(ReplyWakeFailed)},
	} {
		r := Record{Pod: tc.pod, State: tc.state, WakeRequestedAt: at(0), RefusedStatus: 409}
		d, _, err := p.Decide(r, notReady(at(time.Second), "EXITED"))
		if err != nil {
			t.Fatal(err)
		}
		if d.Text != tc.want {
			t.Errorf("%s in %s: reply %q, want %q", tc.pod, tc.state, d.Text, tc.want)
		}
	}
}
