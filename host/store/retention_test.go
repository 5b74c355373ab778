package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	bolt "go.etcd.io/bbolt"
)

// pruneT0 is the clock's start in the pruning tests.
var pruneT0 = time.Date(2026, 9, 9, 12, 0, 0, 0, time.UTC)

// clockedStore is a store whose clock the test sets.
type clockedStore struct {
	*Store
	now time.Time
}

func openClocked(t *testing.T, ttl time.Duration) *clockedStore {
	t.Helper()
	cs := &clockedStore{now: pruneT0}
	o := Options{Now: func() time.Time { return cs.now }, PendingTTL: ttl, noSync: true}
	s, err := o.Open(filepath.Join(t.TempDir(), "wake.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	cs.Store = s
	return cs
}

// turnAt appends a turn to session at pruneT0+at.
func (cs *clockedStore) turnAt(t *testing.T, session string, at time.Duration) {
	t.Helper()
	cs.now = pruneT0.Add(at)
	if err := cs.AppendTurn(t.Context(), session, Message{RoleUser, "q"}, Message{RoleAssistant, "a"}); err != nil {
		t.Fatal(err)
	}
}

// unstamp removes session's lastTurn, as a store from before turns were
// stamped has it.
func (cs *clockedStore) unstamp(t *testing.T, session string) {
	t.Helper()
	err := cs.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket(bucketSessions).Bucket([]byte(session)).Delete(keyLastTurn)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// keys lists the keys of the top-level bucket name, raw (an expired marker
// included).
func (cs *clockedStore) keys(t *testing.T, name []byte) []string {
	t.Helper()
	var keys []string
	err := cs.db.View(func(tx *bolt.Tx) error {
		return tx.Bucket(name).ForEach(func(k, _ []byte) error {
			keys = append(keys, string(k))
			return nil
		})
	})
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// TestPruneStampsLegacySessions: what the conformance suite (TestConformance)
// cannot make, a session stored by an older host without a last turn, is
// stamped rather than deleted.
func TestPruneStampsLegacySessions(t *testing.T) {
	t.Parallel()
	type turn struct {
		session string
		at      time.Duration // after pruneT0
	}
	tests := []struct {
		name    string
		turns   []turn
		legacy  []string      // of the sessions, the ones stored without a lastTurn
		pending []turn        // markers created at pruneT0+at
		ttl     time.Duration // Options.PendingTTL
		r       Retention
		now     time.Duration // Prune's now, after pruneT0
		want    Pruned
		left    []string // the sessions left
		leftPen []string // the markers left
	}{
		{
			name:   "a session from before stamping is stamped now, not deleted",
			turns:  []turn{{"old", 0}, {"new", 0}},
			legacy: []string{"old"},
			r:      Retention{HistoryMaxAge: time.Hour},
			now:    100 * time.Hour,
			want:   Pruned{Sessions: 1, Stamped: 1},
			left:   []string{"old"},
		},
		{
			name:   "unstamped sessions count as new for the cap",
			turns:  []turn{{"a", 0}, {"x", 0}, {"y", 0}},
			legacy: []string{"x", "y"},
			r:      Retention{HistoryMaxSessions: 2},
			now:    time.Hour,
			want:   Pruned{Sessions: 1, Stamped: 2},
			left:   []string{"x", "y"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cs := openClocked(t, tc.ttl)
			for _, tr := range tc.turns {
				cs.turnAt(t, tr.session, tr.at)
			}
			for _, session := range tc.legacy {
				cs.unstamp(t, session)
			}
			for _, p := range tc.pending {
				if err := cs.PutPending(t.Context(), p.session, Pending{Key: "k-" + p.session, CreatedAt: pruneT0.Add(p.at)}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := cs.Prune(context.Background(), pruneT0.Add(tc.now), tc.r)
			if err != nil {
				t.Fatalf("Prune: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Prune (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.left, cs.keys(t, bucketSessions)); diff != "" {
				t.Errorf("sessions left (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.leftPen, cs.keys(t, bucketPending)); diff != "" {
				t.Errorf("pending wakes left (-want +got):\n%s", diff)
			}
			// A second Prune at the same time finds nothing more to do.
			if again, err := cs.Prune(context.Background(), pruneT0.Add(tc.now), tc.r); err != nil || again != (Pruned{}) {
				t.Errorf("second Prune: %+v, %v; want nothing done", again, err)
			}
		})
	}
}

// TestPruneAgesStampedSessions: a session stamped by a Prune ages from that
// Prune and goes once it is older than history_max_age.
func TestPruneAgesStampedSessions(t *testing.T) {
	t.Parallel()
	cs := openClocked(t, 0)
	cs.turnAt(t, "old", 0)
	cs.unstamp(t, "old")
	r := Retention{HistoryMaxAge: time.Hour}
	for _, step := range []struct {
		now  time.Duration
		want Pruned
	}{
		{100 * time.Hour, Pruned{Stamped: 1}},
		{101 * time.Hour, Pruned{}},
		{101*time.Hour + time.Second, Pruned{Sessions: 1}},
	} {
		got, err := cs.Prune(context.Background(), pruneT0.Add(step.now), r)
		if err != nil || got != step.want {
			t.Errorf("Prune at +%v: %+v, %v; want %+v", step.now, got, err, step.want)
		}
	}
}

// TestExpiredPendingReadsAsAbsent: before any Prune, a marker older than
// PendingTTL is not there for Pending nor for TakePending, and is kept in
// the file until Prune deletes it.
func TestExpiredPendingReadsAsAbsent(t *testing.T) {
	t.Parallel()
	cs := openClocked(t, 35*time.Minute)
	p := Pending{Key: "k", Pod: "qwen", CreatedAt: pruneT0}
	if err := cs.PutPending(t.Context(), "s", p); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		at     time.Duration
		wantOK bool
	}{
		{0, true},
		{35*time.Minute - time.Nanosecond, true},
		{35 * time.Minute, false},
		{time.Hour, false},
	} {
		cs.now = pruneT0.Add(step.at)
		if _, ok, err := cs.Pending(t.Context(), "s"); err != nil || ok != step.wantOK {
			t.Errorf("Pending at +%v: ok %v, err %v; want ok %v", step.at, ok, err, step.wantOK)
		}
	}
	if _, err := cs.TakePending(t.Context(), "s", "k"); !errors.Is(err, ErrNoPending) {
		t.Errorf("TakePending of an expired marker: %v, want ErrNoPending", err)
	}
	if diff := cmp.Diff([]string{"s"}, cs.keys(t, bucketPending)); diff != "" {
		t.Errorf("markers in the file (-want +got):\n%s", diff)
	}
	cs.now = pruneT0.Add(10 * time.Minute)
	if got, err := cs.TakePending(t.Context(), "s", "k"); err != nil || got.Key != "k" {
		t.Errorf("TakePending of a live marker: %+v, %v", got, err)
	}
}

// TestPruneKeepsStoreBounded: sessions keep coming, history_max_sessions
// caps them and pruning runs between them; the file stops growing once it
// holds the cap, because bbolt reuses the pages pruning frees. Without the
// pruning it grows with every session.
func TestPruneKeepsStoreBounded(t *testing.T) {
	t.Parallel()
	const (
		sessions = 1200
		keep     = 100
		every    = 100 // sessions between two Prunes
	)
	answer := strings.Repeat("a reply of some length ", 20)
	run := func(t *testing.T, prune bool) (sizes []int64) {
		cs := openClocked(t, 0)
		for i := range sessions {
			cs.now = pruneT0.Add(time.Duration(i) * time.Minute)
			if err := cs.AppendTurn(t.Context(), fmt.Sprintf("s-%05d", i), Message{RoleUser, "q"}, Message{RoleAssistant, answer}); err != nil {
				t.Fatal(err)
			}
			if (i+1)%every != 0 {
				continue
			}
			if prune {
				if _, err := cs.Prune(context.Background(), cs.now, Retention{HistoryMaxSessions: keep}); err != nil {
					t.Fatal(err)
				}
				if n := len(cs.keys(t, bucketSessions)); n != min(i+1, keep) {
					t.Fatalf("after %d sessions and a Prune: %d sessions, want %d", i+1, n, min(i+1, keep))
				}
			}
			// The high-water mark: the pages in use or free, below which
			// bbolt allocates before it grows the file.
			cs.db.View(func(tx *bolt.Tx) error { sizes = append(sizes, tx.Size()); return nil })
		}
		return sizes
	}
	pruned := run(t, true)
	// From the fourth round on the store holds keep sessions and its pages
	// grow no further than a little slack over what it had then.
	steady := pruned[3]
	if grown := slices.Max(pruned[3:]); grown > steady*5/4 {
		t.Errorf("with pruning the pages grew from %d bytes to %d (%v)", steady, grown, pruned)
	}
	unpruned := run(t, false)
	if last := unpruned[len(unpruned)-1]; last < 4*steady {
		t.Errorf("without pruning the pages take %d bytes, want at least 4 times the pruned %d: the test cannot tell", last, steady)
	}
	t.Logf("bytes in pages every %d sessions, with pruning %v; without %v", every, pruned, unpruned)
}

// recorder is a slog.Handler that keeps every record.
type recorder struct {
	mu      sync.Mutex
	records []slog.Record
}

func (r *recorder) Enabled(context.Context, slog.Level) bool { return true }
func (r *recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.records = append(r.records, rec.Clone())
	return nil
}
func (r *recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *recorder) WithGroup(string) slog.Handler      { return r }

// logLine is a record's level, message and counts.
type logLine struct {
	Level                    slog.Level
	Msg                      string
	Sessions, Pending, Stamp int64
}

func (r *recorder) lines() []logLine {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []logLine
	for _, rec := range r.records {
		l := logLine{Level: rec.Level, Msg: rec.Message}
		rec.Attrs(func(a slog.Attr) bool {
			switch a.Key {
			case "sessions":
				l.Sessions = a.Value.Int64()
			case "pending":
				l.Pending = a.Value.Int64()
			case "stamped":
				l.Stamp = a.Value.Int64()
			}
			return true
		})
		out = append(out, l)
	}
	return out
}

// TestPruningInBackground: StartPruning prunes once at once and then every
// interval on the store's clock, logs what each pass removed and then
// reports it, and Close stops it (synctest fails the test if its goroutine
// outlives the bubble).
func TestPruningInBackground(t *testing.T) {
	t.Parallel()
	synctest.Test(t, func(t *testing.T) {
		s, err := Options{PendingTTL: 35 * time.Minute}.Open(filepath.Join(t.TempDir(), "wake.db"))
		if err != nil {
			t.Fatal(err)
		}
		turn := func(session string) {
			t.Helper()
			if err := s.AppendTurn(t.Context(), session, Message{RoleUser, "q"}, Message{RoleAssistant, "a"}); err != nil {
				t.Fatal(err)
			}
		}
		has := func(session string) bool {
			t.Helper()
			msgs, err := s.History(t.Context(), session, 10)
			if err != nil {
				t.Fatal(err)
			}
			return len(msgs) > 0
		}
		turn("ancient")
		time.Sleep(2 * time.Hour)
		start := time.Now()
		turn("old")
		if err := s.PutPending(t.Context(), "old", Pending{Key: "k", CreatedAt: start}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(30 * time.Minute)
		turn("new")

		log := &recorder{}
		// Each report, with how many lines were logged when it came.
		type report struct {
			Pruned Pruned
			Lines  int
		}
		var (
			mu      sync.Mutex
			reports []report
		)
		onPass := func(p Pruned) {
			mu.Lock()
			defer mu.Unlock()
			reports = append(reports, report{p, len(log.lines())})
		}
		if err := s.StartPruning(Retention{HistoryMaxAge: time.Hour}, 10*time.Minute, slog.New(log), onPass); err != nil {
			t.Fatal(err)
		}
		pruned := func(sessions, pending int64) logLine {
			return logLine{Level: slog.LevelInfo, Msg: LinePruned, Sessions: sessions, Pending: pending}
		}
		steps := []struct {
			at   time.Duration // since start
			want []logLine     // every line so far
			old  bool          // session old is still there
		}{
			// The pass at start: "ancient" is 2 h 30 min old, gone; the
			// marker is 30 min old, "old" too.
			{30 * time.Minute, []logLine{pruned(1, 0)}, true},
			// The marker is 40 min old: gone.
			{40 * time.Minute, []logLine{pruned(1, 0), pruned(0, 1)}, true},
			{50 * time.Minute, []logLine{pruned(1, 0), pruned(0, 1)}, true},
			// "old" is exactly an hour old: kept.
			{60 * time.Minute, []logLine{pruned(1, 0), pruned(0, 1)}, true},
			{70 * time.Minute, []logLine{pruned(1, 0), pruned(0, 1), pruned(1, 0)}, false},
			{90 * time.Minute, []logLine{pruned(1, 0), pruned(0, 1), pruned(1, 0)}, false},
		}
		for _, step := range steps {
			time.Sleep(start.Add(step.at).Sub(time.Now()))
			synctest.Wait()
			if diff := cmp.Diff(step.want, log.lines()); diff != "" {
				t.Errorf("log at +%v (-want +got):\n%s", step.at, diff)
			}
			// Each line's pass is reported, after its line.
			var want []report
			for i, l := range step.want {
				want = append(want, report{Pruned{Sessions: int(l.Sessions), Pending: int(l.Pending)}, i + 1})
			}
			mu.Lock()
			got := slices.Clone(reports)
			mu.Unlock()
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("reports at +%v (-want +got):\n%s", step.at, diff)
			}
			if got := has("old"); got != step.old {
				t.Errorf("session old at +%v: there %v, want %v", step.at, got, step.old)
			}
			if has("ancient") || !has("new") {
				t.Errorf("at +%v: session ancient there %v, new there %v; want gone, there", step.at, has("ancient"), has("new"))
			}
		}
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if err := s.StartPruning(Retention{}, time.Minute, slog.New(log), nil); !errors.Is(err, ErrClosed) {
			t.Errorf("StartPruning after Close: %v, want ErrClosed", err)
		}
	})
}
