package wake_test

import (
	"context"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// The host's own stops (idle.go), in synctest bubbles like the watch's
// cadence: every stop happens at an exact instant the test can list.

// readyEnv is a syncEnv whose qwen is ready since the bubble's start, after
// a wake requested 9 minutes before, served when served; its stops are
// stops, and Resume has started them.
func readyEnv(t *testing.T, stops wake.StopPolicy, served bool, cfg wake.Config) *syncEnv {
	t.Helper()
	start := time.Now()
	if cfg.Records == nil {
		cfg.Records = newMemRecords(machines.Record{Pod: "qwen", State: machines.Ready,
			WakeRequestedAt: start.Add(-9 * time.Minute), RunningAt: start.Add(-3 * time.Minute), ReadyAt: start, Served: served})
	}
	if m, ok := cfg.Records.(*memRecords); ok && cfg.Wakes == nil {
		cfg.Wakes = m // the store keeps both
	}
	cfg.Stops = map[string]wake.StopPolicy{"qwen": stops}
	e := newSyncEnv(t, cfg)
	e.gpu.stops = true
	if err := e.c.Resume(func(string) bool { return true }); err != nil {
		t.Fatal(err)
	}
	return e
}

// stops is when StopPod was called, after start.
func (e *syncEnv) stops() []time.Duration {
	var out []time.Duration
	for _, at := range e.gpu.stopTimes() {
		out = append(out, at.Sub(e.start))
	}
	return out
}

var fifteen = wake.StopPolicy{AfterIdle: 15 * time.Minute}

// TestIdleStopAfterLastAnswer: with stop_after_idle 15 min, the host stops
// the pod exactly 15 minutes after its model last answered, once, and
// feeds the stop to the machine: idled, with when and why.
func TestIdleStopAfterLastAnswer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := readyEnv(t, fifteen, true, wake.Config{})
		time.Sleep(2 * time.Minute)
		e.c.Answered(context.Background(), "qwen", time.Time{})
		time.Sleep(3 * time.Minute)
		e.c.Answered(context.Background(), "qwen", time.Time{})

		time.Sleep(15*time.Minute - time.Nanosecond)
		synctest.Wait()
		if got := e.stops(); len(got) != 0 {
			t.Fatalf("stopped at %v, before 15 min after the last answer (5m)", got)
		}
		time.Sleep(2 * time.Hour)
		synctest.Wait()

		if diff := cmp.Diff([]time.Duration{20 * time.Minute}, e.stops()); diff != "" {
			t.Errorf("stops (-want +got):\n%s", diff)
		}
		r := e.record(t)
		if r.State != machines.Idled || !r.StoppedAt.Equal(e.at(20*time.Minute)) || r.StopReason != machines.StopIdle {
			t.Errorf("record %+v, want idled, stopped at 20m, idle", r)
		}
		if w := e.recs.logged("qwen"); len(w) != 1 || w[0].Stop != machines.StopIdle || !w[0].StoppedAt.Equal(e.at(20*time.Minute)) {
			t.Errorf("wake log %+v, want the wake with its stop", w)
		}
		e.logs.find(t, "pod stopped after idling: pod qwen, idle 15m0s")
	})
}

// TestIdleStopNeverReady: from ready it is measured, or from ready if the
// model never answered.
func TestIdleStopFromReady(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := readyEnv(t, fifteen, false, wake.Config{})
		time.Sleep(time.Hour)
		synctest.Wait()
		if diff := cmp.Diff([]time.Duration{15 * time.Minute}, e.stops()); diff != "" {
			t.Errorf("stops (-want +got):\n%s", diff)
		}
	})
}

// TestIdleStopNeverDuringATurn: a turn, held request or resume in flight
// (Begin) holds the stop back however long it takes; the idle time runs
// from its end. A turn whose pod is not known yet ("") holds back every
// pod's stop.
func TestIdleStopNeverDuringATurn(t *testing.T) {
	for _, pod := range []string{"qwen", ""} {
		t.Run("pod "+pod, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := readyEnv(t, fifteen, true, wake.Config{})
				time.Sleep(10 * time.Minute)
				end := e.c.Begin(pod)
				time.Sleep(50 * time.Minute) // a held request, long past 15 idle minutes
				synctest.Wait()
				if got := e.stops(); len(got) != 0 {
					t.Fatalf("stopped at %v with a turn in flight", got)
				}
				end()
				end() // once only
				time.Sleep(time.Hour)
				synctest.Wait()
				if diff := cmp.Diff([]time.Duration{75 * time.Minute}, e.stops()); diff != "" {
					t.Errorf("stops (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// beginOnRead is a store whose read of qwen's record, from a given time
// on, first begins a turn: a turn that begins while the stop is being
// decided, just before its last look.
type beginOnRead struct {
	*memRecords
	from time.Time

	mu    sync.Mutex
	c     *wake.Coordinator
	begun bool
}

func (b *beginOnRead) Record(ctx context.Context, pod string) (machines.Record, error) {
	b.mu.Lock()
	if !time.Now().Before(b.from) && !b.begun {
		b.c.Begin(pod)
		b.begun = true
	}
	b.mu.Unlock()
	return b.memRecords.Record(ctx, pod)
}

// TestIdleStopLosesToATurnThatBegins: the stop looks again under the pod's
// lock, on the stored record, just before it calls StopPod; a turn that
// began by then wins, and no stop is sent while it runs.
func TestIdleStopLosesToATurnThatBegins(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		recs := &beginOnRead{memRecords: newMemRecords(machines.Record{Pod: "qwen", State: machines.Ready,
			WakeRequestedAt: start.Add(-9 * time.Minute), ReadyAt: start, Served: true}), from: start.Add(15 * time.Minute)}
		e := readyEnv(t, fifteen, true, wake.Config{Records: recs})
		recs.mu.Lock()
		recs.c = e.c
		recs.mu.Unlock()
		time.Sleep(3 * time.Hour)
		synctest.Wait()
		recs.mu.Lock()
		begun := recs.begun
		recs.mu.Unlock()
		if !begun {
			t.Fatal("the stop never looked at the record")
		}
		if got := e.stops(); len(got) != 0 {
			t.Errorf("stopped at %v, with a turn begun at the last look", got)
		}
		if r := e.record(t); r.State != machines.Ready {
			t.Errorf("state %s, want ready", r.State)
		}
	})
}

// TestIdleStopFailureLeavesReady: a refused, failed or panicking StopPod
// changes nothing in the machine; it is logged at ERROR and tried again an
// idle period later.
func TestIdleStopFailureLeavesReady(t *testing.T) {
	tests := []struct {
		name string
		stop func(context.Context, string) (pluginapi.StartResult, error)
		line string
	}{
		{"refused", func(context.Context, string) (pluginapi.StartResult, error) {
			return pluginapi.StartResult{Status: 409}, nil
		}, "pod stop failed for pod qwen: refused (HTTP 409); the pod is left as it is, tried again in 15m0s"},
		{"not sent", func(context.Context, string) (pluginapi.StartResult, error) {
			return pluginapi.StartResult{Error: "ECONNREFUSED"}, nil
		}, "pod stop failed for pod qwen: not sent (ECONNREFUSED); the pod is left as it is, tried again in 15m0s"},
		{"plugin died", func(context.Context, string) (pluginapi.StartResult, error) {
			return pluginapi.StartResult{}, context.DeadlineExceeded
		}, "pod stop failed for pod qwen: the host stopped waiting (DeadlineExceeded); the pod is left as it is, tried again in 15m0s"},
		{"panicked", func(context.Context, string) (pluginapi.StartResult, error) {
			panic("boom")
		}, "pod stop failed for pod qwen: the GPU plugin's stop panicked; the pod is left as it is, tried again in 15m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := readyEnv(t, fifteen, true, wake.Config{})
				e.gpu.mu.Lock()
				e.gpu.stopPod = tt.stop
				e.gpu.mu.Unlock()
				time.Sleep(31 * time.Minute)
				synctest.Wait()
				if diff := cmp.Diff([]time.Duration{15 * time.Minute, 30 * time.Minute}, e.stops()); diff != "" {
					t.Errorf("stop attempts (-want +got):\n%s", diff)
				}
				if r := e.record(t); r.State != machines.Ready || !r.StoppedAt.IsZero() {
					t.Errorf("record %+v, want ready as it was", r)
				}
				lines := e.logs.withMsg(t, tt.line)
				if len(lines) < 2 {
					t.Fatalf("%d lines %q, want 2 (one per attempt)", len(lines), tt.line)
				}
				if lines[0].Level != "ERROR" {
					t.Errorf("logged at %s, want ERROR", lines[0].Level)
				}
			})
		})
	}
}

// fakeSubscribers is a settable count of qwen's event subscribers.
type fakeSubscribers struct {
	mu sync.Mutex
	n  int
}

func (f *fakeSubscribers) Subscribers(pod string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	if pod != "qwen" {
		return 0
	}
	return f.n
}

func (f *fakeSubscribers) set(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.n = n
}

// TestUnservedStop: with stop_unserved_after 5 min, a woken pod that became
// ready and served nobody is stopped once nobody waits for it: not while a
// held request is in flight or a subscriber follows its events, and 5
// minutes after the last of them left (within a watch poll for a
// subscriber, whose count is looked at every poll). A served pod is not
// stopped as unserved.
func TestUnservedStop(t *testing.T) {
	unserved := wake.StopPolicy{UnservedAfter: 5 * time.Minute}
	t.Run("nobody waits", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := readyEnv(t, unserved, false, wake.Config{})
			time.Sleep(time.Hour)
			synctest.Wait()
			if diff := cmp.Diff([]time.Duration{5 * time.Minute}, e.stops()); diff != "" {
				t.Errorf("stops (-want +got):\n%s", diff)
			}
			if r := e.record(t); r.State != machines.Idled || r.StopReason != machines.StopUnserved {
				t.Errorf("record %+v, want idled, unserved", r)
			}
			e.logs.find(t, "pod stopped, nobody served: pod qwen, unserved 5m0s")
		})
	})
	t.Run("a held request, then a subscriber", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			subs := &fakeSubscribers{}
			e := readyEnv(t, unserved, false, wake.Config{Subscribers: subs})
			end := e.c.Begin("qwen") // a held request
			time.Sleep(20 * time.Minute)
			subs.set(1) // an event stream, before the hold ends
			end()
			time.Sleep(40 * time.Minute)
			synctest.Wait()
			if got := e.stops(); len(got) != 0 {
				t.Fatalf("stopped at %v while a subscriber follows the pod", got)
			}
			subs.set(0) // at 60m
			time.Sleep(time.Hour)
			synctest.Wait()
			got := e.stops()
			if len(got) != 1 || got[0] < 65*time.Minute || got[0] > 65*time.Minute+5*time.Second {
				t.Errorf("stops %v, want one 5 min after the subscriber left at 60m, within a watch poll", got)
			}
		})
	})
	t.Run("served", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := readyEnv(t, unserved, true, wake.Config{})
			time.Sleep(time.Hour)
			synctest.Wait()
			if got := e.stops(); len(got) != 0 {
				t.Errorf("stopped at %v a pod that served a turn", got)
			}
		})
	})
	t.Run("unserved before idle", func(t *testing.T) {
		synctest.Test(t, func(t *testing.T) {
			e := readyEnv(t, wake.StopPolicy{AfterIdle: 15 * time.Minute, UnservedAfter: 5 * time.Minute}, false, wake.Config{})
			time.Sleep(time.Hour)
			synctest.Wait()
			if diff := cmp.Diff([]time.Duration{5 * time.Minute}, e.stops()); diff != "" {
				t.Errorf("stops (-want +got):\n%s", diff)
			}
		})
	})
}

// TestNoStopPolicyNoStop: a pod with no StopPolicy (the conductor's, which
// stop themselves) is never stopped by the host.
func TestNoStopPolicyNoStop(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		e := newSyncEnv(t, wake.Config{Records: newMemRecords(machines.Record{Pod: "qwen", State: machines.Ready,
			WakeRequestedAt: start.Add(-9 * time.Minute), ReadyAt: start})})
		if err := e.c.Resume(func(string) bool { return true }); err != nil {
			t.Fatal(err)
		}
		time.Sleep(3 * time.Hour)
		synctest.Wait()
		if got := e.stops(); len(got) != 0 {
			t.Errorf("stopped at %v", got)
		}
	})
}

// TestIdleStopOnceAcrossHosts: three hosts on one store, each with the
// same policy and the same idle pod, send one StopPod between them: the
// stop's lease, and the last look at the stored record.
func TestIdleStopOnceAcrossHosts(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		recs := newMemRecords(machines.Record{Pod: "qwen", State: machines.Ready,
			WakeRequestedAt: start.Add(-9 * time.Minute), ReadyAt: start, Served: true})
		leases := newSharedLeases()
		gpu := &fakeGPU{stops: true} // every host reaches the one pod
		for _, host := range []string{"a", "b", "c"} {
			readyEnv(t, fifteen, true, wake.Config{Records: recs, GPU: gpu, Leases: leases.view(host)})
		}
		time.Sleep(2 * time.Hour)
		synctest.Wait()
		if got := len(gpu.stopTimes()); got != 1 {
			t.Errorf("%d StopPod calls across three hosts, want 1", got)
		}
		if r, _ := recs.Record(context.Background(), "qwen"); r.State != machines.Idled {
			t.Errorf("state %s, want idled", r.State)
		}
	})
}
