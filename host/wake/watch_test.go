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

// The tests in this file tell a wake in whole minutes (12:08 UTC, "the
// 12:01 poll"): they poll every minute, not at the default watch_poll of
// 5 s, and have no prober, so the watch only reads the pod. The default
// cadence and the probes are tested in probe_test.go.

// TestWatchRecordsReady: the watch polls every minute until the conductor
// reports readySince, records the wake ready, and stops polling. The next
// not-ready then says the GPU was ready and stopped (D12).
func TestWatchRecordsReady(t *testing.T) {
	e := newEnv(t, wake.Config{WatchPoll: time.Minute})
	e.gpu.getPod = func(_ context.Context, _ string, n int) (pluginapi.Pod, error) {
		if n < 9 {
			return exited(), nil
		}
		return upPod(t0.Add(8*time.Minute + 30*time.Second)), nil
	}
	e.notReady(t)
	for range 9 {
		e.step(t, time.Minute)
	}

	e.waitIdle(t) // the watch has ended, its line logged
	line := e.logs.find(t, "wake ready for pod qwen: ready since 12:08 UTC")

	if diff := cmp.Diff(logLine{Level: "INFO", Msg: "wake ready for pod qwen: ready since 12:08 UTC", Pod: "qwen"}, line); diff != "" {
		t.Errorf("ready line (-want +got):\n%s", diff)
	}
	want := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: t0,
		ReadyAt: t0.Add(8*time.Minute + 30*time.Second), RunningAt: t0.Add(8*time.Minute + 30*time.Second)}
	if diff := cmp.Diff(want, e.record(t)); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	if n := e.clk.Waiters(); n != 0 {
		t.Errorf("%d clock waiters after ready, want 0: the watch must stop", n)
	}
	e.clk.Advance(30 * time.Minute)
	if n := e.gpu.reads(); n != 9 {
		t.Errorf("pod read %d times, want 9 and no more after ready", n)
	}

	// 40 minutes after the wake the pod has idled out; the next ask (its
	// read of the conductor first, as the host serves a turn) says so and
	// wakes.
	e.clk.Set(t0.Add(40 * time.Minute))
	e.c.Observe(context.Background(), "qwen", exited())
	d := e.notReady(t)
	wantText := "The GPU woke and was ready at 12:08 UTC, then stopped — it shuts down after 15 idle minutes. Waking it again — about 9 minutes."
	if d.Action != machines.ActionWake || d.Text != wantText {
		t.Errorf("next ask: %q %q, want wake %q", d.Action, d.Text, wantText)
	}
	e.accepted(t, 2)
}

// TestWatchFollowsTheConductor: each read of the watch is fed to the machine:
// a pod up without a readySince is loading and the watch polls on; a pod down
// again is waking; a readySince is ready, and the watch stops.
func TestWatchFollowsTheConductor(t *testing.T) {
	readyAt := t0.Add(7 * time.Minute)
	reads := []pluginapi.Pod{exited(), upPod(time.Time{}), exited(), upPod(time.Time{}), upPod(readyAt)}
	e := newEnv(t, wake.Config{WatchPoll: time.Minute})
	e.gpu.getPod = func(_ context.Context, _ string, n int) (pluginapi.Pod, error) { return reads[n-1], nil }
	e.notReady(t)
	want := []machines.Record{
		{Pod: "qwen", State: machines.Waking, WakeRequestedAt: t0},
		{Pod: "qwen", State: machines.Loading, WakeRequestedAt: t0, ModelLoadingSince: t0, RunningAt: t0.Add(2 * time.Minute)},
		{Pod: "qwen", State: machines.Waking, WakeRequestedAt: t0, RunningAt: t0.Add(2 * time.Minute)},
		{Pod: "qwen", State: machines.Loading, WakeRequestedAt: t0, ModelLoadingSince: t0, RunningAt: t0.Add(2 * time.Minute)},
	}
	for i, w := range want {
		e.step(t, time.Minute)
		e.waitWaiters(t, 1) // the read is done and the watch waits again
		if diff := cmp.Diff(w, e.record(t)); diff != "" {
			t.Errorf("after read %d (-want +got):\n%s", i+1, diff)
		}
	}
	e.step(t, time.Minute)
	e.waitIdle(t) // the watch has ended, its line logged
	e.logs.find(t, "wake ready for pod qwen: ready since 12:07 UTC")
	want5 := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: t0, ReadyAt: readyAt, RunningAt: t0.Add(2 * time.Minute)}
	if diff := cmp.Diff(want5, e.record(t)); diff != "" {
		t.Errorf("after read 5 (-want +got):\n%s", diff)
	}
	if n := e.gpu.starts(); n != 1 {
		t.Errorf("StartPod called %d times, want 1: a watch never wakes", n)
	}
}

// TestWatchGivesUp: a wake not ready WakeWatch after its request is recorded
// never-ready with an error line at exactly 35 minutes, not a second before,
// whether or not the poll interval divides the watch.
func TestWatchGivesUp(t *testing.T) {
	tests := []struct {
		name      string
		poll      time.Duration
		wantReads int
	}{
		{"poll every minute", time.Minute, 35},
		{"poll every 8 minutes", 8 * time.Minute, 5}, // 8, 16, 24, 32, and the deadline at 35
	}
	const neverLine = "wake never-ready for pod qwen: not ready 35 min after the request at 12:00 UTC"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, wake.Config{WatchPoll: tt.poll})
			e.notReady(t)

			e.stepTo(t, t0.Add(34*time.Minute+59*time.Second), time.Minute)
			e.waitWaiters(t, 1)
			if got := e.logs.withMsg(t, neverLine); len(got) != 0 {
				t.Fatalf("gave up at 34:59: %v", got)
			}
			if got := e.record(t).State; got != machines.Waking {
				t.Fatalf("state at 34:59 = %q, want waking", got)
			}

			e.step(t, time.Second)

			e.waitIdle(t) // the watch has ended, its line logged
			line := e.logs.find(t, neverLine)
			if diff := cmp.Diff(logLine{Level: "ERROR", Msg: neverLine, Pod: "qwen"}, line); diff != "" {
				t.Errorf("never-ready line (-want +got):\n%s", diff)
			}
			want := machines.Record{Pod: "qwen", State: machines.NeverReady, WakeRequestedAt: t0}
			if diff := cmp.Diff(want, e.record(t)); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			if n := e.gpu.reads(); n != tt.wantReads {
				t.Errorf("pod read %d times, want %d", n, tt.wantReads)
			}
			if n := e.clk.Waiters(); n != 0 {
				t.Errorf("%d clock waiters after giving up, want 0", n)
			}

			d := e.notReady(t)
			wantText := "The wake requested at 12:00 UTC did not complete — the GPU never became ready. Waking it again — about 9 minutes."
			if d.Action != machines.ActionWake || d.Text != wantText {
				t.Errorf("next ask: %q %q, want wake %q", d.Action, d.Text, wantText)
			}
			e.accepted(t, 2)
		})
	}
}

// TestWatchReadySince: a readySince belongs to the wake when it is no more
// than ReadySlack before the request; an earlier boot's readySince, or none,
// is a pod up and not ready yet — loading — and the watch polls on.
func TestWatchReadySince(t *testing.T) {
	tests := []struct {
		name       string
		readySince time.Time
		wantReady  string // the ready line's clock; "" when not ready
	}{
		{"61 s before the wake: an earlier boot", t0.Add(-61 * time.Second), ""},
		{"60 s before the wake: the slack's edge", t0.Add(-60 * time.Second), "11:59 UTC"},
		{"after the wake", t0.Add(30 * time.Second), "12:00 UTC"},
		{"in another zone", t0.Add(7*time.Minute + 500*time.Millisecond).In(time.FixedZone("CEST", 2*60*60)), "12:07 UTC"},
		{"none", time.Time{}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, wake.Config{WatchPoll: time.Minute})
			e.gpu.getPod = func(context.Context, string, int) (pluginapi.Pod, error) { return upPod(tt.readySince), nil }
			e.notReady(t)
			e.step(t, time.Minute)

			if tt.wantReady != "" {
				e.waitIdle(t) // the watch has ended, its line logged
				e.logs.find(t, "wake ready for pod qwen: ready since "+tt.wantReady)
				// First seen up on this read: RUNNING then, or at the ready
				// time when that is earlier.
				running := t0.Add(time.Minute)
				if tt.readySince.Before(running) {
					running = tt.readySince
				}
				want := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: t0, ReadyAt: tt.readySince, RunningAt: running}
				if diff := cmp.Diff(want, e.record(t), cmpInstants); diff != "" {
					t.Errorf("record (-want +got):\n%s", diff)
				}
				return
			}
			e.step(t, time.Minute) // it polls again
			e.waitWaiters(t, 1)
			if n := e.gpu.reads(); n != 2 {
				t.Errorf("pod read %d times, want 2: a pod up and not ready keeps the watch polling", n)
			}
			want := machines.Record{Pod: "qwen", State: machines.Loading, WakeRequestedAt: t0, ModelLoadingSince: t0, RunningAt: t0.Add(time.Minute)}
			if diff := cmp.Diff(want, e.record(t)); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
		})
	}
}

// cmpInstants compares times as instants, whatever their location.
var cmpInstants = cmp.Comparer(func(a, b time.Time) bool { return a.Equal(b) })

// TestWatchReadPodErrors: a failed pod read is logged at warn, in words that
// carry no URL, changes nothing, and the watch polls on.
func TestWatchReadPodErrors(t *testing.T) {
	e := newEnv(t, wake.Config{WatchPoll: time.Minute})
	e.gpu.getPod = func(_ context.Context, _ string, n int) (pluginapi.Pod, error) {
		switch n {
		case 1:
			return pluginapi.Pod{}, &pluginapi.LookupError{Message: "conductor unreachable: ECONNREFUSED"}
		case 2:
			return pluginapi.Pod{}, errors.New(`Get "http://conductor.internal:8080/api/pods/qwen?token=s3cret": boom`)
		case 3:
			panic("plugin crashed")
		default:
			return upPod(t0.Add(3*time.Minute + 10*time.Second)), nil
		}
	}
	e.notReady(t)
	puts := e.recs.putCount()
	for range 3 {
		e.step(t, time.Minute)
	}
	e.waitWaiters(t, 1) // the third read is done
	if got := e.recs.putCount(); got != puts {
		t.Errorf("failed reads wrote %d records, want none", got-puts)
	}
	e.step(t, time.Minute)
	e.waitIdle(t) // the watch has ended, its line logged
	e.logs.find(t, "wake ready for pod qwen: ready since 12:03 UTC")

	var got []logLine
	all := e.logs.lines(t)
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

// TestWatchStopsWhenSeenReady: a read from elsewhere (a turn's resolution,
// GET /api/pods/{name}) that finds the wake ready ends the watch: at its next
// poll it finds the record ready and reads the pod no more. The ready line is
// logged once, by whichever event made the wake ready.
func TestWatchStopsWhenSeenReady(t *testing.T) {
	e := newEnv(t, wake.Config{WatchPoll: time.Minute})
	e.notReady(t)
	e.step(t, time.Minute)
	e.waitWaiters(t, 1) // the first read (EXITED) is done

	e.c.Observe(context.Background(), "qwen", upPod(t0.Add(90*time.Second)))

	want := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: t0, ReadyAt: t0.Add(90 * time.Second), RunningAt: t0.Add(time.Minute)}
	if diff := cmp.Diff(want, e.record(t)); diff != "" {
		t.Fatalf("record after the view (-want +got):\n%s", diff)
	}
	e.clk.Advance(time.Minute) // the watch's next poll
	e.waitIdle(t)
	if n := e.gpu.reads(); n != 1 {
		t.Errorf("pod read %d times, want 1: the watch must stop once the wake is ready", n)
	}
	if n := e.clk.Waiters(); n != 0 {
		t.Errorf("%d clock waiters, want 0", n)
	}
	if got := e.logs.withMsg(t, "wake ready for pod qwen: ready since 12:01 UTC"); len(got) != 1 {
		t.Errorf("%d ready lines, want 1", len(got))
	}
}

const supersededLine = "wake watch for pod qwen stopped: the wake requested at 12:00 UTC is superseded"

// TestWatchSuperseded: once a newer wake is on record, the old wake's watch
// stops — whether it notices before its next poll, when it writes nothing
// and reads no more, or only after a poll, whose read is what the conductor
// says now and is judged against the wake on record.
func TestWatchSuperseded(t *testing.T) {
	rewakeAt := t0.Add(15*time.Minute + time.Millisecond)

	t.Run("before a poll", func(t *testing.T) {
		e := newEnv(t, wake.Config{WatchPoll: time.Minute})
		e.gpu.getPod = func(_ context.Context, _ string, n int) (pluginapi.Pod, error) {
			if n <= 15 {
				return exited(), nil
			}
			return upPod(t0.Add(15*time.Minute + 30*time.Second)), nil
		}
		e.notReady(t)
		e.stepTo(t, t0.Add(15*time.Minute), time.Minute)
		e.waitWaiters(t, 1)
		e.clk.Set(rewakeAt) // before the old watch's next poll at 12:16
		if d := e.notReady(t); d.Action != machines.ActionWake {
			t.Fatalf("15 min 1 ms on: action %q, want wake", d.Action)
		}
		e.accepted(t, 2)
		e.waitWaiters(t, 2)

		e.clk.Set(t0.Add(16 * time.Minute)) // the old watch's turn, not yet the new one's

		e.waitWatched(t, t0, 1)
		e.logs.find(t, supersededLine)
		want := machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: rewakeAt}
		if diff := cmp.Diff(want, e.record(t)); diff != "" {
			t.Errorf("the superseded watch wrote the record (-want +got):\n%s", diff)
		}
		if n := e.gpu.reads(); n != 15 {
			t.Errorf("pod read %d times, want 15 and none by the old watch after it was superseded", n)
		}
		e.waitWaiters(t, 1) // the new wake's watch waits on
	})

	t.Run("during a poll", func(t *testing.T) {
		e := newEnv(t, wake.Config{WatchPoll: time.Minute})
		entered, release := make(chan struct{}), make(chan struct{})
		// The old wake's boot became ready 1 ms before the new wake's slack.
		earlier := rewakeAt.Add(-time.Minute - time.Millisecond)
		e.gpu.getPod = func(_ context.Context, _ string, n int) (pluginapi.Pod, error) {
			if n < 15 {
				return exited(), nil
			}
			if n == 15 {
				close(entered)
				<-release
			}
			return upPod(earlier), nil
		}
		e.notReady(t)
		e.stepTo(t, t0.Add(15*time.Minute), time.Minute)
		<-entered // the old watch is inside its 12:15 poll
		e.clk.Set(rewakeAt)
		if d := e.notReady(t); d.Action != machines.ActionWake {
			t.Fatalf("15 min 1 ms on: action %q, want wake", d.Action)
		}
		e.accepted(t, 2)

		close(release)

		e.waitWatched(t, t0, 1)
		e.logs.find(t, supersededLine)
		want := machines.Record{Pod: "qwen", State: machines.Loading, WakeRequestedAt: rewakeAt, ModelLoadingSince: rewakeAt, RunningAt: rewakeAt}
		if diff := cmp.Diff(want, e.record(t)); diff != "" {
			t.Errorf("record (-want +got):\n%s", diff)
		}
		if log := e.logs.String(); strings.Contains(log, "wake ready for pod") {
			t.Errorf("an earlier boot's readySince made the new wake ready:\n%s", log)
		}
		if n := e.gpu.reads(); n != 15 {
			t.Errorf("pod read %d times, want 15 and none by the old watch after it was superseded", n)
		}
		e.waitWaiters(t, 1) // the new wake's watch waits on
	})
}

// TestResume: after a restart mid-wake, a new Coordinator on the same store
// watches the stored wake again on the wake's own clock: an ask two minutes
// later is still waking with 12 minutes elapsed and wakes nothing, and the
// watch records ready. Only wakes whose outcome is unknown (waking, loading,
// stuck) are considered, and only those of configured pods are watched.
func TestResume(t *testing.T) {
	wakeAt := t0.Add(-10 * time.Minute)
	recs := newMemRecords(
		machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: wakeAt},
		machines.Record{Pod: "other", State: machines.Loading, WakeRequestedAt: t0.Add(-5 * time.Minute), ModelLoadingSince: t0.Add(-5 * time.Minute)},
		machines.Record{Pod: "third", State: machines.Stuck, WakeRequestedAt: t0.Add(-30 * time.Minute), ModelLoadingSince: t0.Add(-30 * time.Minute)},
		machines.Record{Pod: "done", State: machines.Ready, WakeRequestedAt: t0.Add(-time.Hour), ReadyAt: t0.Add(-50 * time.Minute)},
		machines.Record{Pod: "failed", State: machines.StartFailed, WakeRequestedAt: t0.Add(-3 * time.Minute)},
		machines.Record{Pod: "gave-up", State: machines.NeverReady, WakeRequestedAt: t0.Add(-40 * time.Minute)},
		machines.Record{Pod: "loading-no-wake", State: machines.Loading, ModelLoadingSince: t0.Add(-time.Minute)},
		machines.NewRecord("idle"),
	)
	e := newEnv(t, wake.Config{WatchPoll: time.Minute, Records: recs})
	e.gpu.getPod = func(_ context.Context, _ string, n int) (pluginapi.Pod, error) {
		if n < 3 {
			return exited(), nil
		}
		return upPod(t0.Add(2*time.Minute + 40*time.Second)), nil
	}
	var asked []string
	configured := func(pod string) bool {
		asked = append(asked, pod)
		return pod == "qwen"
	}

	if err := e.c.Resume(configured); err != nil {
		t.Fatalf("Resume: %v", err)
	}

	slices.Sort(asked)
	if diff := cmp.Diff([]string{"other", "qwen", "third"}, asked); diff != "" {
		t.Errorf("pods asked about (-want +got):\n%s", diff)
	}
	e.waitWaiters(t, 1) // the first read, at once, is done
	line := e.logs.find(t, "wake watch resumed for pod qwen: wake requested at 11:50 UTC")
	if line.Level != "INFO" {
		t.Errorf("resumed line at %s, want INFO", line.Level)
	}
	if n := e.gpu.reads(); n != 1 {
		t.Errorf("pod read %d times on resume, want 1 at once", n)
	}

	e.step(t, 2*time.Minute) // 12:02: the 12:01 poll fires late
	e.waitWaiters(t, 1)
	d := e.notReady(t)
	want := machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyStillWaking,
		Text: "Still waking — 12 min elapsed, usually ready by ~9. Ask again shortly.", From: machines.Waking, To: machines.Waking}
	if diff := cmp.Diff(want, d, cmpDecision); diff != "" {
		t.Errorf("ask 2 min after the restart (-want +got):\n%s", diff)
	}
	if n := e.gpu.starts(); n != 0 {
		t.Errorf("StartPod called %d times, want 0: the wake on record is still in its window", n)
	}

	e.step(t, time.Minute)
	e.waitIdle(t) // the watch has ended, its line logged
	e.logs.find(t, "wake ready for pod qwen: ready since 12:02 UTC")
	wantRec := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: wakeAt,
		ReadyAt: t0.Add(2*time.Minute + 40*time.Second), RunningAt: t0.Add(2*time.Minute + 40*time.Second)}
	if diff := cmp.Diff(wantRec, e.record(t)); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
}

// TestResumeKeepsTheWakeDeadline: a resumed watch gives up 35 minutes after
// the original request, not 35 minutes after the restart.
func TestResumeKeepsTheWakeDeadline(t *testing.T) {
	wakeAt := t0.Add(-10 * time.Minute)
	e := newEnv(t, wake.Config{WatchPoll: time.Minute, Records: newMemRecords(
		machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: wakeAt})})
	if err := e.c.Resume(func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	const neverLine = "wake never-ready for pod qwen: not ready 35 min after the request at 11:50 UTC"

	e.stepTo(t, t0.Add(25*time.Minute-time.Second), time.Minute)
	e.waitWaiters(t, 1)
	if got := e.logs.withMsg(t, neverLine); len(got) != 0 {
		t.Fatalf("gave up a second early: %v", got)
	}
	e.step(t, time.Second)

	e.waitIdle(t) // the watch has ended, its line logged
	if line := e.logs.find(t, neverLine); line.Level != "ERROR" {
		t.Errorf("never-ready line at %s, want ERROR", line.Level)
	}
	if got := e.record(t).State; got != machines.NeverReady {
		t.Errorf("state %q, want never-ready", got)
	}
	if n := e.gpu.reads(); n != 26 {
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
			pod:      upPod(wakeAt.Add(9 * time.Minute)),
			wantLine: logLine{Level: "INFO", Pod: "qwen", Msg: "wake ready for pod qwen: ready since 10:09 UTC"},
			wantRec: machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: wakeAt,
				ReadyAt: wakeAt.Add(9 * time.Minute), RunningAt: wakeAt.Add(9 * time.Minute)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, wake.Config{WatchPoll: time.Minute, Records: newMemRecords(
				machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: wakeAt})})
			e.gpu.getPod = func(context.Context, string, int) (pluginapi.Pod, error) { return tt.pod, nil }
			if err := e.c.Resume(func(string) bool { return true }); err != nil {
				t.Fatal(err)
			}
			e.waitWatched(t, wakeAt, 1) // its one read done, its line logged
			if diff := cmp.Diff(tt.wantLine, e.logs.find(t, tt.wantLine.Msg)); diff != "" {
				t.Errorf("line (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantRec, e.record(t)); diff != "" {
				t.Errorf("record (-want +got):\n%s", diff)
			}
			if n, w := e.gpu.reads(), e.clk.Waiters(); n != 1 || w != 0 {
				t.Errorf("pod read %d times with %d clock waiters left, want 1 and 0", n, w)
			}
		})
	}
}

// TestOneWatchPerWake: resuming twice starts one watch, not two.
func TestOneWatchPerWake(t *testing.T) {
	wakeAt := t0.Add(-10 * time.Minute)
	e := newEnv(t, wake.Config{WatchPoll: time.Minute, Records: newMemRecords(
		machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: wakeAt})})
	for range 2 {
		if err := e.c.Resume(func(string) bool { return true }); err != nil {
			t.Fatal(err)
		}
	}
	e.waitWatched(t, wakeAt, 1) // the second watch found the wake watched
	if l := e.logs.find(t, "wake watch for pod qwen: the wake requested at 11:50 UTC is already watched"); l.Level != "DEBUG" {
		t.Errorf("already-watched line at %s, want DEBUG", l.Level)
	}
	e.waitWaiters(t, 1)
	e.step(t, time.Minute)
	e.waitWaiters(t, 1)
	if n := e.gpu.reads(); n != 2 {
		t.Errorf("pod read %d times, want 2 (one watch: at once and one poll)", n)
	}
	if n := len(e.logs.withMsg(t, "wake watch resumed for pod qwen: wake requested at 11:50 UTC")); n != 1 {
		t.Errorf("%d watches resumed, want 1", n)
	}
}
