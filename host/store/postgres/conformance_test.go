package postgres_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/store/postgres"
	"github.com/wakeonchat/wakeonchat/host/store/storetest"
)

// dsns remembers the DSN of each store a suite opened, for its peers
// (*postgres.Store to string): the suite runs its cases in parallel.
var dsns sync.Map

// openAt opens a store on dsn with o, closed at t's cleanup.
func openAt(t *testing.T, dsn string, o postgres.Options) *postgres.Store {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := postgres.Open(ctx, dsn, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestConformance runs the store conformance suite on PostgreSQL, each
// store a case opens on a schema no other case has meanwhile (schemaPool).
func TestConformance(t *testing.T) {
	t.Parallel()
	schemas := newSchemaPool(t)
	storetest.Run(t, storetest.Suite{
		Open: func(t *testing.T, o storetest.Options) store.Backend {
			dsn := schemas.get(t)
			s := openAt(t, dsn, options(o))
			dsns.Store(s, dsn)
			return s.Backend()
		},
		Peer: func(t *testing.T, first store.Backend, o storetest.Options) store.Backend {
			dsn, _ := dsns.Load(first.Records.(*postgres.Store))
			return openAt(t, dsn.(string), options(o)).Backend()
		},
		Crash: func(t *testing.T, s store.Backend) {
			if err := postgres.Crash(s.Records.(*postgres.Store)); err != nil {
				t.Fatalf("the renewal before the crash: %v", err)
			}
		},
		Lease: lease,
	})
}

// lease is the suite's Lease. The store renews its holds every third of
// it: one lapses when the renewals stall for two thirds of it, some 330 ms.
const lease = 500 * time.Millisecond

// options are the suite's options o as the PostgreSQL store's.
func options(o storetest.Options) postgres.Options {
	return postgres.Options{
		Now: o.Now, PendingTTL: o.PendingTTL, SessionHistoryBytes: o.SessionHistoryBytes, Lease: o.Lease,
	}
}
