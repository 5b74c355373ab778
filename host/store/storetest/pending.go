package storetest

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// pending is a marker with key and every field set, made at T0.
func pending(key string) store.Pending {
	wake := time.Date(2026, 9, 9, 14, 3, 0, 0, cest)
	return store.Pending{
		Key: key, Pod: "gpu-a", Provider: "vllm", WakeRequestedAt: wake,
		State: "waking", CreatedAt: T0,
	}
}

// pendingUTC is p with its times in UTC, as a store gives them back.
func pendingUTC(p store.Pending) store.Pending {
	p.WakeRequestedAt, p.CreatedAt = p.WakeRequestedAt.UTC(), p.CreatedAt.UTC()
	return p
}

func testPending(t *testing.T, s Suite) {
	t.Run("round trip", func(t *testing.T) {
		st, _ := open(t, s, 0)
		if p, ok, err := st.Pendings.Pending(t.Context(), "s"); err != nil || ok {
			t.Fatalf("Pending of an unknown session = %+v, %v, %v; want none", p, ok, err)
		}
		for _, want := range []store.Pending{pending("k1"), pending("k2")} { // the second replaces the first
			must(t, st.Pendings.PutPending(t.Context(), "s", want))
			got, ok, err := st.Pendings.Pending(t.Context(), "s")
			if err != nil || !ok {
				t.Fatalf("Pending: ok %v, err %v", ok, err)
			}
			if diff := cmp.Diff(pendingUTC(want), got); diff != "" {
				t.Errorf("Pending (-want +got):\n%s", diff)
			}
			if got.WakeRequestedAt.Location() != time.UTC || got.CreatedAt.Location() != time.UTC {
				t.Errorf("Pending times in %v and %v, want UTC", got.WakeRequestedAt.Location(), got.CreatedAt.Location())
			}
		}
		// A marker without a wake on record keeps its zero time.
		zero := pending("k3")
		zero.WakeRequestedAt = time.Time{}
		must(t, st.Pendings.PutPending(t.Context(), "z", zero))
		if got, _, err := st.Pendings.Pending(t.Context(), "z"); err != nil || !got.WakeRequestedAt.IsZero() {
			t.Errorf("Pending with no wake time = %+v, %v; want a zero WakeRequestedAt", got, err)
		}
		if _, ok, err := st.Pendings.Pending(t.Context(), "other"); err != nil || ok {
			t.Errorf("Pending of another session: ok %v, err %v; want none", ok, err)
		}
		for i := range 2 { // deleting none is not an error
			if err := st.Pendings.DeletePending(t.Context(), "s"); err != nil {
				t.Fatalf("DeletePending #%d: %v", i+1, err)
			}
			if _, ok, err := st.Pendings.Pending(t.Context(), "s"); err != nil || ok {
				t.Errorf("Pending after DeletePending #%d: ok %v, err %v; want none", i+1, ok, err)
			}
		}
	})
	t.Run("PutPending rejects", func(t *testing.T) {
		st, _ := open(t, s, 0)
		if err := st.Pendings.PutPending(t.Context(), "", pending("k")); err == nil {
			t.Error("PutPending with an empty session: no error")
		}
		if err := st.Pendings.PutPending(t.Context(), "s", pending("")); err == nil {
			t.Error("PutPending with an empty key: no error")
		}
		if _, ok, _ := st.Pendings.Pending(t.Context(), "s"); ok {
			t.Error("a rejected marker was stored")
		}
	})
	t.Run("TakePending", func(t *testing.T) {
		st, _ := open(t, s, 0)
		stored := pending("k1")
		must(t, st.Pendings.PutPending(t.Context(), "s", stored))
		// A sequence: each step sees what the ones before it left.
		for _, step := range []struct {
			name     string
			session  string
			key      string
			want     store.Pending
			wantErr  error
			wantKept bool // the marker is still there afterwards
		}{
			{"unknown session", "other", "k1", store.Pending{}, store.ErrNoPending, true},
			{"wrong key keeps it", "s", "k2", store.Pending{}, store.ErrPendingMismatch, true},
			{"empty key keeps it", "s", "", store.Pending{}, store.ErrPendingMismatch, true},
			{"match consumes it", "s", "k1", pendingUTC(stored), nil, false},
			{"second take", "s", "k1", store.Pending{}, store.ErrNoPending, false},
		} {
			got, err := st.Pendings.TakePending(t.Context(), step.session, step.key)
			if !errors.Is(err, step.wantErr) {
				t.Errorf("%s: err = %v, want %v", step.name, err, step.wantErr)
			}
			if diff := cmp.Diff(step.want, got); diff != "" {
				t.Errorf("%s: Pending (-want +got):\n%s", step.name, diff)
			}
			if _, ok, err := st.Pendings.Pending(t.Context(), "s"); err != nil || ok != step.wantKept {
				t.Errorf("%s: marker kept %v (err %v), want %v", step.name, ok, err, step.wantKept)
			}
		}
	})
	t.Run("concurrent takes: one wins", func(t *testing.T) {
		st, _ := open(t, s, 0)
		checkOneTakeWins(t, []store.Backend{st})
	})
	t.Run("expired reads as absent", func(t *testing.T) {
		st, c := open(t, s, 35*time.Minute)
		must(t, st.Pendings.PutPending(t.Context(), "s", store.Pending{Key: "k", Pod: "qwen", CreatedAt: T0}))
		for _, step := range []struct {
			at     time.Duration
			wantOK bool
		}{
			{0, true},
			{35*time.Minute - time.Nanosecond, true},
			{35 * time.Minute, false},
			{time.Hour, false},
		} {
			c.now = T0.Add(step.at)
			if _, ok, err := st.Pendings.Pending(t.Context(), "s"); err != nil || ok != step.wantOK {
				t.Errorf("Pending at +%v: ok %v, err %v; want ok %v", step.at, ok, err, step.wantOK)
			}
		}
		if _, err := st.Pendings.TakePending(t.Context(), "s", "k"); !errors.Is(err, store.ErrNoPending) {
			t.Errorf("TakePending of an expired marker: %v, want ErrNoPending", err)
		}
		c.now = T0.Add(10 * time.Minute)
		if got, err := st.Pendings.TakePending(t.Context(), "s", "k"); err != nil || got.Key != "k" {
			t.Errorf("TakePending of a live marker: %+v, %v", got, err)
		}
	})
}

// checkOneTakeWins has 50 takers, spread over the stores, take one marker
// with its key at once: exactly one gets it.
func checkOneTakeWins(t *testing.T, stores []store.Backend) {
	t.Helper()
	want := pending("k1")
	must(t, stores[0].Pendings.PutPending(t.Context(), "s", want))
	const takers = 50
	var wins, misses atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, takers)
	start := make(chan struct{})
	for i := range takers {
		st := stores[i%len(stores)]
		wg.Go(func() {
			<-start
			got, err := st.Pendings.TakePending(t.Context(), "s", "k1")
			switch {
			case err == nil:
				wins.Add(1)
				if diff := cmp.Diff(pendingUTC(want), got); diff != "" {
					errs <- fmt.Errorf("the winner's Pending (-want +got):\n%s", diff)
				}
			case errors.Is(err, store.ErrNoPending):
				misses.Add(1)
			default:
				errs <- err
			}
		})
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if wins.Load() != 1 || misses.Load() != takers-1 {
		t.Errorf("%d takes won and %d found none, want 1 and %d", wins.Load(), misses.Load(), takers-1)
	}
}
