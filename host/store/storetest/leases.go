package storetest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// Lease is the lease a suite's stores should be opened with (Options.Lease
// for PostgreSQL): short, so that the cases about expiry are quick, and
// long enough that a loaded machine (the race detector, packages in
// parallel on two cores) renews in time.
const Lease = 1500 * time.Millisecond

func testLeases(t *testing.T, s Suite) {
	st, _ := open(t, s, 0)
	take := func(name string, want bool) {
		t.Helper()
		ok, err := st.Leases.TakeLease(t.Context(), name)
		if err != nil || ok != want {
			t.Errorf("TakeLease(%q) = %v, %v; want %v", name, ok, err, want)
		}
	}
	take("watch/qwen/1", true)
	take("watch/qwen/1", false) // held, by this store too
	take("watch/qwen/2", true)  // another name
	if !st.Leases.LeaseHeld("watch/qwen/1") || st.Leases.LeaseHeld("watch/llama/1") {
		t.Errorf("LeaseHeld: %v for a lease taken, %v for one never taken; want true, false",
			st.Leases.LeaseHeld("watch/qwen/1"), st.Leases.LeaseHeld("watch/llama/1"))
	}
	// Held for longer than a lease: the store renews it.
	time.Sleep(2 * Lease)
	if !st.Leases.LeaseHeld("watch/qwen/1") {
		t.Error("a lease is not held two leases after it was taken: the store does not renew it")
	}
	take("watch/qwen/1", false)
	must(t, st.Leases.ReleaseLease(t.Context(), "watch/qwen/1"))
	if st.Leases.LeaseHeld("watch/qwen/1") {
		t.Error("LeaseHeld after ReleaseLease: true")
	}
	must(t, st.Leases.ReleaseLease(t.Context(), "watch/qwen/1")) // not held: nothing to do
	take("watch/qwen/1", true)

	// Of many takers at once, one gets it.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for range 20 {
		wg.Go(func() {
			if ok, err := st.Leases.TakeLease(t.Context(), "contended"); err != nil {
				t.Error(err)
			} else if ok {
				wins.Add(1)
			}
		})
	}
	wg.Wait()
	if wins.Load() != 1 {
		t.Errorf("%d of 20 concurrent takes won, want 1", wins.Load())
	}

	must(t, st.Close())
	if _, err := st.Leases.TakeLease(t.Context(), "after"); !errors.Is(err, store.ErrClosed) {
		t.Errorf("TakeLease after Close: %v, want ErrClosed", err)
	}
}

func testReplicas(t *testing.T, s Suite) {
	o := func() (Options, *clock) {
		c := &clock{now: T0}
		return Options{Now: c.Now, PendingTTL: 35 * time.Minute}, c
	}
	t.Run("one decision at a time", func(t *testing.T) {
		oa, _ := o()
		a := s.Open(t, oa)
		b, c := s.Peer(t, a, oa), s.Peer(t, a, oa)
		checkUpdatesSerialised(t, []store.Backend{a, b, c})
	})
	t.Run("sessions and markers are shared", func(t *testing.T) {
		oa, _ := o()
		a := s.Open(t, oa)
		b := s.Peer(t, a, oa)
		u, as := turn("s", 0)
		must(t, a.History.AppendTurn(t.Context(), "s", u, as))
		if got, err := b.History.History(t.Context(), "s", 2); err != nil || len(got) != 2 || got[1] != as {
			t.Errorf("the turn stored on A, read on B = %v, %v", got, err)
		}
		must(t, a.Pendings.PutPending(t.Context(), "w", pending("k")))
		if got, err := b.Pendings.TakePending(t.Context(), "w", "k"); err != nil || got.Key != "k" {
			t.Errorf("the marker left on A, taken on B = %+v, %v", got, err)
		}
		if _, err := a.Pendings.TakePending(t.Context(), "w", "k"); !errors.Is(err, store.ErrNoPending) {
			t.Errorf("taking it again on A: %v, want ErrNoPending", err)
		}
		checkConcurrentTurns(t, []store.Backend{a, b})
		checkOneTakeWins(t, []store.Backend{a, b})
	})
	t.Run("a lease is one replica's", func(t *testing.T) {
		oa, _ := o()
		a := s.Open(t, oa)
		b := s.Peer(t, a, oa)
		if ok, err := a.Leases.TakeLease(t.Context(), "watch"); err != nil || !ok {
			t.Fatalf("A's TakeLease = %v, %v", ok, err)
		}
		time.Sleep(Lease + Lease/2) // renewed by A meanwhile
		if ok, err := b.Leases.TakeLease(t.Context(), "watch"); err != nil || ok || b.Leases.LeaseHeld("watch") {
			t.Errorf("B's TakeLease of A's live lease = %v, %v; want false", ok, err)
		}
		must(t, a.Leases.ReleaseLease(t.Context(), "watch"))
		if ok, err := b.Leases.TakeLease(t.Context(), "watch"); err != nil || !ok {
			t.Errorf("B's TakeLease after A released it = %v, %v; want true", ok, err)
		}
		// A closing gives its leases up at once.
		if ok, err := a.Leases.TakeLease(t.Context(), "other"); err != nil || !ok {
			t.Fatalf("A's TakeLease = %v, %v", ok, err)
		}
		must(t, a.Close())
		if ok, err := b.Leases.TakeLease(t.Context(), "other"); err != nil || !ok {
			t.Errorf("B's TakeLease after A closed = %v, %v; want true", ok, err)
		}
	})
	t.Run("a dead replica's lease is taken over within the lease", func(t *testing.T) {
		if s.Crash == nil {
			t.Skip("the backend cannot kill a replica")
		}
		oa, _ := o()
		a := s.Open(t, oa)
		b := s.Peer(t, a, oa)
		if ok, err := a.Leases.TakeLease(t.Context(), "watch"); err != nil || !ok {
			t.Fatalf("A's TakeLease = %v, %v", ok, err)
		}
		killed := time.Now()
		s.Crash(a)
		var took time.Duration
		for {
			ok, err := b.Leases.TakeLease(t.Context(), "watch")
			must(t, err)
			if ok {
				took = time.Since(killed)
				break
			}
			if time.Since(killed) > 5*Lease {
				t.Fatalf("B has not taken the dead A's lease %v after A died (lease %v)", time.Since(killed), Lease)
			}
			time.Sleep(Lease / 20)
		}
		if took > 2*Lease {
			t.Errorf("B took the dead A's lease after %v, want within about the lease, %v", took, Lease)
		}
		if !b.Leases.LeaseHeld("watch") {
			t.Error("B's LeaseHeld after taking over: false")
		}
	})
}
