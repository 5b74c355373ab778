package storetest

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// sessionsLeft lists which of sessions still have a history.
func sessionsLeft(t *testing.T, st store.Backend, sessions []string) []string {
	t.Helper()
	var left []string
	for _, s := range sessions {
		msgs, err := st.History.History(t.Context(), s, 1)
		must(t, err)
		if len(msgs) > 0 {
			left = append(left, s)
		}
	}
	slices.Sort(left)
	return left
}

func testPrune(t *testing.T, s Suite) {
	type turn struct {
		session string
		at      time.Duration // after T0
	}
	tests := []struct {
		name    string
		turns   []turn
		pending []turn        // markers created at T0+at
		ttl     time.Duration // Options.PendingTTL
		r       store.Retention
		now     time.Duration // Prune's now, after T0
		want    store.Pruned
		left    []string // the sessions left
		leftPen []string // the markers left
	}{
		{
			name:  "the zero retention keeps everything",
			turns: []turn{{"a", 0}, {"b", time.Hour}},
			now:   1000 * time.Hour,
			left:  []string{"a", "b"},
		},
		{
			name:  "older than history_max_age: deleted; exactly as old: kept",
			turns: []turn{{"a", 0}, {"b", 0}, {"b", 50 * time.Minute}, {"c", 30 * time.Minute}},
			r:     store.Retention{HistoryMaxAge: time.Hour},
			now:   90 * time.Minute, // a is 90m old, b 40m (its last turn), c 60m
			want:  store.Pruned{Sessions: 1},
			left:  []string{"b", "c"},
		},
		{
			name:  "beyond history_max_sessions: the oldest go",
			turns: []turn{{"c", 0}, {"a", 10 * time.Minute}, {"b", 20 * time.Minute}, {"c", 30 * time.Minute}},
			r:     store.Retention{HistoryMaxSessions: 2},
			now:   time.Hour,
			want:  store.Pruned{Sessions: 1},
			left:  []string{"b", "c"},
		},
		{
			name:  "a tie goes to the lower session id",
			turns: []turn{{"b", 0}, {"a", 0}},
			r:     store.Retention{HistoryMaxSessions: 1},
			now:   time.Hour,
			want:  store.Pruned{Sessions: 1},
			left:  []string{"a"},
		},
		{
			name:  "age first, then the cap over what is left",
			turns: []turn{{"a", 0}, {"b", 10 * time.Minute}, {"c", 2 * time.Hour}, {"d", 3 * time.Hour}},
			r:     store.Retention{HistoryMaxAge: 90 * time.Minute, HistoryMaxSessions: 1},
			now:   3 * time.Hour,
			want:  store.Pruned{Sessions: 3},
			left:  []string{"d"},
		},
		{
			name:    "pending wakes expire wake_watch after they were made",
			pending: []turn{{"p1", 0}, {"p2", 25 * time.Minute}, {"p3", 30 * time.Minute}},
			ttl:     35 * time.Minute,
			now:     time.Hour, // p1 60m old, p2 35m, p3 30m
			want:    store.Pruned{Pending: 2},
			leftPen: []string{"p3"},
		},
		{
			name:    "without a PendingTTL pending wakes never expire",
			pending: []turn{{"p1", 0}},
			now:     1000 * time.Hour,
			leftPen: []string{"p1"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, c := open(t, s, tc.ttl)
			var sessions, markers []string
			for _, tr := range tc.turns {
				c.now = T0.Add(tr.at)
				must(t, st.History.AppendTurn(t.Context(), tr.session, user("q"), assistant("a")))
				sessions = append(sessions, tr.session)
			}
			for _, p := range tc.pending {
				must(t, st.Pendings.PutPending(t.Context(), p.session, store.Pending{Key: "k-" + p.session, CreatedAt: T0.Add(p.at)}))
				markers = append(markers, p.session)
			}
			c.now = T0 // the markers' ages are Prune's now's
			got, err := st.Retainer.Prune(context.Background(), T0.Add(tc.now), tc.r)
			if err != nil {
				t.Fatalf("Prune: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Prune (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.left, sessionsLeft(t, st, uniq(sessions))); diff != "" {
				t.Errorf("sessions left (-want +got):\n%s", diff)
			}
			var leftPen []string
			for _, m := range markers {
				if _, ok, err := st.Pendings.Pending(t.Context(), m); err != nil {
					t.Fatal(err)
				} else if ok {
					leftPen = append(leftPen, m)
				}
			}
			if diff := cmp.Diff(tc.leftPen, leftPen); diff != "" {
				t.Errorf("pending wakes left (-want +got):\n%s", diff)
			}
			// A second Prune at the same time finds nothing more to do.
			if again, err := st.Retainer.Prune(context.Background(), T0.Add(tc.now), tc.r); err != nil || again != (store.Pruned{}) {
				t.Errorf("second Prune: %+v, %v; want nothing done", again, err)
			}
		})
	}
	t.Run("a turn after the prune's now is kept", func(t *testing.T) {
		st, c := open(t, s, 0)
		c.now = T0.Add(2 * time.Hour)
		must(t, st.History.AppendTurn(t.Context(), "new", user("q"), assistant("a")))
		got, err := st.Retainer.Prune(context.Background(), T0.Add(90*time.Minute), store.Retention{HistoryMaxAge: time.Hour})
		if err != nil || got != (store.Pruned{}) {
			t.Errorf("Prune = %+v, %v; want nothing done", got, err)
		}
	})
	t.Run("an ended context stops it", func(t *testing.T) {
		st, c := open(t, s, 0)
		c.now = T0
		must(t, st.History.AppendTurn(t.Context(), "a", user("q"), assistant("a")))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		got, err := st.Retainer.Prune(ctx, T0.Add(time.Hour), store.Retention{HistoryMaxAge: time.Minute})
		if !errors.Is(err, context.Canceled) || got != (store.Pruned{}) {
			t.Errorf("Prune with an ended context: %+v, %v; want nothing done and context.Canceled", got, err)
		}
		if diff := cmp.Diff([]string{"a"}, sessionsLeft(t, st, []string{"a"})); diff != "" {
			t.Errorf("sessions left (-want +got):\n%s", diff)
		}
	})
	t.Run("many sessions, in batches", func(t *testing.T) {
		st, c := open(t, s, 0)
		var all []string
		for i := range 450 { // more than two batches
			c.now = T0.Add(time.Duration(i) * time.Second)
			session := "s" + string(rune('a'+i%26)) + string(rune('a'+i/26))
			must(t, st.History.AppendTurn(t.Context(), session, user("q"), assistant("a")))
			all = append(all, session)
		}
		got, err := st.Retainer.Prune(context.Background(), T0.Add(time.Hour), store.Retention{HistoryMaxSessions: 10})
		if err != nil || got != (store.Pruned{Sessions: 440}) {
			t.Errorf("Prune = %+v, %v; want 440 sessions deleted", got, err)
		}
		if diff := cmp.Diff(slices.Sorted(slices.Values(all[440:])), sessionsLeft(t, st, all)); diff != "" {
			t.Errorf("sessions left (-want +got):\n%s", diff)
		}
	})
	t.Run("StartPruning rejects", func(t *testing.T) {
		st, _ := open(t, s, 0)
		discard := slog.New(slog.DiscardHandler)
		for _, d := range []time.Duration{0, -time.Minute} {
			if err := st.Retainer.StartPruning(store.Retention{}, d, discard, nil); err == nil {
				t.Errorf("StartPruning every %v: no error, want one", d)
			}
		}
		must(t, st.Retainer.StartPruning(store.Retention{}, time.Hour, discard, nil))
		if err := st.Retainer.StartPruning(store.Retention{}, time.Hour, discard, nil); err == nil {
			t.Error("a second StartPruning: no error, want one")
		}
	})
}

// uniq is ss without repeats, in first-seen order.
func uniq(ss []string) []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
