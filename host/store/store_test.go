package store

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/machines"
)

// cest is a zone other than UTC and Local, so a test notices times that come
// back in the wrong instant.
var cest = time.FixedZone("CEST", 2*60*60)

func openTemp(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "wake.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

func TestOpenCreatesPrivateDirAndFile(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "data", "dir")
	path := filepath.Join(dir, "wake.db")
	s, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	defer s.Close()
	for _, tc := range []struct {
		path string
		want os.FileMode
	}{
		{dir, 0o700 | os.ModeDir},
		{path, 0o600},
	} {
		fi, err := os.Stat(tc.path)
		if err != nil {
			t.Fatal(err)
		}
		if got := fi.Mode(); got != tc.want {
			t.Errorf("mode of %s = %v, want %v", tc.path, got, tc.want)
		}
	}
}

// TestSecondOpenIsLocked: a second Open of a file a store holds gives up
// after its wait (Options.lockTimeout, a second by default; shorter here,
// the same wait in the check process and bbolt's own), with ErrLocked.
func TestSecondOpenIsLocked(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)

	const wait = 100 * time.Millisecond
	start := time.Now()
	done := make(chan error, 1)
	go func() {
		s2, err := Options{lockTimeout: wait}.Open(path)
		if err == nil {
			s2.Close()
		}
		done <- err
	}()
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("second Open still waiting after 5s")
	}
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open: err = %v, want ErrLocked", err)
	}
	if !strings.Contains(err.Error(), "is locked by another process") || !strings.Contains(err.Error(), path) {
		t.Errorf("second Open: error %q does not say %s is locked by another process", err, path)
	}
	if !strings.Contains(err.Error(), "(waited "+wait.String()+")") {
		t.Errorf("second Open: error %q does not say it waited %v", err, wait)
	}
	// Within less than the default wait: the check process waited the
	// store's, not its own default.
	if took := time.Since(start); took > wait+800*time.Millisecond {
		t.Errorf("second Open gave up after %v, want about %v", took, wait)
	}

	// Close releases the lock.
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	s2, err := Open(path)
	if err != nil {
		t.Fatalf("Open after Close: %v", err)
	}
	s2.Close()
}

func TestCloseIsIdempotent(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	for i := range 3 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
}

func TestCallsAfterCloseFail(t *testing.T) {
	t.Parallel()
	s, _ := openTemp(t)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	user, asst := Message{Role: RoleUser, Content: "hi"}, Message{Role: RoleAssistant, Content: "hello"}
	for _, tc := range []struct {
		name string
		call func() error
	}{
		{"History", func() error { _, err := s.History(t.Context(), "s", 10); return err }},
		{"AppendTurn", func() error { return s.AppendTurn(t.Context(), "s", user, asst) }},
		{"PruneHistory", func() error { return s.PruneHistory("s", 2) }},
		{"Pending", func() error { _, _, err := s.Pending(t.Context(), "s"); return err }},
		{"PutPending", func() error { return s.PutPending(t.Context(), "s", Pending{Key: "k"}) }},
		{"TakePending", func() error { _, err := s.TakePending(t.Context(), "s", "k"); return err }},
		{"DeletePending", func() error { return s.DeletePending(t.Context(), "s") }},
		{"Record", func() error { _, err := s.Record(t.Context(), "pod"); return err }},
		{"PutRecord", func() error { return s.PutRecord(t.Context(), machines.NewRecord("pod")) }},
		{"Records", func() error { _, err := s.Records(t.Context()); return err }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, ErrClosed) {
				t.Errorf("err = %v, want ErrClosed", err)
			}
		})
	}
}

func TestSurvivesReopen(t *testing.T) {
	t.Parallel()
	s, path := openTemp(t)

	wake := time.Date(2026, 9, 9, 14, 3, 0, 0, cest)
	history := []Message{
		{Role: RoleUser, Content: "wake up"},
		{Role: RoleAssistant, Content: "The brain is asleep. Waking it now."},
		{Role: RoleUser, Content: "and now?"},
		{Role: RoleAssistant, Content: "Here I am."},
	}
	for i := 0; i < len(history); i += 2 {
		if err := s.AppendTurn(t.Context(), "sess-1", history[i], history[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	pending := Pending{
		Key: "k-1", Pod: "gpu-a", Provider: "vllm", WakeRequestedAt: wake,
		State: "waking", CreatedAt: wake.Add(2 * time.Second),
	}
	if err := s.PutPending(t.Context(), "sess-1", pending); err != nil {
		t.Fatal(err)
	}
	records := []machines.Record{fullRecord("gpu-a", wake), fullRecord("gpu-b", wake.Add(time.Hour))}
	for _, r := range records {
		if err := s.PutRecord(t.Context(), r); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s, err := Open(path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s.Close()

	gotHistory, err := s.History(t.Context(), "sess-1", 100)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(history, gotHistory); diff != "" {
		t.Errorf("History after reopen (-want +got):\n%s", diff)
	}
	gotPending, ok, err := s.Pending(t.Context(), "sess-1")
	if err != nil || !ok {
		t.Fatalf("Pending after reopen: ok %v, err %v", ok, err)
	}
	if diff := cmp.Diff(pending, gotPending); diff != "" {
		t.Errorf("Pending after reopen (-want +got):\n%s", diff)
	}
	gotRecords, err := s.Records(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(records, gotRecords); diff != "" {
		t.Errorf("Records after reopen (-want +got):\n%s", diff)
	}
	// Sequence numbers continue after a reopen: new turns go last.
	more := []Message{{Role: RoleUser, Content: "3"}, {Role: RoleAssistant, Content: "three"}}
	if err := s.AppendTurn(t.Context(), "sess-1", more[0], more[1]); err != nil {
		t.Fatal(err)
	}
	gotHistory, err = s.History(t.Context(), "sess-1", 100)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(append(history, more...), gotHistory); diff != "" {
		t.Errorf("History after reopen and append (-want +got):\n%s", diff)
	}
}
