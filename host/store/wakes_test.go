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

// TestWakeLogFromAnOlderStore: a store written before the wake log was kept
// (no wakes bucket; records without runningAt and served) opens, checks,
// reads its records and logs wakes from then on.
func TestWakeLogFromAnOlderStore(t *testing.T) {
	t.Parallel()
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
	got, err := s.Record(t.Context(), "qwen")
	if err != nil {
		t.Fatal(err)
	}
	want := machines.Record{Pod: "qwen", State: machines.Ready, WakeRequestedAt: wake, ReadyAt: wake.Add(9 * time.Minute)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("an older record (-want +got):\n%s", diff)
	}
	if ws, err := s.Wakes(t.Context(), "qwen"); err != nil || len(ws) != 0 {
		t.Errorf("Wakes of an older store = %v, %v; want none", ws, err)
	}
	next := loggedWake("qwen", wake.Add(time.Hour), 4*time.Minute)
	if err := s.PutRecordWake(t.Context(), want, next); err != nil {
		t.Fatal(err)
	}
	if ws, err := s.Wakes(t.Context(), "qwen"); err != nil || len(ws) != 1 {
		t.Errorf("Wakes after one logged = %v, %v; want it", ws, err)
	}
}

// TestWakeLogReopened: the log is checked by Open and survives a restart.
func TestWakeLogReopened(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)
	wake := time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)
	w := loggedWake("qwen", wake, 4*time.Minute)
	if err := s.PutRecordWake(t.Context(), fullRecord("qwen", wake), w); err != nil {
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
	got, err := s2.Wakes(t.Context(), "qwen")
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
	t.Parallel()
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
