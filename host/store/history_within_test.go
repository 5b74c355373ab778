package store

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// TestContentSize: the size read from a stored message's form is its
// decoded content's length whenever it is given, and it is given for every
// plain message of either role, as AppendTurn stores it (encodeMessage) or
// as stores from before it did (json.Marshal, which escapes <, > and &).
func TestContentSize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		content string
		plain   bool
	}{
		{"", true},
		{"hello", true},
		{"ünïcødé — 🚀", true},
		{"\u2028\u2029", false}, // json.Marshal escapes them
		{`say "hi"`, false},
		{`back\slash`, false},
		{"line\nbreak", false},
		{"a\x00b", false},
		{"<b>&amp;</b>", true}, // stored as it is
		{"\xff\xfe", false},    // not UTF-8: stored as \ufffd
		{strings.Repeat("x", 70000), true},
	} {
		for _, role := range []string{RoleUser, RoleAssistant} {
			v, err := encodeMessage(Message{Role: role, Content: tc.content})
			if err != nil {
				t.Fatal(err)
			}
			old, err := json.Marshal(Message{Role: role, Content: tc.content})
			if err != nil {
				t.Fatal(err)
			}
			if n, ok := contentSize(old); ok && n != len(tc.content) {
				t.Errorf("contentSize(%.40q) = %d, true; want the content's length %d", old, n, len(tc.content))
			}
			var m Message
			if err := json.Unmarshal(v, &m); err != nil {
				t.Fatal(err)
			}
			n, ok := contentSize(v)
			if ok != tc.plain || ok && n != len(m.Content) {
				t.Errorf("contentSize(%.40q) = %d, %t; want %t, the decoded length %d", v, n, ok, tc.plain, len(m.Content))
			}
		}
	}
	for _, v := range []string{
		`{"content":"abc","role":"user"}`,           // another order
		`{"role":"user","content":"a","x":"bcdef"}`, // another field
		`{"role":"system","content":"abc"}`,         // another role
		`{"role":"user","content":"abc"} `,          // trailing space
		`{"role":"user","content":"abc`,             // cut short
	} {
		if n, ok := contentSize([]byte(v)); ok {
			t.Errorf("contentSize(%s) = %d, true; want false: only decoding tells", v, n)
		}
	}
}

// hugeSession stores turns turns of a short question and an answer of
// answerBytes in session, the answer escaped (so its size is known only by
// decoding it) or plain. s's session budget must hold them.
func hugeSession(tb testing.TB, s *Store, session string, turns, answerBytes int, escaped bool) {
	tb.Helper()
	answer := strings.Repeat("x", answerBytes)
	if escaped {
		answer = strings.Repeat(`"`, answerBytes) // stored as \"
	}
	for i := range turns {
		if err := s.AppendTurn(context.Background(), session, Message{RoleUser, fmt.Sprintf("q%d", i)}, Message{RoleAssistant, answer}); err != nil {
			tb.Fatal(err)
		}
	}
}

// allocated is how many bytes f allocates.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

// TestHistoryWithinReadsOnlyWhatFits is the bound: on a session of ten
// turns whose answers are larger than the default history_bytes (256 KiB),
// History of the default history_messages (20) decodes all ten answers to
// send none, while HistoryWithin decodes no answer when its stored form
// gives its size (1 MiB of plain text), and one when only decoding does
// (300 KiB of escaped characters). It counts the process's allocations,
// so it runs alone, in a process of its own (runAlone), while the
// package's other tests run here.
func TestHistoryWithinReadsOnlyWhatFits(t *testing.T) {
	if !alone() {
		t.Parallel()
		runAlone(t)
		return
	}
	const (
		turns    = 10
		last     = 20
		maxBytes = 256 << 10
	)
	s, err := Options{noSync: true, SessionHistoryBytes: 64 << 20}.Open(t.TempDir() + "/wake.db")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	hugeSession(t, s, "plain", turns, 1<<20, false)
	hugeSession(t, s, "escaped", turns, 300<<10, true)
	for _, tc := range []struct {
		session string
		answer  int
		most    func(full uint64) uint64 // what HistoryWithin may allocate, given what History did
	}{
		{"plain", 1 << 20, func(uint64) uint64 { return 64 << 10 }},                      // no answer decoded
		{"escaped", 300 << 10, func(full uint64) uint64 { return full / turns * 3 / 2 }}, // one answer of ten decoded
	} {
		t.Run(tc.session, func(t *testing.T) {
			var all, fit []Message
			var err error
			full := allocated(func() { all, err = s.History(t.Context(), tc.session, last) })
			if err != nil || len(all) != last {
				t.Fatalf("History: %d messages, %v", len(all), err)
			}
			bounded := allocated(func() { fit, err = s.HistoryWithin(t.Context(), tc.session, last, maxBytes) })
			if err != nil || len(fit) != 0 {
				t.Fatalf("HistoryWithin: %d messages, %v; want none (the newest answer does not fit)", len(fit), err)
			}
			t.Logf("History allocated %d KiB, HistoryWithin %d KiB", full>>10, bounded>>10)
			if full < uint64(turns*tc.answer) {
				t.Errorf("History allocated %d bytes, less than the %d it returns: the measure is wrong", full, turns*tc.answer)
			}
			if most := tc.most(full); bounded > most {
				t.Errorf("HistoryWithin allocated %d bytes, want at most %d", bounded, most)
			}
		})
	}
}

// BenchmarkHistoryHugeTurns is the cost of a turn's history read on a
// session of ten 1 MiB answers, with the default caps: all of it
// (History), or only what fits (HistoryWithin). Run it with
// go test -run '^$' -bench HistoryHugeTurns -benchmem ./host/store/
func BenchmarkHistoryHugeTurns(b *testing.B) {
	s, err := Options{noSync: true, SessionHistoryBytes: 64 << 20}.Open(b.TempDir() + "/wake.db")
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	hugeSession(b, s, "plain", 10, 1<<20, false)
	hugeSession(b, s, "escaped", 10, 1<<20, true)
	for _, session := range []string{"plain", "escaped"} {
		b.Run(session+"/History", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.History(b.Context(), session, 20); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(session+"/HistoryWithin", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := s.HistoryWithin(b.Context(), session, 20, 256<<10); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
