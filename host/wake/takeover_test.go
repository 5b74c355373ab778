package wake_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/wake"
	"github.com/wakeonchat/wakeonchat/machines"
	"github.com/wakeonchat/wakeonchat/plugins/pluginapi"
)

// sharedLeases are the leases of a store several hosts share, in memory:
// one holder per name. A host "dies" by lapse: its holds are no longer its
// own, and another may take them.
type sharedLeases struct {
	mu       sync.Mutex
	holder   map[string]string // name -> host
	lapsed   map[string]bool   // hosts whose holds lapsed
	attempts map[string]int    // host -> TakeLease calls
	changed  chan struct{}     // closed and replaced on every TakeLease and ReleaseLease
}

func newSharedLeases() *sharedLeases {
	return &sharedLeases{holder: map[string]string{}, lapsed: map[string]bool{}, attempts: map[string]int{}, changed: make(chan struct{})}
}

// hostLeases is one host's view of sharedLeases.
type hostLeases struct {
	*sharedLeases
	host string
}

var _ store.Leases = hostLeases{}

func (l *sharedLeases) view(host string) hostLeases { return hostLeases{l, host} }

func (h hostLeases) TakeLease(_ context.Context, name string) (bool, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.attempts[h.host]++
	close(h.changed)
	h.changed = make(chan struct{})
	if holder, held := h.holder[name]; held && !h.lapsed[holder] {
		return false, nil
	}
	h.holder[name] = h.host
	return true, nil
}

func (h hostLeases) LeaseHeld(name string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.holder[name] == h.host && !h.lapsed[h.host]
}

func (h hostLeases) ReleaseLease(_ context.Context, name string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	close(h.changed)
	h.changed = make(chan struct{})
	if h.holder[name] == h.host {
		delete(h.holder, name)
	}
	return nil
}

// lapse makes host's holds lapse, as when it died.
func (l *sharedLeases) lapse(host string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lapsed[host] = true
}

// waitAttempts waits until host has called TakeLease n times in all.
func (l *sharedLeases) waitAttempts(t *testing.T, host string, n int) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		l.mu.Lock()
		got, changed := l.attempts[host], l.changed
		l.mu.Unlock()
		if got >= n {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("host %s tried %d leases in %v, want %d", host, got, waitLimit, n)
		}
	}
}

// waitReleased waits until nobody holds name.
func (l *sharedLeases) waitReleased(t *testing.T, name string) {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		l.mu.Lock()
		holder, changed := l.holder[name], l.changed
		l.mu.Unlock()
		if holder == "" {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("the lease %s is still held by %q %v after its watch ended; want it released", name, holder, waitLimit)
		}
	}
}

func (l *sharedLeases) heldBy(name string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.holder[name]
}

// TestWatchAcrossHosts: two hosts share the records and the leases. The
// host that decided a wake watches it; the other, looking for wakes nobody
// watches, finds it held and reads nothing. When the watching host dies
// (its lease lapses), the other takes the watch over, reads the pod at once
// and records the wake's outcome; the dead host's watch stops at its next
// look.
func TestWatchAcrossHosts(t *testing.T) {
	recs, leases := newMemRecords(), newSharedLeases()
	a := newEnv(t, wake.Config{Records: recs, Leases: leases.view("A"), Takeover: 5 * time.Millisecond})
	// What B reads of the pod, once it watches: up, and ready since the
	// wake.
	gpuB := &fakeGPU{getPod: func(context.Context, string, int) (pluginapi.Pod, error) { return upPod(t0.Add(5 * time.Second)), nil }}
	b := newEnv(t, wake.Config{Records: recs, Leases: leases.view("B"), Takeover: 5 * time.Millisecond, Clock: a.clk, GPU: gpuB})
	t.Cleanup(func() { a.c.Close(context.Background()) }) // before b's leak check
	configured := func(string) bool { return true }
	for _, e := range []*env{a, b} {
		if err := e.c.Resume(configured); err != nil {
			t.Fatal(err)
		}
	}

	if d := a.notReady(t); d.Action != machines.ActionWake {
		t.Fatalf("A's first ask: %+v, want a wake", d)
	}
	a.accepted(t, 1)
	a.waitWaiters(t, 1) // A's watch waits for its first poll
	wakeAt := a.record(t).WakeRequestedAt
	lease := "watch/qwen/" + wakeAt.UTC().Format(time.RFC3339Nano)
	if got := leases.heldBy(lease); got != "A" {
		t.Fatalf("the wake's lease is held by %q, want A", got)
	}

	// Past the start's grace, B looks at the wake several times and finds
	// it watched.
	a.clk.Advance(10 * time.Second)
	a.waitWaiters(t, 1) // A's watch has read the pod and waits for its next poll
	leases.waitAttempts(t, "B", 3)
	if n := b.gpu.reads(); n != 0 {
		t.Errorf("B read the pod %d times while A watched the wake; want 0", n)
	}
	if got := leases.heldBy(lease); got != "A" {
		t.Errorf("the lease is held by %q, want still A", got)
	}

	// A dies. B takes the watch over, reads the pod at once and records
	// the outcome.
	leases.lapse("A")
	// The lease, A's (lapsed) until B takes it, is free once B's watch
	// has returned; A's watch waits on the clock.
	leases.waitReleased(t, lease)
	for _, msg := range []string{
		"wake watch resumed for pod qwen: wake requested at 12:00 UTC",
		"wake ready for pod qwen: ready since 12:00 UTC",
	} {
		if l := b.logs.find(t, msg); l.Level != "INFO" {
			t.Errorf("B's line %q at %s, want INFO", msg, l.Level)
		}
	}
	if r := b.record(t); r.State != machines.Ready || !r.WakeRequestedAt.Equal(wakeAt) {
		t.Errorf("the record after B's read = %+v, want ready on the wake", r)
	}
	// A's watch, at its next look, finds its lease gone and stops without
	// reading.
	readsA := a.gpu.reads()
	a.clk.Advance(time.Minute)
	a.waitWatched(t, wakeAt, 1)
	lapsed := "wake watch for pod qwen stopped: its lease lapsed (the store did not renew it); another host takes it over"
	if l := a.logs.find(t, lapsed); l.Level != "WARN" {
		t.Errorf("A's lapsed line at %s, want WARN", l.Level)
	}
	if n := a.gpu.reads(); n != readsA {
		t.Errorf("A read the pod %d more times after its lease lapsed", n-readsA)
	}
}
