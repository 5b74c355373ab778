package app_test

import (
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/app"
	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/internal/pgtest"
	"github.com/wakeonchat/wakeonchat/host/sim"
)

// This file runs three hosts on one PostgreSQL database, each with its own
// store (connections, change listener, leases) and plugins, as three
// wakehost processes would, but in this process: one fake clock, which the
// test moves, is every host's and the simulator's.

// timerClock is one host's view of the test's fake clock: it notes the
// deadline of every timer the host sets (After) in timers, so that the
// test can wait until a host's idle stop is due at a given time.
type timerClock struct {
	*fakeclock.Clock
	host   int
	timers *timers
}

func (c timerClock) After(d time.Duration) <-chan time.Time {
	now := c.Now()
	ch := c.Clock.After(d)
	c.timers.note(c.host, now.Add(d))
	return ch
}

// timers are the deadlines the hosts' timers were set for.
type timers struct {
	mu      sync.Mutex
	set     map[int][]time.Time
	changed chan struct{} // closed and replaced on every note
}

func newTimers() *timers {
	return &timers{set: map[int][]time.Time{}, changed: make(chan struct{})}
}

func (ts *timers) note(host int, at time.Time) {
	ts.mu.Lock()
	defer ts.mu.Unlock()
	ts.set[host] = append(ts.set[host], at)
	close(ts.changed)
	ts.changed = make(chan struct{})
}

// await waits until host has set a timer for at, and fails the test with
// why after waitFor.
func (ts *timers) await(t *testing.T, host int, at time.Time, why string) {
	t.Helper()
	deadline := time.After(waitFor)
	for {
		ts.mu.Lock()
		set := slices.ContainsFunc(ts.set[host], at.Equal)
		changed := ts.changed
		ts.mu.Unlock()
		if set {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("host %d set no timer for %s within %v: %s", host, at.Format(time.TimeOnly), waitFor, why)
		}
	}
}

// stopCounter is the simulator with every stop request of qwen noted, at
// the fake clock's time.
type stopCounter struct {
	next http.Handler
	clk  *fakeclock.Clock

	mu      sync.Mutex
	at      []time.Time
	stopped chan struct{} // one per stop request
}

func (s *stopCounter) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost && r.URL.Path == "/api/pods/qwen/stop" {
		s.mu.Lock()
		s.at = append(s.at, s.clk.Now())
		s.mu.Unlock()
		s.stopped <- struct{}{}
	}
	s.next.ServeHTTP(w, r)
}

func (s *stopCounter) stops() []time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.at)
}

// startIdleReplica runs host number i on the schema of dsn, with the
// simulator at simURL as its conductor and stop_after_idle 15m on it.
func startIdleReplica(t testing.TB, i int, simURL, dsn string, clk *fakeclock.Clock, ts *timers) *testHost {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "wake.toml")
	toml := fmt.Sprintf(`[server]
listen = "127.0.0.1:0"
data_dir = %q

[conductor]
url = %[2]q
start_timeout = "200ms"

[timings]
watch_poll = "5s"

[store]
backend = "postgres"
dsn_env = "WAKE_TEST_STORE_DSN"
lease = "1s"

[[backends]]
name = "lab"
kind = "conductor"
url = %[2]q
start_timeout = "200ms"
stop_after_idle = "15m"

[[providers]]
name = "qwen"
pod = "qwen"
model = "qwen"
backend = "lab"
api_key_env = ""
`, filepath.Join(dir, "data"), simURL)
	if err := os.WriteFile(path, []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &e2e.Log{}
	env := map[string]string{"WAKE_TEST_STORE_DSN": dsn}
	h := e2e.Start(t, app.Options{
		ConfigPath: path,
		Logger:     logs.Logger(slog.LevelDebug),
		Getenv:     func(k string) string { return env[k] },
		Clock:      timerClock{Clock: clk, host: i, timers: ts},
		PluginDir:  binDir,
	}, logs, nil)
	return &testHost{Host: h, clock: clk, log: logs}
}

// TestThreeReplicasStopAnIdlePodOnce (#19): three hosts on one database,
// the simulator their conductor (its own idle stop off), stop_after_idle
// 15m on its backend. A pod woken through host A and answered through A,
// and through B a minute before A's idle period runs out, idles and is
// stopped exactly once, 15 minutes after B's answer: not when A's own
// period runs out, since B's answer reached A (and C) as the record's
// stamp. Each host's idle stop is seen due at that time (the timer it
// sets), and the one stop request reaches the conductor then.
func TestThreeReplicasStopAnIdlePodOnce(t *testing.T) {
	t.Parallel()
	dsn := pgtest.Schema(t)
	clk := fakeclock.New(t0)
	s := sim.New(sim.Config{Pods: []string{"qwen"}, Clock: clk,
		BootDelay: time.Minute, LoadDelay: 30 * time.Second, IdleStop: 24 * time.Hour})
	sc := &stopCounter{next: s.Handler(), clk: clk, stopped: make(chan struct{}, 16)}
	simURL := serveSim(t, s, sc)
	ts := newTimers()
	hosts := make([]*testHost, 3)
	concurrently(t,
		func(t testing.TB) { hosts[0] = startIdleReplica(t, 0, simURL, dsn, clk, ts) },
		func(t testing.TB) { hosts[1] = startIdleReplica(t, 1, simURL, dsn, clk, ts) },
		func(t testing.TB) { hosts[2] = startIdleReplica(t, 2, simURL, dsn, clk, ts) },
	)
	a, b := hosts[0], hosts[1]

	// A wakes the pod and watches the wake until it is ready, 1m30s after
	// the start: the clock moves each time the watch waits on it, to a few
	// seconds past that. (Not until a ready event: once the pod is ready
	// every host's idle stop waits on the clock too, and stepping on
	// whatever waits would run the clock into them.)
	if got := a.ask(t, "s-a", "hello"); got != e2e.ReplyWaking {
		t.Fatalf("the first ask, on A: %q, want the waking reply", got)
	}
	stepTo(t, clk, t0.Add(time.Minute+35*time.Second), time.Second)
	for _, h := range hosts {
		h.waitState(t, "ready")
	}

	// A answers, then B 14 minutes later, as A's own idle period is about
	// to run out (answeredA+15m): B's answer moves every host's stop to
	// answeredB+15m.
	answeredA := clk.Now()
	if got := a.ask(t, "s-a", "are you there?"); got != "echo: are you there?" {
		t.Fatalf("the ask on A once ready: %q, want the model's echo", got)
	}
	clk.Advance(14 * time.Minute)
	answeredB := clk.Now()
	if got := b.ask(t, "s-b", "and for me?"); got != "echo: and for me?" {
		t.Fatalf("the ask on B: %q, want the model's echo", got)
	}
	due := answeredB.Add(15 * time.Minute)
	for i := range hosts {
		ts.await(t, i, due, fmt.Sprintf("its idle stop is not due 15 min after B's answer (A's own period ends at %s)",
			answeredA.Add(15*time.Minute).Format(time.TimeOnly)))
	}

	// Past A's own idle period, and up to a second before B's runs out:
	// nobody stops the pod.
	clk.Set(answeredA.Add(15*time.Minute + time.Second))
	clk.Set(due.Add(-time.Second))
	if got := sc.stops(); len(got) != 0 {
		t.Fatalf("stop requests at %v, before 15 min after B's answer (%s)", got, due.Format(time.TimeOnly))
	}

	// At B's idle period's end, one of the hosts stops it, and every host
	// sees it idled.
	clk.Set(due)
	select {
	case <-sc.stopped:
	case <-time.After(waitFor):
		t.Fatalf("no stop request within %v of the pod's idle period running out", waitFor)
	}
	for _, h := range hosts {
		h.waitState(t, "idled")
	}
	// Once every host has stopped, nothing of theirs is still running: the
	// count is final.
	lines := 0
	for _, h := range hosts {
		h.stop(t)
		lines += len(h.log.Matching(t, "pod stopped after idling: pod qwen, idle 15m0s"))
	}
	if got := sc.stops(); len(got) != 1 || !got[0].Equal(due) {
		t.Errorf("stop requests at %v, want one, at %s", got, due.Format(time.TimeOnly))
	}
	if lines != 1 {
		t.Errorf("%d lines \"pod stopped after idling: pod qwen, idle 15m0s\" across the hosts, want 1", lines)
	}
}
