package wake_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/clock"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// The watch's cadence, tested in synctest bubbles: the Coordinator runs on
// the real clock, which in a bubble reads the bubble's time. That time moves
// only when every goroutine of the bubble is blocked, so a test sleeps
// through a whole wake at once, and every read and probe the watch makes
// happens at an exact instant that the test can list.

// syncEnv is one Coordinator in a bubble, with the defaults of the config
// (watch_poll 5s, probe_interval 1s) unless the test's Config says
// otherwise, a fake GPU plugin and a fake prober. start is when it was
// built, and when the test's first not-ready turn requests the wake.
type syncEnv struct {
	start  time.Time
	recs   *memRecords
	gpu    *fakeGPU
	prober *fakeProber
	logs   *logBuf
	c      *wake.Coordinator

	mu      sync.Mutex
	changes []wake.Change
}

func newSyncEnv(t *testing.T, cfg wake.Config) *syncEnv {
	t.Helper()
	e := &syncEnv{start: time.Now(), gpu: &fakeGPU{}, prober: &fakeProber{}, logs: newLogBuf()}
	if cfg.Records == nil {
		cfg.Records = newMemRecords()
	}
	e.recs, _ = cfg.Records.(*memRecords)
	if g, ok := cfg.GPU.(*fakeGPU); ok {
		e.gpu = g
	}
	if cfg.Pod == nil {
		pod, err := machines.NewPod(machines.DefaultPolicy())
		if err != nil {
			t.Fatal(err)
		}
		cfg.Pod = pod
	}
	cfg.GPU, cfg.Probe, cfg.Clock = e.gpu, e.prober, clock.Real()
	if cfg.WatchPoll == 0 {
		cfg.WatchPoll = 5 * time.Second
	}
	if cfg.ProbeInterval == 0 {
		cfg.ProbeInterval = time.Second
	}
	cfg.StartTimeout = 3 * time.Second
	cfg.Logger = slog.New(slog.NewJSONHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	cfg.Changed = func(c wake.Change) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.changes = append(e.changes, c)
	}
	e.c = wake.New(cfg)
	t.Cleanup(func() {
		if err := e.c.Close(context.Background()); err != nil {
			t.Errorf("Close: %v", err)
		}
		e.gpu.check(t, "qwen")
	})
	return e
}

// at is start + d.
func (e *syncEnv) at(d time.Duration) time.Time { return e.start.Add(d) }

// now is how long since start.
func (e *syncEnv) now() time.Duration { return time.Since(e.start) }

// wakeNow runs an asleep turn: the wake is requested now.
func (e *syncEnv) wakeNow(t *testing.T) {
	t.Helper()
	if d, err := e.c.NotReady(context.Background(), "qwen", "EXITED", machines.LookupFound, false); err != nil || d.Action != machines.ActionWake {
		t.Fatalf("NotReady: %v %v, want a wake", d.Action, err)
	}
}

// boots makes the conductor say EXITED until boot after start, then
// RUNNING with the proxy URL and readySince (zero: none).
func (e *syncEnv) boots(boot time.Duration, readySince time.Time) {
	e.gpu.getPod = func(context.Context, string, int) (pluginapi.Pod, error) {
		if e.now() < boot {
			return exited(), nil
		}
		return upPod(readySince), nil
	}
}

// loads makes the model answer probes from load after start on.
func (e *syncEnv) loads(load time.Duration) {
	e.prober.probe = func(context.Context, string, string) (pluginapi.ProbeResult, error) {
		if e.now() < load {
			return notAnswered, nil
		}
		return answeredProbe, nil
	}
}

// reads is when the pod was read, after start.
func (e *syncEnv) reads() []time.Duration {
	var out []time.Duration
	for _, at := range e.gpu.readTimes() {
		out = append(out, at.Sub(e.start))
	}
	return out
}

// probes is when the model was probed, after start.
func (e *syncEnv) probes() []time.Duration {
	var out []time.Duration
	for _, c := range e.prober.probed() {
		out = append(out, c.At.Sub(e.start))
	}
	return out
}

// triggers lists the events that changed the record, in order.
func (e *syncEnv) triggers() []engine.Trigger {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []engine.Trigger
	for _, c := range e.changes {
		out = append(out, c.Event.Trigger)
	}
	return out
}

// last is the last stored change.
func (e *syncEnv) last(t *testing.T) wake.Change {
	t.Helper()
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.changes) == 0 {
		t.Fatal("no change was stored")
	}
	return e.changes[len(e.changes)-1]
}

// every lists from, from+step, ... up to and including to.
func every(from, to, step time.Duration) []time.Duration {
	var out []time.Duration
	for d := from; d <= to; d += step {
		out = append(out, d)
	}
	return out
}

const probingLine = "wake watch for pod qwen: the pod is RUNNING; probing its model every 1s"

// TestWatchCadence: a whole wake with the default timings. The watch reads
// the pod every watch_poll (5 s) from the request on; from the first read
// that finds it RUNNING with a proxy URL it also probes the model at once
// and then every probe_interval (1 s); the first answer is the wake's
// readiness, at the time of that probe (the conductor gives no readySince),
// and then the watch reads and probes nothing more.
func TestWatchCadence(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSyncEnv(t, wake.Config{})
		e.boots(6*time.Minute+32*time.Second, time.Time{})
		e.loads(9*time.Minute + 500*time.Millisecond)
		e.wakeNow(t)

		time.Sleep(2 * time.Hour)
		synctest.Wait()

		if diff := cmp.Diff(every(5*time.Second, 9*time.Minute, 5*time.Second), e.reads()); diff != "" {
			t.Errorf("pod reads after the request (-want +got):\n%s", diff)
		}
		// The first read to find it up is at 6:35; the model answers from
		// 9:00.5, so the probe at 9:01 is the first answered.
		if diff := cmp.Diff(every(6*time.Minute+35*time.Second, 9*time.Minute+time.Second, time.Second), e.probes()); diff != "" {
			t.Errorf("probes after the request (-want +got):\n%s", diff)
		}
		for _, c := range e.prober.probed() {
			if c.Pod != "qwen" || c.ProxyURL != upPod(time.Time{}).ProxyURL {
				t.Fatalf("probed %q at %q, want qwen at the conductor's proxy URL", c.Pod, c.ProxyURL)
			}
		}
		// Up since the read at 6:35; the probe's answer serves nobody.
		want := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: e.start, ReadyAt: e.at(9*time.Minute + time.Second),
			RunningAt: e.at(6*time.Minute + 35*time.Second)}
		if diff := cmp.Diff(want, e.record(t)); diff != "" {
			t.Errorf("record (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]engine.Trigger{machines.NotReady, machines.PodUp, machines.Answered}, e.triggers()); diff != "" {
			t.Errorf("the events that changed the record (-want +got):\n%s", diff)
		}
		for _, want := range []logLine{
			{Level: "INFO", Msg: probingLine, Pod: "qwen"},
			{Level: "INFO", Msg: "wake ready for pod qwen: ready since 00:09 UTC", Pod: "qwen"},
		} {
			if diff := cmp.Diff([]logLine{want}, e.logs.withMsg(t, want.Msg)); diff != "" {
				t.Errorf("log (-want +got):\n%s", diff)
			}
		}
	})
}

func (e *syncEnv) record(t *testing.T) machines.Record {
	t.Helper()
	r, err := e.c.Record(t.Context(), "qwen")
	if err != nil {
		t.Fatalf("Record: %v", err)
	}
	return r
}

// TestWatchProbeReadiness: the answer a probe feeds the machine carries the
// readySince of the read that found the pod up. Readiness is the
// conductor's readySince when it is this boot's (and then the read alone
// makes the wake ready: nothing is probed), else the probe's time.
func TestWatchProbeReadiness(t *testing.T) {
	tests := []struct {
		name       string
		readySince time.Duration // after the wake; 0: none
		wantProbes []time.Duration
		wantReady  time.Duration
		wantEvent  machines.Event // the event that made the wake ready, At and Estimate aside
	}{
		{
			name:       "the conductor gives none",
			wantProbes: every(20*time.Second, 23*time.Second, time.Second),
			wantReady:  23 * time.Second,
			wantEvent:  machines.Event{Trigger: machines.Answered, Probe: true},
		},
		{
			name:       "an earlier boot's",
			readySince: -2 * time.Minute, // before the wake minus ready_slack
			wantProbes: every(20*time.Second, 23*time.Second, time.Second),
			wantReady:  23 * time.Second,
			wantEvent:  machines.Event{Trigger: machines.Answered, ReadySince: time.Time{}.Add(-2 * time.Minute), Probe: true},
		},
		{
			name:       "this boot's",
			readySince: 18 * time.Second,
			wantReady:  18 * time.Second,
			wantEvent: machines.Event{Trigger: machines.ReadySinceSeen, Status: "RUNNING", Lookup: "FOUND",
				ReadySince: time.Time{}.Add(18 * time.Second)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newSyncEnv(t, wake.Config{})
				var readySince time.Time
				if tt.readySince != 0 {
					readySince = e.at(tt.readySince)
				}
				e.boots(17*time.Second, readySince)
				e.loads(22*time.Second + 500*time.Millisecond)
				e.wakeNow(t)

				time.Sleep(time.Hour)
				synctest.Wait()

				if diff := cmp.Diff(tt.wantProbes, e.probes()); diff != "" {
					t.Errorf("probes (-want +got):\n%s", diff)
				}
				if got := e.record(t); got.State != machines.Ready || !got.ReadyAt.Equal(e.at(tt.wantReady)) {
					t.Errorf("state %s ready at %v, want ready at %v", got.State, got.ReadyAt.Sub(e.start), tt.wantReady)
				}
				ev := e.last(t).Event
				ev.At, ev.Estimate = time.Time{}, machines.Estimate{} // the coordinator's
				if !ev.ReadySince.IsZero() {
					ev.ReadySince = time.Time{}.Add(ev.ReadySince.Sub(e.start))
				}
				if diff := cmp.Diff(tt.wantEvent, ev); diff != "" {
					t.Errorf("the event that made the wake ready (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// TestWatchProbeFailures: a probe that fails changes nothing and the watch
// probes on, every probe_interval: an error (logged at warn once for a run
// of the same one), a panic, a plugin that hangs (cut at probe_interval),
// a model that does not answer yet (debug). The answer after them is
// readiness as usual.
func TestWatchProbeFailures(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSyncEnv(t, wake.Config{})
		e.boots(0, time.Time{})
		crashed := errors.New("provider plugin crashed")
		var hangCap time.Duration
		n := 0
		e.prober.probe = func(ctx context.Context, _, _ string) (pluginapi.ProbeResult, error) {
			n++
			switch n {
			case 1, 2:
				return pluginapi.ProbeResult{}, crashed
			case 3:
				panic("plugin adapter bug")
			case 4:
				d, _ := ctx.Deadline()
				hangCap = time.Until(d)
				<-ctx.Done()
				return pluginapi.ProbeResult{}, fmt.Errorf("provider plugin probe: %w", ctx.Err())
			case 5:
				return notAnswered, nil
			case 6:
				return pluginapi.ProbeResult{}, errors.New("provider plugin unavailable")
			}
			return answeredProbe, nil
		}
		e.wakeNow(t)

		time.Sleep(time.Hour)
		synctest.Wait()

		// 8 s hangs until 9 s; the next probe is a second later, with the
		// read due at 10 s.
		wantProbes := []time.Duration{5 * time.Second, 6 * time.Second, 7 * time.Second, 8 * time.Second,
			10 * time.Second, 11 * time.Second, 12 * time.Second}
		if diff := cmp.Diff(wantProbes, e.probes()); diff != "" {
			t.Errorf("probes (-want +got):\n%s", diff)
		}
		if hangCap != time.Second {
			t.Errorf("the hanging probe was capped at %v, want probe_interval (1s)", hangCap)
		}
		if diff := cmp.Diff([]engine.Trigger{machines.NotReady, machines.PodUp, machines.Answered}, e.triggers()); diff != "" {
			t.Errorf("the events that changed the record (-want +got):\n%s", diff)
		}
		if got := e.record(t); got.State != machines.Ready || !got.ReadyAt.Equal(e.at(12*time.Second)) {
			t.Errorf("state %s ready at %v, want ready at 12s", got.State, got.ReadyAt.Sub(e.start))
		}
		all := e.logs.lines(t)
		var got []logLine
		for _, l := range all {
			if strings.Contains(l.Msg, ": probe failed: ") || strings.Contains(l.Msg, ": model not answering yet: ") {
				got = append(got, l)
			}
		}
		want := []logLine{
			{Level: "WARN", Msg: "wake watch for pod qwen: probe failed: provider plugin crashed", Pod: "qwen"},
			{Level: "DEBUG", Msg: "wake watch for pod qwen: probe failed: provider plugin crashed", Pod: "qwen"},
			{Level: "WARN", Msg: "wake watch for pod qwen: probe failed: probe panicked", Pod: "qwen"},
			{Level: "DEBUG", Msg: "wake watch for pod qwen: model not answering yet: no answer within 1s", Pod: "qwen"},
			{Level: "DEBUG", Msg: "wake watch for pod qwen: model not answering yet: HTTP 502 Bad Gateway", Pod: "qwen"},
			{Level: "WARN", Msg: "wake watch for pod qwen: probe failed: provider plugin unavailable", Pod: "qwen"},
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("the watch's probe lines (-want +got):\n%s", diff)
		}
	})
}

// TestWatchProbesFollowThePod: the probes aim at the last read's proxy
// URL. A read the conductor could not make (UNREADABLE) or that failed
// changes nothing; a read that finds the pod down stops the probes, and
// the next one that finds it up starts them again, at once.
func TestWatchProbesFollowThePod(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSyncEnv(t, wake.Config{})
		first, second := upPod(time.Time{}), upPod(time.Time{})
		second.ProxyURL = "https://qwen-pod-2-8000.proxy.example"
		reads := []func() (pluginapi.Pod, error){
			func() (pluginapi.Pod, error) { return first, nil },                                                  // 5 s
			func() (pluginapi.Pod, error) { return pluginapi.Pod{Lookup: pluginapi.LookupUnreadable}, nil },      // 10 s
			func() (pluginapi.Pod, error) { return pluginapi.Pod{}, &pluginapi.LookupError{Message: "timeout"} }, // 15 s
			func() (pluginapi.Pod, error) { return exited(), nil },                                               // 20 s
			func() (pluginapi.Pod, error) { return second, nil },                                                 // 25 s
		}
		e.gpu.getPod = func(_ context.Context, _ string, n int) (pluginapi.Pod, error) { return reads[min(n, len(reads))-1]() }
		e.loads(27 * time.Second)
		e.wakeNow(t)

		time.Sleep(time.Hour)
		synctest.Wait()

		var want []probeCall
		for _, d := range every(5*time.Second, 19*time.Second, time.Second) {
			want = append(want, probeCall{Pod: "qwen", ProxyURL: first.ProxyURL, At: e.at(d)})
		}
		for _, d := range every(25*time.Second, 27*time.Second, time.Second) {
			want = append(want, probeCall{Pod: "qwen", ProxyURL: second.ProxyURL, At: e.at(d)})
		}
		if diff := cmp.Diff(want, e.prober.probed()); diff != "" {
			t.Errorf("probes (-want +got):\n%s", diff)
		}
		if n := len(e.logs.withMsg(t, probingLine)); n != 2 {
			t.Errorf("%d %q lines, want 2 (up at 5 s, up again at 25 s)", n, probingLine)
		}
		if got := e.record(t); got.State != machines.Ready || !got.ReadyAt.Equal(e.at(27*time.Second)) {
			t.Errorf("state %s ready at %v, want ready at 27s", got.State, got.ReadyAt.Sub(e.start))
		}
	})
}

// TestWatchProbesUntilTheDeadline: a model that never answers is probed
// every second until wake_watch after the request, when a last read and a
// last probe come before the wake is recorded never-ready; then nothing.
func TestWatchProbesUntilTheDeadline(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newSyncEnv(t, wake.Config{})
		e.boots(6*time.Minute+32*time.Second, time.Time{})
		e.wakeNow(t)

		time.Sleep(3 * time.Hour)
		synctest.Wait()

		if diff := cmp.Diff(every(5*time.Second, 35*time.Minute, 5*time.Second), e.reads()); diff != "" {
			t.Errorf("pod reads (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(every(6*time.Minute+35*time.Second, 35*time.Minute, time.Second), e.probes()); diff != "" {
			t.Errorf("probes (-want +got):\n%s", diff)
		}
		if got := e.record(t).State; got != machines.NeverReady {
			t.Errorf("state %s, want never-ready", got)
		}
		if got := e.logs.withMsg(t, "wake never-ready for pod qwen: not ready 35 min after the request at 00:00 UTC"); len(got) != 1 {
			t.Errorf("%d never-ready lines, want 1", len(got))
		}
	})
}

// TestResumedWatchProbes: a watch resumed after a restart reads the pod at
// once and, finding it up, probes at once; one resumed past its deadline
// gets that read and that probe, and without an answer the outcome stays
// unknown.
func TestResumedWatchProbes(t *testing.T) {
	tests := []struct {
		name      string
		wakeAgo   time.Duration
		answers   bool
		wantState engine.State
		wantLine  string
	}{
		{"within the watch, answered", 10 * time.Minute, true, machines.Ready, "wake ready for pod qwen: ready since 00:00 UTC"},
		{"past the watch, answered", 2 * time.Hour, true, machines.Ready, "wake ready for pod qwen: ready since 00:00 UTC"},
		{"past the watch, not answered", 2 * time.Hour, false, machines.Loading,
			"wake watch for pod qwen: outcome unknown (resumed after the 35 min watch of the request at 1999-12-31 22:00 UTC)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				wakeAt := time.Now().Add(-tt.wakeAgo)
				e := newSyncEnv(t, wake.Config{Records: newMemRecords(
					machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: wakeAt})})
				e.boots(0, time.Time{})
				if tt.answers {
					e.loads(0)
				} else {
					e.loads(24 * time.Hour)
				}

				if err := e.c.Resume(func(string) bool { return true }); err != nil {
					t.Fatalf("Resume: %v", err)
				}
				synctest.Wait() // at once, before any time passes

				if diff := cmp.Diff([]time.Duration{0}, e.reads()); diff != "" {
					t.Errorf("pod reads (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff([]time.Duration{0}, e.probes()); diff != "" {
					t.Errorf("probes (-want +got):\n%s", diff)
				}
				if got := e.record(t).State; got != tt.wantState {
					t.Errorf("state %s, want %s", got, tt.wantState)
				}
				if got := e.logs.withMsg(t, tt.wantLine); len(got) != 1 {
					t.Errorf("%d lines %q, want 1; the log:\n%s", len(got), tt.wantLine, e.logs.String())
				}
				time.Sleep(time.Hour) // the watch has ended: ready, or resumed too late to give up
				synctest.Wait()
				if r, p := len(e.reads()), len(e.probes()); r != 1 || p != 1 {
					t.Errorf("%d reads and %d probes in the hour after, want none", r-1, p-1)
				}
			})
		})
	}
}

// TestNoWatchWithoutAWake: a pod with no wake of the host's on the clock
// costs nothing in the background: no read, no probe, however long, whatever
// its record says and whatever turns and views see.
func TestNoWatchWithoutAWake(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		recs := newMemRecords(
			machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: time.Now().Add(-time.Hour), ReadyAt: time.Now().Add(-50 * time.Minute)},
			machines.Record{Pod: "other", State: machines.Loading, ModelLoadingSince: time.Now().Add(-time.Minute)},
			machines.Record{Pod: "third", State: machines.NeverReady, WakeRequestedAt: time.Now().Add(-40 * time.Minute)},
		)
		e := newSyncEnv(t, wake.Config{Records: recs})
		e.boots(0, time.Time{})
		e.loads(0)
		if err := e.c.Resume(func(string) bool { return true }); err != nil {
			t.Fatalf("Resume: %v", err)
		}
		e.c.Observe(context.Background(), "qwen", upPod(time.Time{}))
		e.c.Answered(context.Background(), "qwen", time.Time{})
		e.c.Observe(context.Background(), "qwen", exited()) // the idle stop: ready → stopped

		time.Sleep(24 * time.Hour)
		synctest.Wait()

		if r, p := len(e.reads()), len(e.probes()); r != 0 || p != 0 {
			t.Errorf("%d pod reads and %d probes in a day without a wake, want none", r, p)
		}
		if got := e.record(t).State; got != machines.Stopped {
			t.Errorf("state %s, want stopped", got)
		}
	})
}
