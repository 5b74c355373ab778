package store

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"

	"github.com/wakeonchat/wakeonchat/machines"
)

// loggedWake is a wake of pod requested at wake that took took to be ready.
func loggedWake(pod string, wake time.Time, took time.Duration) machines.Wake {
	return machines.Wake{Pod: pod, RequestedAt: wake, RunningAt: wake.Add(took * 2 / 3), ReadyAt: wake.Add(took),
		Outcome: string(machines.Ready), Served: true}
}

// TestWakeLogRoundTrip: an entry goes in with its record, in one
// transaction, comes back in UTC, and replaces the entry of the same wake.
func TestWakeLogRoundTrip(t *testing.T) {
	s, _ := openTemp(t)
	wake := time.Date(2026, 9, 9, 14, 3, 0, 0, cest)

	got, err := s.Wakes("gpu-a")
	if err != nil || len(got) != 0 {
		t.Fatalf("Wakes of a pod with none = %v, %v; want none", got, err)
	}

	rec := fullRecord("gpu-a", wake)
	first := machines.Wake{RequestedAt: wake, RunningAt: wake.Add(6 * time.Minute), ReadyAt: wake.Add(9 * time.Minute), Outcome: "ready"}
	if err := s.PutRecordWake(rec, first); err != nil {
		t.Fatal(err)
	}
	gotRec, err := s.Record("gpu-a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(rec, gotRec); diff != "" {
		t.Errorf("the record written with the wake (-want +got):\n%s", diff)
	}
	first.Pod = "gpu-a" // an empty pod is the record's
	got, err = s.Wakes("gpu-a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]machines.Wake{first}, got); diff != "" {
		t.Errorf("Wakes (-want +got):\n%s", diff)
	}
	for _, w := range got {
		for name, tm := range timeFields(w) {
			if !tm.IsZero() && tm.Location() != time.UTC {
				t.Errorf("%s read back in %v, want UTC", name, tm.Location())
			}
		}
	}

	// The same wake, served now: replaced, not added.
	served := first
	served.Served = true
	if err := s.PutRecordWake(rec, served); err != nil {
		t.Fatal(err)
	}
	got, err = s.Wakes("gpu-a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]machines.Wake{served}, got); diff != "" {
		t.Errorf("Wakes after the same wake again (-want +got):\n%s", diff)
	}
	if other, err := s.Wakes("gpu-b"); err != nil || len(other) != 0 {
		t.Errorf("another pod's log = %v, %v; want none", other, err)
	}
}

// TestWakeLogBounded: a pod's log keeps its newest WakeLogSize wakes, by
// request time, oldest first, whatever order they were written in.
func TestWakeLogBounded(t *testing.T) {
	s, _ := openTemp(t)
	t0 := time.Date(2026, 9, 9, 8, 0, 0, 0, time.UTC)
	const n = WakeLogSize + 7
	var want []machines.Wake
	// Written newest first for the second half, to show the order is by
	// request time, not by writing.
	order := make([]int, 0, n)
	for i := range n / 2 {
		order = append(order, i)
	}
	for i := n - 1; i >= n/2; i-- {
		order = append(order, i)
	}
	for _, i := range order {
		w := loggedWake("gpu-a", t0.Add(time.Duration(i)*time.Hour), time.Duration(4+i%5)*time.Minute)
		if err := s.PutRecordWake(fullRecord("gpu-a", w.RequestedAt), w); err != nil {
			t.Fatal(err)
		}
	}
	for i := n - WakeLogSize; i < n; i++ {
		want = append(want, loggedWake("gpu-a", t0.Add(time.Duration(i)*time.Hour), time.Duration(4+i%5)*time.Minute))
	}
	// Another pod's log is its own.
	if err := s.PutRecordWake(fullRecord("gpu-b", t0), loggedWake("gpu-b", t0, 5*time.Minute)); err != nil {
		t.Fatal(err)
	}
	got, err := s.Wakes("gpu-a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Wakes (-want +got):\n%s", diff)
	}
	if b, err := s.Wakes("gpu-b"); err != nil || len(b) != 1 {
		t.Errorf("gpu-b's log = %v, %v; want its one wake", b, err)
	}
}

// TestWakeLogFromAnOlderStore: a store written before the wake log was kept
// (no wakes bucket; records without runningAt and served) opens, checks,
// reads its records and logs wakes from then on.
func TestWakeLogFromAnOlderStore(t *testing.T) {
	path := filepath.Join(t.TempDir(), "wake.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := `{"pod":"qwen","state":"ready","wakeRequestedAt":"2026-09-09T12:00:00Z","modelLoadingSince":"0001-01-01T00:00:00Z","readyAt":"2026-09-09T12:09:00Z","refusedStatus":0}`
	err = db.Update(func(tx *bolt.Tx) error {
		for _, name := range [][]byte{bucketSessions, bucketPending} {
			if _, err := tx.CreateBucket(name); err != nil {
				return err
			}
		}
		pods, err := tx.CreateBucket(bucketPods)
		if err != nil {
			return err
		}
		return pods.Put([]byte("qwen"), []byte(old))
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open of an older store: %v", err)
	}
	defer s.Close()
	wake := time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)
	got, err := s.Record("qwen")
	if err != nil {
		t.Fatal(err)
	}
	want := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: wake, ReadyAt: wake.Add(9 * time.Minute)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("an older record (-want +got):\n%s", diff)
	}
	if ws, err := s.Wakes("qwen"); err != nil || len(ws) != 0 {
		t.Errorf("Wakes of an older store = %v, %v; want none", ws, err)
	}
	next := loggedWake("qwen", wake.Add(time.Hour), 4*time.Minute)
	if err := s.PutRecordWake(want, next); err != nil {
		t.Fatal(err)
	}
	if ws, err := s.Wakes("qwen"); err != nil || len(ws) != 1 {
		t.Errorf("Wakes after one logged = %v, %v; want it", ws, err)
	}
}

// TestWakeLogReopened: the log is checked by Open and survives a restart.
func TestWakeLogReopened(t *testing.T) {
	s, path := openTemp(t)
	wake := time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)
	w := loggedWake("qwen", wake, 4*time.Minute)
	if err := s.PutRecordWake(fullRecord("qwen", wake), w); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	got, err := s2.Wakes("qwen")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]machines.Wake{w}, got); diff != "" {
		t.Errorf("Wakes after a restart (-want +got):\n%s", diff)
	}
}

// TestWakeLogDamaged: an entry that is not JSON, or a key of the wrong
// size, is a corrupt store at Open, naming the pod.
func TestWakeLogDamaged(t *testing.T) {
	for name, damage := range map[string]func(log *bolt.Bucket) error{
		"an entry that is not JSON": func(log *bolt.Bucket) error { return log.Put(make([]byte, 8), []byte("{not json")) },
		"a key of the wrong size":   func(log *bolt.Bucket) error { return log.Put([]byte("short"), []byte("{}")) },
	} {
		t.Run(name, func(t *testing.T) {
			s, path := openTemp(t)
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = db.Update(func(tx *bolt.Tx) error {
				log, err := tx.Bucket(bucketWakes).CreateBucket([]byte("qwen"))
				if err != nil {
					return err
				}
				return damage(log)
			})
			if cerr := db.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = Open(path)
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), `wake log of pod "qwen"`) {
				t.Errorf("Open: %v, want a corrupt store naming the wake log of pod qwen", err)
			}
		})
	}
}

func TestPutRecordWakeRejects(t *testing.T) {
	s, _ := openTemp(t)
	wake := time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		rec  machines.Record
		w    machines.Wake
		want string
	}{
		{machines.Record{}, loggedWake("", wake, time.Minute), "store: empty pod name"},
		{fullRecord("qwen", wake), loggedWake("other", wake, time.Minute), `store: wake of pod "other" with the record of pod "qwen"`},
		{fullRecord("qwen", wake), machines.Wake{Outcome: "ready"}, `store: wake of pod "qwen" has no request time`},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			err := s.PutRecordWake(tt.rec, tt.w)
			if err == nil || err.Error() != tt.want {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	if r, err := s.Record("qwen"); err != nil || r.State != machines.Asleep {
		t.Errorf("a rejected write stored the record: %+v, %v", r, err)
	}
	if _, err := s.Wakes(""); err == nil {
		t.Error(`Wakes(""): no error`)
	}
}
