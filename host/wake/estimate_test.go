package wake_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// wakeFor runs one whole wake of qwen from now on the fake clock, as the
// host sees it: a turn finds the pod down (its read first) and wakes it;
// took*2/3 later a read finds the pod up, and took after the request one
// finds its model ready since then. It returns the turn's decision. The
// watch polls hourly, so only these reads reach the machine.
func wakeFor(t *testing.T, e *env, took time.Duration) machines.Decision {
	t.Helper()
	e.c.Observe(context.Background(), "qwen", exited())
	d := e.notReady(t)
	if d.Action != machines.ActionWake {
		t.Fatalf("the turn decided %s (%q), want a wake", d.Action, d.Text)
	}
	requested := e.clk.Now()
	e.clk.Advance(took * 2 / 3)
	e.c.Observe(context.Background(), "qwen", upPod(time.Time{}))
	e.clk.Set(requested.Add(took))
	e.c.Observe(context.Background(), "qwen", upPod(e.clk.Now()))
	if r := e.record(t); r.State != machines.Ready {
		t.Fatalf("after the wake: state %s, want ready", r.State)
	}
	return d
}

// TestCompletedWakesFeedTheEstimate: each wake that becomes ready is logged
// with its phases, and the replies quote the median of the logged wakes:
// the design's 9 minutes before any, the measured 4 after 4-minute wakes.
// A wake past that estimate is said to be late; one ready the same day
// reads its figures from the log of the store alone.
func TestCompletedWakesFeedTheEstimate(t *testing.T) {
	e := newEnv(t, wake.Config{WatchPoll: time.Hour})
	wantTexts := []string{
		"Waking the GPU brain — that takes about 9 minutes. Ask me again in a few minutes.",
		"The GPU woke and was ready at 12:04 UTC, then stopped — it shuts down after 15 idle minutes. Waking it again — about 4 minutes.",
		"The GPU woke and was ready at 13:04 UTC, then stopped — it shuts down after 15 idle minutes. Waking it again — about 4 minutes.",
	}
	for i, want := range wantTexts {
		e.clk.Set(t0.Add(time.Duration(i) * time.Hour))
		if d := wakeFor(t, e, 4*time.Minute); d.Text != want {
			t.Errorf("wake %d: reply %q, want %q", i+1, d.Text, want)
		}
	}
	e.accepted(t, 3)

	if diff := cmp.Diff(machines.Estimate{Wake: 4 * time.Minute, Wakes: 3}, e.c.Estimate("qwen")); diff != "" {
		t.Errorf("Estimate (-want +got):\n%s", diff)
	}
	var wantLog []machines.Wake
	for i := range 3 {
		at := t0.Add(time.Duration(i) * time.Hour)
		wantLog = append(wantLog, machines.Wake{Pod: "qwen", RequestedAt: at,
			RunningAt: at.Add(160 * time.Second), ReadyAt: at.Add(4 * time.Minute), Outcome: "ready"})
	}
	if diff := cmp.Diff(wantLog, e.recs.logged("qwen")); diff != "" {
		t.Errorf("wake log (-want +got):\n%s", diff)
	}

	// The fourth wake, after three 4-minute ones.
	e.clk.Set(t0.Add(3 * time.Hour))
	e.c.Observe(context.Background(), "qwen", exited())
	d := e.notReady(t)
	if want := "The GPU woke and was ready at 14:04 UTC, then stopped — it shuts down after 15 idle minutes. Waking it again — about 4 minutes."; d.Text != want {
		t.Errorf("fourth wake: %q, want %q", d.Text, want)
	}
	e.clk.Advance(2 * time.Minute)
	if d := e.notReady(t); d.Reply != machines.ReplyStillWaking || d.Text != "Still waking — 2 min elapsed, usually ready by ~4. Ask again shortly." {
		t.Errorf("2 min into it: %s %q", d.Reply, d.Text)
	}
	e.clk.Advance(3 * time.Minute)
	if d := e.notReady(t); d.Reply != machines.ReplyStillWakingLate ||
		d.Text != "Still waking — 5 min elapsed, taking longer than the usual 4 minutes. Ask again shortly." {
		t.Errorf("5 min into it: %s %q", d.Reply, d.Text)
	}

	// A new Coordinator on the same store (a restart) has the same
	// estimate before any event.
	pod, err := machines.NewPod(machines.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	c2 := wake.New(wake.Config{Pod: pod, Records: e.recs, Wakes: e.recs, GPU: &fakeGPU{}, Clock: e.clk,
		WatchPoll: time.Hour, StartTimeout: 3 * time.Second})
	defer func() {
		if err := c2.Close(context.Background()); err != nil {
			t.Error(err)
		}
	}()
	if diff := cmp.Diff(machines.Estimate{Wake: 4 * time.Minute, Wakes: 3}, c2.Estimate("qwen")); diff != "" {
		t.Errorf("Estimate after a restart (-want +got):\n%s", diff)
	}
}

// TestTheEstimateIsTheMedian: an outlier wake moves the figure little; it
// is the median of the wakes, not their mean.
func TestTheEstimateIsTheMedian(t *testing.T) {
	e := newEnv(t, wake.Config{WatchPoll: time.Hour})
	for i, took := range []time.Duration{5 * time.Minute, 30 * time.Minute, 6 * time.Minute} {
		e.clk.Set(t0.Add(time.Duration(i) * 2 * time.Hour))
		wakeFor(t, e, took)
	}
	e.accepted(t, 3)
	if diff := cmp.Diff(machines.Estimate{Wake: 6 * time.Minute, Wakes: 3}, e.c.Estimate("qwen")); diff != "" {
		t.Errorf("Estimate (-want +got):\n%s", diff)
	}
}

// TestWakeLogOutcomes: every way a wake ends is one entry of the log, and
// Changed sees it with the change that wrote it: ready, served by a later
// turn, superseded by a wake beyond the window, refused.
func TestWakeLogOutcomes(t *testing.T) {
	var mu sync.Mutex
	var changes []*machines.Wake
	e := newEnv(t, wake.Config{WatchPoll: time.Hour, Changed: func(c wake.Change) {
		mu.Lock()
		defer mu.Unlock()
		if c.Wake != nil {
			changes = append(changes, c.Wake)
		}
	}})
	ctx := context.Background()

	// Ready on a view; a turn answered a minute later serves it.
	wakeFor(t, e, 8*time.Minute)
	e.clk.Advance(time.Minute)
	e.c.Answered(ctx, "qwen", t0.Add(8*time.Minute))
	e.c.Answered(ctx, "qwen", t0.Add(8*time.Minute)) // no second entry
	ready := machines.Wake{Pod: "qwen", RequestedAt: t0, RunningAt: t0.Add(320 * time.Second), ReadyAt: t0.Add(8 * time.Minute), Outcome: "ready"}
	served := ready
	served.Served = true

	// A wake never seen ready, woken again beyond the window.
	second := t0.Add(time.Hour)
	e.clk.Set(second)
	e.c.Observe(ctx, "qwen", exited())
	e.notReady(t)
	e.clk.Advance(6 * time.Minute)
	e.c.Observe(ctx, "qwen", upPod(time.Time{}))
	e.clk.Advance(10 * time.Minute)
	e.c.Observe(ctx, "qwen", exited())
	if d := e.notReady(t); d.Reply != machines.ReplyRewake {
		t.Fatalf("16 min on: %s, want rewake", d.Reply)
	}
	superseded := machines.Wake{Pod: "qwen", RequestedAt: second, RunningAt: second.Add(6 * time.Minute), Outcome: "superseded"}

	// The third, refused.
	third := e.clk.Now()
	e.accepted(t, 3)
	e.gpu.setStart(answer(pluginapi.StartResult{Requested: false, Status: 409}))
	e.clk.Advance(16 * time.Minute)
	if d := e.notReady(t); d.Reply != machines.ReplyRewake {
		t.Fatalf("the third wake's ask: %s, want rewake", d.Reply)
	}
	fourth := e.clk.Now()
	e.waitStarts(t, 4)
	e.logs.find(t, "wake refused for pod qwen: status=409")
	refused := machines.Wake{Pod: "qwen", RequestedAt: fourth, Outcome: "refused"}
	thirdLogged := machines.Wake{Pod: "qwen", RequestedAt: third, Outcome: "superseded"}

	wantLog := []machines.Wake{served, superseded, thirdLogged, refused}
	if diff := cmp.Diff(wantLog, e.recs.logged("qwen")); diff != "" {
		t.Errorf("wake log (-want +got):\n%s", diff)
	}
	mu.Lock()
	defer mu.Unlock()
	var got []machines.Wake
	for _, w := range changes {
		got = append(got, *w)
	}
	if diff := cmp.Diff([]machines.Wake{ready, served, superseded, thirdLogged, refused}, got); diff != "" {
		t.Errorf("entries Changed saw (-want +got):\n%s", diff)
	}
	// None of them completed a wake but the first: the estimate is it.
	if diff := cmp.Diff(machines.Estimate{Wake: 8 * time.Minute, Wakes: 1}, e.c.Estimate("qwen")); diff != "" {
		t.Errorf("Estimate (-want +got):\n%s", diff)
	}
}

// TestWakeLogUnreadable: a wake log the store cannot read is logged at
// error level and leaves the replies on expected_wake; the next event
// reads it again, and once it reads, the measured figure is back.
func TestWakeLogUnreadable(t *testing.T) {
	recs := newMemRecords()
	var mu sync.Mutex
	failing := true
	recs.wakesErr = func() error {
		mu.Lock()
		defer mu.Unlock()
		if failing {
			return errors.New("store: bucket wakes missing")
		}
		return nil
	}
	recs.wakes["qwen"] = []machines.Wake{{Pod: "qwen", RequestedAt: t0.Add(-time.Hour), ReadyAt: t0.Add(-55 * time.Minute), Outcome: "ready"}}
	e := newEnv(t, wake.Config{Records: recs, WatchPoll: time.Hour})

	d := e.notReady(t)
	if want := "Waking the GPU brain — that takes about 9 minutes. Ask me again in a few minutes."; d.Text != want {
		t.Errorf("reply with the log unreadable: %q, want %q", d.Text, want)
	}
	const line = "wake log unreadable for pod qwen: store: bucket wakes missing; the replies keep the last estimate"
	if diff := cmp.Diff([]logLine{{Level: "ERROR", Msg: line, Pod: "qwen"}}, e.logs.withMsg(t, line)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	mu.Lock()
	failing = false
	mu.Unlock()
	e.clk.Advance(time.Minute)
	if d := e.notReady(t); d.Text != "Still waking — 1 min elapsed, usually ready by ~5. Ask again shortly." {
		t.Errorf("reply once the log reads: %q, want the measured 5 minutes", d.Text)
	}
	if got := e.c.Estimate("qwen"); got.Wakes != 1 || got.Wake != 5*time.Minute {
		t.Errorf("Estimate = %+v, want 5 min over 1 wake", got)
	}
	e.accepted(t, 1)
}
