package storetest

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// budget is the session budget of the SessionBudget cases: small, so that
// a few turns fill it. A backend counts a message as stored, its content
// and at most a few dozen bytes around it (bbolt's JSON): the turns below
// are sized so that the same of them fit either way.
const budget = 1000

// sized is turn i of a session with a user message and a reply of n bytes
// of content each.
func sized(i, n int) (u, a store.Message) {
	pad := func(s string) string { return s + strings.Repeat("x", n-len(s)) }
	return user(pad(fmt.Sprintf("q%d ", i))), assistant(pad(fmt.Sprintf("a%d ", i)))
}

// testSessionBudget: a session keeps the newest turns whose messages fit
// the budget, deleting the older ones on the append that passes it, in
// whole turns; a turn that alone does not fit is not kept, nor is anything
// before it; other sessions are left alone.
func testSessionBudget(t *testing.T, s Suite) {
	open := func(t *testing.T) store.Backend {
		t.Helper()
		return s.Open(t, Options{Now: (&clock{now: T0}).Now, SessionHistoryBytes: budget})
	}
	// 130 + 130 bytes of content a turn: three fit (780, or 963 as bbolt's
	// JSON), four do not (1040).
	const small = 130
	for _, tc := range []struct {
		name  string
		turns []int // each turn's message size, in order
		want  []int // the turns kept, by index, oldest first
	}{
		{"under the budget", []int{small, small}, []int{0, 1}},
		{"exactly what fits", []int{small, small, small}, []int{0, 1, 2}},
		{"the oldest go", []int{small, small, small, small, small}, []int{2, 3, 4}},
		{"a turn larger than the budget alone", []int{small, small, 600}, nil},
		{"and after it, the turns that follow", []int{small, 600, small, small}, []int{2, 3}},
		{"a large turn pushes several out", []int{small, small, small, 400}, []int{3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := open(t)
			var all []store.Message
			for i, n := range tc.turns {
				u, a := sized(i, n)
				must(t, st.History.AppendTurn(t.Context(), "s", u, a))
				all = append(all, u, a)
			}
			u, a := turn("other", 0)
			must(t, st.History.AppendTurn(t.Context(), "other", u, a))
			var want []store.Message
			for _, i := range tc.want {
				want = append(want, all[2*i], all[2*i+1])
			}
			got, err := st.History.History(t.Context(), "s", 1000)
			must(t, err)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("History (-want +got):\n%s", diff)
			}
			other, err := st.History.History(t.Context(), "other", 1000)
			must(t, err)
			if diff := cmp.Diff([]store.Message{u, a}, other); diff != "" {
				t.Errorf("the other session (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("a long session", func(t *testing.T) {
		st := open(t)
		var all []store.Message
		for i := range 300 { // sequence numbers past a byte, many trims
			u, a := sized(i, small)
			must(t, st.History.AppendTurn(t.Context(), "s", u, a))
			all = append(all, u, a)
		}
		got, err := st.History.History(t.Context(), "s", 1000)
		must(t, err)
		if diff := cmp.Diff(all[len(all)-6:], got); diff != "" {
			t.Errorf("History after 300 turns (-want +got):\n%s", diff)
		}
	})
}
