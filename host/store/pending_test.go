package store

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func testPending(key string) Pending {
	wake := time.Date(2026, 9, 9, 14, 3, 0, 0, cest)
	return Pending{
		Key: key, Pod: "gpu-a", Provider: "vllm", WakeRequestedAt: wake,
		State: "waking", CreatedAt: wake.Add(time.Second),
	}
}

func TestPendingRoundTrip(t *testing.T) {
	s, _ := openTemp(t)

	if p, ok, err := s.Pending("s"); err != nil || ok {
		t.Fatalf("Pending of unknown session = %+v, %v, %v; want none", p, ok, err)
	}

	for _, want := range []Pending{testPending("k1"), testPending("k2")} { // the second replaces the first
		if err := s.PutPending("s", want); err != nil {
			t.Fatal(err)
		}
		got, ok, err := s.Pending("s")
		if err != nil || !ok {
			t.Fatalf("Pending: ok %v, err %v", ok, err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("Pending (-want +got):\n%s", diff)
		}
		if got.WakeRequestedAt.Location() != time.UTC || got.CreatedAt.Location() != time.UTC {
			t.Errorf("Pending times in %v and %v, want UTC", got.WakeRequestedAt.Location(), got.CreatedAt.Location())
		}
	}
	if _, ok, err := s.Pending("other"); err != nil || ok {
		t.Errorf("Pending of another session: ok %v, err %v; want none", ok, err)
	}

	for i := range 2 { // deleting none is not an error
		if err := s.DeletePending("s"); err != nil {
			t.Fatalf("DeletePending #%d: %v", i+1, err)
		}
		if _, ok, err := s.Pending("s"); err != nil || ok {
			t.Errorf("Pending after DeletePending #%d: ok %v, err %v; want none", i+1, ok, err)
		}
	}
}

func TestPutPendingRejects(t *testing.T) {
	s, _ := openTemp(t)
	if err := s.PutPending("", testPending("k")); err == nil {
		t.Error("PutPending with empty session: no error")
	}
	if err := s.PutPending("s", testPending("")); err == nil {
		t.Error("PutPending with empty key: no error")
	}
	if _, ok, _ := s.Pending("s"); ok {
		t.Error("a rejected marker was stored")
	}
}

func TestTakePending(t *testing.T) {
	s, _ := openTemp(t)
	stored := testPending("k1")
	if err := s.PutPending("s", stored); err != nil {
		t.Fatal(err)
	}
	// A sequence: each step sees what the ones before it left.
	for _, step := range []struct {
		name     string
		session  string
		key      string
		want     Pending
		wantErr  error
		wantKept bool // the marker is still there afterwards
	}{
		{"unknown session", "other", "k1", Pending{}, ErrNoPending, true},
		{"wrong key keeps it", "s", "k2", Pending{}, ErrPendingMismatch, true},
		{"empty key keeps it", "s", "", Pending{}, ErrPendingMismatch, true},
		{"match consumes it", "s", "k1", stored, nil, false},
		{"second take", "s", "k1", Pending{}, ErrNoPending, false},
	} {
		got, err := s.TakePending(step.session, step.key)
		if !errors.Is(err, step.wantErr) {
			t.Errorf("%s: err = %v, want %v", step.name, err, step.wantErr)
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("%s: Pending (-want +got):\n%s", step.name, diff)
		}
		if _, ok, err := s.Pending("s"); err != nil || ok != step.wantKept {
			t.Errorf("%s: marker kept %v (err %v), want %v", step.name, ok, err, step.wantKept)
		}
	}
}

func TestConcurrentTakePending(t *testing.T) {
	s, _ := openTemp(t)
	want := testPending("k1")
	if err := s.PutPending("s", want); err != nil {
		t.Fatal(err)
	}
	const takers = 50
	var wins, misses atomic.Int32
	var wg sync.WaitGroup
	errs := make(chan error, takers)
	start := make(chan struct{})
	for range takers {
		wg.Go(func() {
			<-start
			got, err := s.TakePending("s", "k1")
			switch {
			case err == nil:
				wins.Add(1)
				if diff := cmp.Diff(want, got); diff != "" {
					errs <- fmt.Errorf("winner's Pending (-want +got):\n%s", diff)
				}
			case errors.Is(err, ErrNoPending):
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
