package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// testTurns checks store.Turns across two replicas: one turn per session at
// a time on any of them, and a wait while one is finishing. A turn past
// the lease, and a dead replica's turn lapsing after it: testLeaseTerm.
func testTurns(t *testing.T, s Suite) {
	st, _ := open(t, s, 0)
	if st.Turns == nil {
		t.Skip("the backend has no store.Turns: one host's slots are the rule")
	}
	if s.Peer == nil {
		t.Fatal("a backend with store.Turns has replicas: Suite.Peer is nil")
	}
	a := st.Turns
	b := s.Peer(t, st, Options{Now: time.Now}).Turns
	ctx := context.Background()
	take := func(who string, tu store.Turns, session string, want bool) {
		t.Helper()
		ok, err := tu.TakeTurn(ctx, session)
		if err != nil || ok != want {
			t.Errorf("%s's TakeTurn(%q) = %v, %v; want %v", who, session, ok, err, want)
		}
	}
	take("A", a, "s", true)
	take("A", a, "s", false) // its own turn runs
	take("B", b, "s", false) // A's turn runs
	take("B", b, "other", true)

	// Finishing: B's turn waits for A's to be stored, then runs. Until
	// its context ends: then it was not taken. A context that ends before
	// B has first looked (its first call, on a busy database, can outlast
	// it) makes that call's error: B waits again, twice as long.
	must(t, a.FinishTurn(t.Context(), "s"))
	for wait := 50 * time.Millisecond; ; wait *= 2 {
		short, cancel := context.WithTimeout(ctx, wait)
		ok, err := b.TakeTurn(short, "s")
		ended := short.Err() != nil
		cancel()
		if ended && errors.Is(err, context.DeadlineExceeded) && wait < 5*time.Second {
			continue
		}
		if err != nil || ok {
			t.Errorf("B's TakeTurn while A's is finishing, until its context ended = %v, %v; want false", ok, err)
		} else if !ended {
			t.Error("B's TakeTurn while A's is finishing returned false before its context ended: it did not wait")
		}
		break
	}
	got := make(chan bool, 1)
	go func() {
		ok, err := b.TakeTurn(ctx, "s")
		if err != nil {
			t.Error(err)
		}
		got <- ok
	}()
	must(t, a.ReleaseTurn(t.Context(), "s"))
	select {
	case ok := <-got:
		if !ok {
			t.Error("B's TakeTurn, waiting while A's finished, = false once A released it; want true")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("B's TakeTurn still waits 5 s after A released the session's turn")
	}
	take("A", a, "s", false) // now B's
	must(t, b.ReleaseTurn(t.Context(), "s"))
	take("A", a, "s", true)
}
