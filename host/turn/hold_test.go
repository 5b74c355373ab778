package turn_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/resolve"
	"github.com/wakeonchat/wakeonchat/host/turn"
	"github.com/wakeonchat/wakeonchat/machines"
)

// held is a turn run with a hold in the background (hold_max 2m, a tick
// every 15s recorded as "tick N min"); its outcome arrives on done.
type held struct {
	done chan heldResult
}

type heldResult struct {
	out turn.Outcome[string]
	err error
}

func (f *fixture) hold(ctx context.Context) *held {
	h := &held{done: make(chan heldResult, 1)}
	hold := &turn.Hold{
		Max: 2 * time.Minute, Keepalive: 15 * time.Second, Provider: "qwen",
		Tick: func(wake time.Duration) error { f.calls.add("tick %d min", int(wake/time.Minute)); return nil },
		Start: func(s turn.Said) func() {
			f.calls.add("hold %s", s.Decision.To)
			return func() { f.calls.add("hold ended") }
		},
	}
	go func() {
		out, err := turn.Run(ctx, f.svc, turn.Ask{Pod: "qwen", Send: resolve.Retry, Hold: hold}, f.model.call)
		h.done <- heldResult{out, err}
	}()
	return h
}

// pending fails the test when the held turn has ended.
func (h *held) pending(t *testing.T) {
	t.Helper()
	synctest.Wait()
	select {
	case r := <-h.done:
		t.Fatalf("the held turn ended: %+v, %v", r.out, r.err)
	default:
	}
}

func holdFixture(t *testing.T) *fixture {
	return newFixture(t, func(f *fixture, c *turn.Config) { c.Events = f.hub })
}

// readyNow makes the pod freshly ready as this host's watch would.
func (f *fixture) readyNow() {
	f.publish(machines.Record{State: machines.Ready, ReadyAt: time.Now()}, machines.ReadySinceSeen, "RUNNING", time.Now())
}

// A held turn waits through waking and loading, ticking, and runs its
// prompt exactly once, sent Once, when the pod is freshly ready.
func TestHoldRunsOnceWhenReady(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := holdFixture(t)
		f.model.answers(asleep(), nil)
		h := f.hold(context.Background())
		time.Sleep(31 * time.Second)
		h.pending(t)
		f.publish(machines.Record{State: machines.Loading}, machines.PodUp, "RUNNING", time.Now())
		h.pending(t)
		f.readyNow()
		r := <-h.done
		if r.err != nil || !r.out.Answered || r.out.Answer != "answer" {
			t.Errorf("outcome %+v, %v; want the model's answer", r.out, r.err)
		}
		f.calls.assert(t, "model retry", "NotReady qwen EXITED FOUND loading=false", "hold waking",
			"tick 0 min", "tick 0 min", "model once", "hold ended")
	})
}

// staleEvents is the events of a replica that did not wake the pod: the
// view a subscription starts with is the pod's last change this host saw,
// stopped after an earlier wake, older than the decision another replica's
// wake makes; the other replica's notice comes later.
type staleEvents struct {
	*events.Hub
	view events.Update
}

func (s staleEvents) Subscribe(pod string) (events.Update, *events.Subscription) {
	_, sub := s.Hub.Subscribe(pod)
	return s.view, sub
}

// A hold starts from its own decision (design.md, "The turn service"): a
// view older than the decision that says the pod is stopped does not end
// it; a change newer than the decision does.
func TestHoldStartsFromItsDecision(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		earlier := time.Now()
		time.Sleep(20 * time.Minute)
		stale := events.Update{
			Record: machines.Record{Pod: "qwen", State: machines.Stopped, WakeRequestedAt: earlier, ReadyAt: earlier.Add(9 * time.Minute)},
			View:   machines.View{Status: "EXITED", Lookup: machines.LookupFound},
			At:     earlier.Add(10 * time.Minute),
		}
		f := newFixture(t, func(f *fixture, c *turn.Config) { c.Events = staleEvents{f.hub, stale} })
		// The other replica woke the pod: this one's machine reads waking.
		f.coord.decisions = []machines.Decision{still}
		f.model.answers(asleep(), nil)
		h := f.hold(context.Background())
		time.Sleep(time.Minute)
		h.pending(t)
		f.calls.assert(t, "model retry", "NotReady qwen EXITED FOUND loading=false", "hold waking", "tick 0 min", "tick 0 min", "tick 0 min", "tick 1 min")

		// The other replica's notice: ready.
		f.hub.Elsewhere(machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: time.Now(), ReadyAt: time.Now()}, time.Now())
		r := <-h.done
		if r.err != nil || !r.out.Answered {
			t.Errorf("outcome %+v, %v; want the model's answer", r.out, r.err)
		}
		f.calls.assert(t, "model once", "hold ended")
	})
}

// A decision that waiting will not make ready is said at once: no hold.
func TestHoldNotForAStateThatWillNotBecomeReady(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := holdFixture(t)
		f.coord.decisions = []machines.Decision{stuck}
		f.model.answers(asleep())
		r := <-f.hold(context.Background()).done
		if diff := cmp.Diff(turn.Outcome[string]{Said: turn.Said{Pod: "qwen", Decision: stuck}}, r.out); diff != "" || r.err != nil {
			t.Errorf("outcome (-want +got), err %v:\n%s", r.err, diff)
		}
		f.calls.assert(t, "model retry", "NotReady qwen EXITED FOUND loading=false")
		if n := f.hub.Subscribers("qwen"); n != 0 {
			t.Errorf("%d subscribers left", n)
		}
	})
}

// A hold that ends without the pod ready (a change to a state that will
// not become ready, hold_max, the host's shutdown) runs the turn again as
// without a hold: the model is tried once more, sent Retry, and the
// machine's decision is said.
func TestHoldEnds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		end  func(f *fixture)
	}{
		{"stuck", func(f *fixture) {
			time.Sleep(6 * time.Second)
			f.publish(machines.Record{State: machines.Stuck}, machines.ModelLoading, "RUNNING", time.Now())
		}},
		{"hold_max", func(*fixture) { time.Sleep(2 * time.Minute) }},
		{"shutdown", func(f *fixture) { time.Sleep(time.Minute); f.hub.Close() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			synctest.Test(t, func(t *testing.T) {
				f := holdFixture(t)
				f.coord.decisions = []machines.Decision{waking, still}
				f.model.answers(asleep())
				h := f.hold(context.Background())
				synctest.Wait()
				tt.end(f)
				r := <-h.done
				if diff := cmp.Diff(turn.Outcome[string]{Said: turn.Said{Pod: "qwen", Decision: still}}, r.out); diff != "" || r.err != nil {
					t.Errorf("outcome (-want +got), err %v:\n%s", r.err, diff)
				}
				f.calls.mu.Lock()
				got := f.calls.list
				f.calls.mu.Unlock()
				want := []string{"model retry", "NotReady qwen EXITED FOUND loading=false", "model retry", "NotReady qwen EXITED FOUND loading=false", "hold ended"}
				if diff := cmp.Diff(want, withoutTicks(got)); diff != "" {
					t.Errorf("calls but the hold's start and ticks (-want +got):\n%s", diff)
				}
			})
		})
	}
}

// withoutTicks is calls without the hold's start and ticks.
func withoutTicks(calls []string) []string {
	var out []string
	for _, c := range calls {
		var n int
		if _, err := fmt.Sscanf(c, "tick %d min", &n); err == nil || c == "hold waking" {
			continue
		}
		out = append(out, c)
	}
	return out
}

// A client that leaves ends the hold: its prompt never runs.
func TestHoldClientLeaves(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := holdFixture(t)
		f.model.answers(asleep(), nil)
		ctx, leave := context.WithCancel(context.Background())
		h := f.hold(ctx)
		time.Sleep(7 * time.Second)
		leave()
		f.readyNow()
		r := <-h.done
		if !r.out.Left || r.err != nil {
			t.Errorf("outcome %+v, %v; want left", r.out, r.err)
		}
		f.calls.assert(t, "model retry", "NotReady qwen EXITED FOUND loading=false", "hold waking", "hold ended")
	})
}

// A run that provably never reached a model keeps the turn held; 5s later
// the pod is read once and the machine's view goes: still ready runs it
// again, once more.
func TestHoldNeverSentRunsAgain(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := holdFixture(t)
		f.model.answers(asleep(), neverSent(), nil)
		h := f.hold(context.Background())
		synctest.Wait()
		f.readyNow()
		synctest.Wait()
		f.calls.assert(t, "model retry", "NotReady qwen EXITED FOUND loading=false", "hold waking", "model once")
		h.pending(t)
		r := <-h.done
		if r.err != nil || !r.out.Answered {
			t.Errorf("outcome %+v, %v; want the model's answer", r.out, r.err)
		}
		f.calls.assert(t, "Lookup", "model once", "hold ended")
	})
}

// A failure of the held run that may have reached the model is the turn's
// failure: never sent again (D10).
func TestHoldRunFails(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		f := holdFixture(t)
		aborted := &resolve.ProviderError{Provider: "qwen", Aborted: true}
		f.model.answers(asleep(), aborted)
		h := f.hold(context.Background())
		synctest.Wait()
		f.readyNow()
		r := <-h.done
		if !errors.Is(r.err, aborted) {
			t.Errorf("err %v, want the aborted run's", r.err)
		}
		f.calls.assert(t, "model retry", "NotReady qwen EXITED FOUND loading=false", "hold waking", "model once", "hold ended")
	})
}
