package storetest

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/wakeonchat/wakeonchat/host/store"
)

// trimmed is what HistoryWithin must return, from what History returns: the
// newest messages whose contents total at most maxBytes, ending at the
// first that does not fit.
func trimmed(hist []store.Message, maxBytes int) []store.Message {
	if maxBytes < 0 {
		return nil
	}
	start := len(hist)
	for start > 0 && len(hist[start-1].Content) <= maxBytes {
		maxBytes -= len(hist[start-1].Content)
		start--
	}
	if start == len(hist) {
		return nil
	}
	return hist[start:]
}

func testHistoryWithin(t *testing.T, s Suite) {
	t.Run("cases", func(t *testing.T) { testHistoryWithinCases(t, s) })
	t.Run("is History trimmed", func(t *testing.T) { testHistoryWithinIsHistoryTrimmed(t, s) })
}

func testHistoryWithinCases(t *testing.T, s Suite) {
	st, _ := open(t, s, 0)
	big := strings.Repeat("x", 300)
	turns := [][2]string{{"q0", "a0"}, {"q1", big}, {"q2", "a2"}, {"q3", "ünï"}} // ünï is 5 bytes
	var all []store.Message
	for _, tr := range turns {
		u, a := user(tr[0]), assistant(tr[1])
		must(t, st.History.AppendTurn(t.Context(), "s", u, a))
		all = append(all, u, a)
	}
	for _, tc := range []struct {
		name     string
		session  string
		last     int
		maxBytes int
		want     []store.Message
	}{
		{"everything fits", "s", 8, 1 << 20, all},
		{"an exact fit of the newest turn", "s", 8, 7, all[6:]},
		{"one byte short of it", "s", 8, 6, all[7:]},
		{"the large answer ends the history", "s", 8, 299, all[4:]},
		{"it fits exactly", "s", 8, 300 + 2 + 2 + 2 + 5, all[3:]},
		{"the count caps first", "s", 3, 1 << 20, all[5:]},
		{"no bytes: no message fits, none being empty", "s", 8, 0, nil},
		{"negative bytes", "s", 8, -1, nil},
		{"no count", "s", 0, 1 << 20, nil},
		{"unknown session", "nobody", 8, 1 << 20, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := st.History.HistoryWithin(t.Context(), tc.session, tc.last, tc.maxBytes)
			must(t, err)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("HistoryWithin(%q, %d, %d) (-want +got):\n%s", tc.session, tc.last, tc.maxBytes, diff)
			}
		})
	}
	for _, maxBytes := range []int{-1, 0, 10} {
		if _, err := st.History.HistoryWithin(t.Context(), "", 8, maxBytes); err == nil {
			t.Errorf("HistoryWithin of an empty session id (maxBytes %d): no error", maxBytes)
		}
	}
}

// testHistoryWithinIsHistoryTrimmed: over sessions of random messages (bytes
// that need escaping, that are not UTF-8, empty ones), HistoryWithin is
// History trimmed to the byte cap, for every count and many caps. The
// sessions are written first, then read at once, each by a goroutine of
// its own: thousands of reads, most of the case's time their round trips.
func testHistoryWithinIsHistoryTrimmed(t *testing.T, s Suite) {
	st, _ := open(t, s, 0)
	rng := rand.New(rand.NewPCG(1, 2))
	pieces := []string{"x", "ü", "🚀", `"`, `\`, "\n", "<", "&", "\x00", "\xff", "\u2028"}
	content := func() string {
		var b strings.Builder
		for range rng.IntN(40) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		return b.String()
	}
	const sessions = 20
	for session := range sessions {
		id := fmt.Sprintf("s%d", session)
		for range rng.IntN(8) {
			must(t, st.History.AppendTurn(t.Context(), id, user(content()), assistant(content())))
		}
	}
	var wg sync.WaitGroup
	for session := range sessions {
		id := fmt.Sprintf("s%d", session)
		wg.Go(func() {
			for last := 0; last <= 17; last++ {
				hist, err := st.History.History(t.Context(), id, last)
				if err != nil {
					t.Errorf("%s: History(%d): %v", id, last, err)
					return
				}
				for _, maxBytes := range []int{-1, 0, 1, 3, 10, 25, 40, 80, 160, 1 << 20} {
					got, err := st.History.HistoryWithin(t.Context(), id, last, maxBytes)
					if err != nil {
						t.Errorf("%s: HistoryWithin(%d, %d): %v", id, last, maxBytes, err)
						return
					}
					if diff := cmp.Diff(trimmed(hist, maxBytes), got); diff != "" {
						t.Errorf("%s: HistoryWithin(%d, %d) (-want +got):\n%s", id, last, maxBytes, diff)
						return
					}
				}
			}
		})
	}
	wg.Wait()
}
