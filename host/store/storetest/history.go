package storetest

import (
	"fmt"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/store"
)

func user(content string) store.Message { return store.Message{Role: store.RoleUser, Content: content} }
func assistant(content string) store.Message {
	return store.Message{Role: store.RoleAssistant, Content: content}
}

// turn is turn i of a session's history, as AppendTurn takes it.
func turn(session string, i int) (u, a store.Message) {
	return user(fmt.Sprintf("%s q%d", session, i)), assistant(fmt.Sprintf("%s a%d", session, i))
}

// appendTurns appends turns 0..n-1 to session and returns its messages.
func appendTurns(t *testing.T, st store.Backend, session string, n int) []store.Message {
	t.Helper()
	var all []store.Message
	for i := range n {
		u, a := turn(session, i)
		if err := st.History.AppendTurn(t.Context(), session, u, a); err != nil {
			t.Fatalf("AppendTurn %d: %v", i, err)
		}
		all = append(all, u, a)
	}
	return all
}

func testHistory(t *testing.T, s Suite) {
	t.Run("last N", func(t *testing.T) {
		st, _ := open(t, s, 0)
		all := appendTurns(t, st, "s", 3) // 6 messages
		appendTurns(t, st, "other", 2)    // must not leak into "s"
		for _, tc := range []struct {
			name    string
			session string
			last    int
			want    []store.Message
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
			got, err := st.History.History(t.Context(), tc.session, tc.last)
			must(t, err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s: History(%q, %d) (-want +got):\n%s", tc.name, tc.session, tc.last, diff)
			}
		}
	})
	t.Run("order across many turns", func(t *testing.T) {
		st, _ := open(t, s, 0)
		// More than 256 turns: sequence numbers cross a byte boundary.
		all := appendTurns(t, st, "s", 300)
		got, err := st.History.History(t.Context(), "s", len(all))
		must(t, err)
		if diff := cmp.Diff(all, got); diff != "" {
			t.Errorf("History (-want +got):\n%s", diff)
		}
		got, err = st.History.History(t.Context(), "s", 4)
		must(t, err)
		if diff := cmp.Diff(all[len(all)-4:], got); diff != "" {
			t.Errorf("History last 4 (-want +got):\n%s", diff)
		}
	})
	t.Run("content kept exactly", func(t *testing.T) {
		st, _ := open(t, s, 0)
		// Bytes a text column or a JSON encoder might change.
		odd := []string{"", "a\x00b", "line\nbreak\ttab", `"quoted" \ backslash`, "ünïcødé — 🚀", "\u2028\u2029", string(make([]byte, 70000))}
		for _, text := range odd {
			must(t, st.History.AppendTurn(t.Context(), "s", user(text), assistant(text)))
		}
		got, err := st.History.History(t.Context(), "s", 100)
		must(t, err)
		var want []store.Message
		for _, text := range odd {
			want = append(want, user(text), assistant(text))
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("History (-want +got):\n%s", diff)
		}
	})
	t.Run("AppendTurn rejects", func(t *testing.T) {
		st, _ := open(t, s, 0)
		u, a := turn("s", 0)
		for _, tc := range []struct {
			name     string
			session  string
			user, as store.Message
		}{
			{"empty session", "", u, a},
			{"swapped roles", "s", a, u},
			{"two users", "s", u, u},
			{"no roles", "s", store.Message{Content: "q"}, store.Message{Content: "a"}},
		} {
			if err := st.History.AppendTurn(t.Context(), tc.session, tc.user, tc.as); err == nil {
				t.Errorf("%s: AppendTurn: no error", tc.name)
			}
		}
		if got, err := st.History.History(t.Context(), "s", 10); err != nil || len(got) != 0 {
			t.Errorf("History after rejected turns = %v, %v; want none", got, err)
		}
		if _, err := st.History.History(t.Context(), "", 10); err == nil {
			t.Error("History of an empty session id: no error")
		}
	})
	t.Run("concurrent turns never interleave", func(t *testing.T) {
		st, _ := open(t, s, 0)
		checkConcurrentTurns(t, []store.Backend{st})
	})
}

// checkConcurrentTurns has 20 writers append 10 turns each to 4 sessions,
// spread over the stores (replicas of one database, or one store), and
// checks that every turn is whole, in its session, in its writer's order.
func checkConcurrentTurns(t *testing.T, stores []store.Backend) {
	t.Helper()
	const (
		writers  = 20
		sessions = 4 // 5 writers on each
		turns    = 10
	)
	var wg sync.WaitGroup
	errs := make(chan error, writers*turns)
	for w := range writers {
		session := fmt.Sprintf("s%d", w%sessions)
		st := stores[w%len(stores)]
		wg.Go(func() {
			for i := range turns {
				if err := st.History.AppendTurn(t.Context(), session, user(fmt.Sprintf("w%d q%d", w, i)), assistant(fmt.Sprintf("w%d a%d", w, i))); err != nil {
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
		got, err := stores[0].History.History(t.Context(), session, 1<<20)
		must(t, err)
		if want := writers / sessions * turns * 2; len(got) != want {
			t.Errorf("%s has %d messages, want %d", session, len(got), want)
		}
		total += len(got)
		for j := 0; j+1 < len(got); j += 2 {
			var w, q, wa, a int
			if _, err := fmt.Sscanf(got[j].Content, "w%d q%d", &w, &q); err != nil || got[j].Role != store.RoleUser {
				t.Fatalf("%s message %d = %+v, want a user message", session, j, got[j])
			}
			if _, err := fmt.Sscanf(got[j+1].Content, "w%d a%d", &wa, &a); err != nil || got[j+1].Role != store.RoleAssistant {
				t.Fatalf("%s message %d = %+v, want an assistant message", session, j+1, got[j+1])
			}
			if wa != w || a != q {
				t.Errorf("%s: a turn interleaved: %q then %q", session, got[j].Content, got[j+1].Content)
			}
			if w%sessions != i {
				t.Errorf("%s: writer %d's turn in the wrong session", session, w)
			}
			if q != seen[w] {
				t.Errorf("%s: writer %d turn %d, want turn %d", session, w, q, seen[w])
			}
			seen[w] = q + 1
		}
	}
	if want := writers * turns * 2; total != want {
		t.Errorf("%d messages in all, want %d", total, want)
	}
}
