package store

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// turn is turn i of a session's history, as AppendTurn takes it.
func turn(session string, i int) (user, assistant Message) {
	return Message{Role: RoleUser, Content: fmt.Sprintf("%s q%d", session, i)},
		Message{Role: RoleAssistant, Content: fmt.Sprintf("%s a%d", session, i)}
}

// appendTurns appends turns 0..n-1 to session and returns its messages.
func appendTurns(t *testing.T, s *Store, session string, n int) []Message {
	t.Helper()
	var all []Message
	for i := range n {
		u, a := turn(session, i)
		if err := s.AppendTurn(session, u, a); err != nil {
			t.Fatalf("AppendTurn %d: %v", i, err)
		}
		all = append(all, u, a)
	}
	return all
}

func TestHistoryLastN(t *testing.T) {
	s, _ := openTemp(t)
	all := appendTurns(t, s, "s", 3) // 6 messages
	appendTurns(t, s, "other", 2)    // must not leak into "s"

	for _, tc := range []struct {
		name    string
		session string
		last    int
		want    []Message
	}{
		{"negative", "s", -1, nil},
		{"zero", "s", 0, nil},
		{"one", "s", 1, all[5:]},
		{"odd", "s", 3, all[3:]},
		{"exact", "s", 6, all},
		{"more than stored", "s", 7, all},
		{"far more than stored", "s", 1 << 20, all},
		{"unknown session", "nobody", 10, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.History(tc.session, tc.last)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("History(%q, %d) (-want +got):\n%s", tc.session, tc.last, diff)
			}
		})
	}
}

func TestHistoryOrderAcrossManyTurns(t *testing.T) {
	s, _ := openTemp(t)
	// More than 256 turns, so sequence keys cross a byte boundary (a
	// little-endian or text key would sort them wrong).
	all := appendTurns(t, s, "s", 300)
	got, err := s.History("s", len(all))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all, got); diff != "" {
		t.Errorf("History (-want +got):\n%s", diff)
	}
	got, err = s.History("s", 4)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(all[len(all)-4:], got); diff != "" {
		t.Errorf("History last 4 (-want +got):\n%s", diff)
	}
}

func TestAppendTurnRejects(t *testing.T) {
	s, _ := openTemp(t)
	u, a := turn("s", 0)
	for _, tc := range []struct {
		name       string
		session    string
		user, asst Message
	}{
		{"empty session", "", u, a},
		{"swapped roles", "s", a, u},
		{"two users", "s", u, u},
		{"no roles", "s", Message{Content: "q"}, Message{Content: "a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := s.AppendTurn(tc.session, tc.user, tc.asst); err == nil {
				t.Error("AppendTurn: no error")
			}
		})
	}
	// Nothing of the rejected turns was stored.
	got, err := s.History("s", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("History after rejected turns = %v, want none", got)
	}
}

func TestPruneHistory(t *testing.T) {
	for _, tc := range []struct {
		name string
		keep int
		want int // how many of the last messages remain
	}{
		{"negative", -3, 0},
		{"zero", 0, 0},
		{"one rounds down to no turn", 1, 0},
		{"one turn", 2, 2},
		{"odd never splits a turn", 5, 4},
		{"exact", 8, 8},
		{"more than stored", 100, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTemp(t)
			all := appendTurns(t, s, "s", 4) // 8 messages
			other := appendTurns(t, s, "other", 2)
			if err := s.PruneHistory("s", tc.keep); err != nil {
				t.Fatal(err)
			}
			got, err := s.History("s", 100)
			if err != nil {
				t.Fatal(err)
			}
			var want []Message
			if tc.want > 0 {
				want = all[len(all)-tc.want:]
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("History after PruneHistory(%d) (-want +got):\n%s", tc.keep, diff)
			}
			// Other sessions are untouched.
			gotOther, err := s.History("other", 100)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(other, gotOther); diff != "" {
				t.Errorf("other session after PruneHistory (-want +got):\n%s", diff)
			}
			// New turns still go last.
			u, a := turn("s", 99)
			if err := s.AppendTurn("s", u, a); err != nil {
				t.Fatal(err)
			}
			got, err = s.History("s", 100)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(append(slices.Clone(want), u, a), got); diff != "" {
				t.Errorf("History after prune and append (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPruneUnknownSession(t *testing.T) {
	s, _ := openTemp(t)
	if err := s.PruneHistory("nobody", 2); err != nil {
		t.Errorf("PruneHistory of unknown session: %v", err)
	}
	if err := s.PruneHistory("", 2); err == nil {
		t.Error("PruneHistory(\"\"): no error")
	}
}

func TestConcurrentAppendTurn(t *testing.T) {
	s, _ := openTemp(t)
	const (
		writers  = 20
		sessions = 4 // writers share sessions: 5 writers on each
		turns    = 10
	)
	var wg sync.WaitGroup
	errs := make(chan error, writers*turns)
	for w := range writers {
		session := fmt.Sprintf("s%d", w%sessions)
		wg.Go(func() {
			for i := range turns {
				u := Message{Role: RoleUser, Content: fmt.Sprintf("w%d q%d", w, i)}
				a := Message{Role: RoleAssistant, Content: fmt.Sprintf("w%d a%d", w, i)}
				if err := s.AppendTurn(session, u, a); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	seen := map[int]int{} // writer -> next turn expected
	total := 0
	for i := range sessions {
		session := fmt.Sprintf("s%d", i)
		got, err := s.History(session, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		if want := writers / sessions * turns * 2; len(got) != want {
			t.Errorf("%s has %d messages, want %d", session, len(got), want)
		}
		total += len(got)
		for j := 0; j+1 < len(got); j += 2 {
			var w, q, wa, a int
			if _, err := fmt.Sscanf(got[j].Content, "w%d q%d", &w, &q); err != nil || got[j].Role != RoleUser {
				t.Fatalf("%s message %d = %+v, want a user message", session, j, got[j])
			}
			if _, err := fmt.Sscanf(got[j+1].Content, "w%d a%d", &wa, &a); err != nil || got[j+1].Role != RoleAssistant {
				t.Fatalf("%s message %d = %+v, want an assistant message", session, j+1, got[j+1])
			}
			if wa != w || a != q {
				t.Errorf("%s: turn interleaved: %q then %q", session, got[j].Content, got[j+1].Content)
			}
			if w%sessions != i {
				t.Errorf("%s: writer %d's turn in the wrong session", session, w)
			}
			// Each writer's turns appear in the order it appended them.
			if q != seen[w] {
				t.Errorf("%s: writer %d turn %d, want turn %d", session, w, q, seen[w])
			}
			seen[w] = q + 1
		}
	}
	if want := writers * turns * 2; total != want {
		t.Errorf("%d messages in all, want %d", total, want)
	}
	for w := range writers {
		if got := seen[w]; got != turns {
			t.Errorf("writer %d: %d turns found, want %d", w, got, turns)
		}
	}
}
