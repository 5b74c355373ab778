package storetest

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/store"
)

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
	// Held past a lease, renewed: testLeaseTerm.
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
		// Past its first term too, renewed by A: testLeaseTerm.
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
}

// testLeaseTerm checks what a lease does over time, on stores whose leases
// have the short term s.Lease, every hold of the case at once so that they
// share one wait of a lease and a half: a lease held past its term is
// renewed by its store and stays its own, on other replicas too, and so
// does a session's turn; a replica that dies holding them loses both to
// another within about the lease.
func testLeaseTerm(t *testing.T, s Suite) {
	lease := s.Lease
	if lease <= 0 {
		t.Fatal("Suite.Lease is not set")
	}
	c := &clock{now: T0}
	o := Options{Now: c.Now, PendingTTL: 35 * time.Minute, Lease: lease}
	a := s.Open(t, o)
	var b, d store.Backend // other replicas, when the backend has them; d dies
	if s.Peer != nil {
		b = s.Peer(t, a, o)
		if s.Crash != nil {
			d = s.Peer(t, a, o)
		}
	}
	takeLease := func(who string, st store.Backend, name string) {
		t.Helper()
		if ok, err := st.Leases.TakeLease(t.Context(), name); err != nil || !ok {
			t.Fatalf("%s's TakeLease(%q) = %v, %v", who, name, ok, err)
		}
	}
	takeTurn := func(who string, st store.Backend, session string) {
		t.Helper()
		if ok, err := st.Turns.TakeTurn(t.Context(), session); err != nil || !ok {
			t.Fatalf("%s's TakeTurn(%q) = %v, %v", who, session, ok, err)
		}
	}
	takeLease("A", a, "watch")
	taken := time.Now()
	turns := a.Turns != nil && b.Turns != nil
	if turns {
		takeTurn("A", a, "s")
	}

	// D dies holding a lease and a turn of its own: B takes them over
	// within about the lease, while A's holds run past their term.
	if d.Leases != nil {
		takeLease("D", d, "watch/d")
		if turns {
			takeTurn("D", d, "d")
		}
		killed := time.Now()
		s.Crash(t, d)
		took := map[string]time.Duration{}
		want := 1
		if turns {
			want = 2
		}
		for {
			if _, ok := took["the watch's lease"]; !ok {
				ok, err := b.Leases.TakeLease(t.Context(), "watch/d")
				must(t, err)
				if ok {
					took["the watch's lease"] = time.Since(killed)
				}
			}
			if _, ok := took["the session's turn"]; turns && !ok {
				ok, err := b.Turns.TakeTurn(t.Context(), "d")
				must(t, err)
				if ok {
					took["the session's turn"] = time.Since(killed)
				}
			}
			if len(took) == want {
				break
			}
			if time.Since(killed) > 5*lease {
				t.Fatalf("B has taken over only %v of the dead D's holds %v after D died (lease %v)", took, time.Since(killed), lease)
			}
			time.Sleep(lease / 20)
		}
		for what, took := range took {
			if took > 2*lease {
				t.Errorf("B took %s of the dead D after %v, want within about the lease, %v", what, took, lease)
			}
		}
		if !b.Leases.LeaseHeld("watch/d") {
			t.Error("B's LeaseHeld after taking over: false")
		}
	}

	time.Sleep(time.Until(taken.Add(lease + lease/2))) // renewed by A meanwhile
	if !a.Leases.LeaseHeld("watch") {
		t.Error("a lease is not held a lease and a half after it was taken: the store does not renew it")
	}
	if ok, err := a.Leases.TakeLease(t.Context(), "watch"); err != nil || ok {
		t.Errorf("A's TakeLease of its own lease past its term = %v, %v; want false", ok, err)
	}
	if b.Leases != nil {
		if ok, err := b.Leases.TakeLease(t.Context(), "watch"); err != nil || ok || b.Leases.LeaseHeld("watch") {
			t.Errorf("B's TakeLease of A's live lease past its term = %v, %v; want false", ok, err)
		}
	}
	if turns {
		// A turn longer than the lease keeps its session.
		if ok, err := b.Turns.TakeTurn(t.Context(), "s"); err != nil || ok {
			t.Errorf("B's TakeTurn of A's running turn past the lease = %v, %v; want false", ok, err)
		}
	}
}
