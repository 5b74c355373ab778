package wake_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

const acceptedLine = "wake requested for pod qwen: accepted status=202"

// TestFirstNotReadyWakes: message 1 of the Sequence — the pod is asleep, the
// policy wakes, the turn gets the waking reply and exactly one start request
// goes out in the background.
func TestFirstNotReadyWakes(t *testing.T) {
	e := newEnv(t, wake.Config{})
	caps := &fakeCaps{}

	d := e.notReady(t, caps)

	want := machines.Decision{
		Action: machines.ActionWake,
		Reply:  machines.ReplyWaking,
		Text:   "Waking the GPU brain — that takes about 9 minutes. Ask me again in a few minutes.",
		From:   machines.Asleep,
		To:     machines.Waking,
	}
	if diff := cmp.Diff(want, d, cmpDecision); diff != "" {
		t.Errorf("decision (-want +got):\n%s", diff)
	}
	e.logs.wait(t, acceptedLine)
	if n := caps.wakes.Load(); n != 1 {
		t.Errorf("Wake called %d times, want 1", n)
	}
	wantRec := machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: t0}
	if diff := cmp.Diff(wantRec, e.record(t)); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	wantLines := []logLine{
		{Level: "INFO", Msg: "provider not ready for pod qwen (status EXITED) → wake", Pod: "qwen", State: "waking", Reply: "waking"},
		{Level: "INFO", Msg: acceptedLine, Pod: "qwen"},
	}
	got, _ := e.logs.lines(t)
	if diff := cmp.Diff(wantLines, got); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
}

// cmpDecision leaves the transition table row out of a decision comparison.
var cmpDecision = cmp.FilterPath(func(p cmp.Path) bool { return p.Last().String() == ".Row" }, cmp.Ignore())

// TestConcurrentNotReadyWakesOnce: 500 turns find the asleep pod at the same
// moment; the per-pod lock lets exactly one of them wake it.
func TestConcurrentNotReadyWakesOnce(t *testing.T) {
	e := newEnv(t, wake.Config{})
	caps := &fakeCaps{}
	const n = 500
	replies := make(chan machines.ReplyKey, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			d, err := e.c.NotReady(context.Background(), "qwen", "EXITED", machines.LookupFound, false, caps)
			if err != nil {
				t.Errorf("NotReady: %v", err)
				return
			}
			replies <- d.Reply
		}()
	}
	close(gate)
	wg.Wait()
	close(replies)
	got := map[machines.ReplyKey]int{}
	for r := range replies {
		got[r]++
	}
	want := map[machines.ReplyKey]int{machines.ReplyWaking: 1, machines.ReplyStillWaking: n - 1}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("replies (-want +got):\n%s", diff)
	}
	e.logs.wait(t, acceptedLine)
	if n := caps.wakes.Load(); n != 1 {
		t.Errorf("Wake called %d times, want exactly 1", n)
	}
}

// TestWakeWindow: a second not-ready within the 15-minute window waits (the
// edge is inclusive); one beyond it wakes again (#712).
func TestWakeWindow(t *testing.T) {
	tests := []struct {
		name      string
		gap       time.Duration
		want      machines.Decision
		wantWakes int32
	}{
		{"at once", 0, machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyStillWaking,
			Text: "Still waking — 0 min elapsed, usually ready by ~9. Ask again shortly.", From: machines.Waking, To: machines.Waking}, 1},
		{"3 min later", 3 * time.Minute, machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyStillWaking,
			Text: "Still waking — 3 min elapsed, usually ready by ~9. Ask again shortly.", From: machines.Waking, To: machines.Waking}, 1},
		{"exactly 15 min later", 15 * time.Minute, machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyStillWaking,
			Text: "Still waking — 15 min elapsed, usually ready by ~9. Ask again shortly.", From: machines.Waking, To: machines.Waking}, 1},
		{"15 min 1 ms later", 15*time.Minute + time.Millisecond, machines.Decision{Action: machines.ActionWake, Reply: machines.ReplyRewake,
			Text: "The GPU brain is not ready. I'll try to wake it again. Ask again in a few minutes.", From: machines.Waking, To: machines.Waking}, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, wake.Config{})
			caps := &fakeCaps{}
			e.notReady(t, caps)
			e.logs.wait(t, acceptedLine)
			e.clk.Advance(tt.gap)

			d := e.notReady(t, caps)

			if diff := cmp.Diff(tt.want, d, cmpDecision); diff != "" {
				t.Errorf("second decision (-want +got):\n%s", diff)
			}
			e.logs.waitN(t, acceptedLine, int(tt.wantWakes))
			if n := caps.wakes.Load(); n != tt.wantWakes {
				t.Errorf("Wake called %d times, want %d", n, tt.wantWakes)
			}
			if got, want := e.record(t).WakeRequestedAt, t0; tt.wantWakes == 2 {
				want = t0.Add(tt.gap)
				if !got.Equal(want) {
					t.Errorf("WakeRequestedAt = %v, want the new wake %v", got, want)
				}
			} else if !got.Equal(want) {
				t.Errorf("WakeRequestedAt = %v, want the first wake %v (an ask never resets it)", got, want)
			}
		})
	}
}

// TestModelLoading: the pod is up and the model loads (D7): the policy waits
// and never wakes; 25 minutes into the wake it is stuck (D9), logged at error
// level.
func TestModelLoading(t *testing.T) {
	loading := func(e *env, caps wake.Capabilities) machines.Decision {
		t.Helper()
		d, err := e.c.NotReady(context.Background(), "qwen", "RUNNING", machines.LookupFound, true, caps)
		if err != nil {
			t.Fatalf("NotReady(modelLoading): %v", err)
		}
		return d
	}
	const loadingLine = "provider not ready for pod qwen (status RUNNING, model loading) → wait"

	t.Run("without a wake", func(t *testing.T) {
		e := newEnv(t, wake.Config{})
		caps := &fakeCaps{}
		d := loading(e, caps)
		want := machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyLoading,
			Text: "The GPU is up and the model is still loading — that takes a few more minutes. Ask again shortly.",
			From: machines.Asleep, To: machines.Loading}
		if diff := cmp.Diff(want, d, cmpDecision); diff != "" {
			t.Errorf("decision (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]logLine{{Level: "INFO", Msg: loadingLine, Pod: "qwen", State: "loading", Reply: "loading"}},
			e.logs.withMsg(t, loadingLine)); diff != "" {
			t.Errorf("log (-want +got):\n%s", diff)
		}
		if n := caps.wakes.Load(); n != 0 {
			t.Errorf("Wake called %d times, want 0: a loading pod is up", n)
		}
	})

	t.Run("stuck at 25 min", func(t *testing.T) {
		e := newEnv(t, wake.Config{})
		caps := &fakeCaps{}
		e.notReady(t, caps)
		e.logs.wait(t, acceptedLine)
		e.clk.Advance(6 * time.Minute)
		if d := loading(e, caps); d.Reply != machines.ReplyLoadingWaking || d.Stuck {
			t.Fatalf("at 6 min: reply %q stuck %v, want %q and not stuck", d.Reply, d.Stuck, machines.ReplyLoadingWaking)
		}
		e.clk.Advance(19 * time.Minute)

		d := loading(e, caps)

		want := machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyStuck, Stuck: true,
			Text: "The model server has been up for 25 minutes and still is not answering — it may be stuck. Someone needs to look at the pod.",
			From: machines.Loading, To: machines.Stuck}
		if diff := cmp.Diff(want, d, cmpDecision); diff != "" {
			t.Errorf("decision (-want +got):\n%s", diff)
		}
		stuckLine := loadingLine + " — STUCK: up but not answering"
		if diff := cmp.Diff([]logLine{{Level: "ERROR", Msg: stuckLine, Pod: "qwen", State: "stuck", Reply: "stuck"}},
			e.logs.withMsg(t, stuckLine)); diff != "" {
			t.Errorf("log (-want +got):\n%s", diff)
		}
		if n := caps.wakes.Load(); n != 1 {
			t.Errorf("Wake called %d times, want only the first wake's 1", n)
		}
	})
}

// TestDecisionLine: the decision line names the conductor's words; an
// unknown status says so, and an unreadable pod is never woken.
func TestDecisionLine(t *testing.T) {
	e := newEnv(t, wake.Config{})
	caps := &fakeCaps{}
	d, err := e.c.NotReady(context.Background(), "qwen", "", machines.LookupUnreadable, false, caps)
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != machines.ActionWait || d.Reply != machines.ReplyUnreadable {
		t.Errorf("unreadable: action %q reply %q, want wait and %q", d.Action, d.Reply, machines.ReplyUnreadable)
	}
	want := []logLine{{Level: "INFO", Msg: "provider not ready for pod qwen (status unknown) → wait", Pod: "qwen", State: "asleep", Reply: "unreadable"}}
	got, _ := e.logs.lines(t)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if n := caps.wakes.Load(); n != 0 {
		t.Errorf("Wake called %d times for an unreadable pod, want 0", n)
	}
}

// TestCallerCancelDoesNotCancelStart: the turn's context ends as soon as the
// reply is sent; the start request in the background carries on (D4).
func TestCallerCancelDoesNotCancelStart(t *testing.T) {
	e := newEnv(t, wake.Config{StartTimeout: 3 * time.Second})
	release := make(chan struct{})
	type seen struct {
		err         error
		hasDeadline bool
		deadline    time.Time
	}
	seenCh := make(chan seen, 1)
	caps := &fakeCaps{wake: func(ctx context.Context) pluginapi.StartResult {
		<-release
		dl, ok := ctx.Deadline()
		seenCh <- seen{err: ctx.Err(), hasDeadline: ok, deadline: dl}
		if ctx.Err() != nil {
			return pluginapi.StartResult{Error: "canceled"}
		}
		return pluginapi.StartResult{Requested: true, Status: 202}
	}}
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()

	d, err := e.c.NotReady(ctx, "qwen", "EXITED", machines.LookupFound, false, caps)
	if err != nil || d.Action != machines.ActionWake {
		t.Fatalf("NotReady = %q, %v; want wake, nil (returned while Wake is blocked)", d.Action, err)
	}
	cancel()
	close(release)

	s := <-seenCh
	if s.err != nil {
		t.Errorf("the start's context ended with the caller's: %v", s.err)
	}
	if !s.hasDeadline || s.deadline.Sub(start) > 8*time.Second+time.Second || s.deadline.Sub(start) < 7*time.Second {
		t.Errorf("the start's deadline is %v after NotReady (set %v), want StartTimeout + 5s = 8s", s.deadline.Sub(start), s.hasDeadline)
	}
	e.logs.wait(t, acceptedLine)
}

// TestStoreFailure: a record that cannot be stored decides nothing and wakes
// nothing — without it the one-wake-per-window guarantee is gone.
func TestStoreFailure(t *testing.T) {
	recs := newMemRecords()
	recs.putErr = func(machines.Record) error { return errors.New("disk full") }
	e := newEnv(t, wake.Config{Records: recs})
	caps := &fakeCaps{}

	_, err := e.c.NotReady(context.Background(), "qwen", "EXITED", machines.LookupFound, false, caps)

	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("NotReady error = %v, want the store's error wrapped", err)
	}
	if n := caps.wakes.Load(); n != 0 {
		t.Errorf("Wake called %d times, want 0", n)
	}
	if got, _ := e.logs.lines(t); len(got) != 0 {
		t.Errorf("logged %v, want nothing: the caller logs the returned error once", got)
	}
}

// TestClose: Close stops the watches and returns; afterwards NotReady and
// Resume refuse.
func TestClose(t *testing.T) {
	e := newEnv(t, wake.Config{})
	blocked := make(chan struct{})
	caps := &fakeCaps{readPod: func(ctx context.Context, n int) (pluginapi.Pod, error) {
		close(blocked)
		<-ctx.Done() // a pod read hanging until it is cancelled
		return pluginapi.Pod{}, ctx.Err()
	}}
	e.notReady(t, caps)
	e.step(t, time.Minute)
	<-blocked

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := e.c.Close(ctx); err != nil {
		t.Fatalf("Close = %v, want nil", err)
	}

	if _, err := e.c.NotReady(context.Background(), "qwen", "EXITED", machines.LookupFound, false, caps); !errors.Is(err, wake.ErrClosed) {
		t.Errorf("NotReady after Close = %v, want ErrClosed", err)
	}
	if err := e.c.Resume(func(string) wake.Capabilities { return caps }); !errors.Is(err, wake.ErrClosed) {
		t.Errorf("Resume after Close = %v, want ErrClosed", err)
	}
	if got := e.logs.withMsg(t, "wake watch for pod qwen: pod read failed: canceled"); len(got) != 0 {
		t.Errorf("a pod read cancelled by Close was logged as a failure: %v", got)
	}
	if n := caps.wakes.Load(); n != 1 {
		t.Errorf("Wake called %d times, want 1", n)
	}
}

// TestCloseBoundedByContext: a start that hangs past Close's context is
// abandoned — cancelled, logged, its outcome not recorded — and Close returns
// the context's error instead of hanging.
func TestCloseBoundedByContext(t *testing.T) {
	e := newEnv(t, wake.Config{})
	entered := make(chan struct{})
	caps := &fakeCaps{wake: func(ctx context.Context) pluginapi.StartResult {
		close(entered)
		<-ctx.Done()
		return pluginapi.StartResult{Error: "canceled"}
	}}
	e.notReady(t, caps)
	<-entered

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if err := e.c.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Close = %v, want context.DeadlineExceeded", err)
	}

	line := e.logs.wait(t, "wake failed for pod qwen: canceled")
	if line.Level != "ERROR" {
		t.Errorf("level %s, want ERROR", line.Level)
	}
	want := machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: t0}
	if diff := cmp.Diff(want, e.record(t)); diff != "" {
		t.Errorf("an abandoned start's outcome was recorded (-want +got):\n%s", diff)
	}
}

// TestUnchangedRecordNotWritten: an ask that changes nothing (still waking)
// writes nothing; one that changes the record writes it once.
func TestUnchangedRecordNotWritten(t *testing.T) {
	e := newEnv(t, wake.Config{})
	caps := &fakeCaps{}
	e.notReady(t, caps)
	e.logs.wait(t, acceptedLine)
	puts := e.recs.putCount()
	e.clk.Advance(3 * time.Minute)
	if d := e.notReady(t, caps); d.Reply != machines.ReplyStillWaking {
		t.Fatalf("reply %s, want still_waking", d.Reply)
	}
	if got := e.recs.putCount(); got != puts {
		t.Errorf("a still-waking ask wrote the record (%d writes, want %d)", got, puts)
	}
	if _, err := e.c.NotReady(context.Background(), "qwen", "RUNNING", machines.LookupFound, true, caps); err != nil {
		t.Fatal(err)
	}
	if got := e.recs.putCount(); got != puts+1 {
		t.Errorf("a loading ask wrote %d times, want once", got-puts)
	}
}
