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

	d := e.notReady(t)

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
	e.accepted(t, 1)
	if n := e.gpu.starts(); n != 1 {
		t.Errorf("StartPod called %d times, want 1", n)
	}
	wantRec := machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: t0}
	if diff := cmp.Diff(wantRec, e.record(t)); diff != "" {
		t.Errorf("record (-want +got):\n%s", diff)
	}
	wantLines := []logLine{
		{Level: "INFO", Msg: "provider not ready for pod qwen (status EXITED) → wake", Pod: "qwen", State: "waking", Reply: "waking"},
		{Level: "INFO", Msg: acceptedLine, Pod: "qwen"},
	}
	got := e.logs.lines(t)
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
	const n = 500
	replies := make(chan machines.ReplyKey, n)
	gate := make(chan struct{})
	var wg sync.WaitGroup
	for range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-gate
			d, err := e.c.NotReady(context.Background(), "qwen", "EXITED", machines.LookupFound, false)
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
	e.accepted(t, 1)
	if n := e.gpu.starts(); n != 1 {
		t.Errorf("StartPod called %d times, want exactly 1", n)
	}
}

// TestWakeWindow: a second not-ready within the 15-minute window waits (the
// edge is inclusive); one beyond it wakes again (#712).
func TestWakeWindow(t *testing.T) {
	tests := []struct {
		name      string
		gap       time.Duration
		want      machines.Decision
		wantWakes int
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
			e.notReady(t)
			e.accepted(t, 1)
			e.clk.Advance(tt.gap)

			d := e.notReady(t)

			if diff := cmp.Diff(tt.want, d, cmpDecision); diff != "" {
				t.Errorf("second decision (-want +got):\n%s", diff)
			}
			e.accepted(t, tt.wantWakes)
			if n := e.gpu.starts(); n != tt.wantWakes {
				t.Errorf("StartPod called %d times, want %d", n, tt.wantWakes)
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
	loading := func(e *env) machines.Decision {
		t.Helper()
		d, err := e.c.NotReady(context.Background(), "qwen", "RUNNING", machines.LookupFound, true)
		if err != nil {
			t.Fatalf("NotReady(modelLoading): %v", err)
		}
		return d
	}
	const loadingLine = "provider not ready for pod qwen (status RUNNING, model loading) → wait"

	t.Run("without a wake", func(t *testing.T) {
		e := newEnv(t, wake.Config{})
		d := loading(e)
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
		if n := e.gpu.starts(); n != 0 {
			t.Errorf("StartPod called %d times, want 0: a loading pod is up", n)
		}
	})

	t.Run("stuck at 25 min", func(t *testing.T) {
		e := newEnv(t, wake.Config{})
		// The watch's reads agree with the turns: up, not ready.
		e.gpu.getPod = func(context.Context, string, int) (pluginapi.Pod, error) { return upPod(time.Time{}), nil }
		e.notReady(t)
		e.accepted(t, 1)
		e.clk.Advance(6 * time.Minute)
		if d := loading(e); d.Reply != machines.ReplyLoadingWaking || d.Stuck {
			t.Fatalf("at 6 min: reply %q stuck %v, want %q and not stuck", d.Reply, d.Stuck, machines.ReplyLoadingWaking)
		}
		e.clk.Advance(19 * time.Minute)

		d := loading(e)

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
		if n := e.gpu.starts(); n != 1 {
			t.Errorf("StartPod called %d times, want only the first wake's 1", n)
		}
	})
}

// TestCrashed: a pod that answered a turn and then, still RUNNING, stops
// answering has crashed: the turn gets the crashed reply, logged at error
// level with CRASHED, and nothing is woken — the pod is up. Once the
// conductor says it is down, the next turn wakes it.
func TestCrashed(t *testing.T) {
	e := newEnv(t, wake.Config{})
	e.gpu.getPod = func(context.Context, string, int) (pluginapi.Pod, error) { return upPod(time.Time{}), nil }
	e.notReady(t)
	e.accepted(t, 1)
	e.clk.Advance(9 * time.Minute)
	e.c.Answered(context.Background(), "qwen", time.Time{})
	if got := e.record(t).State; got != machines.Ready {
		t.Fatalf("after an answered turn: state %s, want ready", got)
	}
	e.clk.Advance(time.Minute)

	const crashedLine = "provider not ready for pod qwen (status RUNNING, model loading) → wait — CRASHED: was answering, stopped while RUNNING"
	for i := range 2 { // the second turn finds it crashed already
		d, err := e.c.NotReady(context.Background(), "qwen", "RUNNING", machines.LookupFound, true)
		if err != nil {
			t.Fatalf("NotReady(modelLoading): %v", err)
		}
		from := machines.Ready
		if i > 0 {
			from = machines.Crashed
		}
		want := machines.Decision{Action: machines.ActionWait, Reply: machines.ReplyCrashed, Crashed: true,
			Text: "The model server answered at 12:09 UTC but has stopped answering — it may have crashed. Someone needs to look at the pod.",
			From: from, To: machines.Crashed}
		if diff := cmp.Diff(want, d, cmpDecision); diff != "" {
			t.Errorf("turn %d: decision (-want +got):\n%s", i+1, diff)
		}
	}
	wantLine := logLine{Level: "ERROR", Msg: crashedLine, Pod: "qwen", State: "crashed", Reply: "crashed"}
	if diff := cmp.Diff([]logLine{wantLine, wantLine}, e.logs.withMsg(t, crashedLine)); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if n := e.gpu.starts(); n != 1 {
		t.Errorf("StartPod called %d times, want only the first wake's 1: a crashed pod is up", n)
	}

	e.c.Observe(context.Background(), "qwen", exited())
	if d := e.notReady(t); d.Action != machines.ActionWake || d.Reply != machines.ReplyWaking {
		t.Errorf("once the pod is down: %q %q, want wake %q", d.Action, d.Reply, machines.ReplyWaking)
	}
	e.accepted(t, 2)
}

// TestDecisionLine: the decision line names the conductor's words; an
// unknown status says so, and an unreadable pod is never woken.
func TestDecisionLine(t *testing.T) {
	e := newEnv(t, wake.Config{})
	d, err := e.c.NotReady(context.Background(), "qwen", "", machines.LookupUnreadable, false)
	if err != nil {
		t.Fatal(err)
	}
	if d.Action != machines.ActionWait || d.Reply != machines.ReplyUnreadable {
		t.Errorf("unreadable: action %q reply %q, want wait and %q", d.Action, d.Reply, machines.ReplyUnreadable)
	}
	want := []logLine{{Level: "INFO", Msg: "provider not ready for pod qwen (status unknown) → wait", Pod: "qwen", State: "asleep", Reply: "unreadable"}}
	got := e.logs.lines(t)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log (-want +got):\n%s", diff)
	}
	if n := e.gpu.starts(); n != 0 {
		t.Errorf("StartPod called %d times for an unreadable pod, want 0", n)
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
	e.gpu.startPod = func(ctx context.Context, _ string) (pluginapi.StartResult, error) {
		<-release
		dl, ok := ctx.Deadline()
		seenCh <- seen{err: ctx.Err(), hasDeadline: ok, deadline: dl}
		if ctx.Err() != nil {
			return pluginapi.StartResult{}, ctx.Err()
		}
		return pluginapi.StartResult{Requested: true, Status: 202}, nil
	}
	ctx, cancel := context.WithCancel(context.Background())
	start := time.Now()

	d, err := e.c.NotReady(ctx, "qwen", "EXITED", machines.LookupFound, false)
	if err != nil || d.Action != machines.ActionWake {
		t.Fatalf("NotReady = %q, %v; want wake, nil (returned while StartPod is blocked)", d.Action, err)
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
	e.accepted(t, 1)
}

// TestStoreFailure: a record that cannot be stored decides nothing and wakes
// nothing — without it the one-wake-per-window guarantee is gone.
func TestStoreFailure(t *testing.T) {
	recs := newMemRecords()
	recs.putErr = func(machines.Record) error { return errors.New("disk full") }
	e := newEnv(t, wake.Config{Records: recs})

	_, err := e.c.NotReady(context.Background(), "qwen", "EXITED", machines.LookupFound, false)

	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Fatalf("NotReady error = %v, want the store's error wrapped", err)
	}
	if n := e.gpu.starts(); n != 0 {
		t.Errorf("StartPod called %d times, want 0", n)
	}
	if got := e.logs.lines(t); len(got) != 0 {
		t.Errorf("logged %v, want nothing: the caller logs the returned error once", got)
	}
}

// TestClose: Close stops the watches and returns; afterwards NotReady and
// Resume refuse, and Observe and Answered do nothing.
func TestClose(t *testing.T) {
	e := newEnv(t, wake.Config{})
	blocked := make(chan struct{})
	e.gpu.getPod = func(ctx context.Context, _ string, _ int) (pluginapi.Pod, error) {
		close(blocked)
		<-ctx.Done() // a pod read hanging until it is cancelled
		return pluginapi.Pod{}, ctx.Err()
	}
	e.notReady(t)
	e.step(t, time.Minute)
	<-blocked

	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if err := e.c.Close(ctx); err != nil {
		t.Fatalf("Close = %v, want nil", err)
	}

	if _, err := e.c.NotReady(context.Background(), "qwen", "EXITED", machines.LookupFound, false); !errors.Is(err, wake.ErrClosed) {
		t.Errorf("NotReady after Close = %v, want ErrClosed", err)
	}
	if err := e.c.Resume(func(string) bool { return true }); !errors.Is(err, wake.ErrClosed) {
		t.Errorf("Resume after Close = %v, want ErrClosed", err)
	}
	puts := e.recs.putCount()
	e.c.Observe(context.Background(), "qwen", upPod(t0.Add(30*time.Second)))
	e.c.Answered(context.Background(), "qwen", t0.Add(30*time.Second))
	if got := e.recs.putCount(); got != puts {
		t.Errorf("Observe and Answered after Close wrote %d records, want none", got-puts)
	}
	if got := e.logs.withMsg(t, "wake watch for pod qwen: pod read failed: canceled"); len(got) != 0 {
		t.Errorf("a pod read cancelled by Close was logged as a failure: %v", got)
	}
	if n := e.gpu.starts(); n != 1 {
		t.Errorf("StartPod called %d times, want 1", n)
	}
}

// TestCloseBoundedByContext: a start that hangs past Close's context is
// abandoned — cancelled, logged, its outcome not recorded and not watched —
// and Close returns the context's error instead of hanging. Its line says
// so: a lost answer gets the abandoned line, never the lost-answer line's
// "watching the pod"; an answer that came as Close gave up keeps its own
// line, marked abandoned.
func TestCloseBoundedByContext(t *testing.T) {
	tests := []struct {
		name   string
		answer func(ctx context.Context) (pluginapi.StartResult, error) // after the call's ctx ended
		want   logLine
	}{
		{
			name:   "the call is cancelled: its answer is lost",
			answer: func(ctx context.Context) (pluginapi.StartResult, error) { return pluginapi.StartResult{}, ctx.Err() }, // what the plugin adapter returns
			want: logLine{Level: "WARN", Pod: "qwen", Abandoned: true,
				Msg: "wake start abandoned for pod qwen at shutdown: its answer was lost (the host stopped waiting (Canceled)); not recorded and not watched, the wake stays on record for the next host start"},
		},
		{
			name: "the conductor's answer comes as Close gives up",
			answer: func(context.Context) (pluginapi.StartResult, error) {
				return pluginapi.StartResult{Requested: true, Status: 202}, nil
			},
			want: logLine{Level: "INFO", Pod: "qwen", Abandoned: true, Msg: "wake requested for pod qwen: accepted status=202"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t, wake.Config{})
			entered := make(chan struct{})
			e.gpu.startPod = func(ctx context.Context, _ string) (pluginapi.StartResult, error) {
				close(entered)
				<-ctx.Done()
				return tt.answer(ctx)
			}
			e.notReady(t)
			<-entered

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
			defer cancel()
			if err := e.c.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
				t.Fatalf("Close = %v, want context.DeadlineExceeded", err)
			}

			e.waitStarts(t, 1)
			if diff := cmp.Diff(tt.want, e.logs.find(t, tt.want.Msg)); diff != "" {
				t.Errorf("start line (-want +got):\n%s", diff)
			}
			if strings.Contains(e.logs.String(), "watching the pod") {
				t.Errorf("an abandoned start claims a watch; the log:\n%s", e.logs.String())
			}
			want := machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: t0}
			if diff := cmp.Diff(want, e.record(t)); diff != "" {
				t.Errorf("an abandoned start's outcome was recorded (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnchangedRecordNotWritten: an ask that changes nothing (still waking)
// writes nothing; one that changes the record writes it once.
func TestUnchangedRecordNotWritten(t *testing.T) {
	e := newEnv(t, wake.Config{WatchPoll: time.Hour}) // no watch read in between
	e.notReady(t)
	e.accepted(t, 1)
	puts := e.recs.putCount()
	e.clk.Advance(3 * time.Minute)
	if d := e.notReady(t); d.Reply != machines.ReplyStillWaking {
		t.Fatalf("reply %s, want still_waking", d.Reply)
	}
	if got := e.recs.putCount(); got != puts {
		t.Errorf("a still-waking ask wrote the record (%d writes, want %d)", got, puts)
	}
	if _, err := e.c.NotReady(context.Background(), "qwen", "RUNNING", machines.LookupFound, true); err != nil {
		t.Fatal(err)
	}
	if got := e.recs.putCount(); got != puts+1 {
		t.Errorf("a loading ask wrote %d times, want once", got-puts)
	}
}

// TestUnchangedTakesNoLock: an ask that changes nothing is decided on a
// plain read, without the pod's lock: it does not queue behind a change in
// flight (on a shared store, a round trip and a row lock), and answers on
// the record as it was read.
func TestUnchangedTakesNoLock(t *testing.T) {
	e := newEnv(t, wake.Config{WatchPoll: time.Hour})
	e.notReady(t)
	e.accepted(t, 1)
	e.clk.Advance(3 * time.Minute)

	// A change in flight: the pod seen up (loading), held in the store.
	entered, release := make(chan struct{}), make(chan struct{})
	e.recs.updating = func() {
		close(entered)
		<-release
	}
	changed := make(chan struct{})
	go func() {
		defer close(changed)
		e.c.Observe(context.Background(), "qwen", upPod(time.Time{}))
	}()
	<-entered
	asked := make(chan machines.Decision, 1)
	go func() {
		d, err := e.c.NotReady(context.Background(), "qwen", "EXITED", machines.LookupFound, false)
		if err != nil {
			t.Error(err)
		}
		asked <- d
	}()
	select {
	case d := <-asked:
		if d.Reply != machines.ReplyStillWaking {
			t.Errorf("the ask during the change: reply %s, want still_waking (the record as read)", d.Reply)
		}
	case <-time.After(waitLimit):
		t.Error("an ask that changes nothing waited for a change in flight")
	}
	close(release)
	<-changed
	if r := e.record(t); r.State != machines.Loading {
		t.Errorf("after the change: state %s, want loading", r.State)
	}
}

// TestNewRequiresDependencies: a Config without the machine, the store or the
// GPU plugin is a wiring mistake New refuses at once.
func TestNewRequiresDependencies(t *testing.T) {
	pod, err := machines.NewPod(machines.DefaultPolicy())
	if err != nil {
		t.Fatal(err)
	}
	full := wake.Config{Pod: pod, Records: newMemRecords(), GPU: &fakeGPU{}, WatchPoll: time.Minute, StartTimeout: 3 * time.Second}
	tests := []struct {
		name string
		cfg  func(c wake.Config) wake.Config
		want string
	}{
		{"no machine", func(c wake.Config) wake.Config { c.Pod = nil; return c }, "wake: Config.Pod is nil"},
		{"no store", func(c wake.Config) wake.Config { c.Records = nil; return c }, "wake: Config.Records is nil"},
		{"no GPU plugin", func(c wake.Config) wake.Config { c.GPU = nil; return c }, "wake: Config.GPU is nil"},
		{"no watch poll", func(c wake.Config) wake.Config { c.WatchPoll = 0; return c }, "wake: Config.WatchPoll is not positive"},
		{"no start timeout", func(c wake.Config) wake.Config { c.StartTimeout = 0; return c }, "wake: Config.StartTimeout is not positive"},
		{"a prober without an interval", func(c wake.Config) wake.Config { c.Probe = &fakeProber{}; return c }, "wake: Config.ProbeInterval is not positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			defer func() {
				if got := recover(); got != tt.want {
					t.Errorf("New panicked with %v, want %q", got, tt.want)
				}
			}()
			wake.New(tt.cfg(full))
		})
	}
}

// TestChangedSeesEveryStoredChange: Changed is called once per stored
// record, in order, with the record before and the event; an ask that
// changes nothing ("still waking") calls it not at all.
func TestChangedSeesEveryStoredChange(t *testing.T) {
	var mu sync.Mutex
	var got []string
	e := newEnv(t, wake.Config{Changed: func(c wake.Change) {
		mu.Lock()
		defer mu.Unlock()
		got = append(got, string(c.Before.State)+" → "+string(c.After.State)+" on "+string(c.Event.Trigger))
	}})
	e.notReady(t) // asleep → waking
	e.accepted(t, 1)
	e.notReady(t) // still waking: nothing stored
	e.c.Observe(context.Background(), "qwen", pluginapi.Pod{Status: "RUNNING", IsRunning: true, ReadySince: e.clk.Now()})
	mu.Lock()
	defer mu.Unlock()
	want := []string{"asleep → waking on notReady", "waking → ready on readySince"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes (-want +got):\n%s", diff)
	}
}
