package app_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/internal/e2e"
	"github.com/wakeonchat/wakeonchat/host/internal/fakeclock"
	"github.com/wakeonchat/wakeonchat/host/store"
)

// TestHostPrunesStoreAtStart: a host started on a store with a session
// whose last turn is older than history_max_age (default 720h) and a
// pending wake older than wake_watch (default 35m) deletes both at start,
// on its clock, counts them in wakeonchat_store_pruned_total, says so in
// one "store pruned" line on its log (logged before the count), and keeps
// the rest.
func TestHostPrunesStoreAtStart(t *testing.T) {
	t.Parallel()
	dataDir := t.TempDir()
	path := filepath.Join(dataDir, "wake.db")
	put := func(at time.Time, do func(s *store.Store) error) {
		t.Helper()
		s, err := store.Options{Now: func() time.Time { return at }}.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := do(s); err != nil {
			t.Fatal(err)
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
	}
	turn := func(session string) func(s *store.Store) error {
		return func(s *store.Store) error {
			return s.AppendTurn(t.Context(), session, store.Message{Role: store.RoleUser, Content: "q"}, store.Message{Role: store.RoleAssistant, Content: "a"})
		}
	}
	put(t0.Add(-721*time.Hour), turn("stale"))
	put(t0.Add(-time.Hour), turn("recent"))
	put(t0, func(s *store.Store) error {
		return s.PutPending(t.Context(), "recent", store.Pending{Key: "k", Pod: "qwen", CreatedAt: t0.Add(-36 * time.Minute)})
	})

	clk := fakeclock.New(t0)
	h := startHost(t, hostOptions{conductorURL: startSim(t, clk).URL(), dataDir: dataDir, clock: clk})
	// The pass at start: one counts both (a scrape may come between the
	// two series).
	pruned := func() map[string]float64 {
		s := scrapeAt(t, h.Client, h.Base)
		return map[string]float64{"sessions": s.sum(prunedTotal, "what=sessions"), "pending": s.sum(prunedTotal, "what=pending")}
	}
	counted := pruned()
	for deadline := time.Now().Add(waitFor); counted["sessions"] == 0 || counted["pending"] == 0; counted = pruned() {
		if time.Now().After(deadline) {
			t.Fatalf("%s after %v: %v, want the pass at start counted", prunedTotal, waitFor, counted)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if diff := cmp.Diff(map[string]float64{"sessions": 1, "pending": 1}, counted); diff != "" {
		t.Errorf("%s (-want +got):\n%s", prunedTotal, diff)
	}
	line := h.logged(t, store.LinePruned)
	got := map[string]any{"level": line.Level, "sessions": line.Attrs["sessions"], "pending": line.Attrs["pending"]}
	want := map[string]any{"level": "INFO", "sessions": 1.0, "pending": 1.0}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%q line (-want +got):\n%s", store.LinePruned, diff)
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}

	s, err := store.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for session, want := range map[string]int{"stale": 0, "recent": 2} {
		if msgs, err := s.History(t.Context(), session, 10); err != nil || len(msgs) != want {
			t.Errorf("session %s after the host: %d messages, %v; want %d", session, len(msgs), err, want)
		}
	}
	if _, ok, err := s.Pending(t.Context(), "recent"); err != nil || ok {
		t.Errorf("pending wake after the host: ok %v, %v; want none", ok, err)
	}
}

// prunedTotal counts what the store's background pruning deleted.
const prunedTotal = "wakeonchat_store_pruned_total"

// TestSessionHistoryBounded: one client sending 40 turns of 100 KiB to one
// session leaves wake.db within what the session budget allows
// ([store] session_history_bytes, 256 KiB here), not the 8 MB of the turns
// and their echoes: the store keeps only the newest turns that fit, and
// bbolt reuses the pages of the ones it deletes.
func TestSessionHistoryBounded(t *testing.T) {
	t.Parallel()
	const (
		budget  = 256 << 10
		message = 100 << 10
		turns   = 40
		// The bound: the one session's budget and bbolt's room around it.
		// The file grows in powers of two, and the pages of a deleted turn
		// are free only from the next transaction on.
		bound = 2 << 20
	)
	clk := fakeclock.New(t0)
	dataDir := t.TempDir()
	h := startHost(t, hostOptions{
		conductorURL: startSim(t, clk).URL(), dataDir: dataDir, clock: clk,
		sessionHistoryBytes: budget, historyBytes: 64 << 10,
	})
	if got := h.ask(t, "big", "hello"); got != e2e.ReplyWaking {
		t.Fatalf("first ask: %q, want %q", got, e2e.ReplyWaking)
	}
	h.stepUntilState(t, "ready", time.Minute)
	for i := range turns {
		text := fmt.Sprintf("turn %d ", i) + strings.Repeat("x", message)
		if got := h.ask(t, "big", text); got != "echo: "+text {
			t.Fatalf("turn %d: a reply of %d bytes, want the echo", i, len(got))
		}
	}
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dataDir, "wake.db"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > bound {
		t.Errorf("wake.db is %d bytes after %d turns of %d bytes in one session, want at most %d", fi.Size(), turns, message, bound)
	}
	s, err := store.Open(filepath.Join(dataDir, "wake.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	msgs, err := s.History(t.Context(), "big", 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 || !strings.HasPrefix(msgs[0].Content, fmt.Sprintf("turn %d ", turns-1)) {
		t.Errorf("the session keeps %d messages, want the last turn alone (two of about 100 KiB fill the 256 KiB budget)", len(msgs))
	}
	t.Logf("wake.db: %d bytes", fi.Size())
}
