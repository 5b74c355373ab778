package store_test

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/wakeonchat/wakeonchat/host/store"
	"github.com/wakeonchat/wakeonchat/host/store/storetest"
)

// TestConformance runs the store conformance suite on the bbolt store.
func TestConformance(t *testing.T) {
	t.Parallel()
	storetest.Run(t, storetest.Suite{
		Open: func(t *testing.T, o storetest.Options) store.Backend {
			s, err := store.NoSync(store.Options{Now: o.Now, PendingTTL: o.PendingTTL, SessionHistoryBytes: o.SessionHistoryBytes}).
				Open(filepath.Join(t.TempDir(), "wake.db"))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s.Backend()
		},
		// The store's leases have no term: held until released or closed.
		Lease: 20 * time.Millisecond,
	})
}
