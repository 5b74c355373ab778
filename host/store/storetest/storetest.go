// Package storetest is the conformance suite of store.Backend: the same
// table of cases, run against every backend (the bbolt store's tests run it
// on (*store.Store).Backend(), the PostgreSQL backend's on
// (*postgres.Store).Backend()), so that the host behaves the same whichever
// keeps its state.
//
// A backend's test calls Run with a Suite that opens a fresh, empty store
// per case (the cases run in parallel, so Open and Peer must be safe to
// call at once); a backend that several replicas share also gives Peer, and the
// cases about replicas run too. The suite only uses the capabilities in
// store.Backend (the Turns cases run when Turns is not nil); what is a
// backend's own (bbolt's file checks, PostgreSQL's schema versions) is
// tested in its package.
//
// It is imported by tests only.
package storetest

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/machines"
)

// Options are what a case needs of a store it opens.
type Options struct {
	// Now is the store's clock (store.Options.Now); never nil.
	Now func() time.Time
	// PendingTTL is store.Options.PendingTTL.
	PendingTTL time.Duration
	// SessionHistoryBytes is store.Options.SessionHistoryBytes: 0 is the
	// backend's default.
	SessionHistoryBytes int
	// Lease is the term of the store's leases (PostgreSQL's
	// Options.Lease): 0 is the backend's default, which no case outlasts.
	// Only LeaseTerm sets it, to Suite.Lease. A backend whose leases have
	// no term ignores it.
	Lease time.Duration
}

// Suite opens the stores of one backend.
type Suite struct {
	// Open opens a fresh, empty store with o, closed at the test's cleanup
	// (a case may close it earlier; a second Close must be harmless).
	Open func(t *testing.T, o Options) store.Backend
	// Peer opens another replica on the data of s, a store Open returned,
	// with o: another host process on the same database. nil for a backend
	// one process holds alone; the cases about replicas are then skipped.
	Peer func(t *testing.T, s store.Backend, o Options) store.Backend
	// Crash stops s as a killed host would, just after a renewal of its
	// leases: they are neither renewed nor released after it. nil when
	// Peer is, or the backend cannot.
	Crash func(t *testing.T, s store.Backend)
	// Lease is the term LeaseTerm opens its stores with (Options.Lease):
	// short, since the case waits on it in real time (a lease and a half,
	// and a dead replica's holds lapsing), and long enough that a loaded
	// machine (the race detector, packages in parallel on two cores)
	// renews in time. A backend whose leases have no term (held until
	// released or closed) gives a short one: the case then checks that
	// nothing lets a hold go over time.
	Lease time.Duration
}

// T0 is the clock's start in every case.
var T0 = time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)

// Run runs every case against the backend.
func Run(t *testing.T, s Suite) {
	// Each case opens stores of its own: they run in parallel. The waits
	// on real time, a lease and a half and a dead replica's lease, are all
	// in LeaseTerm, so that they overlap.
	for _, c := range []struct {
		name string
		run  func(*testing.T, Suite)
	}{
		{"Records", testRecords},
		{"UpdateRecord", testUpdateRecord},
		{"WakeLog", testWakeLog},
		{"History", testHistory},
		{"HistoryWithin", testHistoryWithin},
		{"SessionBudget", testSessionBudget},
		{"Pending", testPending},
		{"Prune", testPrune},
		{"Closed", testClosed},
		{"Cancelled", testCancelled},
		{"Leases", testLeases},
		{"LeaseTerm", testLeaseTerm},
		{"Turns", testTurns},
		{"Replicas", func(t *testing.T, s Suite) {
			if s.Peer == nil {
				t.Skip("the backend is held by one process: no replicas")
			}
			testReplicas(t, s)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.run(t, s)
		})
	}
}

// clock is a settable clock for a case.
type clock struct{ now time.Time }

func (c *clock) Now() time.Time { return c.now }

// open opens a store of s with a clock at T0 and ttl.
func open(t *testing.T, s Suite, ttl time.Duration) (store.Backend, *clock) {
	t.Helper()
	c := &clock{now: T0}
	return s.Open(t, Options{Now: c.Now, PendingTTL: ttl}), c
}

// must fails the test on err.
func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// within runs fn with a context that ends after d.
func within(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

func testClosed(t *testing.T, s Suite) {
	st, _ := open(t, s, 0)
	must(t, st.Close())
	if err := st.Close(); err != nil {
		t.Errorf("second Close: %v, want nil", err)
	}
	calls := map[string]func() error{
		"Record":    func() error { _, err := st.Records.Record(t.Context(), "qwen"); return err },
		"PutRecord": func() error { return st.Records.PutRecord(t.Context(), record("qwen")) },
		"Records":   func() error { _, err := st.Records.Records(t.Context()); return err },
		"PutRecordWake": func() error {
			return st.WakeLog.PutRecordWake(t.Context(), record("qwen"), machines.Wake{RequestedAt: T0})
		},
		"Wakes": func() error { _, err := st.WakeLog.Wakes(t.Context(), "qwen"); return err },
		"UpdateRecord": func() error {
			_, _, err := st.Records.UpdateRecord(t.Context(), "qwen", func(r machines.Record) (machines.Record, *machines.Wake, error) { return r, nil, nil })
			return err
		},
		"History": func() error { _, err := st.History.History(t.Context(), "s", 2); return err },
		"HistoryWithin": func() error {
			_, err := st.History.HistoryWithin(t.Context(), "s", 2, 100)
			return err
		},
		"AppendTurn": func() error { return st.History.AppendTurn(t.Context(), "s", user("q"), assistant("a")) },
		"Pending":    func() error { _, _, err := st.Pendings.Pending(t.Context(), "s"); return err },
		"PutPending": func() error { return st.Pendings.PutPending(t.Context(), "s", pending("k")) },
		"TakePending": func() error {
			_, err := st.Pendings.TakePending(t.Context(), "s", "k")
			return err
		},
		"Prune": func() error { _, err := st.Retainer.Prune(context.Background(), T0, store.Retention{}); return err },
		"StartPruning": func() error {
			return st.Retainer.StartPruning(store.Retention{}, time.Minute, nil, nil)
		},
	}
	for name, call := range calls {
		if err := call(); !errors.Is(err, store.ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
}
