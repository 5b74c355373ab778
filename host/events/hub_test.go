package events_test

import (
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/engine"
	"github.com/wakeonchat/wakeonchat/host/events"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
)

var t0 = time.Date(2026, 9, 9, 12, 26, 25, 0, time.UTC)

// change is the n-th change of pod qwen: a waking record whose
// ModelLoadingSince counts n, so that each is told apart.
func change(n int) wake.Change {
	return wake.Change{
		After: machines.Record{Pod: "qwen", State: machines.Waking, WakeRequestedAt: t0, ModelLoadingSince: t0.Add(time.Duration(n) * time.Second)},
		Event: machines.Event{Trigger: machines.PodDown, At: t0.Add(time.Duration(n) * time.Second), Status: "EXITED", Lookup: machines.LookupFound},
	}
}

// seq is what an update says of its change's number.
func seq(u events.Update) int { return int(u.Record.ModelLoadingSince.Sub(t0) / time.Second) }

// collect reads s until it ends and returns the numbers it got and why it
// ended; between reads it sleeps pause.
func collect(s *events.Subscription, pause time.Duration) (got []int, err error) {
	for u := range s.C() {
		got = append(got, seq(u))
		time.Sleep(pause)
	}
	return got, s.Err()
}

// A slow subscriber never blocks Publish or the other subscribers: once its
// buffer is full as a change comes it is closed, after the updates it holds,
// with ErrLagged; a reader that keeps up gets every change, in order.
func TestSlowSubscriberIsClosedNotWaitedFor(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		h := events.New(3)
		_, fast := h.Subscribe("qwen")
		_, slow := h.Subscribe("qwen")
		_, stalled := h.Subscribe("qwen")
		type result struct {
			got []int
			err error
		}
		fastDone, slowDone := make(chan result, 1), make(chan result, 1)
		go func() { got, err := collect(fast, 0); fastDone <- result{got, err} }()
		// The slow one reads every 2.7 s while a change comes every second:
		// it holds 3 unread (u2, u3, u4) when u5 comes at 5 s.
		go func() { got, err := collect(slow, 2700*time.Millisecond); slowDone <- result{got, err} }()
		synctest.Wait()

		for n := range 10 {
			began := time.Now()
			h.Publish(change(n))
			if took := time.Since(began); took != 0 {
				t.Errorf("Publish %d took %v, want no wait at all", n, took)
			}
			time.Sleep(time.Second)
		}
		// The stalled one read nothing: it got u0..u2 and lagged at u3.
		stalledGot, stalledErr := collect(stalled, 0)
		if diff := cmp.Diff([]int{0, 1, 2}, stalledGot); diff != "" || !errors.Is(stalledErr, events.ErrLagged) {
			t.Errorf("stalled subscriber: got %v, ended with %v; want u0..u2, then ErrLagged (-want +got):\n%s", stalledGot, stalledErr, diff)
		}
		if got := <-slowDone; !cmp.Equal([]int{0, 1, 2, 3, 4}, got.got) || !errors.Is(got.err, events.ErrLagged) {
			t.Errorf("slow subscriber: got %v, ended with %v; want u0..u4, then ErrLagged", got.got, got.err)
		}
		if n := h.Subscribers("qwen"); n != 1 {
			t.Errorf("%d live subscribers, want 1 (the one that kept up)", n)
		}
		h.Close()
		got := <-fastDone
		if diff := cmp.Diff([]int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, got.got); diff != "" || !errors.Is(got.err, events.ErrClosed) {
			t.Errorf("fast subscriber: ended with %v (-want +got):\n%s", got.err, diff)
		}
		// A subscriber that lagged subscribes again and starts from now.
		if cur := h.Current("qwen"); seq(cur) != 9 {
			t.Errorf("current update is change %d, want 9", seq(cur))
		}
	})
}

// Close ends every subscription with ErrClosed, a later one at once; a
// later change is dropped.
func TestCloseEndsEverySubscription(t *testing.T) {
	h := events.New(0)
	_, a := h.Subscribe("qwen")
	_, b := h.Subscribe("other")
	h.Close()
	for _, s := range []*events.Subscription{a, b} {
		if _, open := <-s.C(); open || !errors.Is(s.Err(), events.ErrClosed) {
			t.Errorf("after Close: channel open %v, Err %v; want closed, ErrClosed", open, s.Err())
		}
	}
	h.Publish(change(1))
	cur, late := h.Subscribe("qwen")
	if _, open := <-late.C(); open || !errors.Is(late.Err(), events.ErrClosed) {
		t.Errorf("a subscription after Close: open %v, Err %v; want closed, ErrClosed", open, late.Err())
	}
	if cur.Record.State != machines.Asleep {
		t.Errorf("a change after Close was kept: %+v", cur)
	}
	h.Close() // twice is harmless
}

// A subscriber's own Close removes it: its channel closes, Err is nil.
func TestSubscriptionClose(t *testing.T) {
	h := events.New(0)
	_, s := h.Subscribe("qwen")
	if n := h.Subscribers("qwen"); n != 1 {
		t.Fatalf("%d subscribers, want 1", n)
	}
	s.Close()
	s.Close()
	if _, open := <-s.C(); open || s.Err() != nil || h.Subscribers("qwen") != 0 {
		t.Errorf("after Close: open %v, Err %v, %d subscribers; want closed, nil, 0", open, s.Err(), h.Subscribers("qwen"))
	}
	h.Publish(change(1)) // nobody to hand it to; must not panic
}

// AllSubscribers counts the live subscriptions of every pod: up with each
// Subscribe, down with each end, whether the subscriber closed it, it
// lagged or the hub closed.
func TestAllSubscribers(t *testing.T) {
	h := events.New(1)
	count := func(when string, want int) {
		t.Helper()
		if n := h.AllSubscribers(); n != want {
			t.Errorf("%s: %d live subscriptions, want %d", when, n, want)
		}
	}
	count("a new hub", 0)
	_, a := h.Subscribe("qwen")
	_, b := h.Subscribe("qwen")
	_, c := h.Subscribe("other")
	count("two on qwen, one on other", 3)
	a.Close()
	a.Close()
	count("one closed, twice", 2)
	// b reads nothing: one change fills its buffer, the next ends it.
	h.Publish(change(1))
	h.Publish(change(2))
	if _, open := <-b.C(); !open {
		t.Fatal("the lagged subscription lost the update it held")
	}
	if _, open := <-b.C(); open || !errors.Is(b.Err(), events.ErrLagged) {
		t.Fatalf("the subscription that read nothing: open %v, Err %v; want it ended, ErrLagged", open, b.Err())
	}
	count("one lagged", 1)
	b.Close()
	count("a lagged one closed by its reader", 1)
	h.Close()
	count("the hub closed", 0)
	_, late := h.Subscribe("qwen")
	count("a subscription after Close", 0)
	late.Close()
	c.Close()
	count("all closed", 0)
}

// The current update: a new record for a pod the hub knows nothing of, the
// seeded record (never freshly ready: nothing was seen since start), then
// the last change, which Seed does not move back.
func TestCurrent(t *testing.T) {
	ready := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: t0, ReadyAt: t0.Add(9 * time.Minute)}
	h := events.New(0)
	if got := h.Current("qwen"); got.Record != machines.NewRecord("qwen") || got.View.Status != "" || !got.At.IsZero() {
		t.Errorf("unknown pod: %+v, want a new record, no status", got)
	}
	h.Seed([]machines.Record{ready})
	cur, s := h.Subscribe("qwen")
	defer s.Close()
	if state, fresh := cur.Report(); state != machines.Ready || fresh {
		t.Errorf("seeded ready record: %s, ready %v; want ready, not freshly ready", state, fresh)
	}
	stopped := ready
	stopped.State = machines.Stopped
	h.Publish(wake.Change{Before: ready, After: stopped, Event: machines.Event{Trigger: machines.PodDown, At: t0.Add(30 * time.Minute), Status: "EXITED", Lookup: machines.LookupFound}})
	h.Seed([]machines.Record{ready})
	if got := h.Current("qwen"); got.Record != stopped || got.View.Status != "EXITED" || !got.At.Equal(t0.Add(30*time.Minute)) {
		t.Errorf("after a change and a second Seed: %+v, want the stopped record seen EXITED", got)
	}
	if got := <-s.C(); got.Record != stopped {
		t.Errorf("the subscriber got %+v, want the stopped record", got)
	}
}

// What a change says of the conductor: its status (else the last one seen)
// and its lookup (FOUND when it carries none: the machine took it as
// evidence), and so whether a ready record is freshly ready.
func TestViewAfterAChange(t *testing.T) {
	type report struct {
		Status string
		State  engine.State
		Ready  bool
	}
	rec := func(s engine.State) machines.Record {
		return machines.Record{Pod: "qwen", State: s, WakeRequestedAt: t0}
	}
	tests := []struct {
		name   string
		events []wake.Change
		want   report
	}{
		{"nothing seen since start", nil, report{"", machines.Asleep, false}},
		{"the watch reads readySince", []wake.Change{
			{After: rec(machines.Ready), Event: machines.Event{Trigger: machines.ReadySinceSeen, Status: "RUNNING", Lookup: machines.LookupFound, ReadySince: t0}},
		}, report{"RUNNING", machines.Ready, true}},
		{"a turn's answer keeps the last status", []wake.Change{
			{After: rec(machines.Loading), Event: machines.Event{Trigger: machines.PodUp, Status: "RUNNING", Lookup: machines.LookupFound}},
			{After: rec(machines.Ready), Event: machines.Event{Trigger: machines.Answered}},
		}, report{"RUNNING", machines.Ready, true}},
		{"an unreadable turn is not fresh", []wake.Change{
			{After: rec(machines.Loading), Event: machines.Event{Trigger: machines.PodUp, Status: "RUNNING", Lookup: machines.LookupFound}},
			{After: rec(machines.Loading), Event: machines.Event{Trigger: machines.Unreadable, Status: "UNKNOWN", Lookup: machines.LookupUnreadable}},
		}, report{"UNKNOWN", machines.Loading, false}},
		{"a wake's outcome", []wake.Change{
			{After: rec(machines.Waking), Event: machines.Event{Trigger: machines.NotReady, Status: "EXITED", Lookup: machines.LookupFound}},
			{After: rec(machines.NeverReady), Event: machines.Event{Trigger: machines.NeverReadySeen}},
		}, report{"EXITED", machines.NeverReady, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := events.New(0)
			for _, c := range tt.events {
				h.Publish(c)
			}
			u := h.Current("qwen")
			state, ready := u.Report()
			if diff := cmp.Diff(tt.want, report{u.View.Status, state, ready}); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// A record another host stored reaches the subscribers as news, once: with
// the last status this host saw and fresh (that host had the word for it);
// the record the hub has already is no news, and after Close nothing is.
func TestElsewhere(t *testing.T) {
	h := events.New(0)
	_, s := h.Subscribe("qwen")
	h.Publish(change(1)) // this host saw the pod EXITED
	if u := <-s.C(); seq(u) != 1 {
		t.Fatalf("the published change: %+v", u)
	}
	ready := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: t0, ReadyAt: t0.Add(4 * time.Minute)}
	at := t0.Add(4*time.Minute + time.Second)
	if !h.Elsewhere(ready, at) {
		t.Fatal("Elsewhere of a new record: not news")
	}
	want := events.Update{Record: ready, View: machines.View{Status: "EXITED", Lookup: machines.LookupFound}, At: at}
	if diff := cmp.Diff(want, <-s.C()); diff != "" {
		t.Errorf("the other host's record (-want +got):\n%s", diff)
	}
	if state, fresh := h.Current("qwen").Report(); state != machines.Ready || !fresh {
		t.Errorf("Current after it reports %s, fresh %v; want ready, fresh", state, fresh)
	}
	if h.Elsewhere(ready, at.Add(time.Second)) {
		t.Error("Elsewhere of the record the hub has: news")
	}
	// A pod the hub knew nothing of.
	if !h.Elsewhere(machines.Record{Pod: "llama", State: machines.Waking, WakeRequestedAt: t0}, at) {
		t.Error("Elsewhere of an unknown pod's first record: not news")
	}
	h.Close()
	if h.Elsewhere(machines.Record{Pod: "qwen", State: machines.Stopped}, at) {
		t.Error("Elsewhere after Close: news")
	}
	select {
	case u, ok := <-s.C():
		if ok {
			t.Errorf("an update after the hub closed: %+v", u)
		}
	default:
		t.Error("the subscription did not end at Close")
	}
}
