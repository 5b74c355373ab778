package wake_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// TestWatchRecordsReady: the watch polls every minute until the conductor
// reports readySince, records the wake ready, and stops polling. The next
// not-ready then says the GPU was ready and stopped (D12).
func TestWatchRecordsReady(t *testing.T) {
	e := newEnv(t, wake.Config{})
	caps := &fakeCaps{readPod: func(_ context.Context, n int) (pluginapi.Pod, error) {
		if n < 9 {
			return exited(), nil
		}
		return readyPod("2026-09-09T12:08:30Z"), nil
	}}
	e.notReady(t, caps)
	for range 9 {
		e.step(t, time.Minute)
	}

	line := e.logs.wait(t, "wake ready for pod qwen: ready since 12:08 UTC")

	if diff := cmp.Diff(logLine{Level: "INFO", Msg: "wake ready for pod qwen: ready since 12:08 UTC", Pod: "qwen"}, line); diff != "" {
		t.Errorf("ready line (-want +got):\n%s", diff)
	}
	want := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: t0,
		Outcome: machines.OutcomeReady, ReadyAt: t0.Add(8*time.Minute + 30*time.Second)}
	if diff := cmp.Diff(want, e.record(t)); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if n := e.clk.Waiters(); n != 0 {
		t.Errorf("%d clock waiters after ready, want 0: the watch must stop", n)
	}
	e.clk.Advance(30 * time.Minute)
	if n := caps.reads.Load(); n != 9 {
		t.Errorf("pod read %d times, want 9 and no more after ready", n)
	}

	// 40 minutes after the wake the pod has idled out; the next ask says so and wakes.
	e.clk.Set(t0.Add(40 * time.Minute))
	d := e.notReady(t, caps)
	wantText := "The GPU woke and was ready at 12:08 UTC, then stopped — it shuts down after 15 idle minutes. Waking it again — about 9 minutes."
	if d.Action != machines.ActionWake || d.Text != wantText {
		t.Errorf("next ask: %q %q, want wake %q", d.Action, d.Text, wantText)
	}
	e.logs.waitN(t, acceptedLine, 2)
}

// TestWatchGivesUp: a wake not ready WakeWatch after its request is recorded
// never-ready with an error line at exactly 35 minutes, not a second before,
// whether or not the poll interval divides the watch.
func TestWatchGivesUp(t *testing.T) {
	tests := []struct {
		name      string
		poll      time.Duration
		wantReads int32
	}{
		{"poll every minute", time.Minute, 35},
		{"poll every 8 minutes", 8 * time.Minute, 5}, // 8, 16, 24, 32, and the deadline at 35
	}
	const neverLine = "wake never-ready for pod qwen: not ready 35 min after the request at 12:00 UTC"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, wake.Config{WatchPoll: tt.poll})
			caps := &fakeCaps{}
			e.notReady(t, caps)

			e.stepTo(t, t0.Add(34*time.Minute+59*time.Second), time.Minute)
			e.waitWaiters(t, 1)
			if got := e.logs.withMsg(t, neverLine); len(got) != 0 {
				t.Fatalf("gave up at 34:59: %v", got)
			}
			if got := e.record(t).Outcome; got != machines.OutcomeNone {
				t.Fatalf("outcome at 34:59 = %q, want none", got)
			}

			e.step(t, time.Second)

			line := e.logs.wait(t, neverLine)
			if diff := cmp.Diff(logLine{Level: "ERROR", Msg: neverLine, Pod: "qwen"}, line); diff != "" {
				t.Errorf("never-ready line (-want +got):\n%s", diff)
			}
			want := machines.Record{Pod: "qwen", State: machines.NeverReady, WakeRequestedAt: t0, Outcome: machines.OutcomeNeverReady}
			if diff := cmp.Diff(want, e.record(t)); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			if n := caps.reads.Load(); n != tt.wantReads {
				t.Errorf("pod read %d times, want %d", n, tt.wantReads)
			}
			if n := e.clk.Waiters(); n != 0 {
				t.Errorf("%d clock waiters after giving up, want 0", n)
			}

			d := e.notReady(t, caps)
			wantText := "The wake requested at 12:00 UTC did not complete — the GPU never became ready. Waking it again — about 9 minutes."
			if d.Action != machines.ActionWake || d.Text != wantText {
				t.Errorf("next ask: %q %q, want wake %q", d.Action, d.Text, wantText)
			}
			e.logs.waitN(t, acceptedLine, 2)
		})
	}
}

// TestWatchReadySince: a readySince belongs to the wake when it is no more
// than ReadySlack before the request; an earlier boot's, or one that does not
// parse, is ignored and the watch polls on.
func TestWatchReadySince(t *testing.T) {
	tests := []struct {
		name       string
		readySince string
		wantReady  bool
	}{
		{"61 s before the wake: an earlier boot", "2026-09-09T11:58:59Z", false},
		{"60 s before the wake: the slack's edge", "2026-09-09T11:59:00Z", true},
		{"after the wake", "2026-09-09T12:00:30Z", true},
		{"with fractional seconds and an offset", "2026-09-09T14:00:30.5+02:00", true},
		{"not RFC 3339", "12:00:30", false},
		{"empty", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, wake.Config{})
			caps := &fakeCaps{readPod: func(context.Context, int) (pluginapi.Pod, error) {
				return readyPod(tt.readySince), nil
			}}
			e.notReady(t, caps)
			e.step(t, time.Minute)

			if tt.wantReady {
				e.logs.wait(t, "wake ready for pod qwen: ready since "+clockOf(tt.readySince))
				if got := e.record(t).Outcome; got != machines.OutcomeReady {
					t.Errorf("outcome %q, want ready", got)
				}
				return
			}
			e.step(t, time.Minute) // it polls again
			e.waitWaiters(t, 1)
			if n := caps.reads.Load(); n != 2 {
				t.Errorf("pod read %d times, want 2: an ignored readySince keeps the watch polling", n)
			}
			if got := e.record(t).Outcome; got != machines.OutcomeNone {
				t.Errorf("outcome %q, want none", got)
			}
		})
	}
}

// clockOf is the log's rendering of an RFC 3339 time on t0's day.
func clockOf(rfc string) string {
	ts, err := time.Parse(time.RFC3339, rfc)
	if err != nil {
		panic(err)
	}
	return machines.FormatClock(ts, t0)
}

// TestWatchReadPodErrors: a failed pod read is logged at warn, in words that
// carry no URL, and the watch polls on.
func TestWatchReadPodErrors(t *testing.T) {
	e := newEnv(t, wake.Config{})
	caps := &fakeCaps{readPod: func(_ context.Context, n int) (pluginapi.Pod, error) {
		switch n {
		case 1:
			return pluginapi.Pod{}, &pluginapi.LookupError{Message: "conductor unreachable: ECONNREFUSED"}
		case 2:
			return pluginapi.Pod{}, errors.New(`Get "http://conductor.internal:8080/api/pods/qwen?token=s3cret": boom`)
		case 3:
			panic("plugin crashed")
		default:
			return readyPod("2026-09-09T12:03:10Z"), nil
		}
	}}
	e.notReady(t, caps)
	for range 4 {
		e.step(t, time.Minute)
	}
	e.logs.wait(t, "wake ready for pod qwen: ready since 12:03 UTC")

	var got []logLine
	all, _ := e.logs.lines(t)
	for _, l := range all {
		if l.Level == "WARN" {
			got = append(got, l)
		}
	}
	want := []logLine{
		{Level: "WARN", Msg: "wake watch for pod qwen: pod read failed: conductor unreachable: ECONNREFUSED", Pod: "qwen"},
		{Level: "WARN", Msg: "wake watch for pod qwen: pod read failed: transport error", Pod: "qwen"},
		{Level: "WARN", Msg: "wake watch for pod qwen: pod read failed: pod read panicked", Pod: "qwen"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("warn lines (-want +got):\n%s", diff)
	}
	if log := e.logs.String(); strings.Contains(log, "conductor.internal") || strings.Contains(log, "s3cret") {
		t.Errorf("the log carries a URL or a token:\n%s", log)
	}
}

const supersededLine = "wake watch for pod qwen stopped: the wake requested at 12:00 UTC is superseded"

// TestWatchSuperseded: once a newer wake is on record, the old wake's watch
// stops and writes nothing — whether it notices before its next poll or only
// when it tries to record what a poll saw. The readySince it would have
// recorded lies within both wakes' slack, so only the wake the event is
// stamped with keeps it out.
func TestWatchSuperseded(t *testing.T) {
	rewakeAt := t0.Add(15*time.Minute + time.Millisecond)
	check := func(t *testing.T, e *env, old *fakeCaps) {
		t.Helper()
		e.logs.wait(t, supersededLine)
		want := machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: rewakeAt}
		if diff := cmp.Diff(want, e.record(t)); diff != "" {
			t.Errorf("the superseded watch wrote the record (-want +got):\n%s", diff)
		}
		if got := e.logs.withMsg(t, "wake ready for pod qwen: ready since 12:15 UTC"); len(got) != 0 {
			t.Errorf("the superseded watch logged ready: %v", got)
		}
		if n := old.reads.Load(); n != 15 {
			t.Errorf("the old wake's pod read %d times, want 15 and none after it was superseded", n)
		}
		e.waitWaiters(t, 1) // the new wake's watch waits on
	}

	t.Run("before a poll", func(t *testing.T) {
		e := newEnv(t, wake.Config{})
		old := &fakeCaps{readPod: func(_ context.Context, n int) (pluginapi.Pod, error) {
			if n <= 15 {
				return exited(), nil
			}
			return readyPod("2026-09-09T12:15:30Z"), nil
		}}
		e.notReady(t, old)
		e.stepTo(t, t0.Add(15*time.Minute), time.Minute)
		e.waitWaiters(t, 1)
		e.clk.Set(rewakeAt) // before the old watch's next poll at 12:16
		if d := e.notReady(t, &fakeCaps{}); d.Action != machines.ActionWake {
			t.Fatalf("15 min 1 ms on: action %q, want wake", d.Action)
		}
		e.logs.waitN(t, acceptedLine, 2)
		e.waitWaiters(t, 2)

		e.clk.Set(t0.Add(16 * time.Minute)) // the old watch's turn, not yet the new one's

		check(t, e, old)
	})

	t.Run("during a poll", func(t *testing.T) {
		e := newEnv(t, wake.Config{})
		entered, release := make(chan struct{}), make(chan struct{})
		old := &fakeCaps{readPod: func(_ context.Context, n int) (pluginapi.Pod, error) {
			if n < 15 {
				return exited(), nil
			}
			close(entered)
			<-release
			return readyPod("2026-09-09T12:15:00Z"), nil
		}}
		e.notReady(t, old)
		e.stepTo(t, t0.Add(15*time.Minute), time.Minute)
		<-entered // the old watch is inside its 12:15 poll
		e.clk.Set(rewakeAt)
		if d := e.notReady(t, &fakeCaps{}); d.Action != machines.ActionWake {
			t.Fatalf("15 min 1 ms on: action %q, want wake", d.Action)
		}
		e.logs.waitN(t, acceptedLine, 2)

		close(release)

		check(t, e, old)
	})
}

// TestResume: after a restart mid-wake, a new Coordinator on the same store
// watches the stored wake again on the wake's own clock: an ask two minutes
// later is still waking with 12 minutes elapsed and wakes nothing, and the
// watch records ready. Wakes with an outcome, and pods without capabilities,
// are skipped.
func TestResume(t *testing.T) {
	wakeAt := t0.Add(-10 * time.Minute)
	recs := newMemRecords(
		machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: wakeAt},
		machines.Record{Pod: "other", State: machines.Waking, WakeRequestedAt: t0.Add(-5 * time.Minute)},
		machines.Record{Pod: "done", State: machines.Ready, WakeRequestedAt: t0.Add(-time.Hour),
			Outcome: machines.OutcomeReady, ReadyAt: t0.Add(-50 * time.Minute)},
		machines.NewRecord("idle"),
	)
	e := newEnv(t, wake.Config{Records: recs})
	caps := &fakeCaps{readPod: func(_ context.Context, n int) (pluginapi.Pod, error) {
		if n < 3 {
			return exited(), nil
		}
		return readyPod("2026-09-09T12:02:40Z"), nil
	}}
	var asked []string
	capsFor := func(pod string) wake.Capabilities {
		asked = append(asked, pod)
		if pod == "qwen" {
			return caps
		}
		return nil
	}

	if err := e.c.Resume(capsFor); err != nil {
		t.Fatalf("Resume: %v", err)
	}

	slices.Sort(asked)
	if diff := cmp.Diff([]string{"other", "qwen"}, asked); diff != "" {
		t.Errorf("capabilities asked for (-want +got):\n%s", diff)
	}
	line := e.logs.wait(t, "wake watch resumed for pod qwen: wake requested at 11:50 UTC")
	if line.Level != "INFO" {
		t.Errorf("resumed line at %s, want INFO", line.Level)
	}
	e.waitWaiters(t, 1) // the first read, at once, is done
	if n := caps.reads.Load(); n != 1 {
		t.Errorf("pod read %d times on resume, want 1 at once", n)
	}

	e.step(t, 2*time.Minute) // 12:02: the 12:01 poll fires late
	e.waitWaiters(t, 1)
	d := e.notReady(t, caps)
	want := machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyStillWaking,
		Text: "Still waking — 12 min elapsed, usually ready by ~9. Ask again shortly.", From: machines.Waking, To: machines.Waking}
	if diff := cmp.Diff(want, d, cmpDecision); diff != "" {
		t.Errorf("ask 2 min after the restart (-want +got):\n%s", diff)
	}
	if n := caps.wakes.Load(); n != 0 {
		t.Errorf("Wake called %d times, want 0: the wake on record is still in its window", n)
	}

	e.step(t, time.Minute)
	e.logs.wait(t, "wake ready for pod qwen: ready since 12:02 UTC")
	wantRec := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: wakeAt,
		Outcome: machines.OutcomeReady, ReadyAt: t0.Add(2*time.Minute + 40*time.Second)}
	if diff := cmp.Diff(wantRec, e.record(t)); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

// TestResumeKeepsTheWakeDeadline: a resumed watch gives up 35 minutes after
// the original request, not 35 minutes after the restart.
func TestResumeKeepsTheWakeDeadline(t *testing.T) {
	wakeAt := t0.Add(-10 * time.Minute)
	e := newEnv(t, wake.Config{Records: newMemRecords(
		machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: wakeAt})})
	caps := &fakeCaps{}
	if err := e.c.Resume(func(string) wake.Capabilities { return caps }); err != nil {
		t.Fatal(err)
	}
	const neverLine = "wake never-ready for pod qwen: not ready 35 min after the request at 11:50 UTC"

	e.stepTo(t, t0.Add(25*time.Minute-time.Second), time.Minute)
	e.waitWaiters(t, 1)
	if got := e.logs.withMsg(t, neverLine); len(got) != 0 {
		t.Fatalf("gave up a second early: %v", got)
	}
	e.step(t, time.Second)

	if line := e.logs.wait(t, neverLine); line.Level != "ERROR" {
		t.Errorf("never-ready line at %s, want ERROR", line.Level)
	}
	if got := e.record(t).Outcome; got != machines.OutcomeNeverReady {
		t.Errorf("outcome %q, want never-ready", got)
	}
	if n := caps.reads.Load(); n != 26 {
		t.Errorf("pod read %d times, want 26: one at once, then 12:01 to 12:25", n)
	}
}

// TestResumeLate: a wake already past its watch when the host comes back gets
// one read. Its readySince is recorded; without one the outcome stays unknown
// (nobody watched the deadline pass, so never-ready would be a guess).
func TestResumeLate(t *testing.T) {
	wakeAt := t0.Add(-2 * time.Hour)
	tests := []struct {
		name     string
		pod      pluginapi.Pod
		wantLine logLine
		wantRec  machines.Record
	}{
		{
			name: "not ready",
			pod:  exited(),
			wantLine: logLine{Level: "INFO", Pod: "qwen",
				Msg: "wake watch for pod qwen: outcome unknown (resumed after the 35 min watch of the request at 10:00 UTC)"},
			wantRec: machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: wakeAt},
		},
		{
			name:     "ready",
			pod:      readyPod("2026-09-09T10:09:00Z"),
			wantLine: logLine{Level: "INFO", Pod: "qwen", Msg: "wake ready for pod qwen: ready since 10:09 UTC"},
			wantRec: machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: wakeAt,
				Outcome: machines.OutcomeReady, ReadyAt: wakeAt.Add(9 * time.Minute)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, wake.Config{Records: newMemRecords(
				machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: wakeAt})})
			caps := &fakeCaps{readPod: func(context.Context, int) (pluginapi.Pod, error) { return tt.pod, nil }}
			if err := e.c.Resume(func(string) wake.Capabilities { return caps }); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantLine, e.logs.wait(t, tt.wantLine.Msg)); diff != "" {
				t.Errorf("line (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRec, e.record(t)); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			if n, w := caps.reads.Load(), e.clk.Waiters(); n != 1 || w != 0 {
				t.Errorf("pod read %d times with %d clock waiters left, want 1 and 0", n, w)
			}
		})
	}
}

// TestOneWatchPerWake: resuming twice starts one watch, not two.
func TestOneWatchPerWake(t *testing.T) {
	e := newEnv(t, wake.Config{Records: newMemRecords(
		machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: t0.Add(-10 * time.Minute)})})
	caps := &fakeCaps{}
	capsFor := func(string) wake.Capabilities { return caps }
	for range 2 {
		if err := e.c.Resume(capsFor); err != nil {
			t.Fatal(err)
		}
	}
	e.logs.wait(t, "wake watch for pod qwen: the wake requested at 11:50 UTC is already watched")
	e.waitWaiters(t, 1)
	e.step(t, time.Minute)
	e.waitWaiters(t, 1)
	if n := caps.reads.Load(); n != 2 {
		t.Errorf("pod read %d times, want 2 (one watch: at once and one poll)", n)
	}
	if n := len(e.logs.withMsg(t, "wake watch resumed for pod qwen: wake requested at 11:50 UTC")); n != 1 {
		t.Errorf("%d watches resumed, want 1", n)
	}
}
